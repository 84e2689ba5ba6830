package dashboard_test

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/kwtest"
)

// profileSession is the dashboard session cookie in the site's jar.
func profileSession(s *site) string {
	u, _ := url.Parse(s.URL + "/dashboard/")
	for _, c := range s.c.Jar.Cookies(u) {
		if c.Name == "kw_session" {
			return c.Value
		}
	}
	return ""
}

// profileOf reads the admin's profile through the API with a fresh sign-in.
func profileOf(s *site, password string) map[string]any {
	s.t.Helper()
	r := s.AdminAs(s.LoginAdmin("admin", password), "GET", "/api/admin/profile.php", nil)
	if r.Status != 200 {
		s.t.Fatalf("profile.php: %s", r)
	}
	return r.Obj("profile")
}

func TestProfilePasswordChange(t *testing.T) {
	s := newSite(t)
	old := s.LoginAdmin("admin", kwtest.AdminPassword)
	s.signIn()
	p := s.get("/dashboard/profile").must(t)
	if !p.Has("Change password") || !p.Has("admin") || !strings.Contains(p.Body, `aria-current="page">admin</a>`) {
		t.Fatalf("profile page: %s", p.Text())
	}
	before := profileSession(s)
	const newPassword = "a brand new password 2026"

	// Refused inputs: the message, and nothing changes.
	p = s.post("/dashboard/profile/password", url.Values{"current_password": {kwtest.AdminPassword}, "new_password": {newPassword}, "repeat_password": {"something else"}})
	if p.URL != "/dashboard/profile" || !strings.Contains(p.flash(), "differ") {
		t.Errorf("repeat differs: at %s, flash %q", p.URL, p.flash())
	}
	p = s.post("/dashboard/profile/password", url.Values{"current_password": {"not my password"}, "new_password": {newPassword}, "repeat_password": {newPassword}})
	if p.URL != "/dashboard/profile" || p.flash() == "" || !strings.Contains(p.Body, `class="flash error"`) {
		t.Errorf("wrong current password: at %s, flash %q", p.URL, p.flash())
	}
	if r := s.AdminAs(old, "GET", "/api/admin/profile.php", nil); r.Status != 200 {
		t.Fatalf("a refused change ended the old sign-in: %s", r)
	}
	s.LoginAdmin("admin", kwtest.AdminPassword) // the old password still works
	if profileSession(s) != before {
		t.Fatal("a refused change replaced the session")
	}

	// The change: this browser continues with the new token; the old JWT and
	// the old password no longer work, the new password does.
	p = s.post("/dashboard/profile/password", url.Values{"current_password": {kwtest.AdminPassword}, "new_password": {newPassword}, "repeat_password": {newPassword}})
	if p.Status != 200 || p.URL != "/dashboard/profile" || !strings.Contains(p.flash(), "Password changed") {
		t.Fatalf("change: %d at %s, flash %q", p.Status, p.URL, p.flash())
	}
	after := profileSession(s)
	if after == "" || after == before {
		t.Fatal("the session cookie was not replaced by the new token")
	}
	if p := s.get("/dashboard/").must(t); p.URL != "/dashboard/" || !p.Has("Apps") {
		t.Errorf("next page after the change: at %s", p.URL)
	}
	if r := s.AdminAs(old, "GET", "/api/admin/profile.php", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("old JWT after the change: %s, want 401", r)
	}
	if r := s.AdminAs(before, "GET", "/api/admin/profile.php", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("the page's old session token after the change: %s, want 401", r)
	}
	if r := s.Do("POST", "/api/admin/login.php", nil, []byte(`{"username":"admin","password":"`+kwtest.AdminPassword+`"}`)); r.Status == 200 {
		t.Error("the old password still signs in")
	}
	s.LoginAdmin("admin", newPassword)
	s.post("/dashboard/logout", nil)
	s.signInAs("admin", newPassword)
}

func TestProfileEmailChange(t *testing.T) {
	s := newSite(t)
	s.signIn()
	s.get("/dashboard/profile").must(t)
	p := s.post("/dashboard/profile/email", url.Values{"email": {"owner@example.com"}, "password": {"wrong password"}})
	if p.URL != "/dashboard/profile" || !strings.Contains(p.Body, `class="flash error"`) {
		t.Errorf("wrong password: at %s, flash %q", p.URL, p.flash())
	}
	if e := profileOf(s, kwtest.AdminPassword)["email"]; e == "owner@example.com" {
		t.Fatal("a refused change changed the e-mail")
	}
	p = s.post("/dashboard/profile/email", url.Values{"email": {"not an address"}, "password": {kwtest.AdminPassword}})
	if !strings.Contains(p.Body, `class="flash error"`) {
		t.Errorf("bad address: flash %q", p.flash())
	}
	p = s.post("/dashboard/profile/email", url.Values{"email": {" owner@example.com "}, "password": {kwtest.AdminPassword}})
	if p.flash() != "E-mail changed." || !p.Has("owner@example.com") {
		t.Errorf("change: flash %q", p.flash())
	}
	if e := profileOf(s, kwtest.AdminPassword)["email"]; e != "owner@example.com" {
		t.Errorf("profile.php e-mail %v", e)
	}
}

var (
	profileQR      = regexp.MustCompile(`<img class="qr" src="data:image/png;base64,([^"]+)" alt="QR code[^"]*"`)
	profileSecret  = regexp.MustCompile(`<code id="totp-secret" class="secret">([A-Z2-7=]+)</code>`)
	profileCodes   = regexp.MustCompile(`(?s)<ul class="codes mono" id="recovery-codes">(.*?)</ul>`)
	profileCodeLis = regexp.MustCompile(`<li>([^<]+)</li>`)
)

// profileEnrol starts enrolment through the page: the QR code (a real PNG)
// and the secret.
func profileEnrol(t *testing.T, s *site) string {
	t.Helper()
	s.get("/dashboard/profile").must(t)
	p := s.post("/dashboard/profile/2fa/enrol", nil).must(t)
	m := profileQR.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no QR image: %s", p.Body)
	}
	b, err := base64.StdEncoding.DecodeString(html.UnescapeString(m[1])) // "+" is written &#43;
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 21 {
		t.Fatalf("QR is not a PNG: %v", err)
	}
	sec := profileSecret.FindStringSubmatch(p.Body)
	if sec == nil || !strings.Contains(p.Body, `data-copy="totp-secret"`) {
		t.Fatalf("no secret for manual entry: %s", p.Text())
	}
	return sec[1]
}

func profileRecoveryCodes(t *testing.T, p *webPage) []string {
	t.Helper()
	m := profileCodes.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no recovery codes: %s", p.Text())
	}
	var out []string
	for _, li := range profileCodeLis.FindAllStringSubmatch(m[1], -1) {
		out = append(out, li[1])
	}
	return out
}

// signInWithCode signs out and in again through the two steps.
func profileSignIn2FA(t *testing.T, s *site, code string) *webPage {
	t.Helper()
	s.post("/dashboard/logout", nil)
	s.get("/dashboard/login")
	p := s.post("/dashboard/login", url.Values{"username": {"admin"}, "password": {kwtest.AdminPassword}})
	if p.Status != 200 || !p.Has("Code from your authenticator app") || p.URL != "/dashboard/login" {
		t.Fatalf("sign-in did not ask for the code: %d at %s: %s", p.Status, p.URL, p.Text())
	}
	return s.post("/dashboard/login/2fa", url.Values{"code": {code}})
}

func TestProfileTwoFactor(t *testing.T) {
	s := newSite(t)
	s.signIn()
	if p := s.get("/dashboard/profile").must(t); !p.Has("Turn on two-factor sign-in") || !p.Has("off") {
		t.Fatalf("profile without 2FA: %s", p.Text())
	}

	// A wrong code: the API's message, and 2FA stays off.
	profileEnrol(t, s)
	p := s.post("/dashboard/profile/2fa/confirm", url.Values{"code": {"000000"}})
	if p.URL != "/dashboard/profile" || !strings.Contains(p.Body, `class="flash error"`) || !strings.Contains(p.flash(), "Start the enrolment again") {
		t.Errorf("wrong code: at %s, flash %q", p.URL, p.flash())
	}
	if profileOf(s, kwtest.AdminPassword)["two_factor"] != false {
		t.Fatal("2FA on after a wrong code")
	}

	// Enrol and confirm: 10 recovery codes, shown once.
	secret := profileEnrol(t, s)
	p = s.post("/dashboard/profile/2fa/confirm", url.Values{"code": {kwtest.TOTP(t, secret, s.Clock.Now())}}).must(t)
	codes := profileRecoveryCodes(t, p)
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes, want 10", len(codes))
	}
	p = s.get("/dashboard/profile").must(t)
	if strings.Contains(p.Body, codes[0]) || !p.Has("Make new recovery codes") {
		t.Error("the profile page shows a recovery code again, or no 2FA forms")
	}
	if profileOf2FA(t, s) != true {
		t.Fatal("profile.php: 2FA not on")
	}

	// Signing in now asks for the code.
	s.Clock.Advance(time.Minute) // the confirming code may not be used again
	p = profileSignIn2FA(t, s, kwtest.TOTP(t, secret, s.Clock.Now()))
	if p.Status != 200 || p.URL != "/dashboard/" {
		t.Fatalf("sign-in with the code: %d at %s", p.Status, p.URL)
	}

	// New recovery codes: the typed code is the confirmation (no page in
	// between carries it back); then the old ones stop working.
	s.Clock.Advance(time.Minute)
	s.get("/dashboard/profile").must(t)
	p = s.post("/dashboard/profile/2fa/recovery", url.Values{"code": {kwtest.TOTP(t, secret, s.Clock.Now())}}).must(t)
	fresh := profileRecoveryCodes(t, p)
	if len(fresh) != 10 || fresh[0] == codes[0] {
		t.Fatalf("new codes %v", fresh)
	}
	if p := profileSignIn2FA(t, s, codes[1]); p.URL == "/dashboard/" {
		t.Error("an old recovery code still signs in")
	}
	if p := profileSignIn2FA(t, s, fresh[1]); p.Status != 200 || p.URL != "/dashboard/" {
		t.Errorf("a new recovery code: %d at %s", p.Status, p.URL)
	}

	// Turning it off: password and code needed, and never echoed back.
	s.Clock.Advance(time.Minute)
	s.get("/dashboard/profile").must(t)
	off := url.Values{"password": {kwtest.AdminPassword}, "code": {kwtest.TOTP(t, secret, s.Clock.Now())}}
	p = s.post("/dashboard/profile/2fa/disable", url.Values{"password": {"wrong-password-xyz"}, "code": off["code"]})
	if !strings.Contains(p.Body, `class="flash error"`) || profileOf2FA(t, s) != true || strings.Contains(p.Body, "wrong-password-xyz") {
		t.Fatalf("wrong password: flash %q", p.flash())
	}
	p = s.post("/dashboard/profile/2fa/disable", off)
	if p.flash() != "Two-factor sign-in is off." || profileOf2FA(t, s) != false || strings.Contains(p.Body, kwtest.AdminPassword) {
		t.Fatalf("disable: flash %q", p.flash())
	}
	s.post("/dashboard/logout", nil)
	s.signIn() // the password alone again
}

// profileOf2FA reads two_factor through the API with the page's own session
// (a password sign-in would need the code once 2FA is on).
func profileOf2FA(t *testing.T, s *site) any {
	t.Helper()
	r := s.AdminAs(profileSession(s), "GET", "/api/admin/profile.php", nil)
	if r.Status != 200 {
		t.Fatalf("profile.php: %s", r)
	}
	return r.Obj("profile")["two_factor"]
}

var (
	profileToken   = regexp.MustCompile(`<code id="token-value" class="secret">(kwp_[^<]+)</code>`)
	profileTokenID = regexp.MustCompile(`name="id" value="([^"]+)"`)
)

func TestProfileAccessTokens(t *testing.T) {
	s := newSite(t)
	s.CreateApp("Mine")
	s.signIn()
	if p := s.get("/dashboard/profile").must(t); !p.Has("You have no access tokens.") {
		t.Errorf("no tokens yet: %s", p.Text())
	}
	// A refused name: the API's message, nothing minted.
	p := s.post("/dashboard/profile/tokens", url.Values{"name": {"  "}})
	if p.URL != "/dashboard/profile" || !strings.Contains(p.Body, `class="flash error"`) || !p.Has("You have no access tokens.") {
		t.Errorf("empty name: at %s, flash %q", p.URL, p.flash())
	}

	p = s.post("/dashboard/profile/tokens", url.Values{"name": {"CI <deploy>"}}).must(t)
	m := profileToken.FindStringSubmatch(p.Body)
	if m == nil || !strings.Contains(p.Body, `data-copy="token-value"`) || !p.Has("CI <deploy>") {
		t.Fatalf("minted token not shown: %s", p.Text())
	}
	token := m[1]
	if r := s.AdminAs(token, "GET", "/api/admin/apps.php", nil); r.Status != 200 || len(r.Body["apps"].([]any)) != 1 {
		t.Fatalf("the token against apps.php: %s", r)
	}
	// Listed (name, created, last used), never shown again.
	p = s.get("/dashboard/profile").must(t)
	if strings.Contains(p.Body, token) || !p.Has("CI <deploy>") || !p.Has("active") || strings.Contains(p.Body, "CI <deploy>") {
		t.Errorf("token list: %s", p.Text())
	}
	if !p.Has(s.Clock.Now().UTC().Format("2006-01-02 15:04 UTC")) {
		t.Errorf("token list lacks the creation/last use time: %s", p.Text())
	}
	id := profileTokenID.FindStringSubmatch(p.Body)
	if id == nil {
		t.Fatal("no revoke form")
	}

	// Revoking: confirmed first; then the token answers 403 TOKEN_REVOKED.
	p = s.post("/dashboard/profile/tokens/revoke", url.Values{"id": {id[1]}, "name": {"CI <deploy>"}})
	if !p.Has("Revoke this token?") {
		t.Fatalf("unconfirmed revoke: %s", p.Text())
	}
	if r := s.AdminAs(token, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
		t.Fatalf("an unconfirmed revoke revoked: %s", r)
	}
	p = s.post("/dashboard/profile/tokens/revoke", url.Values{"id": {id[1]}, "confirm": {"yes"}})
	if p.flash() != "Token revoked." || !p.Has("revoked") {
		t.Errorf("revoke: flash %q", p.flash())
	}
	kwtest.ExpectCode(t, s.AdminAs(token, "GET", "/api/admin/apps.php", nil), http.StatusForbidden, "TOKEN_REVOKED")
	// An unknown id: the API's refusal.
	s.get("/dashboard/profile")
	p = s.post("/dashboard/profile/tokens/revoke", url.Values{"id": {"nope"}, "confirm": {"yes"}})
	if !strings.Contains(p.Body, `class="flash error"`) {
		t.Errorf("unknown token: flash %q", p.flash())
	}
}
