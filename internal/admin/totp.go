package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/wire"
)

// Two-factor sign-in with TOTP (RFC 6238: SHA-1, 6 digits, 30 s steps, one
// step of clock drift either way) and single-use recovery codes.
const (
	totpPeriod     = 30
	step1TTL       = 5 * time.Minute
	recoveryCodes  = 10
	recoveryLength = 10 // characters, shown as xxxxx-xxxxx
)

var (
	errBadCode    = apperr.New(apperr.Unauthenticated, wire.CodeInvalidCode, "Invalid or already used two-factor code.")
	errTOTPOn     = apperr.New(apperr.Conflict, wire.CodeTOTPEnabled, "Two-factor sign-in is already on.")
	errTOTPOff    = apperr.New(apperr.Conflict, wire.CodeTOTPDisabled, "Two-factor sign-in is not on.")
	errNoPending  = apperr.New(apperr.Conflict, wire.CodeTOTPNotEnrolled, "Start enrolment first.")
	errBadPasswrd = apperr.New(apperr.Unauthenticated, wire.CodeInvalidCredentials, "Wrong password.")
)

// Enrolment is a new TOTP secret waiting to be confirmed.
type Enrolment struct {
	Secret string // base32, for typing into an authenticator
	URI    string // otpauth://totp/…
	QRPNG  []byte // the URI as a QR code
}

// BeginTOTP starts two-factor enrolment for p: a fresh secret, replacing
// any earlier unconfirmed one.
func (s *Service) BeginTOTP(ctx context.Context, p *Principal, ip string) (*Enrolment, error) {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return nil, err
	}
	if u.TOTPSecret != "" {
		return nil, errTOTPOn
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "keyward", AccountName: u.Username, Period: totpPeriod})
	if err != nil {
		return nil, apperr.Wrap(err, "totp secret")
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return nil, apperr.Wrap(err, "totp qr")
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, apperr.Wrap(err, "totp png")
	}
	_, err = s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		if cur.TOTPSecret != "" {
			return nil, audit.Entry{}, errTOTPOn
		}
		cur.TOTPPending = key.Secret()
		return nil, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.2fa.enrol", "", cur.Username, nil), nil
	})
	if err != nil {
		return nil, err
	}
	return &Enrolment{Secret: key.Secret(), URI: key.URL(), QRPNG: buf.Bytes()}, nil
}

// ConfirmTOTP turns two-factor on with a code from the pending secret and
// returns the recovery codes (shown once).
func (s *Service) ConfirmTOTP(ctx context.Context, p *Principal, ip, code string) ([]string, error) {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return nil, err
	}
	if u.TOTPSecret != "" {
		return nil, errTOTPOn
	}
	if u.TOTPPending == "" {
		return nil, errNoPending
	}
	step, ok := matchTOTP(u.TOTPPending, code, s.now())
	if !ok {
		return nil, errBadCode
	}
	if claimed, err := s.store.ClaimTOTPStep(ctx, u.ID, step); err != nil {
		return nil, err
	} else if !claimed {
		return nil, errBadCode
	}
	codes, hashes, err := newRecoveryCodes()
	if err != nil {
		return nil, err
	}
	_, err = s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		if cur.TOTPSecret != "" {
			return nil, audit.Entry{}, errTOTPOn
		}
		if cur.TOTPPending != u.TOTPPending { // enrolled again since: the code was of the old secret
			return nil, audit.Entry{}, errBadCode
		}
		cur.TOTPSecret, cur.TOTPPending = cur.TOTPPending, ""
		return hashes, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.2fa.enable", "", cur.Username, nil), nil
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// RegenerateRecoveryCodes replaces p's recovery codes, given a current code.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, p *Principal, ip, code string) ([]string, error) {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.checkSecondFactor(ctx, u, code); err != nil {
		return nil, err
	}
	codes, hashes, err := newRecoveryCodes()
	if err != nil {
		return nil, err
	}
	_, err = s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		if err := sameSecondFactor(cur, u); err != nil {
			return nil, audit.Entry{}, err
		}
		return hashes, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.2fa.recovery_codes", "", cur.Username, nil), nil
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// DisableTOTP turns two-factor off; it takes the password and a code.
func (s *Service) DisableTOTP(ctx context.Context, p *Principal, ip, password, code string) error {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return err
	}
	if err := s.checkPassword(ctx, u, password, ip); err != nil {
		return err
	}
	if err := s.checkSecondFactor(ctx, u, code); err != nil {
		return err
	}
	_, err = s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		if err := sameSecondFactor(cur, u); err != nil {
			return nil, audit.Entry{}, err
		}
		cur.TOTPSecret, cur.TOTPPending = "", ""
		return []string{}, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.2fa.disable", "", cur.Username, nil), nil
	})
	return err
}

// sameSecondFactor checks that the account as it is now (cur) still has the
// confirmed TOTP secret a code was checked against (u's).
func sameSecondFactor(cur, u *User) error {
	if cur.TOTPSecret == "" {
		return errTOTPOff
	}
	if cur.TOTPSecret != u.TOTPSecret {
		return errBadCode
	}
	return nil
}

// CompleteTOTP finishes a two-factor sign-in: the step-1 token from Login
// and a current TOTP code or an unused recovery code give a bearer token.
// Failures count against the admin like wrong passwords.
func (s *Service) CompleteTOTP(ctx context.Context, step1, code, ip string) (string, error) {
	mc, err := s.parse(step1, audStep1)
	if err != nil {
		return "", err
	}
	sub, _ := mc["sub"].(string)
	gen, _ := mc["gen"].(float64)
	u, err := s.store.AdminByID(ctx, sub)
	if errors.Is(err, apperr.ErrNotFound) {
		return "", errUnauthorized
	} else if err != nil {
		return "", err
	}
	if int64(gen) != u.TokenGen { // the password changed since the first step
		return "", errUnauthorized
	}
	subs := []lockout.Subject{{Scope: "admin", ID: strings.ToLower(u.Username), Policy: s.cfg.SignIn}, {Scope: "admin-ip", ID: ip, Policy: s.cfg.SignInIP}}
	res, err := s.cfg.Guard.Reserve(ctx, subs...)
	if err != nil {
		return "", err
	}
	if err := s.checkSecondFactor(ctx, u, code); err != nil {
		if errors.Is(err, errBadCode) {
			return "", err // the reservation stays: a failure
		}
		return "", res.Abandon(ctx, err)
	}
	if err := res.GiveBack(ctx); err != nil {
		return "", err
	}
	return s.sign(u, "", s.cfg.TokenTTL)
}

// checkSecondFactor accepts a TOTP code of u's confirmed secret not used
// before, or one of its unused recovery codes (then used up).
func (s *Service) checkSecondFactor(ctx context.Context, u *User, code string) error {
	if u.TOTPSecret == "" {
		return errTOTPOff
	}
	code = strings.TrimSpace(code)
	if len(code) > 64 {
		return errBadCode
	}
	if step, ok := matchTOTP(u.TOTPSecret, code, s.now()); ok {
		claimed, err := s.store.ClaimTOTPStep(ctx, u.ID, step)
		if err != nil {
			return err
		}
		if claimed {
			return nil
		}
		return errBadCode
	}
	norm := normaliseRecovery(code)
	if len(norm) != recoveryLength {
		return errBadCode
	}
	used, err := s.store.UseRecoveryCode(ctx, u.ID, hashToken(norm), s.now().UTC())
	if err != nil {
		return err
	}
	if !used {
		return errBadCode
	}
	return nil
}

// matchTOTP compares code, in constant time, with the codes of the steps
// around now, and returns the step that matched.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	if len(code) != 6 {
		return 0, false
	}
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	cur := now.Unix() / totpPeriod
	for _, step := range []int64{cur - 1, cur, cur + 1} {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0), opts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return step, true
		}
	}
	return 0, false
}

// newRecoveryCodes returns fresh recovery codes as shown (xxxxx-xxxxx) and
// the hashes of their normalised form.
func newRecoveryCodes() (codes, hashes []string, err error) {
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	for range recoveryCodes {
		raw := make([]byte, 7)
		if _, err := rand.Read(raw); err != nil {
			return nil, nil, apperr.Wrap(err, "recovery code randomness")
		}
		c := strings.ToLower(enc.EncodeToString(raw))[:recoveryLength]
		codes = append(codes, c[:5]+"-"+c[5:])
		hashes = append(hashes, hashToken(c))
	}
	return codes, hashes, nil
}

// normaliseRecovery drops dashes and spaces and lower-cases a typed code.
func normaliseRecovery(code string) string {
	return strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
}
