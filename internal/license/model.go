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
}

// AppSettings are the behaviour switches an owner sets per app. Later
// capabilities add fields here; unknown JSON fields are refused by the admin API.
type AppSettings struct {
	HeartbeatInterval      int    `json:"heartbeat_interval"`
	Maintenance            bool   `json:"maintenance"`
	MaintenanceMessage     string `json:"maintenance_message"`
	LoginMessage           string `json:"login_message"`
	DownloadURL            string `json:"download_url"`
	SelfResetEnabled       bool   `json:"self_reset_enabled"`
	SelfResetCooldownHours int    `json:"self_reset_cooldown_hours"`
	KeyPrefix              string `json:"key_prefix"`
	// ResetAutoApproveDays approves a queued device-reset request
	// (request-hwid-reset.php) at once when the key or account had no
	// approved one within that many days; 0 queues every request for the owner.
	ResetAutoApproveDays int `json:"reset_auto_approve_days"`

	// Trials (auth/trial.php): off until the owner turns them on. A trial
	// lasts TrialDuration TrialDurationUnit ("hours" or "days"); at most
	// TrialIPLimit new trials per client IP in TrialIPWindowHours (0: no cap).
	TrialEnabled       bool            `json:"trial_enabled"`
	TrialDuration      int             `json:"trial_duration"`
	TrialDurationUnit  string          `json:"trial_duration_unit"`
	TrialMaxDevices    int             `json:"trial_max_devices"`
	TrialFeatures      json.RawMessage `json:"trial_features"`
	TrialIPLimit       int             `json:"trial_ip_limit"`
	TrialIPWindowHours int             `json:"trial_ip_window_hours"`

	// App user accounts (auth/account-*.php): off until the owner turns them
	// on. A new account gets AccountSignupDays of time (0: none until a key
	// is redeemed) and AccountMaxDevices seats. Redeeming a key adds its days
	// to the running time ("stack") or counts them from now ("restart"), and
	// raises the seats to the key's when AccountTakesKeyDevices is set.
	AccountsEnabled          bool   `json:"accounts_enabled"`
	AccountKeyRequired       bool   `json:"account_key_required"`
	AccountSignupDays        int    `json:"account_signup_days"`
	AccountMaxDevices        int    `json:"account_max_devices"`
	AccountRedeemMode        string `json:"account_redeem_mode"`
	AccountTakesKeyDevices   bool   `json:"account_takes_key_devices"`
	AccountPasswordMinLength int    `json:"account_password_min_length"`

	// Leak and abuse detection (internal/abuse). A key seen from more than
	// LeakMaxHWIDs devices or LeakMaxIPs addresses within LeakWindowHours
	// (logins and device refusals; 0: not watched) is reported as
	// key.suspected_leak and, per LeakAction, left ("none"), paused
	// ("pause") or rotated keeping its first device ("rotate"). From one address, SuspiciousInvalidKeys INVALID_KEY
	// refusals, SuspiciousEnvelopeFailures rejected envelopes or
	// SuspiciousTrials trial requests within SuspiciousWindowMinutes
	// (0: not watched) are reported as suspicious_activity.
	LeakMaxHWIDs               int    `json:"leak_max_hwids"`
	LeakMaxIPs                 int    `json:"leak_max_ips"`
	LeakWindowHours            int    `json:"leak_window_hours"`
	LeakAction                 string `json:"leak_action"`
	SuspiciousInvalidKeys      int    `json:"suspicious_invalid_keys"`
	SuspiciousEnvelopeFailures int    `json:"suspicious_envelope_failures"`
	SuspiciousTrials           int    `json:"suspicious_trials"`
	SuspiciousWindowMinutes    int    `json:"suspicious_window_minutes"`

	// Branding is sent with app/info.php for the app to style itself.
	Branding Branding `json:"branding"`

	// FeatureFlags are the app's defined flags with their types and
	// defaults; keys and accounts override them (features).
	FeatureFlags []FeatureFlag `json:"feature_flags"`
}

// Branding is what an app may show of its vendor: all optional.
type Branding struct {
	LogoURL      string `json:"logo_url"`
	PrimaryColor string `json:"primary_color"`
	AccentColor  string `json:"accent_color"`
	WebsiteURL   string `json:"website_url"`
	SupportEmail string `json:"support_email"`
}

// Redeem modes of AppSettings.AccountRedeemMode.
const (
	RedeemStack   = "stack"
	RedeemRestart = "restart"
)

// TrialLength is how long a trial lasts.
func (st AppSettings) TrialLength() time.Duration {
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
	ID              int64
	AppID           string
	LicenseKey      string
	Status          Status // as stored; see StatusAt for the effective state
	Type            KeyType
	Duration        int // days for TypeDays; 0 for lifetime
	MaxDevices      int
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
