package client

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// User is the licence holder of a session: a key (LicenseKey set) or an app
// user account (Username set). ExpiresAt and DaysRemaining are nil for
// lifetime licences.
type User struct {
	ID            int64      `json:"id,omitempty"`
	LicenseKey    string     `json:"license_key,omitempty"`
	Username      string     `json:"username,omitempty"`
	Email         string     `json:"email,omitempty"`
	KeyType       string     `json:"key_type,omitempty"`
	Duration      int        `json:"duration,omitempty"`
	HWID          string     `json:"hwid,omitempty"`
	ActivatedAt   *time.Time `json:"activated_at,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	Status        string     `json:"status,omitempty"`
	MaxDevices    int        `json:"max_devices,omitempty"`
	Lifetime      bool       `json:"lifetime,omitempty"`
}

// AppSummary is the app block of login replies.
type AppSummary struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Message string `json:"message"`
}

// Features are the feature flags of a licence.
type Features map[string]any

// Enabled reports whether flag is on: JSON true, 1 or "true".
func (f Features) Enabled(flag string) bool {
	switch v := f[flag].(type) {
	case bool:
		return v
	case json.Number:
		return v.String() == "1"
	case float64:
		return v == 1
	case string:
		return strings.EqualFold(v, "true") || v == "1"
	}
	return false
}

// Session is an open session from Login, AccountLogin or StartTrial. Keep
// it alive with Run (or Beat) and end it with Logout.
type Session struct {
	ID         string
	Interval   time.Duration // the server's heartbeat_interval (at least 5 s)
	LicenseKey string        // the key behind the session ("" for account sessions without one)
	HWID       string
	Message    string
	User       User
	Features   Features
	App        AppSummary

	c *Client
}

type sessionReply struct {
	Message    string      `json:"message"`
	SessionID  string      `json:"session_id"`
	Interval   json.Number `json:"heartbeat_interval"`
	LicenseKey string      `json:"license_key"`
	User       User        `json:"user"`
	Features   Features    `json:"features"`
	App        AppSummary  `json:"app"`
}

func (c *Client) session(r sessionReply, hwid string) *Session {
	iv := 30 * time.Second
	if f, err := r.Interval.Float64(); err == nil && f > 0 {
		iv = time.Duration(f * float64(time.Second))
	}
	if iv < 5*time.Second {
		iv = 5 * time.Second
	}
	key := r.LicenseKey
	if key == "" {
		key = r.User.LicenseKey
	}
	return &Session{ID: r.SessionID, Interval: iv, LicenseKey: key, HWID: hwid, Message: r.Message,
		User: r.User, Features: r.Features, App: r.App, c: c}
}

// Login activates (first use) or re-validates key on the device hwid and
// opens a session. Refusals are *APIError: INVALID_KEY, HWID_MISMATCH,
// DEVICE_LIMIT (Fields devices_used, max_devices), BANNED, PAUSED, EXPIRED,
// MAINTENANCE, KEY_REDEEMED, MISSING_FIELDS, RATE_LIMITED.
func (c *Client) Login(ctx context.Context, key, hwid string) (*Session, error) {
	key = strings.TrimSpace(key)
	var r sessionReply
	_, err := c.do(ctx, call{method: "POST", path: "/api/auth/login.php", kind: envelopeCall,
		body: map[string]any{"license_key": key, "hwid": hwid}}, &r)
	if err != nil {
		return nil, err
	}
	s := c.session(r, hwid)
	if s.LicenseKey == "" {
		s.LicenseKey = key
	}
	return s, nil
}

// Logout ends the session on the server and frees its seat; the device
// stays bound to the key.
func (s *Session) Logout(ctx context.Context) error {
	_, err := s.c.do(ctx, call{method: "POST", path: "/api/auth/logout.php", kind: envelopeCall,
		body: map[string]any{"session_id": s.ID, "license_key": s.LicenseKey}}, nil)
	return err
}

// KeyInfo describes a key (check-key).
type KeyInfo struct {
	LicenseKey    string     `json:"license_key"`
	Status        string     `json:"status"` // active, unused, paused, banned, expired, redeemed
	KeyType       string     `json:"key_type"`
	Duration      int        `json:"duration"`
	ActivatedAt   *time.Time `json:"activated_at"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	MaxDevices    int        `json:"max_devices"`
}

// KeyStatus is the answer of CheckKey.
type KeyStatus struct {
	Valid    bool     `json:"valid"` // true for active and unused keys
	Message  string   `json:"message"`
	Key      KeyInfo  `json:"key"`
	Features Features `json:"features"`
}

// CheckKey reports a key's state without opening a session or binding a
// device. An unknown key is an *APIError with Code INVALID_KEY.
func (c *Client) CheckKey(ctx context.Context, key string) (*KeyStatus, error) {
	var r KeyStatus
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/check-key.php", kind: envelopeCall,
		body: map[string]any{"license_key": strings.TrimSpace(key)}}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Trial is a trial key with a session already open on it.
type Trial struct {
	Key       string
	ExpiresAt *time.Time
	Resumed   bool // the device's running trial was resumed ("Trial resumed")
	*Session
}

// StartTrial asks for the device's trial. The same device gets the same key
// (and a new session) while its trial runs. Refusals: TRIAL_DISABLED,
// TRIAL_USED, TRIAL_LIMIT, BANNED, PAUSED, MAINTENANCE, MISSING_FIELDS.
func (c *Client) StartTrial(ctx context.Context, hwid string) (*Trial, error) {
	var r struct {
		sessionReply
		TrialKey  string     `json:"trial_key"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/trial.php", kind: plainCall,
		body: map[string]any{"hwid": hwid}}, &r); err != nil {
		return nil, err
	}
	key := r.TrialKey
	if key == "" {
		key = r.LicenseKey
	}
	s := c.session(r.sessionReply, hwid)
	s.LicenseKey = key
	return &Trial{Key: key, ExpiresAt: r.ExpiresAt, Resumed: strings.Contains(strings.ToLower(r.Message), "resumed"), Session: s}, nil
}

// ResetResult is the answer of ResetHWID.
type ResetResult struct {
	Message     string     `json:"message"`
	NextResetAt *time.Time `json:"next_reset_at"`
}

// ResetHWID is the self-service "move licence": it unbinds every device of
// key and ends its sessions (their next heartbeat: HWID_RESET). reason is
// trimmed and cut to 255 characters ("Reset from app" when empty).
// Refusals: INVALID_KEY, KEY_NOT_ACTIVE, NO_HWID, SELF_RESET_DISABLED,
// RATE_LIMITED (Fields retry_after, next_reset_at).
func (c *Client) ResetHWID(ctx context.Context, key, reason string) (*ResetResult, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "Reset from app"
	}
	if r := []rune(reason); len(r) > 255 {
		reason = string(r[:255])
	}
	var r ResetResult
	if _, err := c.do(ctx, call{method: "POST", path: "/api/customer/reset-hwid.php", kind: plainCall,
		body: map[string]any{"key": strings.TrimSpace(key), "reason": reason}}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// RegisterRequest creates an app user account. LicenseKey, when set, is
// redeemed onto the new account.
type RegisterRequest struct {
	Username   string
	Password   string
	Email      string
	LicenseKey string
}

// Account is the answer of Register.
type Account struct {
	Message   string `json:"message"`
	User      User   `json:"user"`
	DaysAdded int    `json:"-"`
	Lifetime  bool   `json:"-"`
}

// Register creates an app user account. Refusals: ACCOUNTS_DISABLED,
// USERNAME_EXISTS, KEY_REQUIRED, MISSING_FIELDS, the redeem refusals, …
func (c *Client) Register(ctx context.Context, req RegisterRequest) (*Account, error) {
	body := map[string]any{"username": req.Username, "password": req.Password, "email": req.Email}
	if k := strings.TrimSpace(req.LicenseKey); k != "" {
		body["license_key"] = k
	}
	var r struct {
		Account
		Key struct {
			DaysAdded int  `json:"days_added"`
			Lifetime  bool `json:"lifetime"`
		} `json:"key"`
	}
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-register.php", kind: plainCall, body: body}, &r); err != nil {
		return nil, err
	}
	a := r.Account
	a.DaysAdded, a.Lifetime = r.Key.DaysAdded, r.Key.Lifetime
	return &a, nil
}

// AccountLogin signs an app user in on the device hwid and opens a session
// (heartbeat and logout as for keys). Refusals: INVALID_CREDENTIALS,
// BANNED, PAUSED, EXPIRED, PASSWORD_RESET_REQUIRED, HWID_MISMATCH,
// DEVICE_LIMIT, TOO_MANY_ATTEMPTS (Fields retry_after).
func (c *Client) AccountLogin(ctx context.Context, username, password, hwid string) (*Session, error) {
	var r sessionReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-login.php", kind: plainCall,
		body: map[string]any{"username": username, "password": password, "hwid": hwid}}, &r); err != nil {
		return nil, err
	}
	return c.session(r, hwid), nil
}

// ChangePassword changes an app user's password; every session of the
// account ends (SESSION_REVOKED at its next heartbeat).
func (c *Client) ChangePassword(ctx context.Context, username, current, newPassword string) error {
	_, err := c.do(ctx, call{method: "POST", path: "/api/auth/change-password.php", kind: plainCall,
		body: map[string]any{"username": username, "current_password": current, "new_password": newPassword}}, nil)
	return err
}

// RedeemRequest adds a key's time to an account, authenticated either by
// Username and Password or by the SessionID of an account session.
type RedeemRequest struct {
	Username   string
	Password   string
	SessionID  string
	LicenseKey string
}

// Redemption is the answer of Redeem.
type Redemption struct {
	Message       string     `json:"message"`
	DaysAdded     int        `json:"days_added"`
	Lifetime      bool       `json:"lifetime"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	MaxDevices    int        `json:"max_devices"`
	Mode          string     `json:"mode"`
}

// Redeem adds LicenseKey's time to an account. Refusals:
// INVALID_CREDENTIALS, INVALID_KEY, KEY_ALREADY_USED, KEY_IN_USE, BANNED,
// PAUSED, EXPIRED, ALREADY_LIFETIME, SESSION_EXPIRED, TOO_MANY_ATTEMPTS.
func (c *Client) Redeem(ctx context.Context, req RedeemRequest) (*Redemption, error) {
	body := map[string]any{"license_key": strings.TrimSpace(req.LicenseKey)}
	if req.SessionID != "" {
		body["session_id"] = req.SessionID
	} else {
		body["username"], body["password"] = req.Username, req.Password
	}
	var r Redemption
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-redeem.php", kind: plainCall, body: body}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
