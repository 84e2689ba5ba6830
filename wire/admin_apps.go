package wire

import "encoding/json"

// App is an app as the admin API shows it. Secret is present only when the
// app is created and when its secret is regenerated or set; Role, the caller's
// role on the app, only when apps are read (GET apps.php).
type App struct {
	AppID     string      `json:"app_id"`
	Name      string      `json:"name"`
	Version   string      `json:"version"`
	Settings  AppSettings `json:"settings"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
	Revoked   bool        `json:"revoked"`
	RevokedAt *string     `json:"revoked_at"`
	Secret    string      `json:"secret,omitempty"`
	Role      string      `json:"role,omitempty"`
}

// AppSettings are the behaviour switches an owner sets per app; docs/api.md
// describes each. PUT apps.php takes the same names (in "settings" or at
// the top level) and refuses unknown ones. internal/license uses this type
// as its own (license.AppSettings).
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

	// Offline trust (docs/clients.md, Outage grace). With OfflineEnabled,
	// every signed reply (PWF-REPLY-V1) to login, heartbeat and check-key
	// carries trust_until = server time + OfflineTTLHours: how long an SDK
	// that pins the reply key may keep running while the server is
	// unreachable. Off (the default): replies are unchanged. OfflineTTLHours
	// (1 to 8760, default 168) is also the validity of license files.
	OfflineEnabled  bool `json:"offline_enabled"`
	OfflineTTLHours int  `json:"offline_ttl_hours"`

	// Branding is sent with app/info.php for the app to style itself.
	Branding Branding `json:"branding"`

	// FeatureFlags are the app's defined flags with their types and
	// defaults; keys and accounts override them (features).
	FeatureFlags []FeatureFlag `json:"feature_flags"`

	// Lazy migration from the service the app is leaving (owners only).
	// With UpstreamEnabled, a login or key check with a key string the app
	// does not know asks UpstreamURL's admin API for it
	// (GET {upstream_url}/api/admin/keys.php?app_id={upstream_app_id}&license_key=…)
	// and imports the key it answers. The admin token for that service is
	// sent as upstream_token: write-only, stored encrypted and never
	// returned; UpstreamTokenSet says whether one is stored (it is ignored
	// when sent).
	UpstreamURL      string `json:"upstream_url"`
	UpstreamAppID    string `json:"upstream_app_id"`
	UpstreamEnabled  bool   `json:"upstream_enabled"`
	UpstreamTokenSet bool   `json:"upstream_token_set"`
}

// UpstreamStatusReply is the reply of GET apps.php?app_id=&action=upstream-status:
// how far the lazy migration has come. Imported counts the keys imported
// from the upstream on first use so far; UpstreamKeys the keys the
// upstream lists, Remaining those of them this app does not have yet.
// Complete is false when the listing stopped at the page bound (or
// failed: Error says why), so the counts are a lower bound.
type UpstreamStatusReply struct {
	Success      bool   `json:"success"`
	Enabled      bool   `json:"enabled"`
	Imported     int    `json:"imported"`
	UpstreamKeys int    `json:"upstream_keys"`
	Remaining    int    `json:"remaining"`
	Complete     bool   `json:"complete"`
	Error        string `json:"error,omitempty"`
}

// FeatureFlag is a flag an app defines: its type ("bool", "number" or
// "string") and default; keys and accounts override it in their features.
type FeatureFlag struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Default     json.RawMessage `json:"default"`
	Description string          `json:"description"`
}

// AppListReply is the reply of GET apps.php: the apps the caller is a
// member of.
type AppListReply struct {
	Success bool  `json:"success"`
	Apps    []App `json:"apps"`
}

// AppReply is one app: read, created or changed.
type AppReply struct {
	Success bool `json:"success"`
	App     App  `json:"app"`
}

// FeatureFlagListReply is the reply of GET feature-flags.php.
type FeatureFlagListReply struct {
	Success      bool          `json:"success"`
	FeatureFlags []FeatureFlag `json:"feature_flags"`
}

// FeatureFlagReply is the reply of PUT feature-flags.php: the flag as
// defined.
type FeatureFlagReply struct {
	Success     bool         `json:"success"`
	FeatureFlag *FeatureFlag `json:"feature_flag,omitempty"`
}
