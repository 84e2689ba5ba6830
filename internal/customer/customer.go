// Package customer is the end customer's self-service: a customer signs in
// with a license key or an app user account and gets a short-lived token
// with which they see their license (status, devices, sessions), end one of
// their own sessions, see their orders and subscriptions and cancel a
// subscription. Every read and change goes through a Store whose queries are
// filtered by the token's holder and app, so another customer's data cannot
// be reached. The package knows nothing of HTTP or SQL.
package customer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/wire"
)

// Holder kinds: what a customer signed in with.
const (
	KindKey     = "key"
	KindAccount = "account"
)

// Holder is the license holder a customer is, inside one app: a key
// (KeyID) or an app user account (AccountID), never both.
type Holder struct {
	AppID     string
	KeyID     int64
	AccountID int64
}

// Store is the persistence the customer service needs. Every method that
// takes a Holder returns only rows of that holder in that app.
type Store interface {
	// ServerSecret returns the installation-wide secret called name,
	// storing generate's value first when there is none.
	ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error)
	App(ctx context.Context, id string) (*license.App, error)
	Key(ctx context.Context, appID, licenseKey string) (*license.Key, error)
	// Account reads an account by its lower-cased username.
	Account(ctx context.Context, appID, usernameKey string) (*license.Account, error)

	// HolderKeys lists the key strings the holder owns: a key itself, or the
	// keys redeemed onto an account.
	HolderKeys(ctx context.Context, h Holder) ([]string, error)
	Devices(ctx context.Context, h Holder) ([]license.Device, error)
	// LiveSessions lists the holder's open sessions, oldest first.
	LiveSessions(ctx context.Context, h Holder) ([]license.Session, error)
	// Orders lists, newest first, orders that delivered one of the
	// holder's keys or renew one of its subscriptions.
	Orders(ctx context.Context, h Holder, limit int) ([]commerce.Order, error)
	// Subscriptions lists subscriptions of the holder's keys, newest first.
	Subscriptions(ctx context.Context, h Holder) ([]commerce.Subscription, error)

	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of the customer store.
type Tx interface {
	// LiveSession returns one of the holder's live sessions by its public
	// ID (ErrNotFound for an ended session or anyone else's).
	LiveSession(ctx context.Context, h Holder, id string) (*license.Session, error)
	// SubscriptionForUpdate returns one of the holder's subscriptions,
	// locking it (ErrNotFound for anyone else's).
	SubscriptionForUpdate(ctx context.Context, h Holder, id int64) (*commerce.Subscription, error)
	journal.Journal
	// License and Orders are this transaction as the license and commerce
	// packages see it.
	License() license.Tx
	Orders() commerce.OrderTx
}

// Accounts checks app user passwords (account.Service): under the account
// sign-in lockout shared with the client API.
type Accounts interface {
	VerifyAccount(ctx context.Context, app *license.App, username, password, ip string) (*license.Account, error)
}

// Config holds the customer service's tunables.
type Config struct {
	// TokenTTL is the lifetime of a customer token (default 1 h).
	TokenTTL time.Duration
	// Guard counts failed sign-ins (nil: no lockouts): SignIn per license
	// key or username and app, SignInIP per client IP.
	Guard    *lockout.Guard
	SignIn   lockout.Policy
	SignInIP lockout.Policy
}

// Service signs customers in and serves their self-service.
type Service struct {
	store    Store
	accounts Accounts
	now      func() time.Time
	cfg      Config
	key      []byte
}

// Error codes of this package beyond the license package's.
const (
	CodeInvalidCredentials = wire.CodeInvalidCredentials
	CodeUnauthorized       = wire.CodeUnauthorized
)

var (
	// errInvalid is the one answer to every failed sign-in: it never says
	// whether the app, key or username exists.
	errInvalid      = apperr.New(apperr.Unauthenticated, CodeInvalidCredentials, "Invalid credentials.")
	errUnauthorized = apperr.New(apperr.Unauthenticated, CodeUnauthorized, "Missing or invalid customer token.")
	errNoSession    = apperr.NotFoundOf("Session")
	errNoSub        = apperr.NotFoundOf("Subscription")
	// errBannedKey and errBannedAccount close the portal to a banned holder,
	// at sign-in and to tokens it got before the ban.
	errBannedKey     = apperr.New(apperr.Forbidden, license.CodeBanned, "This license key has been banned; the customer portal is closed to it.")
	errBannedAccount = apperr.New(apperr.Forbidden, license.CodeBanned, "This account has been banned; the customer portal is closed to it.")
)

// New returns a Service whose token key is the installation's
// "customer_jwt_key" (created on first use, shared by every process).
func New(ctx context.Context, store Store, accounts Accounts, now func() time.Time, cfg Config) (*Service, error) {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Hour
	}
	key, err := loadKey(ctx, store)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, accounts: accounts, now: now, cfg: cfg, key: key}, nil
}

// Principal is a signed-in customer: the holder, and the key or account
// as read for this request.
type Principal struct {
	Kind    string
	App     *license.App
	Holder  Holder
	Key     *license.Key     // KindKey
	Account *license.Account // KindAccount
	Expires time.Time
}

// Name is how audit entries name the customer: the key masked to its last
// five characters, or the username.
func (p *Principal) Name() string {
	if p.Kind == KindAccount {
		return p.Account.Username
	}
	return MaskKey(p.Key.LicenseKey)
}

// Actor is the audit actor of the customer at ip.
func (p *Principal) Actor(ip string) audit.Actor {
	return audit.Actor{Kind: "customer", Name: p.Name(), IP: ip}
}

// MaskKey hides all but the last five characters of a license key.
func MaskKey(k string) string {
	r := []rune(k)
	if len(r) <= 5 {
		return "…" + k
	}
	return "…" + string(r[len(r)-5:])
}

// LoginInput is a sign-in: AppID with LicenseKey, or with Username and
// Password. IP is the client's address.
type LoginInput struct {
	AppID      string
	LicenseKey string
	Username   string
	Password   string
	IP         string
}

// Token is a signed-in customer's bearer token.
type Token struct {
	Token     string
	ExpiresAt time.Time
	Kind      string
}

// Login signs a customer in with a license key or an account. Every failed
// check of the credentials — unknown app, unknown key, unknown username,
// wrong password — is INVALID_CREDENTIALS, counted per client IP and per
// key or username (TOO_MANY_ATTEMPTS once locked). A banned key or account
// does not sign in (BANNED, once the credentials are right): banning is how
// an owner cuts off a leaked or abused key, and its holder must not keep
// reading the customer's orders or cancelling the subscription. An expired
// or paused one signs in as any other, so its customer sees why and can
// find the orders and subscription to renew or cancel. It returns
// MISSING_FIELDS, INVALID_CREDENTIALS, TOO_MANY_ATTEMPTS, APP_REVOKED,
// BANNED, ACCOUNTS_DISABLED or PASSWORD_RESET_REQUIRED.
func (s *Service) Login(ctx context.Context, in LoginInput) (*Token, error) {
	switch {
	case in.AppID == "":
		return nil, apperr.Missing("app_id")
	case in.LicenseKey == "" && in.Username == "":
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Missing required field: license_key, or username and password.")
	case in.LicenseKey != "" && in.Username != "":
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Send license_key or username and password, not both.")
	case in.Username != "" && in.Password == "":
		return nil, apperr.Missing("password")
	}
	subs := s.subjects(in)
	// The attempt is reserved before any credential is compared. An account
	// is counted on the account sign-in counters by VerifyAccount, so only
	// the portal's IP counter is reserved here for it.
	reserve := subs
	if in.Username != "" {
		reserve = subs[:1]
	}
	res, err := s.cfg.Guard.Reserve(ctx, reserve...)
	if err != nil {
		return nil, err
	}
	var app *license.App
	if len(in.AppID) <= 64 {
		app, err = s.store.App(ctx, in.AppID)
		if err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return nil, res.Abandon(ctx, err)
		}
	}
	if app == nil {
		return nil, errInvalid // the reservation stays: a failure
	}
	if app.RevokedAt != nil {
		return nil, res.Abandon(ctx, license.ErrAppRevoked)
	}
	var cl claims
	if in.LicenseKey != "" {
		var k *license.Key
		if len(in.LicenseKey) <= 256 {
			var err error
			k, err = s.store.Key(ctx, app.ID, in.LicenseKey)
			if err != nil && !errors.Is(err, apperr.ErrNotFound) {
				return nil, res.Abandon(ctx, err)
			}
		}
		if k == nil {
			return nil, errInvalid // the reservation stays: a failure
		}
		if k.Status == license.StatusBanned {
			return nil, errBannedKey
		}
		cl = claims{kind: KindKey, subject: k.LicenseKey, app: app.ID, id: k.ID}
	} else {
		if !app.Settings.AccountsEnabled {
			return nil, res.Abandon(ctx, apperr.New(apperr.Forbidden, account.CodeAccountsDisabled, "User accounts are not enabled for this application."))
		}
		a, err := s.accounts.VerifyAccount(ctx, app, in.Username, in.Password, in.IP)
		if apperr.CodeOf(err) == account.CodeInvalidCredentials {
			// The account lockout counted it; the portal's IP reservation
			// stays counted too.
			return nil, errInvalid
		} else if err != nil {
			return nil, res.Abandon(ctx, err)
		}
		if a.Status == license.StatusBanned {
			return nil, errBannedAccount
		}
		if a.PasswordResetRequired {
			return nil, res.Abandon(ctx, apperr.New(apperr.Forbidden, account.CodePasswordResetRequired,
				"Your password was reset by the application owner. Choose a new password in the application first."))
		}
		cl = claims{kind: KindAccount, subject: a.Username, app: app.ID, id: a.ID, pw: fingerprint(a.PasswordHash)}
	}
	if err := res.GiveBack(ctx, subs[1]); err != nil {
		return nil, err
	}
	now := s.now()
	cl.expires = now.Add(s.cfg.TokenTTL)
	tok, err := s.sign(cl, now)
	if err != nil {
		return nil, apperr.Wrap(err, "sign customer token")
	}
	return &Token{Token: tok, ExpiresAt: cl.expires.Truncate(time.Second).UTC(), Kind: cl.kind}, nil
}

// subjects are what a failed sign-in counts against: the client IP (over
// every app) and the key or username within the app, known or not.
func (s *Service) subjects(in LoginInput) []lockout.Subject {
	id := "key:" + in.LicenseKey
	if in.Username != "" {
		id = "account:" + license.UsernameKey(in.Username)
	}
	if len(id) > 128 {
		id = id[:128]
	}
	app := in.AppID
	if len(app) > 64 {
		app = app[:64]
	}
	return []lockout.Subject{
		{Scope: "customer-ip", ID: in.IP, Policy: s.cfg.SignInIP},
		{Scope: "customer:" + app, ID: id, Policy: s.cfg.SignIn},
	}
}

// Authenticate verifies a customer token and reads its holder afresh: a
// token stops working when its key is deleted or rotated, its account
// deleted or its password changed, and answers BANNED once its key or
// account is banned. It returns UNAUTHORIZED, APP_REVOKED or BANNED.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	cl, err := s.parse(token)
	if err != nil {
		return nil, err
	}
	app, err := s.store.App(ctx, cl.app)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	if app.RevokedAt != nil {
		return nil, license.ErrAppRevoked
	}
	p := &Principal{Kind: cl.kind, App: app, Expires: cl.expires}
	switch cl.kind {
	case KindKey:
		k, err := s.store.Key(ctx, app.ID, cl.subject)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && k.ID != cl.id) {
			return nil, errUnauthorized
		} else if err != nil {
			return nil, err
		}
		if k.Status == license.StatusBanned {
			return nil, errBannedKey
		}
		p.Key, p.Holder = k, Holder{AppID: app.ID, KeyID: k.ID}
	default:
		a, err := s.store.Account(ctx, app.ID, license.UsernameKey(cl.subject))
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && (a.ID != cl.id || fingerprint(a.PasswordHash) != cl.pw)) {
			return nil, errUnauthorized
		} else if err != nil {
			return nil, err
		}
		if a.Status == license.StatusBanned {
			return nil, errBannedAccount
		}
		p.Account, p.Holder = a, Holder{AppID: app.ID, AccountID: a.ID}
	}
	return p, nil
}

// View is what a customer sees of their license.
type View struct {
	Devices  []license.Device
	Sessions []license.Session
	// Keys are the keys redeemed onto an account (empty for a key).
	Keys []string
}

// View reads the principal's devices and live sessions.
func (s *Service) View(ctx context.Context, p *Principal) (*View, error) {
	devices, err := s.store.Devices(ctx, p.Holder)
	if err != nil {
		return nil, err
	}
	sessions, err := s.store.LiveSessions(ctx, p.Holder)
	if err != nil {
		return nil, err
	}
	v := &View{Devices: devices, Sessions: sessions, Keys: []string{}}
	if p.Kind == KindAccount {
		if v.Keys, err = s.store.HolderKeys(ctx, p.Holder); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// EndSession ends one of the principal's live sessions; its next heartbeat
// answers SESSION_REVOKED. Any other session ID, ended, unknown or someone
// else's, is NOT_FOUND.
func (s *Service) EndSession(ctx context.Context, p *Principal, ip, id string) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return apperr.Missing("session_id")
	}
	if len(id) > 128 {
		return errNoSession
	}
	now := s.now().UTC()
	return s.store.InTx(ctx, func(tx Tx) error {
		sess, err := tx.LiveSession(ctx, p.Holder, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return errNoSession
		} else if err != nil {
			return err
		}
		lt := tx.License()
		if err := lt.EndSession(ctx, sess.ID, license.CodeSessionRevoked, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(p.Actor(ip), now, "session.revoke", sess.AppID, sess.ID, map[string]any{"hwid": sess.HWID}))
	})
}

// Orders lists the principal's orders, newest first (at most 100), each
// showing only the principal's own keys among those it delivered.
func (s *Service) Orders(ctx context.Context, p *Principal) ([]commerce.Order, error) {
	own, err := s.store.HolderKeys(ctx, p.Holder)
	if err != nil {
		return nil, err
	}
	orders, err := s.store.Orders(ctx, p.Holder, 100)
	if err != nil {
		return nil, err
	}
	for i := range orders {
		keys := []string{}
		for _, k := range orders[i].Keys {
			if slices.Contains(own, k) {
				keys = append(keys, k)
			}
		}
		orders[i].Keys = keys
	}
	return orders, nil
}

// Subscriptions lists the principal's subscriptions, newest first.
func (s *Service) Subscriptions(ctx context.Context, p *Principal) ([]commerce.Subscription, error) {
	return s.store.Subscriptions(ctx, p.Holder)
}

// CancelSubscription stops renewals of one of the principal's
// subscriptions (event subscription.cancelled). It returns NOT_FOUND for
// anyone else's and CONFLICT when it is already cancelled.
func (s *Service) CancelSubscription(ctx context.Context, p *Principal, ip string, id int64) (*commerce.Subscription, error) {
	now := s.now().UTC()
	var out *commerce.Subscription
	err := s.store.InTx(ctx, func(tx Tx) error {
		sub, err := tx.SubscriptionForUpdate(ctx, p.Holder, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return errNoSub
		} else if err != nil {
			return err
		}
		out = sub
		return commerce.CancelInTx(ctx, tx.Orders(), sub, p.Actor(ip), now)
	})
	return out, err
}
