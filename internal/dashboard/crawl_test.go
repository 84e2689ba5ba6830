package dashboard_test

// The crawler and seeder of the security tests (security_*_test.go): a
// visitor that follows every same-origin GET link from /dashboard/ and reads
// every page's forms with golang.org/x/net/html, so a page or form added
// later is covered without touching the tests, and a seeder that puts a
// value into every field an owner or a client can set.

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/kwtest"
)

// secPage is one page the crawl fetched.
type secPage struct {
	Path string // path?query as requested
	*webPage
	Doc *html.Node // nil unless the answer is HTML
}

// secForm is a form of a crawled page with the values a browser would send
// when its first submit button is pressed without changing anything.
type secForm struct {
	Page    string // the page it is on
	Method  string // "get" or "post"
	Action  string // path?query, resolved against the page
	Enctype string
	Values  url.Values
	Node    *html.Node
}

const (
	secMaxPages    = 400 // the crawl stops here
	secMaxVariants = 3   // at most this many query strings per path (filters, paging)
)

// secCrawl fetches /dashboard/ (and the extra paths: pages only a filled-in
// GET form reaches) and every page reachable from them by same-origin GET
// links below /dashboard/ (not assets, not logout), at most secMaxPages
// pages. Non-HTML answers (downloads) are kept without a parsed document.
func secCrawl(t *testing.T, s *site, extra ...string) []*secPage {
	t.Helper()
	base, _ := url.Parse(s.URL)
	seen := map[string]bool{}
	variants := map[string]int{}
	queue := append([]string{"/dashboard/"}, extra...)
	for _, q := range queue {
		seen[q] = true
	}
	var out []*secPage
	for len(queue) > 0 && len(out) < secMaxPages {
		path := queue[0]
		queue = queue[1:]
		p := &secPage{Path: path, webPage: s.get(path)}
		out = append(out, p)
		if !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			continue
		}
		doc, err := html.Parse(strings.NewReader(p.Body))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p.Doc = doc
		here := base.ResolveReference(&url.URL{Path: p.URL})
		for _, a := range secAll(doc, "a") {
			href, ok := secAttr(a, "href")
			if !ok {
				continue
			}
			u, err := here.Parse(href)
			if err != nil || u.Host != base.Host || u.Scheme != base.Scheme {
				continue
			}
			u.Fragment = ""
			if !strings.HasPrefix(u.Path, "/dashboard/") || strings.HasPrefix(u.Path, "/dashboard/assets/") || u.Path == "/dashboard/logout" {
				continue
			}
			next := u.RequestURI()
			if seen[next] {
				continue
			}
			if u.RawQuery != "" {
				if variants[u.Path] >= secMaxVariants {
					continue
				}
				variants[u.Path]++
			}
			seen[next] = true
			queue = append(queue, next)
		}
	}
	return out
}

// secForms lists the forms of the crawled pages.
func secForms(pages []*secPage) []*secForm {
	var out []*secForm
	for _, p := range pages {
		if p.Doc == nil {
			continue
		}
		here := &url.URL{Path: p.URL}
		for _, f := range secAll(p.Doc, "form") {
			m, _ := secAttr(f, "method")
			action, _ := secAttr(f, "action")
			u, err := here.Parse(action)
			if err != nil {
				continue
			}
			enc, _ := secAttr(f, "enctype")
			out = append(out, &secForm{Page: p.Path, Method: strings.ToLower(secOr(m, "get")), Action: u.RequestURI(),
				Enctype: enc, Values: secFormValues(f), Node: f})
		}
	}
	return out
}

func secOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// secFormValues is what form f submits untouched: text fields and hidden
// inputs, checked boxes, each select's selected (or first) option,
// textareas, and the first named submit button.
func secFormValues(f *html.Node) url.Values {
	v := url.Values{}
	button := false
	secWalk(f, func(n *html.Node) {
		name, _ := secAttr(n, "name")
		if name == "" {
			return
		}
		switch n.Data {
		case "input":
			typ, _ := secAttr(n, "type")
			value, _ := secAttr(n, "value")
			switch strings.ToLower(typ) {
			case "checkbox", "radio":
				if _, on := secAttr(n, "checked"); on {
					v.Add(name, secOr(value, "on"))
				}
			case "submit", "image":
				if !button {
					button = true
					v.Add(name, value)
				}
			case "file", "reset", "button":
			default:
				v.Add(name, value)
			}
		case "textarea":
			v.Add(name, strings.TrimPrefix(secText(n), "\n"))
		case "select":
			opts := secAll(n, "option")
			if len(opts) == 0 {
				return
			}
			pick := opts[0]
			for _, o := range opts {
				if _, sel := secAttr(o, "selected"); sel {
					pick = o
				}
			}
			val, ok := secAttr(pick, "value")
			if !ok {
				val = secText(pick)
			}
			v.Add(name, val)
		case "button":
			typ, _ := secAttr(n, "type")
			if (typ == "" || typ == "submit") && !button {
				button = true
				val, _ := secAttr(n, "value")
				v.Add(name, val)
			}
		}
	})
	return v
}

// secWalk calls fn for every element below n (n included).
func secWalk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		secWalk(c, fn)
	}
}

// secAll lists the elements named tag below n.
func secAll(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	secWalk(n, func(e *html.Node) {
		if e.Data == tag {
			out = append(out, e)
		}
	})
	return out
}

func secAttr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func secText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// secDescribe names an element for failure messages: <input name="x" id="y">.
func secDescribe(n *html.Node) string {
	var b strings.Builder
	b.WriteString("<" + n.Data)
	for _, k := range []string{"type", "name", "id", "action"} {
		if v, ok := secAttr(n, k); ok {
			fmt.Fprintf(&b, " %s=%q", k, v)
		}
	}
	return b.String() + ">"
}

// ---- seeding

// secSeeder puts a value into a field through the admin or client API.
// value(field, kind) gives the value to try first; when the API refuses it,
// plain(kind) is used instead and the field is noted as not carrying it.
type secSeeder struct {
	t        *testing.T
	s        *site
	value    func(field, kind string) string
	refused  []string // fields whose API refused value(...)
	accepted []string // fields that took value(...)
}

// secPlain is an ordinary value of a kind of field.
func secPlain(field, kind string) string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(field))
	switch kind {
	case "url":
		return "https://example.com/" + slug
	case "email":
		return slug + "@example.com"
	case "name":
		return strings.ReplaceAll(slug, "-", "_")
	}
	return "Sample " + field
}

// set calls put with value(field, kind), or with the plain value when the
// API refuses that; it returns the reply of the call that succeeded.
func (sd *secSeeder) set(field, kind string, put func(v string) *kwtest.Reply) *kwtest.Reply {
	sd.t.Helper()
	v := sd.value(field, kind)
	if r := put(v); r.Status == 200 && r.Body["success"] != false {
		sd.accepted = append(sd.accepted, field)
		return r
	}
	sd.refused = append(sd.refused, field)
	r := put(secPlain(field, kind))
	if r.Status != 200 || r.Body["success"] == false {
		sd.t.Fatalf("seeding %s with a plain value: %v", field, r)
	}
	return r
}

// secSeed creates data on every page of the panel: an app (and a second one)
// with keys, devices, sessions, a trial, a reset request, accounts, texts and a
// per-key override, a slide, app info and branding, a social link, a
// changelog entry, prices, orders and a subscription, a published and a
// draft release, a webhook, a reseller, a banned key, a personal access
// token and the owner's e-mail. value chooses what user-controlled fields
// hold. It returns the seeder, the main app and its busiest key (a note,
// a device, a session, a reset request and a text override).
func secSeed(t *testing.T, s *site, value func(field, kind string) string) (*secSeeder, *kwtest.App, string) {
	t.Helper()
	sd := &secSeeder{t: t, s: s, value: value}
	var app *kwtest.App
	sd.set("app name", "text", func(v string) *kwtest.Reply {
		r := s.Admin("POST", "/api/admin/apps.php", map[string]any{"name": v, "version": "1.0.0"})
		if r.Status == 200 {
			a := r.Obj("app")
			app = s.NewApp(a["app_id"].(string), a["secret"].(string))
		}
		return r
	})
	s.CreateApp("Second app")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{
		"accounts_enabled": true, "account_signup_days": 30, "trial_enabled": true}})

	// Keys: notes, a device with a hwid, a session, a reset request, a ban.
	keys := app.GenerateKeys(4, "days", 30, 2)
	app.GenerateKeys(2, "lifetime", 0, 1)
	sd.set("key note", "text", func(v string) *kwtest.Reply {
		return s.Admin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": keys[0], "note": v})
	})
	sd.set("generated key note", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "note": v})
	})
	sd.set("device hwid", "text", func(v string) *kwtest.Reply {
		return app.Env("/api/auth/login.php", map[string]any{"license_key": keys[1], "hwid": v})
	})
	app.Login(keys[0], "HWID-SEC-0")
	sd.set("client version", "text", func(v string) *kwtest.Reply {
		return app.Env("/api/auth/login.php", map[string]any{"license_key": keys[2], "hwid": "HWID-SEC-2", "version": v})
	})
	sd.set("trial hwid", "text", func(v string) *kwtest.Reply {
		return app.Plain("/api/auth/trial.php", map[string]any{"hwid": v})
	})
	sd.set("reset reason", "text", func(v string) *kwtest.Reply {
		return app.Plain("/api/auth/request-hwid-reset.php", map[string]any{"license_key": keys[0], "reason": v})
	})
	sd.set("ban reason", "text", func(v string) *kwtest.Reply {
		return app.KeyAction("ban", keys[3], map[string]any{"reason": v})
	})
	// Accounts.
	sd.set("account username", "name", func(v string) *kwtest.Reply {
		return app.Plain("/api/auth/account-register.php", map[string]any{"username": v, "password": "correct horse 1", "email": "acct@example.com"})
	})
	sd.set("account email", "email", func(v string) *kwtest.Reply {
		return app.Plain("/api/auth/account-register.php", map[string]any{"username": "second_account", "password": "correct horse 1", "email": v})
	})
	if r := app.Plain("/api/auth/account-login.php", map[string]any{"username": "second_account", "password": "correct horse 1", "hwid": "ACCT-HW-SEC"}); r.Body["success"] != true {
		t.Fatalf("account login: %v", r)
	}
	// Content.
	sd.set("text value", "text", func(v string) *kwtest.Reply {
		return s.Admin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": v})
	})
	sd.set("text override", "text", func(v string) *kwtest.Reply {
		return s.Admin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": v, "license_key": keys[0]})
	})
	slide := map[string]any{"app_id": app.ID, "title": "Slide", "body": "Body"}
	sd.set("slide title", "text", func(v string) *kwtest.Reply {
		slide["title"] = v
		return s.Admin("POST", "/api/admin/slides.php", slide)
	})
	sd.set("slide body", "text", func(v string) *kwtest.Reply {
		slide["body"] = v
		return s.Admin("POST", "/api/admin/slides.php", slide)
	})
	sd.set("slide link", "url", func(v string) *kwtest.Reply {
		slide["link_url"] = v
		return s.Admin("POST", "/api/admin/slides.php", slide)
	})
	brand := map[string]any{} // what branding holds: the API replaces it as a whole
	settings := func(k string, branding bool) func(string) *kwtest.Reply {
		return func(v string) *kwtest.Reply {
			st := map[string]any{k: v}
			if branding {
				b := map[string]any{}
				for bk, bv := range brand {
					b[bk] = bv
				}
				b[k] = v
				st = map[string]any{"branding": b}
			}
			r := s.Admin("PUT", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "settings": st})
			if branding && r.Status == 200 {
				brand[k] = v
			}
			return r
		}
	}
	sd.set("login message", "text", settings("login_message", false))
	sd.set("download url", "url", settings("download_url", false))
	for _, k := range []string{"website_url", "logo_url", "support_email"} {
		kind := "url"
		if k == "support_email" {
			kind = "email"
		}
		sd.set(strings.ReplaceAll(k, "_", " "), kind, settings(k, true))
	}
	link := map[string]any{"app_id": app.ID, "platform": "discord", "url": "https://discord.gg/x", "label": "Chat"}
	sd.set("link label", "text", func(v string) *kwtest.Reply {
		link["label"] = v
		return s.Admin("POST", "/api/admin/social-links.php", link)
	})
	sd.set("link url", "url", func(v string) *kwtest.Reply {
		link["url"] = v
		return s.Admin("POST", "/api/admin/social-links.php", link)
	})
	sd.set("link platform", "name", func(v string) *kwtest.Reply {
		link["platform"] = v
		return s.Admin("POST", "/api/admin/social-links.php", link)
	})
	entry := map[string]any{"app_id": app.ID, "version": "1.0.0", "title": "Entry", "body": "Body", "category": "new", "published": true}
	sd.set("changelog title", "text", func(v string) *kwtest.Reply {
		entry["title"] = v
		return s.Admin("POST", "/api/admin/changelog.php", entry)
	})
	sd.set("changelog body", "text", func(v string) *kwtest.Reply {
		entry["body"] = v
		return s.Admin("POST", "/api/admin/changelog.php", entry)
	})
	var levelID, planID any
	sd.set("level name", "text", func(v string) *kwtest.Reply {
		r := s.Admin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "level", "name": v, "description": "Monthly", "price": 7, "currency": "USD", "interval": "month"})
		levelID = r.Obj("plan")["id"]
		return r
	})
	sd.set("plan description", "text", func(v string) *kwtest.Reply {
		r := s.Admin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": "Basic", "description": v, "price": 10, "currency": "USD", "key_type": "lifetime"})
		planID = r.Obj("plan")["id"]
		return r
	})
	contentOrder(t, s, app.ID, planID, "buyer@example.com")
	oid := contentOrder(t, s, app.ID, levelID, "sub@example.com")
	s.MustAdmin("POST", "/api/admin/orders.php?action=approve", map[string]any{"app_id": app.ID, "order_id": oid})
	// Updates: one published release, one draft.
	sd.set("release notes", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/updates.php", map[string]any{"app_id": app.ID, "version": "1.1.0", "changelog": v})
	})
	app.Release("1.0.1", []byte("artifact"), nil)
	// Webhooks and resellers.
	sd.set("webhook description", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": "https://example.com/hook", "description": v})
	})
	sd.set("webhook url", "url", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": v})
	})
	sd.set("reseller name", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": v, "email": "shop@example.com",
			"products": []map[string]any{{"id": "month", "name": "30 days", "key_type": "days", "duration_value": 30, "max_devices": 1, "price": 5}}})
	})
	sd.set("reseller product", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": "Shop two",
			"products": []map[string]any{{"id": "life", "name": v, "key_type": "lifetime", "max_devices": 1, "price": 9}}})
	})
	// The owner: a personal access token and an e-mail.
	sd.set("token name", "text", func(v string) *kwtest.Reply {
		return s.Admin("POST", "/api/admin/tokens.php", map[string]any{"name": v})
	})
	sd.set("owner email", "email", func(v string) *kwtest.Reply {
		return s.Admin("PUT", "/api/admin/profile.php", map[string]any{"password": kwtest.AdminPassword, "email": v})
	})
	return sd, app, keys[0]
}

// secExtra are the pages only a filled-in GET form reaches: a key's text
// overrides, the update explainer, filtered key lists and audit logs paged
// by two (so their Older links are crawled too).
func secExtra(app *kwtest.App, key string) []string {
	base := "/dashboard/apps/" + url.PathEscape(app.ID)
	k := url.QueryEscape(key)
	return []string{base + "/content/texts?license_key=" + k, base + "/updates/explain?v=1.0.0&channel=stable&hwid=PC-1&license_key=" + k,
		base + "/keys?key_type=days&limit=25", base + "/keys?hwid=HWID-SEC-0", base + "/keys?q=" + k,
		base + "/audit?limit=2", "/dashboard/audit?limit=2"}
}

// secResultPages are the pages only a successful POST shows — a new app's
// secret, generated keys, a bulk action's confirmation, a reseller's and a
// webhook's secret, a temporary password, a new access token, the 2FA
// enrolment and recovery codes — and the sign-in's second step. They
// change data; the owner is signed in again (with 2FA) at the end.
func secResultPages(t *testing.T, s *site, app *kwtest.App) []*secPage {
	t.Helper()
	base := "/dashboard/apps/" + url.PathEscape(app.ID)
	var out []*secPage
	post := func(path string, form url.Values) *webPage {
		t.Helper()
		p := s.post(path, form)
		if strings.Contains(p.Body, `class="flash error"`) {
			t.Fatalf("%s: refused: %s", path, p.flash())
		}
		sp := &secPage{Path: "POST " + path, webPage: p}
		sp.Doc, _ = html.Parse(strings.NewReader(p.Body))
		out = append(out, sp)
		return p
	}
	s.get("/dashboard/")
	post("/dashboard/apps", url.Values{"name": {"Result app"}})
	post(base+"/secret", url.Values{"confirm": {"yes"}})
	post(base+"/keys/generate", url.Values{"count": {"2"}, "key_type": {"lifetime"}, "max_devices": {"1"}})
	post(base+"/keys/bulk", url.Values{"op": {"ban"}, "key_type": {"lifetime"}})
	post(base+"/resellers", url.Values{"name": {"Result shop"}})
	post(base+"/webhooks", url.Values{"url": {"https://example.com/result"}})
	post(base+"/accounts/action", url.Values{"username": {"second_account"}, "action": {"reset-password"}, "confirm": {"yes"}})
	post("/dashboard/profile/tokens", url.Values{"name": {"Result token"}})
	enrol := post("/dashboard/profile/2fa/enrol", nil)
	m := profileSecret.FindStringSubmatch(enrol.Body)
	if m == nil {
		t.Fatalf("no 2FA secret: %s", enrol.Text())
	}
	post("/dashboard/profile/2fa/confirm", url.Values{"code": {kwtest.TOTP(t, m[1], s.Clock.Now())}})
	s.Clock.Advance(31 * time.Second) // a code is good once
	s.post("/dashboard/logout", nil)
	s.get("/dashboard/login")
	post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	if p := s.post("/dashboard/login/2fa", url.Values{"code": {kwtest.TOTP(t, m[1], s.Clock.Now())}}); p.URL != "/dashboard/" {
		t.Fatalf("second step of the sign-in: %d at %s: %s", p.Status, p.URL, p.Text())
	}
	return out
}
