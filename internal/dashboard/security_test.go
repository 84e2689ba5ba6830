package dashboard_test

// Security tests of the whole panel: the headers of every answer, templates
// and assets that need no 'unsafe-inline'/'unsafe-eval' in the CSP, a CSRF
// token on every form (and a label on every field), POSTs without the token
// refused with nothing changed, and user input escaped on every page.
//
// Tests 3–5 crawl the panel like a visitor: every same-origin GET link from
// /dashboard/ is followed, and the forms of every page are read with
// golang.org/x/net/html, so a page or form added later is covered without
// touching this file.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// ---- crawling

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
	post("/dashboard/profile/2fa/confirm", url.Values{"code": {totpCode(t, m[1], s.Clock.Now())}})
	s.Clock.Advance(31 * time.Second) // a code is good once
	s.post("/dashboard/logout", nil)
	s.get("/dashboard/login")
	post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	if p := s.post("/dashboard/login/2fa", url.Values{"code": {totpCode(t, m[1], s.Clock.Now())}}); p.URL != "/dashboard/" {
		t.Fatalf("second step of the sign-in: %d at %s: %s", p.Status, p.URL, p.Text())
	}
	return out
}

// ---- 1. headers

// The CSP the panel promises: nothing inline, nothing from elsewhere.
const secCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Every kind of answer — signed out and in, a page, a 404, an asset, a
// refused form, the sign-in's redirect — carries the security headers;
// only assets may be cached, and the session cookie is HttpOnly,
// SameSite=Strict, scoped to /dashboard/ (not Secure over plain HTTP).
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	s := newSite(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values, header http.Header) (*http.Response, string) {
		t.Helper()
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, s.URL+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp, b.String()
	}
	check := func(what string, resp *http.Response, status int, asset bool) {
		t.Helper()
		h := resp.Header
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d", what, resp.StatusCode, status)
		}
		if got := h.Get("Content-Security-Policy"); got != secCSP {
			t.Errorf("%s: CSP %q", what, got)
		}
		if got := h.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", what, got)
		}
		if got := h.Get("Cross-Origin-Opener-Policy"); got != "same-origin" {
			t.Errorf("%s: Cross-Origin-Opener-Policy %q", what, got)
		}
		// From the server around the panel; upload forms carry their
		// token in the URL, which no Referer may take elsewhere.
		if got := h.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", what, got)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", what, got)
		}
		if got := h.Get("Strict-Transport-Security"); got != "" {
			t.Errorf("%s: HSTS %q over plain HTTP", what, got)
		}
		cc := h.Values("Cache-Control")
		if !asset && (len(cc) != 1 || cc[0] != "no-store") {
			t.Errorf("%s: Cache-Control %q, want no-store", what, cc)
		}
		if asset && strings.Contains(strings.Join(cc, ","), "no-store") {
			t.Errorf("%s: an asset is not cacheable: %q", what, cc)
		}
	}

	resp, body := do("GET", "/dashboard/login", nil, nil)
	check("sign-in page", resp, 200, false)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the sign-in page has no CSRF token")
	}
	pre := htmlUnescape(m[1])
	resp, _ = do("POST", "/dashboard/login", url.Values{"csrf": {"wrong"}, "username": {"admin"}, "password": {kwtest.AdminPassword}}, nil)
	check("sign-in with a wrong token", resp, 403, false)
	if secCookie(resp, "kw_session") != nil {
		t.Error("a sign-in with a wrong token set a session")
	}
	resp, _ = do("POST", "/dashboard/login", url.Values{"csrf": {pre}, "username": {"admin"}, "password": {kwtest.AdminPassword}},
		http.Header{"Sec-Fetch-Site": {"cross-site"}})
	check("sign-in from another site", resp, 403, false)
	if secCookie(resp, "kw_session") != nil {
		t.Error("a sign-in from another site set a session")
	}
	resp, _ = do("POST", "/dashboard/login", url.Values{"csrf": {pre}, "username": {"admin"}, "password": {"wrong password"}}, nil)
	check("sign-in with a wrong password", resp, 401, false)
	resp, _ = do("POST", "/dashboard/login", url.Values{"csrf": {pre}, "username": {"admin"}, "password": {kwtest.AdminPassword}}, nil)
	check("sign-in", resp, http.StatusSeeOther, false)
	sc := secCookie(resp, "kw_session")
	switch {
	case sc == nil || sc.Value == "":
		t.Fatal("the sign-in set no kw_session cookie")
	case !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/dashboard/" || sc.Secure:
		t.Errorf("kw_session: HttpOnly=%v SameSite=%v Path=%q Secure=%v; want HttpOnly, Strict, /dashboard/, not Secure over HTTP",
			sc.HttpOnly, sc.SameSite, sc.Path, sc.Secure)
	}
	for _, ck := range resp.Cookies() {
		if ck.MaxAge >= 0 && (!ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/dashboard/") {
			t.Errorf("cookie %s: HttpOnly=%v SameSite=%v Path=%q", ck.Name, ck.HttpOnly, ck.SameSite, ck.Path)
		}
	}

	resp, body = do("GET", "/dashboard/", nil, nil)
	check("apps page", resp, 200, false)
	token := csrfRE.FindStringSubmatch(body)
	if token == nil {
		t.Fatal("the apps page has no CSRF token")
	}
	resp, _ = do("GET", "/dashboard/profile", nil, nil)
	check("profile page", resp, 200, false)
	resp, _ = do("GET", "/dashboard/no/such/page", nil, nil)
	check("404 page", resp, 404, false)
	resp, _ = do("GET", "/dashboard/apps/nope/keys", nil, nil)
	check("an unknown app", resp, 404, false)
	for _, a := range []string{"/dashboard/assets/app.css", "/dashboard/assets/app.js"} {
		resp, _ = do("GET", a, nil, nil)
		check(a, resp, 200, true)
	}
	resp, _ = do("GET", "/dashboard/assets/", nil, nil)
	check("the asset directory", resp, 404, true)
	resp, _ = do("POST", "/dashboard/apps", url.Values{"csrf": {"wrong"}, "name": {"Nope"}}, nil)
	check("a form with a wrong token", resp, 403, false)
	resp, _ = do("POST", "/dashboard/apps", url.Values{"csrf": {htmlUnescape(token[1])}, "name": {"Nope"}}, http.Header{"Sec-Fetch-Site": {"cross-site"}})
	check("a cross-site form", resp, 403, false)
	resp, _ = do("POST", "/dashboard/logout", url.Values{"csrf": {htmlUnescape(token[1])}}, nil)
	check("sign-out", resp, http.StatusSeeOther, false)
	resp, _ = do("GET", "/dashboard/", nil, nil)
	check("signed out", resp, http.StatusSeeOther, false)
	if n := len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)); n != 0 {
		t.Errorf("refused forms created %d apps", n)
	}
}

// secSessionCookie signs in on a fresh client sending header with every
// request (and next, when not "", as the page to go to) and returns the
// kw_session cookie the sign-in sets and its answer.
func secSessionCookie(t *testing.T, s *kwtest.Server, header http.Header, next string) (*http.Cookie, *http.Response) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, form url.Values) (*http.Response, string) {
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp, b.String()
	}
	_, body := send("GET", "/dashboard/login", nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the sign-in page has no CSRF token")
	}
	form := url.Values{"csrf": {htmlUnescape(m[1])}, "username": {"admin"}, "password": {kwtest.AdminPassword}}
	if next != "" {
		form.Set("next", next)
	}
	resp, _ := send("POST", "/dashboard/login", form)
	sc := secCookie(resp, "kw_session")
	if resp.StatusCode != http.StatusSeeOther || sc == nil {
		t.Fatalf("sign-in: %d, no session cookie", resp.StatusCode)
	}
	return sc, resp
}

// The session cookie is Secure when the sign-in came over HTTPS — here
// through a trusted TLS-terminating proxy — and a forged
// X-Forwarded-Proto does not matter when no proxy is trusted. HSTS keeps
// browsers on HTTPS.
func TestSecuritySessionCookieSecureOverHTTPS(t *testing.T) {
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	plain := kwtest.Start(t, kwtest.Options{})
	if sc, _ := secSessionCookie(t, plain, https, ""); sc.Secure {
		t.Error("an untrusted X-Forwarded-Proto made the cookie Secure")
	}
	proxied := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.TrustProxy = true }})
	sc, resp := secSessionCookie(t, proxied, https, "")
	if !sc.Secure || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/dashboard/" {
		t.Errorf("kw_session over HTTPS: Secure=%v HttpOnly=%v SameSite=%v Path=%q", sc.Secure, sc.HttpOnly, sc.SameSite, sc.Path)
	}
	if hsts := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Errorf("no HSTS over HTTPS: %q", hsts)
	}
	if sc, _ := secSessionCookie(t, proxied, nil, ""); sc.Secure {
		t.Error("kw_session is Secure over plain HTTP behind a trusted proxy")
	}
}

// After signing in the browser goes where it was going — but only within
// the dashboard: no open redirect through the sign-in's next.
func TestSecuritySignInRedirectStaysInside(t *testing.T) {
	s := kwtest.Start(t, kwtest.Options{})
	for next, want := range map[string]string{
		"/dashboard/profile":             "/dashboard/profile",
		"/dashboard/audit?action=x":      "/dashboard/audit?action=x",
		"https://evil.example/":          "/dashboard/",
		"//evil.example/dashboard/":      "/dashboard/",
		"/\\evil.example/":               "/dashboard/",
		"/dashboard/\\evil.example/":     "/dashboard/",
		"/dashboard/\r\nSet-Cookie: x=y": "/dashboard/",
		"javascript:alert(1)":            "/dashboard/",
		"/api/admin/apps.php":            "/dashboard/",
	} {
		if _, resp := secSessionCookie(t, s, nil, next); resp.Header.Get("Location") != want {
			got := resp.Header.Get("Location")
			t.Errorf("next %q: redirected to %q, want %q", next, got, want)
		}
	}
}

func secCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// ---- 2. templates and assets

// secUnsafe finds what the CSP would block (or what would need it weakened)
// in a template or page source, read with the HTML tokenizer: inline
// scripts, event-handler and style attributes, style elements, javascript:
// URLs, and URLs to other hosts anywhere but in placeholder attributes
// (grey example text, never fetched).
func secUnsafe(src string) []string {
	// Template actions may hold anything; what they produce is checked on
	// the rendered pages (TestSecurityEveryPageEscapesUserInput).
	src = regexp.MustCompile(`(?s)\{\{.*?\}\}`).ReplaceAllString(src, "T")
	host := regexp.MustCompile(`(?i)(^|[^a-z0-9/])(https?:)?//[a-z0-9-]+(\.[a-z0-9-]+)+`)
	var out []string
	z := html.NewTokenizer(strings.NewReader(src))
	script := ""
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			hasSrc := false
			for _, a := range tok.Attr {
				switch {
				case strings.HasPrefix(a.Key, "on"):
					out = append(out, "event-handler attribute: "+secShort(tok.String()))
				case a.Key == "style":
					out = append(out, "style attribute: "+secShort(tok.String()))
				case a.Key == "src":
					hasSrc = true
				}
				if strings.Contains(strings.ToLower(a.Val), "javascript:") {
					out = append(out, "javascript: URL: "+secShort(tok.String()))
				}
				if a.Key != "placeholder" && host.MatchString(a.Val) {
					out = append(out, "URL to another host: "+secShort(tok.String()))
				}
			}
			switch tok.Data {
			case "style":
				out = append(out, "style element")
			case "script":
				if !hasSrc {
					out = append(out, "inline script: "+secShort(tok.String()))
				}
				script = tok.String()
			}
		case html.EndTagToken:
			script = ""
		case html.TextToken:
			text := string(z.Text())
			if script != "" && strings.TrimSpace(text) != "" {
				out = append(out, "inline script body: "+secShort(script+text))
			}
			if host.MatchString(text) {
				out = append(out, "URL to another host: "+secShort(text))
			}
		}
	}
}

// secUnsafeJS finds the DOM and eval sinks app.js must not use.
func secUnsafeJS(src string) []string {
	var out []string
	for _, r := range []struct{ what, re string }{
		{"eval", `\beval\s*\(`},
		{"new Function", `\bnew\s+Function\b`},
		{"innerHTML/outerHTML assignment", `\.(inner|outer)HTML\s*(\+)?=`},
		{"insertAdjacentHTML", `\binsertAdjacentHTML\b`},
		{"document.write", `\bdocument\.write(ln)?\b`},
		{"string timer", `\bset(Timeout|Interval)\s*\(\s*["'\x60]`},
		{"URL to another host", `(?i)https?://`},
	} {
		for _, m := range regexp.MustCompile(r.re).FindAllString(src, -1) {
			out = append(out, r.what+": "+m)
		}
	}
	return out
}

func secShort(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// The templates and assets work under the strict CSP: no inline script or
// style, no event-handler attributes, no javascript: URLs, nothing loaded
// from another host (no CDN), and app.js uses no eval or HTML sinks. The
// scanners are first shown to catch each thing they look for.
func TestSecurityTemplatesAndAssetsNeedNoUnsafeCSP(t *testing.T) {
	for _, bad := range []string{`<script>alert(1)</script>`, `<script>if (a<b) { go() }</script>`, `<SCRIPT type="module"></SCRIPT>`, `<button onclick="x()">`, `<p style="color:red">`, `<style>p{}</style>`,
		`<a href="javascript:void(0)">`, `<script src="https://cdn.example.com/x.js"></script>`, `<link href="//fonts.example.net/a.css">`,
		`<img src="{{.X}}" ONERROR = "y">`, `<a title="a > b" onclick="x()">`, `<form action="https://evil.example/">`,
		`<svg><circle style="fill:red"/></svg>`} {
		if len(secUnsafe(bad)) == 0 {
			t.Errorf("the scanner misses %s", bad)
		}
	}
	for _, ok := range []string{`<script src="/dashboard/assets/app.js?v={{.Asset}}" defer></script>`, `<input placeholder="https://example.com/x">`,
		`<label>URL (https://…)</label>`, `<p data-confirm="{{.Confirm}}">`, `{{/* a comment with // in it */}}`} {
		if got := secUnsafe(ok); len(got) != 0 {
			t.Errorf("the scanner refuses %s: %v", ok, got)
		}
	}
	for _, bad := range []string{`el.innerHTML = x`, `eval("1")`, `new Function("x")`, `document.write(x)`, `setTimeout("x()", 1)`} {
		if len(secUnsafeJS(bad)) == 0 {
			t.Errorf("the JS scanner misses %s", bad)
		}
	}

	files, err := filepath.Glob("templates/*.html")
	if err != nil || len(files) < 20 {
		t.Fatalf("templates: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range secUnsafe(string(b)) {
			t.Errorf("%s: %s", f, problem)
		}
	}
	css, err := os.ReadFile("assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?i)@import|url\(\s*["']?(https?:)?//|expression\(`).FindAllString(string(css), -1) {
		t.Errorf("app.css: %s (loads from elsewhere)", m)
	}
	js, err := os.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range secUnsafeJS(string(js)) {
		t.Errorf("app.js: %s", problem)
	}
}

// ---- 3. CSRF tokens and labels on every form

// secCheckPages reports crawled pages that did not answer 200 HTML, POST
// forms without a CSRF token, and form fields without a label.
func secCheckPages(t *testing.T, pages []*secPage) {
	t.Helper()
	for _, p := range pages {
		if p.Status != 200 {
			t.Errorf("%s: status %d: %s", p.Path, p.Status, secShort(p.Text()))
		}
		if p.Doc == nil {
			continue
		}
		labelled := map[string]bool{}
		for _, l := range secAll(p.Doc, "label") {
			if id, ok := secAttr(l, "for"); ok {
				labelled[id] = true
			}
		}
		for _, f := range secAll(p.Doc, "form") {
			if m, _ := secAttr(f, "method"); !strings.EqualFold(m, "post") {
				continue
			}
			action, _ := secAttr(f, "action")
			u, _ := url.Parse(action)
			if secFormValues(f).Get("csrf") == "" && (u == nil || u.Query().Get("csrf") == "") {
				t.Errorf("%s: %s has no CSRF token", p.Path, secDescribe(f))
			}
		}
		for _, tag := range []string{"input", "select", "textarea"} {
			for _, n := range secAll(p.Doc, tag) {
				typ, _ := secAttr(n, "type")
				switch strings.ToLower(typ) {
				case "hidden", "submit", "button", "reset", "image":
					continue
				}
				if l, ok := secAttr(n, "aria-label"); ok && strings.TrimSpace(l) != "" {
					continue
				}
				if _, ok := secAttr(n, "aria-labelledby"); ok {
					continue
				}
				if id, ok := secAttr(n, "id"); ok && labelled[id] {
					continue
				}
				wrapped := false
				for a := n.Parent; a != nil; a = a.Parent {
					if a.Type == html.ElementNode && a.Data == "label" {
						wrapped = true
					}
				}
				if !wrapped {
					t.Errorf("%s: %s has no label", p.Path, secDescribe(n))
				}
			}
		}
	}
}

// Every page reachable from /dashboard/ (with data on every page) answers
// 200; every POST form carries a CSRF token (hidden field, or ?csrf= in the
// action of an upload form); every field has a label. The sign-in page and
// the confirmation pages of destructive forms are checked too.
func TestSecurityEveryFormCarriesCSRF(t *testing.T) {
	s := newSite(t)
	_, app, key := secSeed(t, s, secPlain)
	login := &secPage{Path: "/dashboard/login", webPage: s.get("/dashboard/login")}
	login.Doc, _ = html.Parse(strings.NewReader(login.Body))
	s.signIn()
	pages := append(secCrawl(t, s, secExtra(app, key)...), login)
	results := secResultPages(t, s, app)

	// A form that asks first (data-confirm) shows, without JavaScript, a
	// confirmation page of its own: that page's form is checked too, and
	// asking must change nothing.
	before, _ := secFingerprint(t, s)
	asked := map[string]bool{}
	for _, f := range secForms(pages) {
		if _, confirm := secAttr(f.Node, "data-confirm"); !confirm || f.Method != "post" || asked[f.Action+" "+f.Values.Get("action")] {
			continue
		}
		asked[f.Action+" "+f.Values.Get("action")] = true
		p := &secPage{Path: "POST " + f.Action + " (from " + f.Page + ")", webPage: secSubmit(t, s, f, s.csrf, nil)}
		p.Doc, _ = html.Parse(strings.NewReader(p.Body))
		if !strings.Contains(p.Body, `name="confirm" value="yes"`) {
			t.Errorf("%s: no confirmation asked: %d %s", p.Path, p.Status, secShort(p.Text()))
		}
		pages = append(pages, p)
	}
	if after, _ := secFingerprint(t, s); after != before || len(asked) < 10 {
		t.Errorf("%d forms asked for confirmation; data changed: %v", len(asked), after != before)
	}
	secCheckPages(t, append(pages, results...))

	// The crawl must have seen the panel, not just the app list.
	posts := 0
	for _, f := range secForms(pages) {
		if f.Method == "post" {
			posts++
		}
	}
	if len(pages) < 40 || posts < 60 {
		t.Errorf("the crawl saw only %d pages with %d POST forms", len(pages), posts)
	}
	t.Logf("crawled %d pages, %d POST forms", len(pages), posts)
}

// ---- 4. POSTs without the token

// secFingerprint hashes what the admin API says about everything the
// owner can change, and the audit log: a refused form must change none of it.
func secFingerprint(t *testing.T, s *site) (string, int) {
	t.Helper()
	h := sha256.New()
	get := func(path string) *kwtest.Reply {
		r := s.MustAdmin("GET", path, nil)
		h.Write([]byte(path + "\n"))
		h.Write(r.Raw)
		return r
	}
	apps := get("/api/admin/apps.php").Body["apps"].([]any)
	for _, a := range apps {
		id := url.QueryEscape(a.(map[string]any)["app_id"].(string))
		get("/api/admin/apps.php?app_id=" + id)
		for _, p := range []string{"keys.php?limit=1000&", "sessions.php?", "hwid-resets.php?", "accounts.php?", "trials.php?",
			"texts.php?", "slides.php?", "social-links.php?", "changelog.php?", "pricing.php?", "orders.php?", "subscriptions.php?",
			"updates.php?", "webhooks.php?", "resellers.php?"} {
			get("/api/admin/" + p + "app_id=" + id)
		}
	}
	get("/api/admin/profile.php")
	get("/api/admin/tokens.php")
	audit, _ := get("/api/admin/audit.php?limit=1000").Body["entries"].([]any)
	return fmt.Sprintf("%x", h.Sum(nil)), len(audit)
}

// secSubmit posts form f's values as its page would (multipart for upload
// forms), with the CSRF token replaced by csrf ("" leaves it out) and the
// extra headers.
func secSubmit(t *testing.T, s *site, f *secForm, csrf string, header http.Header) *webPage {
	t.Helper()
	vals := url.Values{}
	for k, v := range f.Values {
		if k != "csrf" {
			vals[k] = v
		}
	}
	u, _ := url.Parse(f.Action)
	q := u.Query()
	inURL := q.Has("csrf")
	if inURL {
		q.Del("csrf")
		if csrf != "" {
			q.Set("csrf", csrf)
		}
		u.RawQuery = q.Encode()
	} else if csrf != "" {
		vals.Set("csrf", csrf)
	}
	var body bytes.Buffer
	ct := "application/x-www-form-urlencoded"
	if strings.HasPrefix(f.Enctype, "multipart/") {
		mw := multipart.NewWriter(&body)
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range vals[k] {
				mw.WriteField(k, v)
			}
		}
		fw, _ := mw.CreateFormFile("file", "evil.bin")
		fw.Write([]byte("uploaded by another site"))
		mw.Close()
		ct = mw.FormDataContentType()
	} else {
		body.WriteString(vals.Encode())
	}
	req, _ := http.NewRequest("POST", s.URL+u.RequestURI(), &body)
	req.Header.Set("Content-Type", ct)
	for k, v := range header {
		req.Header[k] = v
	}
	return s.send(req)
}

// Crawling the panel changes nothing. Every POST form the crawl finds (and
// those of the pages only a POST shows) is refused (403, nothing changed) when
// sent without its CSRF token, with a wrong one, or with the right one from
// another site (Sec-Fetch-Site: cross-site or same-site, or a foreign
// Origin). The crawl
// must include the forms that matter most: create app, generate keys, ban a
// key, app settings, delete a webhook, publish a release, top up a
// reseller, change the e-mail.
func TestSecurityPostsWithoutTheTokenChangeNothing(t *testing.T) {
	s := newSite(t)
	_, app, key := secSeed(t, s, secPlain)
	s.signIn()
	// Looking changes nothing: no page does anything on GET.
	unseen, _ := secFingerprint(t, s)
	pages := secCrawl(t, s, secExtra(app, key)...)
	if seen, _ := secFingerprint(t, s); seen != unseen {
		t.Error("crawling the pages (GET only) changed data")
	}
	pages = append(pages, secResultPages(t, s, app)...)
	s.get("/dashboard/")
	token := s.csrf

	byAction := map[string]*secForm{}
	var actions []string
	for _, f := range secForms(pages) {
		if f.Method != "post" {
			continue
		}
		key := f.Action + " " + f.Values.Get("action")
		if _, dup := byAction[key]; !dup {
			byAction[key] = f
			actions = append(actions, key)
		}
	}
	sort.Strings(actions)
	for _, want := range []struct{ what, re string }{
		{"create app", `^/dashboard/apps $`},
		{"generate keys", `/keys/generate `},
		{"ban a key", `/keys/[^/]+/action ban$`},
		{"app settings", `^/dashboard/apps/[^/]+/settings `},
		{"delete a webhook", `/webhooks/\d+/delete `},
		{"publish a release", `/updates/\d+/publish `},
		{"top up a reseller", `/resellers/[^/]+/balance `},
		{"change the e-mail", `^/dashboard/profile/email `},
		{"upload an artifact", `/updates/\d+/upload\?`},
		{"sign out", `^/dashboard/logout `},
	} {
		found := false
		for _, a := range actions {
			found = found || regexp.MustCompile(want.re).MatchString(a)
		}
		if !found {
			t.Errorf("the crawl found no form to %s", want.what)
		}
	}

	before, auditBefore := secFingerprint(t, s)
	if again, _ := secFingerprint(t, s); again != before {
		t.Fatal("the fingerprint changes by itself; it cannot show that nothing changed")
	}
	apps := len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any))
	keyPath := "/api/admin/keys.php?app_id=" + app.ID + "&license_key=" + url.QueryEscape(key)
	status := s.MustAdmin("GET", keyPath, nil).Obj("key")["status"]
	for _, a := range actions {
		f := byAction[a]
		for _, try := range []struct {
			what   string
			csrf   string
			header http.Header
		}{
			{"without a token", "", nil},
			{"with a wrong token", "x" + token[1:], nil},
			{"with another session's token", "dGhpcyBpcyBub3QgdGhlIHRva2VuIG9mIHRoaXMgc2Vzc2lvbg", http.Header{"X-CSRF-Token": {"nope"}}},
			{"from another site", token, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
			{"from a sibling site", token, http.Header{"Sec-Fetch-Site": {"same-site"}}},
			{"from another origin", token, http.Header{"Origin": {"https://evil.example"}}},
		} {
			p := secSubmit(t, s, f, try.csrf, try.header)
			if p.Status != http.StatusForbidden {
				t.Errorf("POST %s (from %s) %s: status %d at %s, want 403", f.Action, f.Page, try.what, p.Status, p.URL)
			}
		}
	}
	t.Logf("%d POST forms refused six ways each", len(actions))

	after, auditAfter := secFingerprint(t, s)
	if after != before || auditAfter != auditBefore {
		t.Errorf("refused forms changed data: fingerprint %s → %s, audit entries %d → %d", before[:12], after[:12], auditBefore, auditAfter)
	}
	if n := len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)); n != apps {
		t.Errorf("apps: %d, was %d", n, apps)
	}
	if st := s.MustAdmin("GET", keyPath, nil).Obj("key")["status"]; st != status {
		t.Errorf("key %s is %v after refused forms, was %v", key, st, status)
	}
	// The session still works: nothing signed it out.
	s.get("/dashboard/").must(t)
}

// ---- 5. escaping

// secPayload is the markup planted in field n: a script element and an
// attribute break-out, each naming n.
func secPayload(n int) string {
	return fmt.Sprintf(`"><img src=x onerror=alert(%d)><script>alert("xss-%d")</script>`, n, n)
}

// Markup from users (apps' names, key notes, devices, customers' accounts
// and reset reasons, content, releases, webhooks, resellers, the owner's
// token and e-mail — and so the audit log) is shown escaped on every page:
// no page carries the planted markup, and most planted values are shown
// (escaped) somewhere, which proves the pages rendered them. Pages hold no
// inline scripts or event handlers.
func TestSecurityEveryPageEscapesUserInput(t *testing.T) {
	s := newSite(t)
	fields := map[int]string{}
	sd, app, key := secSeed(t, s, func(field, kind string) string {
		n := len(fields) + 1
		fields[n] = field
		switch kind {
		case "url":
			return "https://example.com/?q=" + secPayload(n)
		case "email":
			return `"><img src=x onerror=alert(` + fmt.Sprint(n) + `)>@example.com`
		}
		return secPayload(n)
	})
	s.signIn()
	pages := secCrawl(t, s, secExtra(app, key)...)
	pages = append(pages, secResultPages(t, s, app)...)
	secCheckPages(t, pages)

	raw := regexp.MustCompile(`(?i)<script>alert\(|<img src=x onerror`)
	shown := map[int]bool{}
	check := func(p *secPage) {
		t.Helper()
		if p.Doc == nil {
			return
		}
		if m := raw.FindAllString(p.Body, -1); m != nil {
			t.Errorf("%s: unescaped user markup %q", p.Path, m)
		}
		for n := range fields {
			if strings.Contains(p.Body, fmt.Sprintf(`&lt;script&gt;alert(&#34;xss-%d&#34;)`, n)) ||
				strings.Contains(p.Body, fmt.Sprintf(`onerror=alert(%d)&gt;`, n)) {
				shown[n] = true
			}
		}
		secWalk(p.Doc, func(e *html.Node) {
			for _, a := range e.Attr {
				if strings.HasPrefix(a.Key, "on") || a.Key == "style" || (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					t.Errorf("%s: %s has %s=%q", p.Path, secDescribe(e), a.Key, a.Val)
				}
			}
			if e.Data == "script" {
				src, hasSrc := secAttr(e, "src")
				typ, _ := secAttr(e, "type")
				if hasSrc && !strings.HasPrefix(src, "/dashboard/assets/") || !hasSrc && typ != "application/json" {
					t.Errorf("%s: %s (src %q type %q) is neither our asset nor JSON data", p.Path, secDescribe(e), src, typ)
				}
			}
		})
	}
	for _, p := range pages {
		check(p)
	}
	// Every value the API took must show up (escaped) somewhere: that
	// proves the pages rendered it, and that it reads as typed (the key
	// history once showed "\u003c" for "<").
	var missing []string
	for n, f := range fields {
		if !shown[n] && !secIn(sd.refused, f) {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	t.Logf("%d fields planted (%d refused the payload by the API: %v); %d shown escaped", len(fields), len(sd.refused), sd.refused, len(shown))
	if len(missing) > 0 {
		t.Errorf("planted values not found escaped on any page: %v", missing)
	}

	// Reflected input: markup in a page's path or query, and in every
	// field (hidden ones too) of every POST form, comes back escaped — in
	// error pages, refusals, flashes and confirmation pages.
	get := func(path string) *secPage {
		p := &secPage{Path: path, webPage: s.get(path)}
		p.Doc, _ = html.Parse(strings.NewReader(p.Body))
		return p
	}
	base := "/dashboard/apps/" + url.PathEscape(app.ID)
	n := 900
	pl := func() string { n++; return secPayload(n) }
	qp := func() string { return url.QueryEscape(pl()) }
	pp := func() string { return url.PathEscape(pl()) }
	for _, path := range []string{base + "/keys?q=" + qp() + "&hwid=" + qp() + "&status=" + qp() + "&key_type=" + qp() + "&limit=" + qp(),
		"/dashboard/audit?action=" + qp() + "&target=" + qp() + "&actor_id=" + qp(), base + "/audit?action=" + qp() + "&since=" + qp(),
		base + "/content/texts?license_key=" + qp(), base + "/updates/explain?v=" + qp() + "&channel=" + qp() + "&hwid=" + qp() + "&license_key=" + qp(),
		base + "/accounts?q=" + qp(), base + "/resets?status=" + qp(), base + "/analytics?days=" + qp() + "&range=" + qp(),
		base + "/keys/" + pp(), base + "/accounts/" + pp(), base + "/resellers/" + pp(), base + "/webhooks/" + pp(), base + "/updates/" + pp(),
		"/dashboard/apps/" + pp() + "/keys", "/dashboard/" + pp(), "/dashboard/login?next=" + qp()} {
		check(get(path))
	}
	s.get("/dashboard/")
	tried := map[string]bool{}
	for _, f := range secForms(pages) {
		key := f.Action + " " + f.Values.Get("action")
		if f.Method != "post" || tried[key] || f.Action == "/dashboard/logout" || strings.HasPrefix(f.Enctype, "multipart/") {
			continue
		}
		tried[key] = true
		form := url.Values{}
		secWalk(f.Node, func(e *html.Node) {
			if name, _ := secAttr(e, "name"); name != "" && name != "csrf" && name != "confirm" && (e.Data == "input" || e.Data == "textarea" || e.Data == "select") {
				form.Set(name, pl())
			}
		})
		p := &secPage{Path: "POST " + f.Action + " (markup in every field)", webPage: s.post(f.Action, form)}
		p.Doc, _ = html.Parse(strings.NewReader(p.Body))
		check(p)
		if p.Status >= 500 {
			t.Errorf("%s: status %d: %s", p.Path, p.Status, secShort(p.Text()))
		}
	}
	t.Logf("reflected: %d pages, %d forms", 16, len(tried))
	if p := s.get("/dashboard/"); p.Status != 200 || p.URL != "/dashboard/" {
		t.Errorf("signed out by the forms (so later ones showed only the sign-in page): %d at %s", p.Status, p.URL)
	}
}

func secIn(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
