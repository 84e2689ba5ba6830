// Package account implements app user accounts: end users who sign up
// with a username and password (register), sign in and open sessions on
// their devices under the account's seats (login), change their password,
// and redeem license keys whose time, seats and features move onto the
// account; and the owner's actions on them (list, ban, pause, reset
// devices, set expiry, reset password, delete).
//
// The account record (license.Account), its sessions and devices, and the
// rule that banning a redeemed key takes its time back belong to license,
// which answers heartbeats and key actions for both kinds of holder; the
// seat rules are license.Seats, one implementation over keys and accounts.
package account

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/lockout"
)

// Store is the persistence accounts need. Methods return
// apperr.ErrNotFound / apperr.ErrConflict for missing rows and uniqueness
// violations.
type Store interface {
	// AccountByUsername reads an account by its username key (license.UsernameKey).
	AccountByUsername(ctx context.Context, appID, usernameKey string) (*license.Account, error)
	Accounts(ctx context.Context, f Filter) ([]license.Account, error)
	AccountDevices(ctx context.Context, accountID int64) ([]license.Device, error)
	// Redemptions lists the keys redeemed onto an account, oldest first.
	Redemptions(ctx context.Context, accountID int64) ([]license.Redemption, error)
	Sessions(ctx context.Context, f license.SessionFilter) ([]license.Session, error)
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of accounts. Account and key reads lock the row
// on engines that can.
type Tx interface {
	// InsertAccount stores a new account (ErrConflict when the username is taken).
	InsertAccount(ctx context.Context, a *license.Account) error
	// AccountForUpdate reads an account by username key, locking the row.
	AccountForUpdate(ctx context.Context, appID, usernameKey string) (*license.Account, error)
	// AccountByIDForUpdate reads an account of the app by ID, locking the row.
	AccountByIDForUpdate(ctx context.Context, appID string, id int64) (*license.Account, error)
	UpdateAccount(ctx context.Context, a *license.Account) error
	DeleteAccount(ctx context.Context, id int64) error

	AccountDevices(ctx context.Context, accountID int64) ([]license.Device, error)
	UpsertAccountDevice(ctx context.Context, accountID int64, hwid string, now time.Time) error
	DeleteAccountDevices(ctx context.Context, accountID int64) (int, error)
	// LiveSessionsOfAccount returns the account's open sessions, oldest first.
	LiveSessionsOfAccount(ctx context.Context, accountID int64) ([]license.Session, error)
	// EndAccountSessions ends every live session of an account.
	EndAccountSessions(ctx context.Context, accountID int64, reason string, now time.Time) (int, error)
	InsertSession(ctx context.Context, s *license.Session) error
	// EndSession ends one live session; ending an ended one is a no-op.
	EndSession(ctx context.Context, id, reason string, now time.Time) error

	// KeyForUpdate reads a key of the app by its string, locking the row.
	KeyForUpdate(ctx context.Context, appID, licenseKey string) (*license.Key, error)
	UpdateKey(ctx context.Context, k *license.Key) error
	InsertRedemption(ctx context.Context, r *license.Redemption) error
	// RedemptionOfKey returns the redemption of a key (ErrNotFound if none).
	RedemptionOfKey(ctx context.Context, keyID int64) (*license.Redemption, error)

	journal.Journal
}

// Filter selects accounts for listing. Query matches a substring of the
// username or e-mail; After is the cursor (accounts with a larger ID).
type Filter struct {
	AppID string
	Query string
	After int64
	Limit int
}

// Licenses is what accounts need of the license service (*license.Service
// is one): apps, and the liveness of account sessions, which counts
// heartbeats license buffers in memory.
type Licenses interface {
	App(ctx context.Context, id string) (*license.App, error)
	// AccountOfSession returns the account of a live account session
	// (SESSION_EXPIRED otherwise).
	AccountOfSession(ctx context.Context, app *license.App, token string) (int64, error)
	SessionTimeout() time.Duration
}

// Config holds the tunables of the account service.
type Config struct {
	// BcryptCost is the bcrypt cost of account passwords (default 10):
	// every account sign-in pays it once.
	BcryptCost int
	// Guard counts failed sign-ins (nil: no lockouts); SignIn applies per
	// username, SignInIP per client IP, both per app.
	Guard    *lockout.Guard
	SignIn   lockout.Policy
	SignInIP lockout.Policy
}

// Service implements the account rules. It is safe for concurrent use.
type Service struct {
	store  Store
	lic    Licenses
	now    func() time.Time
	random io.Reader
	cfg    Config
	dummy  []byte // a bcrypt hash compared against for unknown usernames
}

// New returns a Service. now is the clock; random the source of session
// tokens and temporary passwords (crypto/rand.Reader when nil).
func New(store Store, lic Licenses, now func() time.Time, random io.Reader, cfg Config) *Service {
	if random == nil {
		random = rand.Reader
	}
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = 10
	}
	return &Service{store: store, lic: lic, now: now, random: random, cfg: cfg, dummy: dummyHash(cfg.BcryptCost)}
}

// dummyHash is made once at start, so that even the first sign-in with an
// unknown username costs one comparison and nothing more.
func dummyHash(cost int) []byte {
	h, err := bcrypt.GenerateFromPassword([]byte("keyward-dummy-password"), cost)
	if err != nil { // only an out-of-range cost, which config refuses
		h, _ = bcrypt.GenerateFromPassword([]byte("keyward-dummy-password"), bcrypt.DefaultCost)
	}
	return h
}

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now().UTC() }

func (s *Service) randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", apperr.Wrap(err, "random")
	}
	return hex.EncodeToString(b), nil
}

// accountSeats are a's seats inside tx at now (license.Seats: the same
// rules as a key's).
func accountSeats(ctx context.Context, tx Tx, a *license.Account, now time.Time) license.Seats {
	return license.Seats{Max: a.MaxDevices, What: "account",
		Devices: func() ([]license.Device, error) { return tx.AccountDevices(ctx, a.ID) },
		Bind:    func(hwid string) error { return tx.UpsertAccountDevice(ctx, a.ID, hwid, now) },
		Live:    func() ([]license.Session, error) { return tx.LiveSessionsOfAccount(ctx, a.ID) },
		End:     func(id, reason string) error { return tx.EndSession(ctx, id, reason, now) }}
}

// duplicateGrace is how long after a sign-up or a redemption the same
// request is answered as a retry of it.
const duplicateGrace = 2 * time.Minute

func conflict(msg string) error { return apperr.New(apperr.Conflict, license.CodeConflict, msg) }

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence
// (as license does for its own fields).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
