package adminapi_test

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

	"github.com/keyward/keyward/internal/kwtest"
)

// Two-factor sign-in of admins (TOTP, RFC 6238: SHA-1, 6 digits, 30 s) and
// its recovery codes. Codes are computed from the server's injected clock.
// Helpers start with tf so they do not collide with other test files.

const (
	tfProfile = "/api/admin/profile.php"
)

var tfRecoveryRE = regexp.MustCompile(`^[a-z2-7]{5}-[a-z2-7]{5}$`)

// tfSecond posts the second step.
func tfSecond(s *kwtest.Server, step1, code string) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs("", "POST", kwtest.PathAdminTOTP, map[string]any{"step1_token": step1, "code": code})
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
		tok := s.TwoFactorUser(t, "tina")

		r := s.TwoFactor(tok, "enrol", nil)
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
		if r := s.AdminLoginReply("tina", kwtest.TwoFactorPassword); r.Status != 200 || r.Str("token") == "" || r.Body["requires_2fa"] == true {
			t.Fatalf("login with an unconfirmed enrolment: %s, want a token", r)
		}

		s.TwoFactor(tok, "confirm", map[string]any{"code": s.WrongTOTP(t, secret)}).JSONFail(t, 401, "INVALID_CODE")
		s.TwoFactor(tok, "confirm", map[string]any{"code": "abc"}).JSONFail(t, 401, "INVALID_CODE")
		r = s.TwoFactor(tok, "confirm", map[string]any{"code": kwtest.TOTP(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("confirm: %s", r)
		}
		codes := r.Strings(t, "recovery_codes")
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
		s.TwoFactor(tok, "enrol", nil).JSONFail(t, 409, "TOTP_ENABLED")
		s.TwoFactor(tok, "confirm", map[string]any{"code": kwtest.TOTP(t, secret, s.Clock.Now())}).JSONFail(t, 409, "TOTP_ENABLED")

		// The password alone is the first step only.
		s.Clock.Advance(30 * time.Second)
		step1 := s.TwoFactorStep1(t, "tina")
		tfSignedIn(t, s, "TOTP code", tfSecond(s, step1, kwtest.TOTP(t, secret, s.Clock.Now())))
		// A wrong password is still refused before any second step.
		s.AdminLoginReply("tina", "not-the-password").JSONFail(t, 401, "INVALID_CREDENTIALS")

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
		tok := s.TwoFactorUser(t, "uma")
		secret, _ := s.EnableTwoFactor(t, tok)

		code := kwtest.TOTP(t, secret, s.Clock.Now())
		tfSignedIn(t, s, "first use", tfSecond(s, s.TwoFactorStep1(t, "uma"), code))
		tfSecond(s, s.TwoFactorStep1(t, "uma"), code).JSONFail(t, 401, "INVALID_CODE")

		// Next step: the code of the step after it (within the allowed
		// drift) is used first; then the current step's code, though never
		// used, is refused, for it is earlier.
		s.Clock.Advance(30 * time.Second)
		now := s.Clock.Now()
		ahead, current := kwtest.TOTP(t, secret, now.Add(30*time.Second)), kwtest.TOTP(t, secret, now)
		tfSignedIn(t, s, "code one step ahead", tfSecond(s, s.TwoFactorStep1(t, "uma"), ahead))
		if current != ahead {
			tfSecond(s, s.TwoFactorStep1(t, "uma"), current).JSONFail(t, 401, "INVALID_CODE")
		}
		s.Clock.Advance(60 * time.Second)
		tfSignedIn(t, s, "a later step", tfSecond(s, s.TwoFactorStep1(t, "uma"), kwtest.TOTP(t, secret, s.Clock.Now())))
		// Codes used to regenerate recovery codes are spent too.
		s.Clock.Advance(30 * time.Second)
		c := kwtest.TOTP(t, secret, s.Clock.Now())
		if r := s.TwoFactor(tok, "recovery_codes", map[string]any{"code": c}); r.Status != 200 {
			t.Fatalf("recovery_codes: %s", r)
		}
		tfSecond(s, s.TwoFactorStep1(t, "uma"), c).JSONFail(t, 401, "INVALID_CODE")
	})
}

// Recovery codes sign in once each, typed in any case with or without the
// dash (or with a space); regenerating them (with a current code) retires
// the old set.
func TestAdmin2FARecoveryCodes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := s.TwoFactorUser(t, "rita")
		secret, codes := s.EnableTwoFactor(t, tok)

		typed := " " + strings.ToUpper(strings.Replace(codes[0], "-", " ", 1)) + " "
		tfSignedIn(t, s, "recovery code in upper case with a space", tfSecond(s, s.TwoFactorStep1(t, "rita"), typed))
		tfSecond(s, s.TwoFactorStep1(t, "rita"), codes[0]).JSONFail(t, 401, "INVALID_CODE")
		tfSignedIn(t, s, "recovery code without its dash", tfSecond(s, s.TwoFactorStep1(t, "rita"), strings.ReplaceAll(codes[1], "-", "")))
		tfSecond(s, s.TwoFactorStep1(t, "rita"), "aaaaa-aaaaa").JSONFail(t, 401, "INVALID_CODE")

		s.TwoFactor(tok, "recovery_codes", map[string]any{"code": s.WrongTOTP(t, secret)}).JSONFail(t, 401, "INVALID_CODE")
		r := s.TwoFactor(tok, "recovery_codes", map[string]any{"code": kwtest.TOTP(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("recovery_codes: %s", r)
		}
		fresh := r.Strings(t, "recovery_codes")
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
			tfSecond(s, s.TwoFactorStep1(t, "rita"), c).JSONFail(t, 401, "INVALID_CODE")
		}
		tfSignedIn(t, s, "new recovery code", tfSecond(s, s.TwoFactorStep1(t, "rita"), fresh[0]))
		tfSecond(s, s.TwoFactorStep1(t, "rita"), fresh[0]).JSONFail(t, 401, "INVALID_CODE")
	})
}

// A step-1 token is good for totp.php only, and only for five minutes: it
// is no bearer token, a bearer JWT is no step-1 token.
func TestAdmin2FAStep1Token(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := s.TwoFactorUser(t, "sam")
		secret, _ := s.EnableTwoFactor(t, tok)

		step1 := s.TwoFactorStep1(t, "sam")
		for _, path := range []string{tfProfile, "/api/admin/apps.php", "/api/admin/tokens.php"} {
			s.AdminAs(step1, "GET", path, nil).JSONFail(t, 401, "UNAUTHORIZED")
		}
		s.AdminAs(step1, "POST", "/api/admin/logout.php", nil).JSONFail(t, 401, "UNAUTHORIZED")
		tfSecond(s, tok, kwtest.TOTP(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		tfSecond(s, "not-a-jwt", kwtest.TOTP(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		s.AdminAs("", "POST", kwtest.PathAdminTOTP, map[string]any{"step1_token": step1}).JSONFail(t, 400, "MISSING_FIELDS")
		s.AdminAs("", "POST", kwtest.PathAdminTOTP, map[string]any{"code": "123456"}).JSONFail(t, 400, "MISSING_FIELDS")

		// Still good after four and a half minutes.
		s.Clock.Advance(4*time.Minute + 30*time.Second)
		tfSignedIn(t, s, "step-1 token 4m30s old", tfSecond(s, step1, kwtest.TOTP(t, secret, s.Clock.Now())))

		// Gone after five.
		s.Clock.Advance(30 * time.Second)
		step1 = s.TwoFactorStep1(t, "sam")
		s.Clock.Advance(5*time.Minute + time.Second)
		tfSecond(s, step1, kwtest.TOTP(t, secret, s.Clock.Now())).JSONFail(t, 401, "UNAUTHORIZED")
		// A fresh one works with the same code.
		tfSignedIn(t, s, "fresh step-1 token", tfSecond(s, s.TwoFactorStep1(t, "sam"), kwtest.TOTP(t, secret, s.Clock.Now())))
	})
}

// Wrong second-step codes count toward the sign-in lockout together with
// wrong passwords: ten failures lock the admin (429 with Retry-After), even
// for the right code and the right password, until the lock runs out.
func TestAdmin2FALockout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := s.TwoFactorUser(t, "lou")
		secret, _ := s.EnableTwoFactor(t, tok)

		step1 := s.TwoFactorStep1(t, "lou")
		for i := range 4 {
			s.AdminLoginReply("lou", "wrong-password-"+strconv.Itoa(i)).JSONFail(t, 401, "INVALID_CREDENTIALS")
		}
		for range 6 {
			tfSecond(s, step1, s.WrongTOTP(t, secret)).JSONFail(t, 401, "INVALID_CODE")
		}
		locked := func(what string, r *kwtest.Reply, want int) {
			t.Helper()
			r.JSONFail(t, 429, "TOO_MANY_ATTEMPTS")
			if h := r.Header.Get("Retry-After"); h != strconv.Itoa(want) {
				t.Fatalf("%s: Retry-After %q, want %d", what, h, want)
			}
		}
		locked("right code after ten failures", tfSecond(s, step1, kwtest.TOTP(t, secret, s.Clock.Now())), 900)
		locked("right password while locked", s.AdminLoginReply("lou", kwtest.TwoFactorPassword), 900)
		// Another admin is not locked.
		if r := s.AdminLoginReply("admin", kwtest.AdminPassword); r.Status != 200 {
			t.Fatalf("another admin while lou is locked: %s", r)
		}

		s.Clock.Advance(10 * time.Minute)
		locked("ten minutes into the lock", s.AdminLoginReply("lou", kwtest.TwoFactorPassword), 300)
		s.Clock.Advance(5 * time.Minute)
		tfSignedIn(t, s, "after the lock", tfSecond(s, s.TwoFactorStep1(t, "lou"), kwtest.TOTP(t, secret, s.Clock.Now())))
	})
}

// Disabling takes the password and a current code; then the password alone
// signs in again. Actions that need two-factor on (or an enrolment) say so.
func TestAdmin2FADisable(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		tok := s.TwoFactorUser(t, "dora")

		s.TwoFactor(tok, "confirm", map[string]any{"code": "123456"}).JSONFail(t, 409, "TOTP_NOT_ENROLLED")
		s.TwoFactor(tok, "disable", map[string]any{"password": kwtest.TwoFactorPassword, "code": "123456"}).JSONFail(t, 409, "TOTP_DISABLED")
		s.TwoFactor(tok, "recovery_codes", map[string]any{"code": "123456"}).JSONFail(t, 409, "TOTP_DISABLED")
		s.TwoFactor(tok, "bogus", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.AdminAs(tok, "POST", kwtest.PathAdminTwoFA, map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")

		secret, codes := s.EnableTwoFactor(t, tok)
		s.TwoFactor(tok, "disable", map[string]any{"password": "wrong-password", "code": kwtest.TOTP(t, secret, s.Clock.Now())}).JSONFail(t,
			401, "INVALID_CREDENTIALS")

		s.TwoFactor(tok, "disable", map[string]any{"password": kwtest.TwoFactorPassword, "code": s.WrongTOTP(t, secret)}).JSONFail(t, 401, "INVALID_CODE")
		if tfTwoFactorOn(t, s, tok) != true {
			t.Fatal("refused disable turned two-factor off")
		}
		r := s.TwoFactor(tok, "disable", map[string]any{"password": kwtest.TwoFactorPassword, "code": kwtest.TOTP(t, secret, s.Clock.Now())})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("disable: %s", r)
		}
		if tfTwoFactorOn(t, s, tok) != false {
			t.Fatal("two_factor still on after disable")
		}
		if r := s.AdminLoginReply("dora", kwtest.TwoFactorPassword); r.Status != 200 || r.Str("token") == "" || r.Body["requires_2fa"] == true {
			t.Fatalf("login after disable: %s, want a token", r)
		}
		s.TwoFactor(tok, "recovery_codes", map[string]any{"code": codes[0]}).JSONFail(t, 409, "TOTP_DISABLED")

		// Enrolling again starts from a new secret, and the old recovery
		// codes are gone with the old one.
		r = s.TwoFactor(tok, "enrol", nil)
		if r.Status != 200 || r.Str("secret") == "" || r.Str("secret") == secret {
			t.Fatalf("enrol after disable: %s, want a new secret", r)
		}
		s.Clock.Advance(30 * time.Second)
		secret = r.Str("secret")
		if r := s.TwoFactor(tok, "confirm", map[string]any{"code": kwtest.TOTP(t, secret, s.Clock.Now())}); r.Status != 200 {
			t.Fatalf("confirm after re-enrolling: %s", r)
		}
		tfSecond(s, s.TwoFactorStep1(t, "dora"), codes[1]).JSONFail(t, 401, "INVALID_CODE")
	})
}
