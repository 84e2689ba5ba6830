package kwtest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// Sign-ins the black-box tests of several surfaces share: app user accounts
// and their lockouts (test servers lock a username after 10 failures and an
// IP after 50 within 15 minutes, for 15 minutes: Limits), admins with
// two-factor sign-in (TOTP, RFC 6238: SHA-1, 6 digits, 30 s, computed from
// the server's injected clock) and customers of the portal.

// Routes, passwords and the lock time of the sign-in helpers.
const (
	PathAccountLogin  = "/api/auth/account-login.php"
	PathAdminLogin    = "/api/admin/login.php"
	PathAdminTOTP     = "/api/admin/totp.php"
	PathAdminTwoFA    = "/api/admin/2fa.php"
	PathCustomerLogin = "/api/customer/login.php"
	PathCustomerKey   = "/api/customer/key.php"

	// LockoutPassword is the password RegisterUser signs users up with;
	// WrongPassword is never anyone's.
	LockoutPassword = "correct-pass-1"
	WrongPassword   = "wrong-pass-99"
	// LockFor is how long a test server locks a username or an IP.
	LockFor = 15 * time.Minute
	// TwoFactorPassword is the password of TwoFactorUser's admins.
	TwoFactorPassword = "two-factor-pass-1"
)

// LockoutApp creates an app with accounts on (30 days of time at sign-up).
func (s *Server) LockoutApp(t testing.TB, name string) *App {
	t.Helper()
	a := s.CreateApp(name)
	a.SetSettings(t, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	return a
}

// RegisterUser signs username up with LockoutPassword.
func (a *App) RegisterUser(t testing.TB, username string) {
	t.Helper()
	a.Plain(PathRegister, map[string]any{"username": username, "password": LockoutPassword}).OK(t)
}

// PostFrom POSTs a plain client call, through a trusted proxy that appended
// xff to X-Forwarded-For when xff is not empty.
func (a *App) PostFrom(path string, body map[string]any, xff string) *Reply {
	a.S.T.Helper()
	h := http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	return a.S.Do("POST", path, h, JSON(a.S.T, body))
}

// SignIn sends account-login (from xff when not empty).
func (a *App) SignIn(username, password, xff string) *Reply {
	a.S.T.Helper()
	return a.PostFrom(PathAccountLogin, map[string]any{"username": username, "password": password, "hwid": "pc-lockout"}, xff)
}

// TOTP is the TOTP code of secret at time at.
func TOTP(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatalf("generate TOTP code: %v", err)
	}
	return c
}

// WrongTOTP is a six-digit code that matches none of the steps the server
// accepts at the clock's time (the current one and one either side).
func (s *Server) WrongTOTP(t testing.TB, secret string) string {
	t.Helper()
	now := s.Clock.Now()
	valid := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		valid[TOTP(t, secret, now.Add(d))] = true
	}
	for i := 0; ; i++ {
		c := strconv.Itoa(100000 + i*7919%900000)
		if !valid[c] {
			return c
		}
	}
}

// TwoFactorUser creates an app and an admin called username (a member of
// it, password TwoFactorPassword) and returns the admin's JWT.
func (s *Server) TwoFactorUser(t testing.TB, username string) string {
	t.Helper()
	app := s.CreateApp("2FA " + username)
	return s.AddMember(app.ID, username, TwoFactorPassword, "owner")
}

// TwoFactor posts a 2fa.php action with token.
func (s *Server) TwoFactor(token, action string, extra map[string]any) *Reply {
	s.T.Helper()
	body := map[string]any{"action": action}
	for k, v := range extra {
		body[k] = v
	}
	return s.AdminAs(token, "POST", PathAdminTwoFA, body)
}

// EnableTwoFactor enrols and confirms two-factor sign-in for the admin of
// token and returns the secret and the recovery codes. The confirming code
// uses up the current step, so it then moves the clock on by one step.
func (s *Server) EnableTwoFactor(t testing.TB, token string) (string, []string) {
	t.Helper()
	r := s.TwoFactor(token, "enrol", nil)
	if r.Status != 200 || r.Body["success"] != true || r.Str("secret") == "" {
		t.Fatalf("enrol: %s", r)
	}
	secret := r.Str("secret")
	r = s.TwoFactor(token, "confirm", map[string]any{"code": TOTP(t, secret, s.Clock.Now())})
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("confirm: %s", r)
	}
	codes := r.Strings(t, "recovery_codes")
	s.Clock.Advance(30 * time.Second)
	return secret, codes
}

// AdminLoginReply posts the admin login.
func (s *Server) AdminLoginReply(username, password string) *Reply {
	s.T.Helper()
	return s.AdminAs("", "POST", PathAdminLogin, map[string]any{"username": username, "password": password})
}

// TwoFactorStep1 signs username in with TwoFactorPassword, fails unless the
// answer asks for the second step, and returns the step-1 token.
func (s *Server) TwoFactorStep1(t testing.TB, username string) string {
	t.Helper()
	r := s.AdminLoginReply(username, TwoFactorPassword)
	if r.Status != 200 || r.Body["success"] != true || r.Body["requires_2fa"] != true || r.Str("step1_token") == "" {
		t.Fatalf("login with two-factor on: %s, want requires_2fa and a step1_token", r)
	}
	if _, ok := r.Body["token"]; ok {
		t.Fatalf("login with two-factor on handed out a bearer token: %s", r)
	}
	return r.Str("step1_token")
}

// CustomerSignIn posts a customer sign-in (no app secret).
func (s *Server) CustomerSignIn(body map[string]any) *Reply {
	s.T.Helper()
	return s.Do("POST", PathCustomerLogin, http.Header{"Content-Type": {"application/json"}}, JSON(s.T, body))
}

// BearerDo calls a route of the customer or reseller API with a bearer
// token (none when token is empty).
func (s *Server) BearerDo(token, method, path string, body any) *Reply {
	s.T.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	var raw []byte
	if body != nil {
		raw = JSON(s.T, body)
	}
	return s.Do(method, path, h, raw)
}
