package dashboard_test

// Security tests of the panel's forms: a CSRF token on every form (and a
// label on every field) of every crawled page, and every POST without the
// token, or from another site, refused with nothing changed.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/kwtest"
)

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
// the confirmation pages of destructive forms are checked too. On both engines:
// every page's queries run on PostgreSQL as on SQLite.
func TestSecurityEveryFormCarriesCSRF(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := newSite(t, kwtest.Options{Engine: engine})
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
	})
}

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
	// A wrong token differs from the real one in its first character
	// (whatever that is: "x"+token[1:] was the real token 1 time in 64).
	wrong := "x" + token[1:]
	if token[0] == 'x' {
		wrong = "y" + token[1:]
	}
	for _, a := range actions {
		f := byAction[a]
		for _, try := range []struct {
			what   string
			csrf   string
			header http.Header
		}{
			{"without a token", "", nil},
			{"with a wrong token", wrong, nil},
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
