package dashboard_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// activityReseller creates a reseller of app through the admin API and
// returns its id.
func activityReseller(t *testing.T, s *site, app *kwtest.App, name string) string {
	t.Helper()
	id, _ := s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": name}).Obj("reseller")["id"].(string)
	if id == "" {
		t.Fatalf("reseller %s: no id", name)
	}
	return id
}

// activityChange tops up (amount > 0, action topup) or adjusts a reseller's
// balance through the admin API.
func activityChange(t *testing.T, s *site, app *kwtest.App, id, action string, amount int, reason string) {
	t.Helper()
	s.MustAdmin("POST", "/api/admin/resellers.php?action="+action, map[string]any{"app_id": app.ID, "id": id, "amount": amount, "reason": reason})
}

// activitySection is the resellers page's activity section (HTML), from its
// heading to the add form.
func activitySection(t *testing.T, p *webPage) string {
	t.Helper()
	i, j := strings.Index(p.Body, `id="activity"`), strings.Index(p.Body, "<h2>Add a reseller</h2>")
	if i < 0 || j < i {
		t.Fatalf("no activity section: %s", p.Text())
	}
	return p.Body[i:j]
}

// The resellers page lists every reseller's ledger entries together, newest
// first, each naming (and linking) its reseller with the amount and the
// balance after; another app's resellers are not shown.
func TestResellersActivityAcrossResellers(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Resale app")
	other := s.CreateApp("Other app")
	base := "/dashboard/apps/" + app.ID + "/resellers"
	if sec := activitySection(t, s.get(base).must(t)); !strings.Contains(sec, "No balance changes yet.") {
		t.Fatalf("empty activity: %s", sec)
	}

	alpha := activityReseller(t, s, app, "Alpha Shop")
	beta := activityReseller(t, s, app, "Beta Shop")
	gamma := activityReseller(t, s, other, "Gamma Shop")
	activityChange(t, s, app, alpha, "topup", 50, "wire alpha")
	activityChange(t, s, app, beta, "topup", 30, "wire beta")
	activityChange(t, s, app, alpha, "adjust", -7, "refund alpha")
	activityChange(t, s, other, gamma, "topup", 99, "wire gamma")

	sec := activitySection(t, s.get(base).must(t))
	// Both resellers' entries, each named and linked to its reseller's page.
	for _, want := range []string{
		`<a href="` + base + "/" + alpha + `">Alpha Shop</a>`,
		`<a href="` + base + "/" + beta + `">Beta Shop</a>`,
		"+50", "+30", "-7", "Top-up", "Adjustment", "wire beta",
	} {
		if !strings.Contains(sec, want) {
			t.Fatalf("activity lacks %q: %s", want, sec)
		}
	}
	// Beta's row: its name, amount and balance after on the same line.
	if !regexp.MustCompile(`Beta Shop</a></td>\s*<td>Top-up</td>\s*<td class="num">\+30</td><td class="num">30</td>\s*<td>wire beta`).MatchString(sec) {
		t.Fatalf("beta's row: %s", sec)
	}
	// Newest first.
	if a, b, c := strings.Index(sec, "refund alpha"), strings.Index(sec, "wire beta"), strings.Index(sec, "wire alpha"); !(a < b && b < c) {
		t.Fatalf("not newest first (%d %d %d): %s", a, b, c, sec)
	}
	// Another app's reseller is not shown.
	if strings.Contains(sec, "Gamma Shop") || strings.Contains(sec, "wire gamma") {
		t.Fatalf("another app's activity shown: %s", sec)
	}
	if linkHref(sec, "Next page") != "" || linkHref(sec, "First page") != "" {
		t.Fatalf("a pager on a single page: %s", sec)
	}
}

// The activity section pages by the API's cursor, keeping the page length;
// a cursor or length the API refuses is shown in the section, not as a 500.
func TestResellersActivityPaging(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Resale app")
	base := "/dashboard/apps/" + app.ID + "/resellers"
	alpha := activityReseller(t, s, app, "Alpha Shop")
	beta := activityReseller(t, s, app, "Beta Shop")
	activityChange(t, s, app, alpha, "topup", 11, "entry one")
	activityChange(t, s, app, beta, "topup", 12, "entry two")
	activityChange(t, s, app, alpha, "topup", 13, "entry three")

	// Two per page: the newest two, and a link to the next page keeping the limit.
	first := activitySection(t, s.get(base+"?limit=2").must(t))
	if !strings.Contains(first, "entry three") || !strings.Contains(first, "entry two") || strings.Contains(first, "entry one") {
		t.Fatalf("first page: %s", first)
	}
	next := linkHref(first, "Next page")
	if next == "" || !strings.Contains(next, "limit=2") || !strings.Contains(next, "cursor=") || linkHref(first, "First page") != "" {
		t.Fatalf("first page's pager: %q: %s", next, first)
	}
	p := s.get(next).must(t)
	second := activitySection(t, p)
	if !strings.Contains(second, "entry one") || strings.Contains(second, "entry two") || strings.Contains(second, "entry three") {
		t.Fatalf("second page: %s", second)
	}
	// The resellers list stays whole on every page.
	if !p.Has("Alpha Shop") || !p.Has("Beta Shop") {
		t.Fatalf("resellers list on the second page: %s", p.Text())
	}
	back := linkHref(second, "First page")
	if linkHref(second, "Next page") != "" || back == "" || strings.Contains(back, "cursor=") {
		t.Fatalf("second page's pager: %q: %s", back, second)
	}
	if again := activitySection(t, s.get(back).must(t)); !strings.Contains(again, "entry three") || strings.Contains(again, "entry one") {
		t.Fatalf("back to the first page: %s", again)
	}

	// A refused cursor or limit is shown in the section, not as a failed page.
	for _, q := range []string{"cursor=abc", "limit=-1"} {
		p := s.get(base + "?" + q).must(t)
		sec := activitySection(t, p)
		if !strings.Contains(sec, `class="flash error"`) || !strings.Contains(sec, "MISSING_FIELDS") || strings.Contains(sec, "No balance changes yet.") || !p.Has("Alpha Shop") {
			t.Fatalf("%s: %s", q, p.Text())
		}
	}
}

// Reading resellers needs the admin role on the app: a viewer or support
// member gets the API's refusal and no activity; an admin member sees it.
func TestResellersActivityNeedsAdminRole(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Resale app")
	base := "/dashboard/apps/" + app.ID + "/resellers"
	alpha := activityReseller(t, s, app, "Alpha Shop")
	activityChange(t, s, app, alpha, "topup", 50, "wire alpha")

	for _, role := range []string{"viewer", "support"} {
		s.AddMember(app.ID, role+"1", role+" password 1", role)
		m := auditSiteAs(t, s, role+"1", role+" password 1")
		for _, path := range []string{base, base + "?limit=1&cursor=1"} {
			p := m.get(path)
			if p.Status != 403 || !p.Has("FORBIDDEN") || p.Has("wire alpha") || p.Has("Alpha Shop") {
				t.Fatalf("%s at %s: %d %s", role, path, p.Status, p.Text())
			}
		}
	}
	// The admin role may read it.
	s.AddMember(app.ID, "admin1", "admin password 1", "admin")
	m := auditSiteAs(t, s, "admin1", "admin password 1")
	if sec := activitySection(t, m.get(base).must(t)); !strings.Contains(sec, "wire alpha") || !strings.Contains(sec, ">Alpha Shop</a>") {
		t.Fatalf("admin member: %s", sec)
	}
}
