package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

func TestSignedOutVisitorsAreSentToSignIn(t *testing.T) {
	s := newSite(t)
	for _, path := range []string{"/", "/dashboard/", "/dashboard/apps/nope/keys", "/dashboard/profile"} {
		p := s.get(path)
		if p.URL != "/dashboard/login" || p.Status != 200 || !p.Has("Sign in") {
			t.Errorf("GET %s: %d at %s, want the sign-in page", path, p.Status, p.URL)
		}
	}
	// A POST without a session changes nothing and also lands there.
	p := s.post("/dashboard/apps", url.Values{"name": {"x"}, "version": {"1"}})
	if p.URL != "/dashboard/login" {
		t.Errorf("POST without session: at %s", p.URL)
	}
	if n := len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)); n != 0 {
		t.Errorf("%d apps after a signed-out POST, want 0", n)
	}
}

func TestSignInAndOut(t *testing.T) {
	s := newSite(t)
	s.get("/dashboard/login")
	p := s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {"wrong password"}})
	if p.Status != http.StatusUnauthorized || !p.Has("Wrong username, password or code.") {
		t.Fatalf("wrong password: %d %q", p.Status, p.Text())
	}
	if strings.Contains(p.Body, "wrong password") {
		t.Error("the sign-in form echoes the password")
	}

	// The session cookie: HttpOnly, SameSite=Strict, scoped to the dashboard.
	s.get("/dashboard/login")
	form := url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}, "csrf": {s.csrf}, "next": {"/dashboard/profile"}}
	req, _ := http.NewRequest("POST", s.URL+"/dashboard/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Jar: s.c.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/profile" {
		t.Fatalf("sign-in: %d to %q, want 303 to the page asked for", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "kw_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/dashboard/" || session.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/dashboard/, not Secure over plain HTTP", session)
	}
	home := s.get("/dashboard/").must(t)
	if !home.Has("Apps") || !home.Has("admin") {
		t.Errorf("home after sign-in: %q", home.Text())
	}

	// Signing out ends the token itself: the old cookie no longer works.
	s.post("/dashboard/logout", nil)
	replay, _ := http.NewRequest("GET", s.URL+"/dashboard/", nil)
	replay.AddCookie(&http.Cookie{Name: "kw_session", Value: session.Value})
	p = s.send(replay)
	if p.URL != "/dashboard/login" {
		t.Errorf("old session after sign-out: at %s, want the sign-in page", p.URL)
	}
}

func TestSignInRedirectStaysInTheDashboard(t *testing.T) {
	s := newSite(t)
	for _, next := range []string{"https://evil.example/", "//evil.example/", "/api/admin/apps.php", "/dashboard/\\evil"} {
		s.get("/dashboard/login")
		p := s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}, "next": {next}})
		if p.URL != "/dashboard/" {
			t.Errorf("next=%q: landed at %s, want /dashboard/", next, p.URL)
		}
		s.post("/dashboard/logout", nil)
	}
}

func TestSignInWithTwoFactor(t *testing.T) {
	s := newSite(t)
	secret := enableTOTP(t, s)

	s.get("/dashboard/login")
	p := s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	if p.Status != 200 || !p.Has("Code from your authenticator app") {
		t.Fatalf("after the password: %d %q, want the code step", p.Status, p.Text())
	}
	if s.get("/dashboard/").URL != "/dashboard/login" {
		t.Fatal("the password alone opened the dashboard")
	}
	// get() replaced the form's token; ask for the code form again.
	s.get("/dashboard/login")
	s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	p = s.post("/dashboard/login/2fa", url.Values{"code": {"000000"}})
	if p.Status != http.StatusUnauthorized || !p.Has("Wrong username, password or code.") {
		t.Fatalf("wrong code: %d %q", p.Status, p.Text())
	}
	p = s.post("/dashboard/login/2fa", url.Values{"code": {kwtest.TOTP(t, secret, s.Clock.Now())}})
	if p.Status != 200 || p.URL != "/dashboard/" {
		t.Fatalf("right code: %d at %s: %q", p.Status, p.URL, p.Text())
	}
}

// A code sent after the first step's token expired (5 minutes) sends the
// owner back to the password, saying why, instead of refusing code after
// code.
func TestSignInTwoFactorStepExpires(t *testing.T) {
	s := newSite(t)
	secret := enableTOTP(t, s)
	s.get("/dashboard/login")
	s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	s.Clock.Advance(6 * time.Minute)
	p := s.post("/dashboard/login/2fa", url.Values{"code": {kwtest.TOTP(t, secret, s.Clock.Now())}})
	if p.Status != http.StatusUnauthorized || !p.Has("The sign-in took too long; enter your password again.") ||
		p.Has("Code from your authenticator app") {
		t.Fatalf("code after the step expired: %d %q", p.Status, p.Text())
	}
	if s.get("/dashboard/").URL != "/dashboard/login" {
		t.Fatal("an expired first step opened the dashboard")
	}
}

func TestSessionCookieIsSecureOverHTTPS(t *testing.T) {
	s := newSite(t, kwtest.Options{Configure: func(c *config.Config) { c.TrustProxy = true }})
	s.get("/dashboard/login")
	form := url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}, "csrf": {s.csrf}}
	req, _ := http.NewRequest("POST", s.URL+"/dashboard/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https") // a TLS-terminating proxy in front
	resp, err := (&http.Client{Jar: s.c.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var secure bool
	for _, c := range resp.Cookies() {
		if c.Name == "kw_session" {
			secure = c.Secure && c.HttpOnly && c.SameSite == http.SameSiteStrictMode
		}
	}
	if resp.StatusCode != http.StatusSeeOther || !secure {
		t.Errorf("sign-in forwarded as https: %d, session cookie Secure+HttpOnly+Strict = %v", resp.StatusCode, secure)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no HSTS on a reply over HTTPS")
	}
}
