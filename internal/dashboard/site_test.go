package dashboard_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/kwtest"
)

// site is a browser-like client of the dashboard of a real keyward server:
// a cookie jar, redirects followed, and the CSRF token of the last page
// shown added to every form it posts. The browser tests (browser_test.go)
// drive a real Chromium; these tests speak HTTP directly.
type site struct {
	*kwtest.Server
	t    *testing.T
	c    *http.Client
	csrf string
}

// webPage is one answer of the dashboard.
type webPage struct {
	Status int
	URL    string
	Body   string
	Header http.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// newSite starts a server (SQLite unless o says otherwise) and a client.
func newSite(t *testing.T, o ...kwtest.Options) *site {
	t.Helper()
	var opts kwtest.Options
	if len(o) > 0 {
		opts = o[0]
	}
	srv := kwtest.Start(t, opts)
	jar, _ := cookiejar.New(nil)
	return &site{Server: srv, t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// send does one request and remembers the page's CSRF token.
func (s *site) send(req *http.Request) *webPage {
	s.t.Helper()
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := &webPage{Status: resp.StatusCode, URL: resp.Request.URL.Path, Body: string(b), Header: resp.Header}
	if m := csrfRE.FindStringSubmatch(p.Body); m != nil {
		s.csrf = html.UnescapeString(m[1])
	}
	return p
}

// get fetches a dashboard path.
func (s *site) get(path string) *webPage {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	return s.send(req)
}

// post submits a form to path with the current CSRF token (unless form
// sets "csrf" itself).
func (s *site) post(path string, form url.Values) *webPage {
	s.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", s.csrf)
	}
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.send(req)
}

// signIn signs the test admin in through the sign-in form.
func (s *site) signIn() {
	s.t.Helper()
	s.signInAs("admin", kwtest.AdminPassword)
}

func (s *site) signInAs(user, password string) {
	s.t.Helper()
	s.get("/dashboard/login")
	p := s.post("/dashboard/login", url.Values{"username": {user}, "password": {password}})
	if p.Status != 200 || p.URL != "/dashboard/" {
		s.t.Fatalf("sign-in: %d at %s: %s", p.Status, p.URL, p.Text())
	}
}

// must fails the test unless the page answered 200.
func (p *webPage) must(t *testing.T) *webPage {
	t.Helper()
	if p.Status != 200 {
		t.Fatalf("%s: status %d: %s", p.URL, p.Status, p.Text())
	}
	return p
}

// Text is the page's visible text (tags removed, whitespace collapsed),
// which assertions read so that markup changes do not break them.
func (p *webPage) Text() string {
	z := html.NewTokenizer(strings.NewReader(p.Body))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.StartTagToken:
			if n, _ := z.TagName(); string(n) == "script" || string(n) == "style" || string(n) == "title" {
				skip++
			}
		case html.EndTagToken:
			if n, _ := z.TagName(); (string(n) == "script" || string(n) == "style" || string(n) == "title") && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		}
	}
}

// Has reports whether the visible text contains s.
func (p *webPage) Has(s string) bool { return strings.Contains(p.Text(), s) }

// flash is the page's message after a form (empty when none).
func (p *webPage) flash() string {
	m := regexp.MustCompile(`(?s)<p class="flash[^"]*"[^>]*>(.*?)</p>`).FindStringSubmatch(p.Body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(strings.TrimSpace(m[1]))
}

// enableTOTP turns two-factor sign-in on for the test admin through the
// admin API and returns the authenticator secret. The clock moves on a
// minute, since the confirming code may not be used again.
func enableTOTP(t testing.TB, s *site) string {
	t.Helper()
	secret := s.MustAdmin("POST", "/api/admin/2fa.php", map[string]any{"action": "enrol"}).Str("secret")
	s.MustAdmin("POST", "/api/admin/2fa.php", map[string]any{"action": "confirm", "code": kwtest.TOTP(t, secret, s.Clock.Now())})
	s.Clock.Advance(time.Minute)
	return secret
}

// linkHref is the href of the first link in markup whose text is label
// ("" when there is none), unescaped so that it can be fetched.
func linkHref(markup, label string) string {
	m := regexp.MustCompile(`<a href="([^"]+)"[^>]*>` + regexp.QuoteMeta(label) + `</a>`).FindStringSubmatch(markup)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// htmlUnescape undoes the template's escaping of an attribute value.
func htmlUnescape(s string) string { return html.UnescapeString(s) }
