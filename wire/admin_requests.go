package wire

import "encoding/json"

// Request bodies of the admin API, as the dashboard sends them. The server
// reads bodies field by field (a field left out is "no change", and some
// fields take more than one JSON type), so these types describe one valid
// way to send each request: a pointer or omitempty field is sent only when
// set.

// AdminLoginRequest is the body of POST login.php.
type AdminLoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// TOTPRequest is the body of POST totp.php: the step-one token of a
// password sign-in and a code from the authenticator app (or a recovery
// code).
type TOTPRequest struct {
	Step1Token string `json:"step1_token"`
	Code       string `json:"code"`
}

// PasswordChangeRequest is the body of PUT profile.php that changes the
// password.
type PasswordChangeRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// EmailChangeRequest is the body of PUT profile.php that changes the
// e-mail address.
type EmailChangeRequest struct {
	Password string `json:"password"`
	Email    string `json:"email"`
}

// TwoFactorRequest is the body of POST 2fa.php: Action is enrol, confirm
// (Code), recovery_codes (Code) or disable (Password and Code).
type TwoFactorRequest struct {
	Action   string `json:"action"`
	Code     string `json:"code,omitempty"`
	Password string `json:"password,omitempty"`
}

// NewAccessTokenRequest is the body of POST tokens.php.
type NewAccessTokenRequest struct {
	Name string `json:"name"`
}

// RevokeAccessTokenRequest is the body of DELETE tokens.php.
type RevokeAccessTokenRequest struct {
	ID string `json:"id"`
}

// GenerateKeysRequest is the body of POST keys.php that generates Count
// keys. DurationValue (days) is for days keys; MaxDevices and Features
// default to the app's when left out.
type GenerateKeysRequest struct {
	AppID         string          `json:"app_id"`
	Count         int             `json:"count"`
	KeyType       string          `json:"key_type"`
	Note          string          `json:"note"`
	DurationValue *int            `json:"duration_value,omitempty"`
	MaxDevices    *int            `json:"max_devices,omitempty"`
	Features      json.RawMessage `json:"features,omitempty"`
	// Floating makes the keys floating: max_devices counts live sessions
	// on any machines instead of bound devices.
	Floating bool `json:"floating,omitempty"`
}

// KeyActionRequest is the body of POST keys.php?action= (ban, unban,
// pause, resume, extend, reset-hwid, rotate): Days for extend, Reason for
// the audit log.
type KeyActionRequest struct {
	AppID      string `json:"app_id"`
	LicenseKey string `json:"license_key"`
	Days       *int   `json:"days,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// KeyUpdateRequest is the body of PUT keys.php: Note and Features replace
// the key's; MaxDevices and Floating only when given.
type KeyUpdateRequest struct {
	AppID      string          `json:"app_id"`
	LicenseKey string          `json:"license_key"`
	Note       string          `json:"note"`
	MaxDevices *int            `json:"max_devices,omitempty"`
	Features   json.RawMessage `json:"features"`
	// Floating, when given, switches the key floating (true) or back to
	// device seats (false).
	Floating *bool `json:"floating,omitempty"`
}

// KeyRequest names one key: the body of DELETE keys.php.
type KeyRequest struct {
	AppID      string `json:"app_id"`
	LicenseKey string `json:"license_key"`
}

// RevokeSessionsRequest is the body of DELETE sessions.php: one session
// (SessionID) or every session of a key (LicenseKey).
type RevokeSessionsRequest struct {
	AppID      string `json:"app_id"`
	SessionID  string `json:"session_id,omitempty"`
	LicenseKey string `json:"license_key,omitempty"`
}

// WebhookRequest is the body of POST webhooks.php (create: no ID) and PUT
// webhooks.php (edit: ID). No events means every event.
type WebhookRequest struct {
	ID          int64    `json:"id,omitempty"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

// WebhookActionRequest is the body of POST webhooks.php with an action:
// rotate_secret, enable, disable or test (ID), redeliver (DeliveryID).
type WebhookActionRequest struct {
	Action     string `json:"action"`
	ID         int64  `json:"id,omitempty"`
	DeliveryID string `json:"delivery_id,omitempty"`
}

// ReleaseRequest is the body of POST updates.php that creates a release
// (no ID; RolloutPercent only when given) and of PUT updates.php that
// edits one (ID).
type ReleaseRequest struct {
	ID             int64    `json:"id,omitempty"`
	Version        string   `json:"version,omitempty"`
	Channel        string   `json:"channel"`
	Changelog      string   `json:"changelog"`
	MinVersion     string   `json:"min_version"`
	IsMandatory    bool     `json:"is_mandatory"`
	RolloutPercent *float64 `json:"rollout_percent,omitempty"`
}

// ReleaseActionRequest is the body of POST updates.php with an action on
// release ID: publish, halt, resume, yank, unyank, or rollout (with
// RolloutPercent, 0–100).
type ReleaseActionRequest struct {
	Action         string   `json:"action"`
	ID             int64    `json:"id"`
	RolloutPercent *float64 `json:"rollout_percent,omitempty"`
}

// MinSupportedRequest is the body of POST updates.php action=min_supported:
// the lowest version of Channel still served without a forced update.
type MinSupportedRequest struct {
	Action  string `json:"action"` // "min_supported"
	Channel string `json:"channel"`
	Version string `json:"version"`
}

// ResellerRequest is the body of POST resellers.php that creates a reseller
// (no ID) and of PUT resellers.php that edits one (ID). Products, a JSON
// list of ResellerProduct, replaces the reseller's when given.
type ResellerRequest struct {
	AppID    string          `json:"app_id"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Email    string          `json:"email"`
	Products json.RawMessage `json:"products,omitempty"`
}

// ResellerActionRequest is the body of POST resellers.php?action= (topup
// and adjust: Amount and Reason; enable, disable, rotate_token) and of
// DELETE resellers.php.
type ResellerActionRequest struct {
	AppID  string `json:"app_id"`
	ID     string `json:"id"`
	Amount *int64 `json:"amount,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// LicenseFileRevokeRequest is the body of keys.php?action=revoke-license-file.
type LicenseFileRevokeRequest struct {
	AppID string `json:"app_id"`
	ID    string `json:"id"`
}
