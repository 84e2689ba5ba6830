package client

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/keyward/keyward/wire"
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
type AppSummary = wire.AppSummary

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

// sessionReply is what login, account-login and trial replies share.
type sessionReply struct {
	Message    string
	SessionID  string
	Interval   int // heartbeat_interval, seconds
	LicenseKey string
	User       User
	Features   json.RawMessage
	App        AppSummary
}

func (c *Client) session(r sessionReply, hwid string) *Session {
	iv := 30 * time.Second
	if r.Interval > 0 {
		iv = time.Duration(r.Interval) * time.Second
	}
	if iv < 5*time.Second {
		iv = 5 * time.Second
	}
	key := r.LicenseKey
	if key == "" {
		key = r.User.LicenseKey
	}
	return &Session{ID: r.SessionID, Interval: iv, LicenseKey: key, HWID: hwid, Message: r.Message,
		User: r.User, Features: features(r.Features), App: r.App, c: c}
}

// features decodes a features object; nil when absent or not an object.
func features(raw json.RawMessage) Features {
	var f Features
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	return f
}

// keyUser is the User of a key session.
func keyUser(u wire.KeyUser) User {
	return User{LicenseKey: u.LicenseKey, KeyType: u.KeyType, Duration: u.Duration, HWID: u.HWID, ActivatedAt: u.ActivatedAt,
		ExpiresAt: u.ExpiresAt, DaysRemaining: u.DaysRemaining, Status: u.Status, MaxDevices: u.MaxDevices}
}

// accountUser is the User of an app user account.
func accountUser(u wire.AccountUser, hwid string) User {
	return User{ID: u.ID, LicenseKey: u.LicenseKey, Username: u.Username, Email: u.Email, KeyType: u.KeyType, HWID: hwid,
		ExpiresAt: u.ExpiresAt, DaysRemaining: u.DaysRemaining, Status: u.Status, MaxDevices: u.MaxDevices, Lifetime: u.Lifetime}
}

// Login activates (first use) or re-validates key on the device hwid and
// opens a session. Refusals are *APIError: INVALID_KEY, HWID_MISMATCH,
// DEVICE_LIMIT (Fields devices_used, max_devices), BANNED, PAUSED, EXPIRED,
// MAINTENANCE, KEY_REDEEMED, MISSING_FIELDS, RATE_LIMITED.
func (c *Client) Login(ctx context.Context, key, hwid string) (*Session, error) {
	key = strings.TrimSpace(key)
	var r wire.LoginReply
	_, err := c.do(ctx, call{method: "POST", path: "/api/auth/login.php", kind: envelopeCall,
		body: wire.LoginRequest{LicenseKey: key, HWID: hwid}}, &r)
	if err != nil {
		return nil, err
	}
	s := c.session(sessionReply{Message: r.Message, SessionID: r.SessionID, Interval: r.HeartbeatInterval,
		User: keyUser(r.User), Features: r.Features, App: r.App}, hwid)
	if s.LicenseKey == "" {
		s.LicenseKey = key
	}
	return s, nil
}

// Logout ends the session on the server and frees its seat; the device
// stays bound to the key.
func (s *Session) Logout(ctx context.Context) error {
	_, err := s.c.do(ctx, call{method: "POST", path: "/api/auth/logout.php", kind: envelopeCall,
		body: wire.LogoutRequest{SessionID: s.ID, LicenseKey: s.LicenseKey}}, nil)
	return err
}

// KeyInfo describes a key (check-key).
type KeyInfo = wire.KeyInfo

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
	var r wire.CheckKeyReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/check-key.php", kind: envelopeCall,
		body: wire.CheckKeyRequest{LicenseKey: strings.TrimSpace(key)}}, &r); err != nil {
		return nil, err
	}
	return &KeyStatus{Valid: r.Valid, Message: r.Message, Key: r.Key, Features: features(r.Features)}, nil
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
	var r wire.TrialReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/trial.php", kind: plainCall,
		body: wire.TrialRequest{HWID: hwid}}, &r); err != nil {
		return nil, err
	}
	key := r.TrialKey
	if key == "" {
		key = r.LicenseKey
	}
	s := c.session(sessionReply{Message: r.Message, SessionID: r.SessionID, Interval: r.HeartbeatInterval,
		LicenseKey: r.LicenseKey, User: keyUser(r.User), Features: r.Features, App: r.App}, hwid)
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
	var r wire.SelfResetReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/customer/reset-hwid.php", kind: plainCall,
		body: wire.SelfResetRequest{Key: strings.TrimSpace(key), Reason: reason}}, &r); err != nil {
		return nil, err
	}
	res := &ResetResult{Message: r.Message}
	if !r.NextResetAt.IsZero() {
		res.NextResetAt = &r.NextResetAt
	}
	return res, nil
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
	body := wire.RegisterRequest{Username: req.Username, Password: req.Password, Email: req.Email,
		LicenseKey: strings.TrimSpace(req.LicenseKey)}
	var r wire.RegisterReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-register.php", kind: plainCall, body: body}, &r); err != nil {
		return nil, err
	}
	return &Account{Message: r.Message, User: accountUser(r.User, ""), DaysAdded: r.Key.DaysAdded, Lifetime: r.Key.Lifetime}, nil
}

// AccountLogin signs an app user in on the device hwid and opens a session
// (heartbeat and logout as for keys). Refusals: INVALID_CREDENTIALS,
// BANNED, PAUSED, EXPIRED, PASSWORD_RESET_REQUIRED, HWID_MISMATCH,
// DEVICE_LIMIT, TOO_MANY_ATTEMPTS (Fields retry_after).
func (c *Client) AccountLogin(ctx context.Context, username, password, hwid string) (*Session, error) {
	var r wire.AccountLoginReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-login.php", kind: plainCall,
		body: wire.AccountLoginRequest{Username: username, Password: password, HWID: hwid}}, &r); err != nil {
		return nil, err
	}
	return c.session(sessionReply{Message: r.Message, SessionID: r.SessionID, Interval: r.HeartbeatInterval,
		LicenseKey: r.LicenseKey, User: accountUser(r.User.AccountUser, r.User.HWID), Features: r.Features, App: r.App}, hwid), nil
}

// ChangePassword changes an app user's password; every session of the
// account ends (SESSION_REVOKED at its next heartbeat).
func (c *Client) ChangePassword(ctx context.Context, username, current, newPassword string) error {
	_, err := c.do(ctx, call{method: "POST", path: "/api/auth/change-password.php", kind: plainCall,
		body: wire.ChangePasswordRequest{Username: username, CurrentPassword: current, NewPassword: newPassword}}, nil)
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
	body := wire.RedeemRequest{LicenseKey: strings.TrimSpace(req.LicenseKey)}
	if req.SessionID != "" {
		body.SessionID = req.SessionID
	} else {
		body.Username, body.Password = req.Username, req.Password
	}
	var r wire.RedeemReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/account-redeem.php", kind: plainCall, body: body}, &r); err != nil {
		return nil, err
	}
	return &Redemption{Message: r.Message, DaysAdded: r.DaysAdded, Lifetime: r.Lifetime, ExpiresAt: r.ExpiresAt,
		DaysRemaining: r.DaysRemaining, MaxDevices: r.MaxDevices, Mode: r.Mode}, nil
}
