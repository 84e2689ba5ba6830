package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/keyward/keyward/internal/kwtest"
)

// Two-factor sign-in of admins (TOTP, RFC 6238: SHA-1, 6 digits, 30 s) and
// its recovery codes. Codes are computed from the server's injected clock.
// Helpers start with tf so they do not collide with other test files.

const (
	tfTOTP     = "/api/admin/totp.php"
	tfTwoFA    = "/api/admin/2fa.php"
	tfLogin    = "/api/admin/login.php"
	tfProfile  = "/api/admin/profile.php"
	tfPassword = "two-factor-pass-1"
)

var tfRecoveryRE = regexp.MustCompile(`^[a-z2-7]{5}-[a-z2-7]{5}$`)

// tfCode is the TOTP code of secret at time at.
func tfCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatalf("generate TOTP code: %v", err)
	}
	return c
}

// tfWrong is a six-digit code that matches none of the steps the server
// accepts at the clock's time (the current one and one either side).
func tfWrong(t testing.TB, s *kwtest.Server, secret string) string {
	t.Helper()
	now := s.Clock.Now()
	valid := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		valid[tfCode(t, secret, now.Add(d))] = true
	}
	for i := 0; ; i++ {
		c := strconv.Itoa(100000 + i*7919%900000)
		if !valid[c] {
			return c
		}
	}
}

// tfUser creates an app and an admin called username (a member of it)
// and returns the admin's JWT.
func tfUser(t testing.TB, s *kwtest.Server, username string) string {
	t.Helper()
	app := s.CreateApp("2FA " + username)
	return s.AddMember(app.ID, username, tfPassword, "owner")
}

// tf2FA posts a 2fa.php action with token.
func tf2FA(s *kwtest.Server, token, action string, extra map[string]any) *kwtest.Reply {
	s.T.Helper()
	body := map[string]any{"action": action}
	for k, v := range extra {
		body[k] = v
	}
	return s.AdminAs(token, "POST", tfTwoFA, body)
}

// tfEnable enrols and confirms two-factor sign-in for the admin of token and
// returns the secret and the recovery codes. The confirming code uses up the
// current step, so it then moves the clock on by one step.
func tfEnable(t testing.TB, s *kwtest.Server, token string) (string, []string) {
	t.Helper()
	r := tf2FA(s, token, "enrol", nil)
	if r.Status != 200 || r.Body["success"] != true || r.Str("secret") == "" {
		t.Fatalf("enrol: %s", r)
	}
	secret := r.Str("secret")
	r = tf2FA(s, token, "confirm", map[string]any{"code": tfCode(t, secret, s.Clock.Now())})
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("confirm: %s", r)
	}
	codes := tfStrings(t, r, "recovery_codes")
	s.Clock.Advance(30 * time.Second)
	return secret, codes
}

// tfStrings returns a string array field of r.
func tfStrings(t testing.TB, r *kwtest.Reply, name string) []string {
	t.Helper()
	raw, ok := r.Body[name].([]any)
	if !ok {
		t.Fatalf("reply has no %s array: %s", name, r)
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		if out[i], ok = v.(string); !ok {
			t.Fatalf("%s[%d] = %#v, want a string", name, i, v)
		}
	}
	return out
}

// tfLoginReply posts the admin login.
func tfLoginReply(s *kwtest.Server, username, password string) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs("", "POST", tfLogin, map[string]any{"username": username, "password": password})
}

// tfStep1 signs username in with its password, fails unless the answer asks
// for the second step, and returns the step-1 token.
func tfStep1(t testing.TB, s *kwtest.Server, username string) string {
	t.Helper()
	r := tfLoginReply(s, username, tfPassword)
	if r.Status != 200 || r.Body["success"] != true || r.Body["requires_2fa"] != true || r.Str("step1_token") == "" {
		t.Fatalf("login with two-factor on: %s, want requires_2fa and a step1_token", r)
	}
	if _, ok := r.Body["token"]; ok {
		t.Fatalf("login with two-factor on handed out a bearer token: %s", r)
	}
	return r.Str("step1_token")
}

// tfSecond posts the second step.
func tfSecond(s *kwtest.Server, step1, code string) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs("", "POST", tfTOTP, map[string]any{"step1_token": step1, "code": code})
}

// tfSignedIn fails unless r is a successful second step whose token works,
// and returns the token.
func tfSignedIn(t testing.TB, s *kwtest.Server, what string, r *kwtest.Reply) string {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true || r.Str("token") == "" {
		t.Fatalf("%s: %s, want 200 with a token", what, r)
	}
	tok := r.Str("token")
	if p := s.AdminAs(tok, "GET", tfProfile, nil); p.Status != 200 {
		t.Fatalf("%s: token from totp.php refused: %s", what, p)
	}
	return tok
}

// tfTwoFactorOn reads two_factor from the profile of token's admin.
func tfTwoFactorOn(t testing.TB, s *kwtest.Server, token string) any {
	t.Helper()
	r := s.AdminAs(token, "GET", tfProfile, nil)
	if r.Status != 200 {
		t.Fatalf("profile: %s", r)
	}
	return r.Obj("profile")["two_factor"]
}

// Enrolment hands out a secret, its otpauth URI and a PNG QR code; two-factor
// is on only once a code confirms it, which returns ten recovery codes.
// Then the password alone gives a step-1 token, and a TOTP code completes
// the sign-in; enrolling again is refused.
func TestAdmin2FAEnrolConfirmSignIn(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "tina")

		r := tf2FA(s, tok, "enrol", nil)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("enrol: %s", r)
		}
		secret := r.Str("secret")
		if !regexp.MustCompile(`^[A-Z2-7]{16,}$`).MatchString(secret) {
			t.Fatalf("secret %q is not base32", secret)
		}
		u, err := url.Parse(r.Str("otpauth_uri"))
		if err != nil || u.Scheme != "otpauth" || u.Host != "totp" {
			t.Fatalf("otpauth_uri = %q (%v), want otpauth://totp/…", r.Str("otpauth_uri"), err)
		}
		if q := u.Query(); q.Get("secret") != secret || q.Get("issuer") != "keyward" || !strings.Contains(u.Path, "tina") {
			t.Errorf("otpauth_uri %q: want the secret, issuer keyward and the username", u)
		}
		qr := r.Str("qr_png")
		const prefix = "data:image/png;base64,"
		if !strings.HasPrefix(qr, prefix) {
			t.Fatalf("qr_png does not start with %s: %.40q", prefix, qr)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(qr, prefix))
		if err != nil {
			t.Fatalf("qr_png is not base64: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("qr_png is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dx() < 21 || b.Dx() != b.Dy() {
			t.Errorf("QR image is %dx%d, want a square of at least 21 px", b.Dx(), b.Dy())
		}

		// Not on until confirmed: the password alone still signs in.
		if tfTwoFactorOn(t, s, tok) != false {
			t.Fatal("two_factor on before confirmation")
		}
		if r := tfLoginReply(s, "tina", tfPassword); r.Status != 200 || r.Str("token") == "" || r.Body["requires_2fa"] == true {
			t.Fatalf("login with an unconfirmed enrolment: %s, want a token", r)
		}

		tf2FA(s, tok, "confirm", map[string]any{"code": tfWrong(t, s, secret)}).JSONFail(t, 401, "INVALID_CODE")
		tf2FA(s, tok, "confirm", map[string]any{"code": "abc"}).JSONFail(t, 401, "INVALID_CODE")
		r = tf2FA(s, tok, "confirm", map[string]any{"code": tfCode(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("confirm: %s", r)
		}
		codes := tfStrings(t, r, "recovery_codes")
		if len(codes) != 10 {
			t.Fatalf("%d recovery codes, want 10: %v", len(codes), codes)
		}
		seen := map[string]bool{}
		for _, c := range codes {
			if !tfRecoveryRE.MatchString(c) || seen[c] {
				t.Fatalf("recovery code %q malformed or repeated in %v", c, codes)
			}
			seen[c] = true
		}
		if tfTwoFactorOn(t, s, tok) != true {
			t.Fatal("two_factor off after confirmation")
		}
		tf2FA(s, tok, "enrol", nil).JSONFail(t, 409, "TOTP_ENABLED")
		tf2FA(s, tok, "confirm", map[string]any{"code": tfCode(t, secret, s.Clock.Now())}).JSONFail(t, 409, "TOTP_ENABLED")

		// The password alone is the first step only.
		s.Clock.Advance(30 * time.Second)
		step1 := tfStep1(t, s, "tina")
		tfSignedIn(t, s, "TOTP code", tfSecond(s, step1, tfCode(t, secret, s.Clock.Now())))
		// A wrong password is still refused before any second step.
		tfLoginReply(s, "tina", "not-the-password").JSONFail(t, 401, "INVALID_CREDENTIALS")

		var actions []string
		for _, e := range s.Audit(t, "target=tina&action=admin.2fa.") {
			actions = append(actions, e["action"].(string))
		}
		if strings.Join(actions, ",") != "admin.2fa.enable,admin.2fa.enrol" {
			t.Errorf("two-factor audit entries %v, want enrol then enable", actions)
		}
	})
}

// A TOTP code is accepted once: the same step again is refused, and so is
// an earlier step (within the drift the server allows) once a later one was
// used; a later step's code works.
func TestAdmin2FACodeUsedOnce(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "uma")
		secret, _ := tfEnable(t, s, tok)

		code := tfCode(t, secret, s.Clock.Now())
		tfSignedIn(t, s, "first use", tfSecond(s, tfStep1(t, s, "uma"), code))
		tfSecond(s, tfStep1(t, s, "uma"), code).JSONFail(t, 401, "INVALID_CODE")

		// Next step: the code of the step after it (within the allowed
		// drift) is used first; then the current step's code, though never
		// used, is refused, for it is earlier.
		s.Clock.Advance(30 * time.Second)
		now := s.Clock.Now()
		ahead, current := tfCode(t, secret, now.Add(30*time.Second)), tfCode(t, secret, now)
		tfSignedIn(t, s, "code one step ahead", tfSecond(s, tfStep1(t, s, "uma"), ahead))
		if current != ahead {
			tfSecond(s, tfStep1(t, s, "uma"), current).JSONFail(t, 401, "INVALID_CODE")
		}
		s.Clock.Advance(60 * time.Second)
		tfSignedIn(t, s, "a later step", tfSecond(s, tfStep1(t, s, "uma"), tfCode(t, secret, s.Clock.Now())))
		// Codes used to regenerate recovery codes are spent too.
		s.Clock.Advance(30 * time.Second)
		c := tfCode(t, secret, s.Clock.Now())
		if r := tf2FA(s, tok, "recovery_codes", map[string]any{"code": c}); r.Status != 200 {
			t.Fatalf("recovery_codes: %s", r)
		}
		tfSecond(s, tfStep1(t, s, "uma"), c).JSONFail(t, 401, "INVALID_CODE")
	})
}

// Recovery codes sign in once each, typed in any case with or without the
// dash (or with a space); regenerating them (with a current code) retires
// the old set.
func TestAdmin2FARecoveryCodes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "rita")
		secret, codes := tfEnable(t, s, tok)

		typed := " " + strings.ToUpper(strings.Replace(codes[0], "-", " ", 1)) + " "
		tfSignedIn(t, s, "recovery code in upper case with a space", tfSecond(s, tfStep1(t, s, "rita"), typed))
		tfSecond(s, tfStep1(t, s, "rita"), codes[0]).JSONFail(t, 401, "INVALID_CODE")
		tfSignedIn(t, s, "recovery code without its dash", tfSecond(s, tfStep1(t, s, "rita"), strings.ReplaceAll(codes[1], "-", "")))
		tfSecond(s, tfStep1(t, s, "rita"), "aaaaa-aaaaa").JSONFail(t, 401, "INVALID_CODE")

		tf2FA(s, tok, "recovery_codes", map[string]any{"code": tfWrong(t, s, secret)}).JSONFail(t, 401, "INVALID_CODE")
		r := tf2FA(s, tok, "recovery_codes", map[string]any{"code": tfCode(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("recovery_codes: %s", r)
		}
		fresh := tfStrings(t, r, "recovery_codes")
		if len(fresh) != 10 {
			t.Fatalf("%d new recovery codes, want 10", len(fresh))
		}
		old := map[string]bool{}
		for _, c := range codes {
			old[c] = true
		}
		for _, c := range fresh {
			if !tfRecoveryRE.MatchString(c) || old[c] {
				t.Fatalf("new recovery code %q malformed or one of the old set", c)
			}
		}
		for _, c := range codes[2:4] {
			tfSecond(s, tfStep1(t, s, "rita"), c).JSONFail(t, 401, "INVALID_CODE")
		}
		tfSignedIn(t, s, "new recovery code", tfSecond(s, tfStep1(t, s, "rita"), fresh[0]))
		tfSecond(s, tfStep1(t, s, "rita"), fresh[0]).JSONFail(t, 401, "INVALID_CODE")
	})
}

// A step-1 token is good for totp.php only, and only for five minutes: it
// is no bearer token, a bearer JWT is no step-1 token.
func TestAdmin2FAStep1Token(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "sam")
		secret, _ := tfEnable(t, s, tok)

		step1 := tfStep1(t, s, "sam")
		for _, path := range []string{tfProfile, "/api/admin/apps.php", "/api/admin/tokens.php"} {
			s.AdminAs(step1, "GET", path, nil).JSONFail(t, 401, "UNAUTHORIZED")
		}
		s.AdminAs(step1, "POST", "/api/admin/logout.php", nil).JSONFail(t, 401, "UNAUTHORIZED")
		tfSecond(s, tok, tfCode(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		tfSecond(s, "not-a-jwt", tfCode(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		s.AdminAs("", "POST", tfTOTP, map[string]any{"step1_token": step1}).JSONFail(t, 400, "MISSING_FIELDS")
		s.AdminAs("", "POST", tfTOTP, map[string]any{"code": "123456"}).JSONFail(t, 400, "MISSING_FIELDS")

		// Still good after four and a half minutes.
		s.Clock.Advance(4*time.Minute + 30*time.Second)
		tfSignedIn(t, s, "step-1 token 4m30s old", tfSecond(s, step1, tfCode(t, secret, s.Clock.Now())))

		// Gone after five.
		s.Clock.Advance(30 * time.Second)
		step1 = tfStep1(t, s, "sam")
		s.Clock.Advance(5*time.Minute + time.Second)
		tfSecond(s, step1, tfCode(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		// A fresh one works with the same code.
		tfSignedIn(t, s, "fresh step-1 token", tfSecond(s, tfStep1(t, s, "sam"), tfCode(t, secret, s.Clock.Now())))
	})
}

// Wrong second-step codes count toward the sign-in lockout together with
// wrong passwords: ten failures lock the admin (429 with Retry-After), even
// for the right code and the right password, until the lock runs out.
func TestAdmin2FALockout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "lou")
		secret, _ := tfEnable(t, s, tok)

		step1 := tfStep1(t, s, "lou")
		for i := range 4 {
			tfLoginReply(s, "lou", "wrong-password-"+strconv.Itoa(i)).JSONFail(t, 401, "INVALID_CREDENTIALS")
		}
		for range 6 {
			tfSecond(s, step1, tfWrong(t, s, secret)).JSONFail(t, 401, "INVALID_CODE")
		}
		locked := func(what string, r *kwtest.Reply, want int) {
			t.Helper()
			r.JSONFail(t, 429, "TOO_MANY_ATTEMPTS")
			if h := r.Header.Get("Retry-After"); h != strconv.Itoa(want) {
				t.Fatalf("%s: Retry-After %q, want %d", what, h, want)
			}
		}
		locked("right code after ten failures", tfSecond(s, step1, tfCode(t, secret, s.Clock.Now())), 900)
		locked("right password while locked", tfLoginReply(s, "lou", tfPassword), 900)
		// Another admin is not locked.
		if r := tfLoginReply(s, "admin", kwtest.AdminPassword); r.Status != 200 {
			t.Fatalf("another admin while lou is locked: %s", r)
		}

		s.Clock.Advance(10 * time.Minute)
		locked("ten minutes into the lock", tfLoginReply(s, "lou", tfPassword), 300)
		s.Clock.Advance(5 * time.Minute)
		tfSignedIn(t, s, "after the lock", tfSecond(s, tfStep1(t, s, "lou"), tfCode(t, secret, s.Clock.Now())))
	})
}

// Disabling takes the password and a current code; then the password alone
// signs in again. Actions that need two-factor on (or an enrolment) say so.
func TestAdmin2FADisable(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := tfUser(t, s, "dora")

		tf2FA(s, tok, "confirm", map[string]any{"code": "123456"}).JSONFail(t, 409, "TOTP_NOT_ENROLLED")
		tf2FA(s, tok, "disable", map[string]any{"password": tfPassword, "code": "123456"}).JSONFail(t, 409, "TOTP_DISABLED")
		tf2FA(s, tok, "recovery_codes", map[string]any{"code": "123456"}).JSONFail(t, 409, "TOTP_DISABLED")
		tf2FA(s, tok, "bogus", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.AdminAs(tok, "POST", tfTwoFA, map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")

		secret, codes := tfEnable(t, s, tok)
		tf2FA(s, tok, "disable", map[string]any{"password": "wrong-password", "code": tfCode(t, secret, s.Clock.Now())}).JSONFail(t,
			401, "INVALID_CREDENTIALS")

		tf2FA(s, tok, "disable", map[string]any{"password": tfPassword, "code": tfWrong(t, s, secret)}).JSONFail(t, 401, "INVALID_CODE")
		if tfTwoFactorOn(t, s, tok) != true {
			t.Fatal("refused disable turned two-factor off")
		}
		r := tf2FA(s, tok, "disable", map[string]any{"password": tfPassword, "code": tfCode(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("disable: %s", r)
		}
		if tfTwoFactorOn(t, s, tok) != false {
			t.Fatal("two_factor still on after disable")
		}
		if r := tfLoginReply(s, "dora", tfPassword); r.Status != 200 || r.Str("token") == "" || r.Body["requires_2fa"] == true {
			t.Fatalf("login after disable: %s, want a token", r)
		}
		tf2FA(s, tok, "recovery_codes", map[string]any{"code": codes[0]}).JSONFail(t, 409, "TOTP_DISABLED")

		// Enrolling again starts from a new secret, and the old recovery
		// codes are gone with the old one.
		r = tf2FA(s, tok, "enrol", nil)
		if r.Status != 200 || r.Str("secret") == "" || r.Str("secret") == secret {
			t.Fatalf("enrol after disable: %s, want a new secret", r)
		}
		s.Clock.Advance(30 * time.Second)
		secret = r.Str("secret")
		if r := tf2FA(s, tok, "confirm", map[string]any{"code": tfCode(t, secret, s.Clock.Now())}); r.Status != 200 {
			t.Fatalf("confirm after re-enrolling: %s", r)
		}
		tfSecond(s, tfStep1(t, s, "dora"), codes[1]).JSONFail(t, 401, "INVALID_CODE")
	})
}
