package license

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"golang.org/x/text/cases"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// Account is an app user account: an end user who signs in with a username
// and password and holds license time, seats and features of their own,
// filled by redeeming keys. Status is active, paused or banned as stored;
// StatusAt adds expired. ExpiresAt nil means lifetime; an account without
// time has an expiry in the past.
type Account struct {
	ID                    int64
	AppID                 string
	Username              string
	Email                 string
	PasswordHash          string
	PasswordResetRequired bool
	Status                Status
	MaxDevices            int
	Features              json.RawMessage
	LicenseKey            string // the key redeemed last; "" when none
	ExpiresAt             *time.Time
	LastLoginAt           *time.Time
	CreatedAt             time.Time
	UpdatedAt             time.Time
}

// StatusAt returns the account's effective status at now.
func (a *Account) StatusAt(now time.Time) Status {
	if a.Status == StatusActive && a.ExpiresAt != nil && !now.Before(*a.ExpiresAt) {
		return StatusExpired
	}
	return a.Status
}

// Lifetime reports whether the account never expires.
func (a *Account) Lifetime() bool { return a.ExpiresAt == nil }

// DaysRemaining returns the whole days left, rounded up; nil for lifetime.
func (a *Account) DaysRemaining(now time.Time) *int {
	k := Key{ExpiresAt: a.ExpiresAt}
	return k.DaysRemaining(now)
}

// FeaturesJSON returns the account's feature map as raw JSON, {} when unset.
func (a *Account) FeaturesJSON() json.RawMessage {
	k := Key{Features: a.Features}
	return k.FeaturesJSON()
}

// Redemption records a key redeemed onto an account: what it added — Added,
// how far it moved the expiry (negative when a restart shortened it), or a
// lifetime grant with the expiry underneath it — so banning the key can take
// it back. AccountID is 0 once the account was deleted.
type Redemption struct {
	KeyID          int64
	AccountID      int64
	DaysAdded      int
	Added          time.Duration
	Lifetime       bool
	PriorExpiresAt *time.Time
	CreatedAt      time.Time
	LicenseKey     string // filled by listings
}

// CodeKeyRedeemed refuses a key redeemed onto an account where a key is
// used directly (login, validation): its time now belongs to the account.
const CodeKeyRedeemed = wire.CodeKeyRedeemed

var (
	errKeyRedeemed   = apperr.New(apperr.Forbidden, CodeKeyRedeemed, "This license key was redeemed onto an account. Sign in with the account instead.")
	errAccountBanned = apperr.New(apperr.Forbidden, CodeBanned, "This account has been banned.")
	errAccountPaused = apperr.New(apperr.Forbidden, CodePaused, "This account is paused.")
	errAccountNoTime = apperr.New(apperr.Forbidden, CodeExpired, "This account has no license time left. Redeem a license key to continue.")
)

// AccountStatusError is the refusal for an account that may not sign in
// (BANNED, PAUSED or EXPIRED worded for an account); nil when it may.
func AccountStatusError(st Status) *apperr.Error {
	switch st {
	case StatusBanned:
		return errAccountBanned
	case StatusPaused:
		return errAccountPaused
	case StatusExpired:
		return errAccountNoTime
	}
	return nil
}

// UsernameKey is the form usernames are unique and looked up by: the Unicode
// case folding of username (cases.Fold: "Alice", "ALICE" and "alice" are one
// name, and so are "STRASSE" and "straße"). Every surface that takes a
// username — register, login, change-password, redeem, reset requests, the
// customer portal and the sign-in lockout — goes through it; the stored
// username keeps the spelling given at sign-up for display. On the names
// the account package's usernameRE admits (ASCII) it equals strings.ToLower,
// which computed the stored keys before, so those need no backfill
// (account.TestUsernameKeyASCII).
func UsernameKey(username string) string {
	// A Caser keeps state between calls: one per call, never shared.
	return cases.Fold().String(username)
}

// takeBack withdraws the time a redeemed key gave its account, when the
// owner bans the key; giveBack restores it on unban. Seats and features the
// key brought stay. A days grant moves the account's expiry by what it added
// (which ends the account's time at its next heartbeat when that lands in
// the past); a lifetime grant returns the account to the expiry beneath it,
// unless another lifetime grant still holds. While the account is lifetime,
// days are moved on the expiry beneath its lifetime grants, so they reappear
// when those are taken back.
func takeBack(ctx context.Context, tx Tx, k *Key, now time.Time) error {
	r, a, err := redemptionOf(ctx, tx, k)
	if r == nil || err != nil {
		return err
	}
	if !r.Lifetime {
		if err := shiftExpiry(ctx, tx, a, -r.Added); err != nil {
			return err
		}
	} else if a.Lifetime() {
		others, err := otherLifetimeGrants(ctx, tx, a, k.ID)
		if err != nil {
			return err
		}
		if len(others) == 0 {
			a.ExpiresAt = r.PriorExpiresAt
			if a.ExpiresAt == nil {
				a.ExpiresAt = &now
			}
		}
	}
	a.UpdatedAt = now
	return tx.UpdateAccount(ctx, a)
}

func giveBack(ctx context.Context, tx Tx, k *Key, now time.Time) error {
	r, a, err := redemptionOf(ctx, tx, k)
	if r == nil || err != nil {
		return err
	}
	switch {
	case !r.Lifetime:
		if err := shiftExpiry(ctx, tx, a, r.Added); err != nil {
			return err
		}
	case a.Lifetime():
		// Another grant already makes it lifetime: share the expiry beneath.
		others, err := otherLifetimeGrants(ctx, tx, a, k.ID)
		if err != nil {
			return err
		}
		if len(others) > 0 {
			r.PriorExpiresAt = others[0].PriorExpiresAt
			if err := tx.UpdateRedemption(ctx, r); err != nil {
				return err
			}
		}
	default:
		r.PriorExpiresAt, a.ExpiresAt = a.ExpiresAt, nil
		if err := tx.UpdateRedemption(ctx, r); err != nil {
			return err
		}
	}
	a.UpdatedAt = now
	return tx.UpdateAccount(ctx, a)
}

// shiftExpiry moves the account's expiry by d or, while it is lifetime, the
// expiry beneath each of its active lifetime grants.
func shiftExpiry(ctx context.Context, tx Tx, a *Account, d time.Duration) error {
	if !a.Lifetime() {
		exp := a.ExpiresAt.Add(d)
		a.ExpiresAt = &exp
		return nil
	}
	grants, err := tx.ActiveLifetimeRedemptions(ctx, a.ID)
	if err != nil {
		return err
	}
	for i := range grants {
		g := &grants[i]
		if g.PriorExpiresAt == nil {
			continue
		}
		p := g.PriorExpiresAt.Add(d)
		g.PriorExpiresAt = &p
		if err := tx.UpdateRedemption(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// otherLifetimeGrants are the account's active lifetime grants but keyID's.
func otherLifetimeGrants(ctx context.Context, tx Tx, a *Account, keyID int64) ([]Redemption, error) {
	grants, err := tx.ActiveLifetimeRedemptions(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	out := grants[:0]
	for _, g := range grants {
		if g.KeyID != keyID {
			out = append(out, g)
		}
	}
	return out, nil
}

// redemptionOf returns the redemption of k and its account, locked; nil when
// k was never redeemed or its account is gone.
func redemptionOf(ctx context.Context, tx Tx, k *Key) (*Redemption, *Account, error) {
	r, err := tx.RedemptionOfKey(ctx, k.ID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	if r.AccountID == 0 { // the account was deleted
		return nil, nil, nil
	}
	a, err := tx.AccountByIDForUpdate(ctx, k.AppID, r.AccountID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return r, a, nil
}

// CheckEmail accepts "" or a plausible e-mail address of at most 254
// characters.
func CheckEmail(e string) error { return checkEmail(e) }

func checkEmail(e string) error {
	if e == "" {
		return nil
	}
	at := strings.IndexByte(e, '@')
	if len(e) > 254 || at < 1 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n") {
		return apperr.InvalidField("email", "must be an e-mail address of at most 254 characters")
	}
	return nil
}

// MergeFeatures returns base with the flags of add set over it (a key's
// features redeemed onto an account, a holder's own flags over the app's
// defaults).
func MergeFeatures(base, add json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(base, &m)
	var extra map[string]json.RawMessage
	if json.Unmarshal(add, &extra) != nil || len(extra) == 0 {
		if len(base) == 0 {
			return json.RawMessage("{}")
		}
		return base
	}
	for k, v := range extra {
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		return base
	}
	return out
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// SessionTimeout is how long a session may go without a heartbeat.
func (s *Service) SessionTimeout() time.Duration { return s.cfg.SessionTimeout }

// AccountOfSession returns the account of a live account session of app
// named by its client token, counting heartbeats not yet written. It
// returns SESSION_EXPIRED for an unknown, ended, silent or key session.
func (s *Service) AccountOfSession(ctx context.Context, app *App, token string) (int64, error) {
	hash := HashToken(token)
	v, err := s.store.HeartbeatView(ctx, hash)
	if err == nil && v.Cached && !s.liveAccountSession(app, v) {
		v, err = s.store.FreshHeartbeatView(ctx, hash) // a cached view never ends a session
	}
	if errors.Is(err, apperr.ErrNotFound) {
		return 0, errSessionGone
	} else if err != nil {
		return 0, err
	}
	if !s.liveAccountSession(app, v) {
		return 0, errSessionGone
	}
	return *v.Session.AccountID, nil
}

// liveAccountSession reports whether v is a live account session of app.
func (s *Service) liveAccountSession(app *App, v *HeartbeatView) bool {
	ss := &v.Session
	return ss.AppID == app.ID && ss.AccountID != nil && ss.EndedAt == nil && !s.silent(ss, s.Now())
}

// WireUser is the account as the user block of register and account-login
// replies (and of the admin API's account view).
func (a *Account) WireUser(now time.Time) wire.AccountUser {
	u := wire.AccountUser{
		ID:            a.ID,
		Username:      a.Username,
		Email:         a.Email,
		Status:        string(a.StatusAt(now)),
		ExpiresAt:     wire.AtPtr(a.ExpiresAt),
		DaysRemaining: a.DaysRemaining(now),
		MaxDevices:    a.MaxDevices,
		KeyType:       "days",
		Lifetime:      a.Lifetime(),
		LicenseKey:    a.LicenseKey,
	}
	if a.Lifetime() {
		u.KeyType = "lifetime"
	}
	return u
}
