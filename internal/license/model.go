// Package license holds the heart of keyward: apps, license keys, their states
// and transitions, device binding and device-bound sessions with the heartbeat
// kill switch, for both kinds of holder (keys and app user accounts, whose
// sign-up, sign-in and redemptions are package account's; trials are package
// trial's). The seat rules (Seats) are shared with both. It knows nothing of
// HTTP or SQL: it declares the Store it needs and takes its clock from the
// caller.
package license

import (
	"encoding/json"
	"math"
	"time"

	"github.com/keyward/keyward/wire"
)

// App is a vendor's application. Its Secret identifies it on the client API and
// keys its envelopes.
type App struct {
	ID        string
	Name      string
	Version   string
	Secret    string
	Settings  AppSettings
	CreatedAt time.Time
	UpdatedAt time.Time
	// RevokedAt is set while the owner has revoked the app: its clients are
	// refused and live sessions end at their next heartbeat.
	RevokedAt *time.Time
	// OwnerID is the admin made the app's owner when it is created.
	OwnerID string
	// UpstreamToken is the admin token of the app's upstream (lazy
	// migration; Settings.Upstream*), "" for none. Stored sealed, never
	// shown: Settings.UpstreamTokenSet says whether there is one.
	UpstreamToken string
	// UpstreamImported counts the keys imported from the upstream on
	// first use (read only; the store counts).
	UpstreamImported int
}

// AppSettings are the behaviour switches an owner sets per app. The one
// definition is the wire type (the admin API sends and takes exactly these
// fields); its field comments say what each switch does.
type AppSettings = wire.AppSettings

// Branding is what an app may show of its vendor: all optional.
type Branding = wire.Branding

// Redeem modes of AppSettings.AccountRedeemMode.
const (
	RedeemStack   = "stack"
	RedeemRestart = "restart"
)

// TrialLength is how long a trial of an app with settings st lasts.
func TrialLength(st AppSettings) time.Duration {
	unit := 24 * time.Hour
	if st.TrialDurationUnit == "hours" {
		unit = time.Hour
	}
	return time.Duration(st.TrialDuration) * unit
}

// DefaultSettings are the settings of a new app.
func DefaultSettings() AppSettings {
	return AppSettings{
		HeartbeatInterval:      30,
		MaintenanceMessage:     "The application is under maintenance. Please try again later.",
		SelfResetEnabled:       true,
		SelfResetCooldownHours: 12,
		TrialDuration:          3,
		TrialDurationUnit:      "days",
		TrialMaxDevices:        1,
		TrialFeatures:          json.RawMessage("{}"),
		TrialIPLimit:           3,
		TrialIPWindowHours:     24,

		AccountMaxDevices:        1,
		AccountRedeemMode:        RedeemStack,
		AccountTakesKeyDevices:   true,
		AccountPasswordMinLength: 8,
		FeatureFlags:             []FeatureFlag{},

		LeakMaxHWIDs:               10,
		LeakWindowHours:            24,
		LeakAction:                 LeakActionNone,
		SuspiciousInvalidKeys:      30,
		SuspiciousEnvelopeFailures: 30,
		SuspiciousTrials:           10,
		SuspiciousWindowMinutes:    60,

		OfflineTTLHours: 168,
	}
}

// Automatic responses to a suspected leak.
const (
	LeakActionNone   = "none"
	LeakActionPause  = "pause"
	LeakActionRotate = "rotate" // see RotateForLeak
)

// Status is a key's state.
type Status string

// Key states of the API reference's state table.
const (
	StatusUnused  Status = "unused"
	StatusActive  Status = "active"
	StatusPaused  Status = "paused"
	StatusBanned  Status = "banned"
	StatusExpired Status = "expired"
	// StatusRedeemed marks a key whose time went to an app user account; it
	// no longer signs in on its own (KEY_REDEEMED).
	StatusRedeemed Status = "redeemed"
)

// KeyType says how a key's time is counted.
type KeyType string

// Key types.
const (
	TypeDays     KeyType = "days"
	TypeLifetime KeyType = "lifetime"
)

// Key is a license key of one app.
type Key struct {
	ID         int64
	AppID      string
	LicenseKey string
	Status     Status // as stored; see StatusAt for the effective state
	Type       KeyType
	Duration   int // days for TypeDays; 0 for lifetime
	MaxDevices int
	// Floating keys bind no device: MaxDevices counts live sessions on
	// any machines (seats, held while the app runs; see Seats.TakeSeat).
	Floating        bool
	Note            string
	Features        json.RawMessage // a JSON object
	ActivatedAt     *time.Time
	ExpiresAt       *time.Time
	LastSelfResetAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// StatusAt returns the key's effective status at now: an active key past its
// expiry is expired even before the sweep has marked it.
func (k *Key) StatusAt(now time.Time) Status {
	if k.Status == StatusActive && k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return StatusExpired
	}
	return k.Status
}

// DaysRemaining returns the whole days left, rounded up, or nil for keys
// without an expiry (lifetime keys, and unused keys whose time has not started).
func (k *Key) DaysRemaining(now time.Time) *int {
	if k.ExpiresAt == nil {
		return nil
	}
	d := int(math.Ceil(k.ExpiresAt.Sub(now).Hours() / 24))
	if d < 0 {
		d = 0
	}
	return &d
}

// Device is a machine bound to a key or, for account devices, to an account.
type Device struct {
	KeyID      int64
	AccountID  int64
	HWID       string
	CreatedAt  time.Time
	LastSeenAt time.Time
}

// Session is a device-bound session. The client holds a random token; the store
// keeps only its SHA-256 (TokenHash). ID is the public identifier admins see.
type Session struct {
	ID         string
	TokenHash  string
	AppID      string
	KeyID      *int64 // nil once the key was deleted, and for account sessions
	AccountID  *int64 // the account of an account session; nil once deleted
	HWID       string
	IP         string
	AppVersion string // the client's version, when its login sent one
	CreatedAt  time.Time
	LastSeenAt time.Time
	EndedAt    *time.Time
	EndReason  string // the wire code the next heartbeat answers
	LicenseKey string // filled by reads that join the key
	Username   string // filled by reads that join the account
}

// HeartbeatView is what one read gives the heartbeat: the session and the state
// of its key, or of its account for an account session (KeyStatus, KeyExpiry
// and KeyExists then describe the account, and KeyString is empty). Only the
// session fields the heartbeat decides on are filled: ID, TokenHash, AppID,
// KeyID, AccountID, LastSeenAt, EndedAt and EndReason.
type HeartbeatView struct {
	Session   Session
	KeyStatus Status
	KeyExpiry *time.Time
	KeyString string
	KeyExists bool
	// SeenKey names the session's last-seen time in the store (0: it has
	// none to write, as an ended session): a heartbeat's Touch hands it
	// back, so the flush writes the time without looking the session up.
	SeenKey int64
	// Cached: the view comes from the store's session cache. It is exact
	// but for LastSeenAt, which on PostgreSQL may trail a heartbeat another
	// process wrote: a cached view may keep a session alive, never end it.
	Cached bool
}

// Touch is one heartbeat's time for Store.TouchSessions: the session's
// HeartbeatView.SeenKey, its token hash (the store's session cache moves
// that session's time forward once the write commits) and the time.
type Touch struct {
	SeenKey   int64
	TokenHash string
	At        time.Time
}

// ResetRequest is an end user's request, queued for the owner, to clear a
// key's device binding.
type ResetRequest struct {
	ID         int64
	AppID      string
	KeyID      int64 // 0 for an account's request
	AccountID  int64 // 0 for a key's request
	LicenseKey string
	Username   string
	HWID       string
	Reason     string
	Status     string // pending, approved, denied
	CreatedAt  time.Time
	DecidedAt  *time.Time
	DecidedBy  string // the admin's name, or "auto"
}

// Reset request states.
const (
	RequestPending  = "pending"
	RequestApproved = "approved"
	RequestDenied   = "denied"
)
