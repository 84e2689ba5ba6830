package dashboard_test

// Security tests of the panel's answers: the headers of every answer, the
// session cookie, the sign-in's redirect, and templates and assets that need
// no 'unsafe-inline'/'unsafe-eval' in the Content-Security-Policy.

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// The CSP the panel promises: nothing inline, nothing from elsewhere.
const secCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Every kind of answer — signed out and in, a page, a 404, an asset, a
// refused form, the sign-in's redirect — carries the security headers;
// only assets may be cached, and the session cookie is HttpOnly,
// SameSite=Strict, scoped to /dashboard/ (not Secure over plain HTTP).
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	s := newSite(t)
	do := secClient(t, s.Server)
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

// secClient is a client of s with its own cookie jar that does not follow
// redirects: do sends a request (form-encoded when form is not nil, with
// extra header fields) and returns the answer and its body.
func secClient(t *testing.T, s *kwtest.Server) func(method, path string, form url.Values, header http.Header) (*http.Response, string) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(method, path string, form url.Values, header http.Header) (*http.Response, string) {
		t.Helper()
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
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
}

// secSessionCookie signs in on a fresh client sending header with every
// request (and next, when not "", as the page to go to) and returns the
// kw_session cookie the sign-in sets and its answer.
func secSessionCookie(t *testing.T, s *kwtest.Server, header http.Header, next string) (*http.Cookie, *http.Response) {
	t.Helper()
	do := secClient(t, s)
	send := func(method, path string, form url.Values) (*http.Response, string) {
		return do(method, path, form, header)
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
