package license

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/journal"
)

// Store is the persistence license needs. Reads outside a transaction may see
// slightly stale data; every decision that changes state runs in InTx.
// Methods return apperr.ErrNotFound / apperr.ErrConflict for missing rows and
// uniqueness violations.
type Store interface {
	AppBySecretHash(ctx context.Context, hash string) (*App, error)
	// CountKeys counts the app's keys the filter matches.
	CountKeys(ctx context.Context, appID string, f BulkFilter) (int, error)
	// ResetRequests lists an app's reset requests in status ("" = any),
	// newest first, with IDs below before (0 = from the newest).
	ResetRequests(ctx context.Context, appID, status string, before int64, limit int) ([]ResetRequest, error)
	App(ctx context.Context, id string) (*App, error)
	Apps(ctx context.Context) ([]App, error)

	Key(ctx context.Context, appID, licenseKey string) (*Key, error)
	// TakenKeyStrings returns those of strs the app uses as a key string or
	// as the alias of a rotated key.
	TakenKeyStrings(ctx context.Context, appID string, strs []string) ([]string, error)
	Keys(ctx context.Context, f KeyFilter) ([]Key, error)
	Devices(ctx context.Context, keyID int64) ([]Device, error)
	Sessions(ctx context.Context, f SessionFilter) ([]Session, error)

	// IsKeyAlias reports whether alias is a string of the key rotated away
	// for a suspected leak (see RotateForLeak). Only the kept device can
	// open a session with it, so any live session of the key may send it.
	IsKeyAlias(ctx context.Context, appID, alias string, keyID int64) (bool, error)

	// HeartbeatView reads a session and its key's state in one query, or
	// from the store's session cache (the view is then marked Cached).
	HeartbeatView(ctx context.Context, tokenHash string) (*HeartbeatView, error)
	// FreshHeartbeatView is HeartbeatView read from the database, never
	// from a cache: what a decision to end a session is made on.
	FreshHeartbeatView(ctx context.Context, tokenHash string) (*HeartbeatView, error)
	// TouchSessions records heartbeat times of live sessions, each by the
	// SeenKey its HeartbeatView gave (in writes of a few hundred each; a
	// failure may leave some written, and writing them again is harmless).
	// A time never moves back, and the key of a session that ended, was
	// deleted or never existed is ignored.
	TouchSessions(ctx context.Context, touches []Touch) error
	// ReapSessions ends live sessions last seen before cutoff and deletes ended
	// sessions older than purgeBefore. It returns how many it ended.
	ReapSessions(ctx context.Context, cutoff, now, purgeBefore time.Time) (int, error)

	FileStore

	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction. Key reads inside it lock the row on engines that
// can, so concurrent logins of one key serialise.
type Tx interface {
	InsertApp(ctx context.Context, a *App, secretHash string) error
	UpdateApp(ctx context.Context, a *App, secretHash string) error
	// CountUpstreamImport adds one to App.UpstreamImported.
	CountUpstreamImport(ctx context.Context, appID string) error
	DeleteApp(ctx context.Context, id string) error

	KeyForUpdate(ctx context.Context, appID, licenseKey string) (*Key, error)
	InsertKeys(ctx context.Context, keys []Key) error
	// TakenKeyStrings is Store.TakenKeyStrings inside the transaction.
	TakenKeyStrings(ctx context.Context, appID string, strs []string) ([]string, error)
	// KeysForUpdate reads up to limit keys of the app the filter matches,
	// locking them.
	KeysForUpdate(ctx context.Context, appID string, f BulkFilter, limit int) ([]Key, error)
	UpdateKey(ctx context.Context, k *Key) error
	DeleteKey(ctx context.Context, id int64) error

	Devices(ctx context.Context, keyID int64) ([]Device, error)
	UpsertDevice(ctx context.Context, keyID int64, hwid string, now time.Time) error
	DeleteDevices(ctx context.Context, keyID int64) (int, error)

	// LiveSessionsOfKey returns the key's open sessions, oldest first.
	LiveSessionsOfKey(ctx context.Context, keyID int64) ([]Session, error)
	InsertSession(ctx context.Context, s *Session) error
	// SessionByTokenHash returns a session whether live or ended.
	SessionByTokenHash(ctx context.Context, hash string) (*Session, error)
	SessionByID(ctx context.Context, id string) (*Session, error)
	// EndSession ends one live session; ending an ended one is a no-op.
	EndSession(ctx context.Context, id, reason string, now time.Time) error
	// EndKeySessions ends every live session of a key and returns how many.
	EndKeySessions(ctx context.Context, keyID int64, reason string, now time.Time) (int, error)

	InsertResetRequest(ctx context.Context, r *ResetRequest) error
	// ResetRequestForUpdate reads one of the app's reset requests, locking it.
	ResetRequestForUpdate(ctx context.Context, appID string, id int64) (*ResetRequest, error)
	// DecideResetRequest stores r's status, decision time and decider.
	DecideResetRequest(ctx context.Context, r *ResetRequest) error
	// LastApprovedReset is when the latest approved request of the key (or
	// account) was decided; nil if none.
	LastApprovedReset(ctx context.Context, keyID, accountID int64) (*time.Time, error)

	// LockApp serialises writers of one app's trials across processes (a
	// row lock on PostgreSQL; SQLite has a single writer anyway).
	LockApp(ctx context.Context, appID string) error
	// Accounts as license holders: a device reset of an account, and the
	// grant ledger of keys redeemed onto one (a ban takes the time back,
	// an unban gives it back, a renewal extends it). The account package
	// declares the rest.

	// AccountForUpdate reads an account by username key (UsernameKey), locking the row.
	AccountForUpdate(ctx context.Context, appID, usernameKey string) (*Account, error)
	// AccountByIDForUpdate reads an account of the app by ID, locking the row.
	AccountByIDForUpdate(ctx context.Context, appID string, id int64) (*Account, error)
	UpdateAccount(ctx context.Context, a *Account) error
	DeleteAccountDevices(ctx context.Context, accountID int64) (int, error)
	// EndAccountSessions ends every live session of an account.
	EndAccountSessions(ctx context.Context, accountID int64, reason string, now time.Time) (int, error)
	// RedemptionOfKey returns the redemption of a key (ErrNotFound if none).
	RedemptionOfKey(ctx context.Context, keyID int64) (*Redemption, error)
	// UpdateRedemption stores a redemption's PriorExpiresAt and Added.
	UpdateRedemption(ctx context.Context, r *Redemption) error
	// ActiveLifetimeRedemptions returns the account's lifetime grants whose
	// key is still redeemed (not banned).
	ActiveLifetimeRedemptions(ctx context.Context, accountID int64) ([]Redemption, error)

	ExpiryTx
	AliasTx
	FileTx

	journal.Journal
}

// KeyFilter selects keys for listing. Status filters on the effective status at
// Now. After is the cursor: only keys with a larger ID are returned.
type KeyFilter struct {
	AppID  string
	Status Status
	Type   KeyType // "" for any
	Query  string
	// HWID selects keys with this device bound (exact match).
	HWID  string
	After int64
	Limit int
	Now   time.Time
}

// SessionFilter selects live sessions for listing.
type SessionFilter struct {
	AppID     string
	KeyID     int64
	AccountID int64
	After     string
	Limit     int
}
