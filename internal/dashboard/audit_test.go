package dashboard_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// auditOlder returns the href of the page's "Older" link ("" when none).
func auditOlder(p *webPage) string { return linkHref(p.Body, "Older") }

func TestAuditFiltersAndPaging(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Audit app")
	other := s.CreateApp("Other app")
	app.GenerateKeys(1, "lifetime", 0, 1)
	s.Clock.Advance(72 * time.Hour) // 2026-11-04: the tokens of before have expired
	tok := s.LoginAdmin("admin", kwtest.AdminPassword)
	must := func(method, path string, body any) *kwtest.Reply {
		r := s.AdminAs(tok, method, path, body)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("%s %s: %v", method, path, r)
		}
		return r
	}
	gen := must("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1})
	key := gen.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)
	must("DELETE", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key})
	must("POST", "/api/admin/keys.php", map[string]any{"app_id": other.ID, "count": 1, "key_type": "lifetime", "max_devices": 1})
	s.signIn()
	base := "/dashboard/apps/" + app.ID + "/audit"

	p := s.get(base).must(t)
	for _, want := range []string{"app.create", "key.generate", "key.delete", "admin", "details"} {
		if !p.Has(want) {
			t.Fatalf("audit page lacks %q: %s", want, p.Text())
		}
	}
	if strings.Contains(p.Body, other.ID) {
		t.Fatal("the app's audit log shows another app's entries")
	}
	if !strings.Contains(p.Body, "<details>") || !strings.Contains(p.Body, "&#34;name&#34;: &#34;Audit app&#34;") && !strings.Contains(p.Body, "&#34;name&#34;:&#34;Audit app&#34;") {
		t.Fatalf("details are not shown as JSON in <details>: %s", p.Body)
	}

	// Exact action, prefix, target.
	if f := s.get(base + "?action=key.delete").must(t); !f.Has("key.delete") || f.Has("key.generate") || f.Has("app.create") {
		t.Fatalf("exact action: %s", f.Text())
	}
	if f := s.get(base + "?action=key.").must(t); !f.Has("key.delete") || !f.Has("key.generate") || f.Has("app.create") {
		t.Fatalf("action prefix: %s", f.Text())
	}
	if f := s.get(base + "?target=" + url.QueryEscape(key)).must(t); !f.Has("key.delete") || f.Has("key.generate") {
		t.Fatalf("target: %s", f.Text())
	}
	// Dates: since is inclusive of the day, until too.
	if f := s.get(base + "?since=2026-11-04").must(t); !f.Has("key.delete") || f.Has("app.create") {
		t.Fatalf("since: %s", f.Text())
	}
	if f := s.get(base + "?until=2026-11-01").must(t); !f.Has("app.create") || f.Has("key.delete") {
		t.Fatalf("until: %s", f.Text())
	}
	if f := s.get(base + "?since=2026-11-02&until=2026-11-03").must(t); !f.Has("No entries match.") {
		t.Fatalf("an empty range: %s", f.Text())
	}
	if f := s.get(base + "?since=yesterday").must(t); !f.Has("since: enter a date") || f.Has("app.create") {
		t.Fatalf("a bad date: %s", f.Text())
	}

	// The actor filter: the admin's id narrows to its entries; another id to none.
	actor := regexp.MustCompile(`actor_id=([^"&]+)`).FindStringSubmatch(p.Body)
	if actor == nil {
		t.Fatal("no actor link")
	}
	if f := s.get(base + "?actor_id=" + actor[1]).must(t); !f.Has("app.create") {
		t.Fatalf("actor filter: %s", f.Text())
	}
	if f := s.get(base + "?actor_id=nobody").must(t); !f.Has("No entries match.") {
		t.Fatalf("unknown actor: %s", f.Text())
	}

	// Cursor paging: three entries two at a time, newest first, no repeats.
	first := s.get(base + "?limit=2").must(t)
	older := auditOlder(first)
	if older == "" || !strings.Contains(older, "cursor=") || !strings.Contains(older, "limit=2") {
		t.Fatalf("no Older link: %s", first.Body)
	}
	if !first.Has("key.delete") || first.Has("app.create") {
		t.Fatalf("first page: %s", first.Text())
	}
	second := s.get(older).must(t)
	if !second.Has("app.create") || second.Has("key.delete") || !second.Has("Newest") {
		t.Fatalf("second page: %s", second.Text())
	}
	// The filters stay on the older pages.
	fp := s.get(base + "?action=key.&limit=1").must(t)
	if o := auditOlder(fp); !strings.Contains(o, "action=key.") {
		t.Fatalf("the Older link drops the filter: %q", o)
	} else if sp := s.get(o).must(t); !sp.Has("key.generate") || sp.Has("key.delete") || sp.Has("app.create") {
		t.Fatalf("filtered second page: %s", sp.Text())
	}

	// Everything the admin may read: both apps.
	all := s.get("/dashboard/audit").must(t)
	if !strings.Contains(all.Body, app.ID) || !strings.Contains(all.Body, other.ID) || !strings.Contains(all.Body, `aria-current="page">Audit log`) {
		t.Fatalf("global audit: %s", all.Text())
	}
	if f := s.get("/dashboard/audit?action=app.create").must(t); f.Has("key.generate") || !f.Has("app.create") {
		t.Fatalf("global filter: %s", f.Text())
	}
}

// auditSiteAs is a second browser signed in as another admin of the same server.
func auditSiteAs(t *testing.T, s *site, user, password string) *site {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	o := &site{Server: s.Server, t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	o.signInAs(user, password)
	return o
}

// auditReseller reads a reseller and its ledger through the admin API.
func auditReseller(s *site, app *kwtest.App, id string) (map[string]any, []any) {
	s.t.Helper()
	r := s.Admin("GET", "/api/admin/resellers.php?app_id="+app.ID+"&id="+url.QueryEscape(id), nil)
	if r.Status == 404 {
		return nil, nil
	}
	if r.Status != 200 {
		s.t.Fatalf("reseller: %v", r)
	}
	ledger, _ := r.Body["activity"].([]any)
	return r.Obj("reseller"), ledger
}

func TestResellersPages(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Resale app")
	base := "/dashboard/apps/" + app.ID + "/resellers"
	if p := s.get(base).must(t); !p.Has("No resellers yet.") {
		t.Fatalf("empty list: %s", p.Text())
	}

	// Create: the token is shown once, with a copy button.
	c := s.post(base, url.Values{"name": {"Shop One"}, "email": {"shop@example.com"},
		"products": {`[{"id":"month","name":"30 days","key_type":"days","duration_value":30,"max_devices":1,"price":5}]`}}).must(t)
	tok := regexp.MustCompile(`kwr_[A-Za-z0-9_-]{43}`).FindString(c.Body)
	if tok == "" || !strings.Contains(c.Body, `data-copy="reseller-token"`) {
		t.Fatalf("no token shown: %s", c.Text())
	}
	list := s.MustAdmin("GET", "/api/admin/resellers.php?app_id="+app.ID, nil).Body["resellers"].([]any)
	if len(list) != 1 {
		t.Fatalf("resellers: %v", list)
	}
	id := list[0].(map[string]any)["id"].(string)
	if strings.Contains(s.get(base+"/"+id).Body, tok) {
		t.Fatal("the token is shown again")
	}
	// A bad products list is refused and creates nothing.
	s.get(base)
	if b := s.post(base, url.Values{"name": {"Shop Two"}, "products": {"[{"}}).must(t); !strings.Contains(b.flash(), "Products") {
		t.Fatalf("bad products: %q", b.flash())
	}
	if b := s.post(base, url.Values{"name": {"Shop Two"}, "products": {`[{"id":"x","name":"x","key_type":"days","price":1,"colour":"red"}]`}}).must(t); !strings.Contains(b.flash(), "MISSING_FIELDS") {
		t.Fatalf("unknown product field: %q", b.flash())
	}
	if n := len(s.MustAdmin("GET", "/api/admin/resellers.php?app_id="+app.ID, nil).Body["resellers"].([]any)); n != 1 {
		t.Fatalf("refused creates made %d resellers", n)
	}

	p := s.get(base).must(t)
	if !p.Has("Shop One") || !p.Has("shop@example.com") || !p.Has("active") {
		t.Fatalf("list: %s", p.Text())
	}
	page := base + "/" + id
	d := s.get(page).must(t)
	if !d.Has("30 days") || !d.Has("No balance changes yet.") {
		t.Fatalf("reseller page: %s", d.Text())
	}

	// Top-up: the balance and the ledger change.
	up := s.post(page+"/balance", url.Values{"kind": {"topup"}, "amount": {"50"}, "note": {"first payment"}}).must(t)
	r, ledger := auditReseller(s, app, id)
	if up.flash() != "Balance topped up." || r["balance"] != float64(50) || len(ledger) != 1 {
		t.Fatalf("top-up: %q %v %v", up.flash(), r["balance"], ledger)
	}
	if !up.Has("first payment") || !up.Has("+50") || !up.Has("topup") {
		t.Fatalf("ledger line: %s", up.Text())
	}
	// Bad input: a message, nothing changes.
	for _, f := range []url.Values{
		{"kind": {"topup"}, "amount": {"x"}},
		{"kind": {"topup"}, "amount": {"-5"}},
		{"kind": {"adjust"}, "amount": {"-10"}}, // an adjustment needs a note
		{"kind": {"adjust"}, "amount": {"-500"}, "note": {"too much"}},
		{"kind": {"steal"}, "amount": {"5"}},
	} {
		b := s.post(page+"/balance", f).must(t)
		r, ledger := auditReseller(s, app, id)
		if b.flash() == "" || strings.HasPrefix(b.flash(), "Balance") || r["balance"] != float64(50) || len(ledger) != 1 {
			t.Fatalf("%v: %q, balance %v, %d ledger lines", f, b.flash(), r["balance"], len(ledger))
		}
	}
	if b := s.post(page+"/balance", url.Values{"kind": {"topup"}, "amount": {"x"}}).must(t); !strings.Contains(b.flash(), "whole number") {
		t.Fatalf("amount x: %q", b.flash())
	}
	adj := s.post(page+"/balance", url.Values{"kind": {"adjust"}, "amount": {"-8"}, "note": {"refund"}}).must(t)
	if r, ledger := auditReseller(s, app, id); adj.flash() != "Balance adjusted." || r["balance"] != float64(42) || len(ledger) != 2 || !adj.Has("refund") {
		t.Fatalf("adjust: %q %v %d", adj.flash(), r["balance"], len(ledger))
	}

	// Edit the products.
	e := s.post(page+"/edit", url.Values{"name": {"Shop Uno"}, "email": {"shop@example.com"},
		"products": {`[{"id":"life","name":"Forever","key_type":"lifetime","price":40}]`}}).must(t)
	if r, _ := auditReseller(s, app, id); e.flash() != "Reseller saved." || r["name"] != "Shop Uno" || !e.Has("Forever") {
		t.Fatalf("edit: %q %v", e.flash(), r)
	}

	// Disable needs confirming; enable does not.
	if c := s.post(page+"/status", url.Values{"action": {"disable"}}).must(t); !c.Has("Disable this reseller?") {
		t.Fatalf("no confirmation: %s", c.Text())
	}
	if r, _ := auditReseller(s, app, id); r["status"] != "active" {
		t.Fatalf("status after an unconfirmed disable: %v", r["status"])
	}
	s.post(page+"/status", url.Values{"action": {"disable"}, "confirm": {"yes"}}).must(t)
	if r, _ := auditReseller(s, app, id); r["status"] != "disabled" {
		t.Fatalf("disable: %v", r["status"])
	}
	s.post(page+"/status", url.Values{"action": {"enable"}}).must(t)
	if r, _ := auditReseller(s, app, id); r["status"] != "active" {
		t.Fatalf("enable: %v", r["status"])
	}

	// New token: confirmed, shown once, different.
	s.get(page)
	if c := s.post(page+"/rotate", nil).must(t); !c.Has("Issue a new reseller token?") || regexp.MustCompile(`kwr_`).MatchString(c.Body) {
		t.Fatalf("unconfirmed rotate: %s", c.Text())
	}
	rot := s.post(page+"/rotate", url.Values{"confirm": {"yes"}}).must(t)
	if tok2 := regexp.MustCompile(`kwr_[A-Za-z0-9_-]{43}`).FindString(rot.Body); tok2 == "" || tok2 == tok {
		t.Fatalf("rotate: %s", rot.Text())
	}

	// A viewer gets the API's refusal.
	s.AddMember(app.ID, "viewer1", "viewer password 1", "viewer")
	v := auditSiteAs(t, s, "viewer1", "viewer password 1")
	if vp := v.get(base); vp.Status != 403 {
		t.Fatalf("viewer: %d %s", vp.Status, vp.Text())
	}
	v.get("/dashboard/apps/" + app.ID + "/audit").must(t)
	if vp := v.post(page+"/delete", url.Values{"confirm": {"yes"}}); vp.Status != 403 && !strings.Contains(vp.flash(), "FORBIDDEN") {
		t.Fatalf("viewer delete: %d %q", vp.Status, vp.flash())
	}
	if r, _ := auditReseller(s, app, id); r == nil {
		t.Fatal("a viewer deleted the reseller")
	}

	// Delete: without confirm nothing happens.
	s.get(page)
	if c := s.post(page+"/delete", nil).must(t); !c.Has("Delete this reseller?") {
		t.Fatalf("no confirmation: %s", c.Text())
	}
	if r, _ := auditReseller(s, app, id); r == nil {
		t.Fatal("an unconfirmed delete removed the reseller")
	}
	del := s.post(page+"/delete", url.Values{"confirm": {"yes"}}).must(t)
	if r, _ := auditReseller(s, app, id); del.flash() != "Reseller deleted." || r != nil || del.URL != base || del.Has("Shop Uno") {
		t.Fatalf("delete: %q %v", del.flash(), r)
	}
	if a := s.get("/dashboard/apps/" + app.ID + "/audit?action=reseller.").must(t); !a.Has("reseller.topup") || !a.Has("reseller.delete") {
		t.Fatalf("reseller audit: %s", a.Text())
	}
}
