package account

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Account error codes (sdk-compat §1.8–§1.11, §2.1); KEY_REDEEMED is license's.
const (
	CodeInvalidCredentials    = wire.CodeInvalidCredentials
	CodeUsernameExists        = wire.CodeUsernameExists
	CodeKeyRequired           = wire.CodeKeyRequired
	CodeKeyAlreadyUsed        = wire.CodeKeyAlreadyUsed
	CodeKeyInUse              = wire.CodeKeyInUse
	CodeAlreadyLifetime       = wire.CodeAlreadyLifetime
	CodeAccountsDisabled      = wire.CodeAccountsDisabled
	CodePasswordResetRequired = wire.CodePasswordResetRequired
)

var (
	errInvalidCredentials = apperr.New(apperr.Unauthenticated, CodeInvalidCredentials, "Invalid username or password.")
	errAccountsDisabled   = apperr.New(apperr.Forbidden, CodeAccountsDisabled, "User accounts are not enabled for this application.")
	errUsernameExists     = apperr.New(apperr.Conflict, CodeUsernameExists, "This username is already taken.")
	errKeyRequired        = apperr.New(apperr.Invalid, CodeKeyRequired, "A license key is required to create an account.")
	errRedeemInvalidKey   = apperr.New(apperr.Invalid, license.CodeInvalidKey, "Invalid license key.")
	errKeyAlreadyUsed     = apperr.New(apperr.Conflict, CodeKeyAlreadyUsed, "This license key has already been redeemed.")
	errKeyInUse           = apperr.New(apperr.Conflict, CodeKeyInUse, "This license key is already activated and cannot be redeemed onto an account.")
	errAlreadyLifetime    = apperr.New(apperr.Conflict, CodeAlreadyLifetime, "This account already has lifetime access.")
	errResetRequired      = apperr.New(apperr.Forbidden, CodePasswordResetRequired,
		"Your password was reset by the application owner. Choose a new password with change-password, using the temporary one as the current password.")
)

// usernameRE: 3 to 32 letters, digits, '.', '_' or '-', starting with a
// letter or digit.
var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{2,31}$`)

func checkUsername(u string) error {
	if !usernameRE.MatchString(u) {
		return apperr.InvalidField("username", "use 3 to 32 characters: letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}

// checkPassword applies the app's password policy. bcrypt reads only 72
// bytes, so longer passwords are refused rather than silently cut.
func checkPassword(field, p string, minLen int) error {
	switch {
	case utf8.RuneCountInString(p) < minLen:
		return apperr.InvalidField(field, "must be at least "+strconv.Itoa(minLen)+" characters")
	case len(p) > 72:
		return apperr.InvalidField(field, "must be at most 72 bytes")
	}
	return nil
}

// hashPassword returns the bcrypt hash of p at the configured cost.
func (s *Service) hashPassword(p string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(p), s.cfg.BcryptCost)
	if err != nil {
		return "", apperr.Wrap(err, "bcrypt")
	}
	return string(h), nil
}

// RegisterRequest is the body of auth/account-register.
type RegisterRequest struct {
	Username   string
	Password   string
	Email      string
	LicenseKey string
}

// Grant is what a redeemed key gave an account.
type Grant struct {
	DaysAdded int
	Lifetime  bool
	Mode      string
}

// Register creates an app user account, redeeming LicenseKey onto it when
// given. It returns MISSING_FIELDS, ACCOUNTS_DISABLED, MAINTENANCE,
// KEY_REQUIRED, USERNAME_EXISTS and, for the key, INVALID_KEY,
// KEY_ALREADY_USED, KEY_IN_USE, BANNED, PAUSED or EXPIRED.
func (s *Service) Register(ctx context.Context, app *license.App, req RegisterRequest) (*license.Account, *Grant, error) {
	st := app.Settings
	switch {
	case req.Username == "":
		return nil, nil, apperr.Missing("username")
	case req.Password == "":
		return nil, nil, apperr.Missing("password")
	case !st.AccountsEnabled:
		return nil, nil, errAccountsDisabled
	case st.Maintenance:
		return nil, nil, license.MaintenanceError(app)
	}
	if err := checkUsername(req.Username); err != nil {
		return nil, nil, err
	}
	if err := checkPassword("password", req.Password, st.AccountPasswordMinLength); err != nil {
		return nil, nil, err
	}
	if err := license.CheckEmail(req.Email); err != nil {
		return nil, nil, err
	}
	if st.AccountKeyRequired && req.LicenseKey == "" {
		return nil, nil, errKeyRequired
	}
	hash, err := s.hashPassword(req.Password)
	if err != nil {
		return nil, nil, err
	}
	now := s.Now()
	noTime := now.Add(time.Duration(st.AccountSignupDays) * 24 * time.Hour)
	a := &license.Account{AppID: app.ID, Username: req.Username, Email: req.Email, PasswordHash: hash, Status: license.StatusActive,
		MaxDevices: st.AccountMaxDevices, Features: json.RawMessage("{}"), ExpiresAt: &noTime, CreatedAt: now, UpdatedAt: now}
	// Identical sign-ups sent at once (a client retrying before the first
	// answer) must all get the first one's answer. The username is free when
	// each transaction looks, so on PostgreSQL all but one lose a race: their
	// insert hits the unique index, or their key turns out redeemed once the
	// winner commits. A lost race runs the transaction once more, which then
	// sees the winner's account and answers through duplicateRegister: the
	// same success for the same request, USERNAME_EXISTS or KEY_ALREADY_USED
	// for any other. (SQLite's single writer never races.)
	for attempt := 0; ; attempt++ {
		acct := *a
		grant := &Grant{Mode: st.AccountRedeemMode}
		raced := false
		err = s.store.InTx(ctx, func(tx Tx) error {
			return register(ctx, tx, app, &acct, grant, req, now, &raced)
		})
		if err != nil && raced && attempt == 0 {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return &acct, grant, nil
	}
}

// register is one attempt of Register in tx: a is the account to create
// (replaced by the prior account when req repeats its sign-up) and grant is
// filled with what a redeemed key gave. It sets *raced when the username
// was free at first but a concurrent sign-up took it (or the key) before
// this transaction could.
func register(ctx context.Context, tx Tx, app *license.App, a *license.Account, grant *Grant, req RegisterRequest, now time.Time, raced *bool) error {
	prior, err := tx.AccountForUpdate(ctx, app.ID, license.UsernameKey(req.Username))
	if err == nil {
		// A client's retry of a sign-up that went through gets the same answer.
		g, err := duplicateRegister(ctx, tx, app, prior, req, now)
		if err != nil {
			return err
		}
		if g == nil {
			return errUsernameExists
		}
		*a, *grant = *prior, *g
		return nil
	} else if !errors.Is(err, apperr.ErrNotFound) {
		return err
	}
	var k *license.Key
	if req.LicenseKey != "" {
		var err error
		if k, err = redeemableKey(ctx, tx, app.ID, req.LicenseKey, now); err != nil {
			// KEY_ALREADY_USED may be a concurrent identical sign-up that
			// redeemed the key first: worth one look at its account.
			*raced = apperr.CodeOf(err) == CodeKeyAlreadyUsed
			return err
		}
	}
	if err := tx.InsertAccount(ctx, a); errors.Is(err, apperr.ErrConflict) {
		*raced = true
		return errUsernameExists
	} else if err != nil {
		return err
	}
	if k != nil {
		g, err := redeem(ctx, tx, app, a, k, now)
		if err != nil {
			return err
		}
		*grant = *g
		if err := tx.UpdateAccount(ctx, a); err != nil {
			return err
		}
	}
	return tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.AccountCreated, CreatedAt: now, Subject: event.AccountSubject(a.ID),
		Data: map[string]any{"app_id": app.ID, "username": a.Username, "license_key": a.LicenseKey}})
}

// duplicateRegister returns the grant of prior when req repeats the sign-up
// that created it less than duplicateGrace ago (the same spelling of the
// username, same password, same key), and nil when req is someone else's
// attempt at a taken username — another spelling of it too, which must not
// pass for a new account.
func duplicateRegister(ctx context.Context, tx Tx, app *license.App, prior *license.Account, req RegisterRequest, now time.Time) (*Grant, error) {
	if prior.Username != req.Username || now.Sub(prior.CreatedAt) >= duplicateGrace ||
		bcrypt.CompareHashAndPassword([]byte(prior.PasswordHash), []byte(req.Password)) != nil {
		return nil, nil
	}
	g := &Grant{Mode: app.Settings.AccountRedeemMode}
	if req.LicenseKey == "" {
		return g, nil
	}
	r, err := redemptionOfString(ctx, tx, app.ID, req.LicenseKey)
	if err != nil || r == nil || r.AccountID != prior.ID {
		return nil, err
	}
	g.DaysAdded, g.Lifetime = r.DaysAdded, r.Lifetime
	return g, nil
}

// duplicateRedeem returns the grant when licenseKey was redeemed onto a less
// than duplicateGrace ago: a client's retry gets the same answer.
func duplicateRedeem(ctx context.Context, tx Tx, app *license.App, a *license.Account, licenseKey string, now time.Time) (*Grant, error) {
	r, err := redemptionOfString(ctx, tx, app.ID, licenseKey)
	if err != nil || r == nil || r.AccountID != a.ID || now.Sub(r.CreatedAt) >= duplicateGrace {
		return nil, err
	}
	return &Grant{DaysAdded: r.DaysAdded, Lifetime: r.Lifetime, Mode: app.Settings.AccountRedeemMode}, nil
}

// redemptionOfString returns the redemption of the key licenseKey, or nil.
func redemptionOfString(ctx context.Context, tx Tx, appID, licenseKey string) (*license.Redemption, error) {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	r, err := tx.RedemptionOfKey(ctx, k.ID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	return r, err
}

// redeemableKey reads and locks a key that may be redeemed: unused and
// neither banned nor paused.
func redeemableKey(ctx context.Context, tx Tx, appID, licenseKey string, now time.Time) (*license.Key, error) {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errRedeemInvalidKey
	} else if err != nil {
		return nil, err
	}
	switch k.StatusAt(now) {
	case license.StatusUnused:
		return k, nil
	case license.StatusRedeemed:
		return nil, errKeyAlreadyUsed
	case license.StatusActive:
		return nil, errKeyInUse
	}
	return nil, license.StatusError(k.StatusAt(now))
}

// redeem moves k's time onto a (the caller saves a): a lifetime key makes
// the account lifetime; a days key adds its days to the running time
// ("stack") or counts them from now ("restart"). The key becomes redeemed.
func redeem(ctx context.Context, tx Tx, app *license.App, a *license.Account, k *license.Key, now time.Time) (*Grant, error) {
	if a.Lifetime() {
		return nil, errAlreadyLifetime
	}
	st := app.Settings
	r := &license.Redemption{KeyID: k.ID, AccountID: a.ID, PriorExpiresAt: a.ExpiresAt, CreatedAt: now}
	if k.Type == license.TypeLifetime {
		r.Lifetime = true
		a.ExpiresAt = nil
	} else {
		r.DaysAdded = k.Duration
		base := now
		if st.AccountRedeemMode != license.RedeemRestart && a.ExpiresAt.After(now) {
			base = *a.ExpiresAt
		}
		exp := base.Add(time.Duration(k.Duration) * 24 * time.Hour)
		// What the key really gave: the time beyond what the account still
		// had (an expired account's dead time is not a gift).
		r.Added = exp.Sub(latest(*a.ExpiresAt, now))
		a.ExpiresAt = &exp
	}
	if st.AccountTakesKeyDevices && k.MaxDevices > a.MaxDevices {
		a.MaxDevices = k.MaxDevices
	}
	a.Features = license.MergeFeatures(a.Features, k.Features)
	a.LicenseKey = k.LicenseKey
	a.UpdatedAt = now
	k.Status, k.ActivatedAt, k.UpdatedAt = license.StatusRedeemed, &now, now
	if err := tx.UpdateKey(ctx, k); err != nil {
		return nil, err
	}
	if err := tx.InsertRedemption(ctx, r); err != nil {
		return nil, err
	}
	err := tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.KeyRedeemed, CreatedAt: now, Subject: event.KeySubject(k.ID), Data: map[string]any{
		"app_id": app.ID, "license_key": k.LicenseKey, "username": a.Username, "days_added": r.DaysAdded, "lifetime": r.Lifetime}})
	if err != nil {
		return nil, err
	}
	return &Grant{DaysAdded: r.DaysAdded, Lifetime: r.Lifetime, Mode: st.AccountRedeemMode}, nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
