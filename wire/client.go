package wire

import (
	"encoding/json"
	"time"
)

// Reply is the common head of every reply: success, and a message to show.
// It is also the whole reply of logout, change-password, social-click and
// the deprecated request-hwid-reset.
type Reply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// ErrorReply is a success:false reply. Extra fields come with some codes:
// DevicesUsed and MaxDevices with DEVICE_LIMIT, Valid:false with refusals
// of the key on check-key and validate, RetryAfter with 429s, Detail with the
// request limiter's RATE_LIMITED, Reason and ServerTime with the clock
// refusal, NextResetAt with RATE_LIMITED of a self-service reset in its
// cooldown, Count with COUNT_CHANGED (admin bulk operations).
type ErrorReply struct {
	Success     bool       `json:"success"`
	ErrorCode   string     `json:"error_code,omitempty"`
	Message     string     `json:"message"`
	Reason      string     `json:"reason,omitempty"`
	ServerTime  int64      `json:"server_time,omitempty"`
	RetryAfter  int        `json:"retry_after,omitempty"`
	Detail      string     `json:"detail,omitempty"`
	Valid       *bool      `json:"valid,omitempty"`
	DevicesUsed *int       `json:"devices_used,omitempty"`
	MaxDevices  *int       `json:"max_devices,omitempty"`
	NextResetAt *time.Time `json:"next_reset_at,omitempty"`
	Count       *int       `json:"count,omitempty"`
}

// KeyInfo is a licence key as clients see it: the user block of key logins
// and trials (with the device's hwid, see [KeyUser]) and the key block of
// check-key and validate. ActivatedAt, ExpiresAt and DaysRemaining are null
// when unset or, for the last two, for lifetime keys.
type KeyInfo struct {
	LicenseKey    string     `json:"license_key"`
	Status        string     `json:"status"`   // active, unused, paused, banned, expired, redeemed
	KeyType       string     `json:"key_type"` // days or lifetime
	Duration      int        `json:"duration"` // days; 0 for lifetime
	ActivatedAt   *time.Time `json:"activated_at"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	MaxDevices    int        `json:"max_devices"`
}

// KeyUser is the user block of a key login or trial: the key and the
// device it was opened on.
type KeyUser struct {
	KeyInfo
	HWID string `json:"hwid"`
}

// AppSummary is the app block of login, account-login and trial replies.
type AppSummary struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Message string `json:"message"` // the owner's login message
}

// LoginRequest is the inner body of auth/login.php (envelope).
type LoginRequest struct {
	LicenseKey string `json:"license_key"`
	HWID       string `json:"hwid"`
	// Version is the app's version, shown in the sessions list only; V and
	// AppVersion are its aliases, read in the order version, v, app_version.
	Version    string `json:"version,omitempty"`
	V          string `json:"v,omitempty"`
	AppVersion string `json:"app_version,omitempty"`
}

// LoginReply is the inner reply of auth/login.php (sdk-compat §7.8).
// Features is the licence's feature flags object.
type LoginReply struct {
	Success           bool            `json:"success"`
	Message           string          `json:"message"`
	SessionID         string          `json:"session_id"`
	HeartbeatInterval int             `json:"heartbeat_interval"`
	User              KeyUser         `json:"user"`
	Features          json.RawMessage `json:"features"`
	App               AppSummary      `json:"app"`
	// TrustUntil is sent only in a signed reply (PWF-REPLY-V1) of an app with
	// offline_enabled: the server's time plus offline_ttl_hours, until when
	// an SDK that pins the reply key may keep running while the server is
	// unreachable. Absent otherwise, so unsigned and legacy clients see the
	// reply they always did.
	TrustUntil *time.Time `json:"trust_until,omitempty"`
}

// HeartbeatRequest is the inner body of auth/heartbeat.php (envelope).
// LicenseKey is empty or null for account sessions.
type HeartbeatRequest struct {
	SessionID  string `json:"session_id"`
	LicenseKey string `json:"license_key,omitempty"`
	HWID       string `json:"hwid,omitempty"`
}

// HeartbeatReply is the inner reply of a heartbeat that keeps the session;
// an ended session answers an [ErrorReply] with a kill code. TrustUntil: see
// [LoginReply].
type HeartbeatReply struct {
	Success    bool       `json:"success"`
	Message    string     `json:"message"`
	TrustUntil *time.Time `json:"trust_until,omitempty"`
}

// LogoutRequest is the inner body of auth/logout.php (envelope). An unknown
// session logs out fine.
type LogoutRequest struct {
	SessionID  string `json:"session_id"`
	LicenseKey string `json:"license_key,omitempty"`
}

// CheckKeyRequest is the body of auth/check-key.php (plain or envelope,
// answered in kind) and update/validate.php (plain).
type CheckKeyRequest struct {
	LicenseKey string `json:"license_key"`
	HWID       string `json:"hwid,omitempty"`
}

// CheckKeyReply answers check-key and validate for a known key: Valid says
// whether it can be used now (active or unused).
type CheckKeyReply struct {
	Success  bool            `json:"success"`
	Valid    bool            `json:"valid"`
	Message  string          `json:"message"`
	Key      KeyInfo         `json:"key"`
	Features json.RawMessage `json:"features"`
	// TrustUntil: see [LoginReply]; sent by check-key (never validate) for
	// a key that is valid.
	TrustUntil *time.Time `json:"trust_until,omitempty"`
}

// HWIDResetRequest is the body of the deprecated auth/request-hwid-reset.php
// (plain); the reply is a [Reply], the same whether or not the key exists.
type HWIDResetRequest struct {
	LicenseKey string `json:"license_key"`
	Username   string `json:"username,omitempty"`
	HWID       string `json:"hwid,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// SelfResetRequest is the body of customer/reset-hwid.php (plain), the
// self-service "move licence". LicenseKey is the alias of Key, read when
// Key is absent.
type SelfResetRequest struct {
	Key        string `json:"key,omitempty"`
	LicenseKey string `json:"license_key,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// SelfResetReply answers a self-service reset with the earliest time of
// the next one.
type SelfResetReply struct {
	Success     bool      `json:"success"`
	Message     string    `json:"message"`
	NextResetAt time.Time `json:"next_reset_at"`
}

// TrialRequest is the body of auth/trial.php (plain).
type TrialRequest struct {
	HWID string `json:"hwid"`
}

// TrialReply answers a trial with its key, as both TrialKey and LicenseKey
// (sdk-compat §7.14), and an open session.
type TrialReply struct {
	Success           bool            `json:"success"`
	Message           string          `json:"message"`
	TrialKey          string          `json:"trial_key"`
	LicenseKey        string          `json:"license_key"`
	SessionID         string          `json:"session_id"`
	HeartbeatInterval int             `json:"heartbeat_interval"`
	ExpiresAt         *time.Time      `json:"expires_at"`
	DaysRemaining     *int            `json:"days_remaining"`
	User              KeyUser         `json:"user"`
	Features          json.RawMessage `json:"features"`
	App               AppSummary      `json:"app"`
}

// AccountUser is the user block of account replies. LicenseKey, the last
// key redeemed, is absent until there is one.
type AccountUser struct {
	ID            int64      `json:"id"`
	Username      string     `json:"username"`
	Email         string     `json:"email"`
	Status        string     `json:"status"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	MaxDevices    int        `json:"max_devices"`
	KeyType       string     `json:"key_type"` // days or lifetime
	Lifetime      bool       `json:"lifetime"`
	LicenseKey    string     `json:"license_key,omitempty"`
}

// RegisterRequest is the body of auth/account-register.php (plain). A hwid
// some clients send is ignored.
type RegisterRequest struct {
	Username   string `json:"username"`
	Password   string `json:"password"`
	Email      string `json:"email,omitempty"`
	LicenseKey string `json:"license_key,omitempty"`
}

// Grant is what redeeming a key added to an account.
type Grant struct {
	DaysAdded int  `json:"days_added"`
	Lifetime  bool `json:"lifetime"`
}

// RegisterReply answers a registration with the new account and what its
// key (if any) granted.
type RegisterReply struct {
	Success bool        `json:"success"`
	Message string      `json:"message"`
	User    AccountUser `json:"user"`
	Key     Grant       `json:"key"`
}

// AccountLoginRequest is the body of auth/account-login.php (plain).
type AccountLoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	HWID     string `json:"hwid"`
}

// AccountLoginUser is the user block of an account login.
type AccountLoginUser struct {
	AccountUser
	HWID string `json:"hwid"`
}

// AccountLoginReply has the login session shape plus a top-level
// LicenseKey when the account has redeemed one (absent otherwise).
type AccountLoginReply struct {
	Success           bool             `json:"success"`
	Message           string           `json:"message"`
	SessionID         string           `json:"session_id"`
	HeartbeatInterval int              `json:"heartbeat_interval"`
	User              AccountLoginUser `json:"user"`
	Features          json.RawMessage  `json:"features"`
	App               AppSummary       `json:"app"`
	LicenseKey        string           `json:"license_key,omitempty"`
}

// ChangePasswordRequest is the body of auth/change-password.php (plain;
// OldPassword is the alias of CurrentPassword). The reply is a [Reply];
// every session of the account ends.
type ChangePasswordRequest struct {
	Username        string `json:"username"`
	CurrentPassword string `json:"current_password,omitempty"`
	OldPassword     string `json:"old_password,omitempty"`
	NewPassword     string `json:"new_password"`
}

// RedeemRequest is the body of auth/account-redeem.php (plain): the key and
// either username and password or an account session's SessionID.
type RedeemRequest struct {
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	LicenseKey string `json:"license_key"`
}

// RedeemReply answers a redemption with the account's new term. LicenseKey
// is the account's last redeemed key.
type RedeemReply struct {
	Success       bool       `json:"success"`
	Message       string     `json:"message"`
	DaysAdded     int        `json:"days_added"`
	Lifetime      bool       `json:"lifetime"`
	ExpiresAt     *time.Time `json:"expires_at"`
	DaysRemaining *int       `json:"days_remaining"`
	MaxDevices    int        `json:"max_devices"`
	Mode          string     `json:"mode"` // stack or restart
	LicenseKey    string     `json:"license_key"`
}

// Branding is what an app may show of its vendor; every field is optional.
type Branding struct {
	LogoURL      string `json:"logo_url"`
	PrimaryColor string `json:"primary_color"`
	AccentColor  string `json:"accent_color"`
	WebsiteURL   string `json:"website_url"`
	SupportEmail string `json:"support_email"`
}

// AppInfo is the app block of app/info.php. Message repeats LoginMessage;
// MaintenanceMsg is empty unless MaintenanceMode.
type AppInfo struct {
	Name            string   `json:"name"`
	Version         string   `json:"version"`
	DownloadURL     string   `json:"download_url"`
	LoginMessage    string   `json:"login_message"`
	Message         string   `json:"message"`
	MaintenanceMode bool     `json:"maintenance_mode"`
	MaintenanceMsg  string   `json:"maintenance_msg"`
	Branding        Branding `json:"branding"`
}

// SocialLink is a link of the app's social list; ID is what social-click
// counts by.
type SocialLink struct {
	ID       int64  `json:"id"`
	Platform string `json:"platform"`
	URL      string `json:"url"`
	Label    string `json:"label"`
}

// InfoReply is the inner reply of GET app/info.php (sealed).
type InfoReply struct {
	Success     bool         `json:"success"`
	App         AppInfo      `json:"app"`
	SocialLinks []SocialLink `json:"social_links"`
}

// TextsReply is the inner reply of GET app/text.php (sealed) without
// ?name=: every text, with the key's overrides applied.
type TextsReply struct {
	Success bool              `json:"success"`
	Texts   map[string]string `json:"texts"`
}

// TextReply is the inner reply of GET app/text.php?name= (sealed): Text is
// null and Texts empty when there is no such text.
type TextReply struct {
	Success bool              `json:"success"`
	Text    *string           `json:"text"`
	Texts   map[string]string `json:"texts"`
}

// SlidesRequest is the inner body of app/slides.php (envelope): {} or
// {"action":"get_slides"}.
type SlidesRequest struct {
	Action string `json:"action,omitempty"`
}

// Slide is one live slide; StartsAt and EndsAt are null when open-ended.
type Slide struct {
	ID       int64      `json:"id"`
	Title    string     `json:"title"`
	Body     string     `json:"body"`
	ImageURL string     `json:"image_url"`
	LinkURL  string     `json:"link_url"`
	Order    int        `json:"order"`
	StartsAt *time.Time `json:"starts_at"`
	EndsAt   *time.Time `json:"ends_at"`
}

// SlidesReply is the inner reply of app/slides.php.
type SlidesReply struct {
	Success bool    `json:"success"`
	Slides  []Slide `json:"slides"`
}

// SocialClickRequest is the inner body of app/social-click.php (envelope):
// LinkID, or the older Platform. The reply is a [Reply].
type SocialClickRequest struct {
	LinkID   int64  `json:"link_id,omitempty"`
	Platform string `json:"platform,omitempty"`
}

// ChangelogEntry is one published changelog entry.
type ChangelogEntry struct {
	ID          int64      `json:"id"`
	Version     string     `json:"version"`
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	Category    string     `json:"category"`
	PublishedAt *time.Time `json:"published_at"`
}

// ChangelogReply is the reply of GET app/changelog.php (plain, public).
type ChangelogReply struct {
	Success bool             `json:"success"`
	Entries []ChangelogEntry `json:"entries"`
}

// UpdateCheckRequest is the inner body of update/check.php (envelope).
// Version is the alias of V; LicenseKey may be empty or null.
type UpdateCheckRequest struct {
	V          string `json:"v,omitempty"`
	Version    string `json:"version,omitempty"`
	Channel    string `json:"channel,omitempty"`
	OS         string `json:"os,omitempty"`
	Arch       string `json:"arch,omitempty"`
	HWID       string `json:"hwid,omitempty"`
	LicenseKey string `json:"license_key,omitempty"`
}

// UpdateDescriptor is the offered update. Size repeats FileSize; the SDKs
// read Version, SHA256, Size and DownloadURL (relative to the base URL).
type UpdateDescriptor struct {
	Version     string `json:"version"`
	Channel     string `json:"channel"`
	IsMandatory bool   `json:"is_mandatory"`
	FileSize    int64  `json:"file_size"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Changelog   string `json:"changelog"`
	DownloadURL string `json:"download_url"`
}

// UpdateCheckReply is the inner reply of update/check.php; Update is absent
// when UpdateAvailable is false.
type UpdateCheckReply struct {
	Success         bool              `json:"success"`
	UpdateAvailable bool              `json:"update_available"`
	Message         string            `json:"message"`
	Update          *UpdateDescriptor `json:"update,omitempty"`
}

// Plan is a subscription level or one-off plan of the public price list.
// Price is in currency units, PriceCents exact.
type Plan struct {
	ID          int64           `json:"id"`
	Type        string          `json:"type"` // level or plan
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Price       float64         `json:"price"`
	PriceCents  int64           `json:"price_cents"`
	Currency    string          `json:"currency"`
	Interval    string          `json:"interval"`
	KeyType     string          `json:"key_type"`
	Duration    int             `json:"duration"`
	MaxDevices  int             `json:"max_devices"`
	Features    json.RawMessage `json:"features"`
}

// PricingReply is the reply of GET app/pricing.php?app_id= (plain, public).
// ?type=plans leaves Levels out and ?type=levels Plans; otherwise both are
// sent, as [] when empty.
type PricingReply struct {
	Success bool   `json:"success"`
	Levels  []Plan `json:"levels,omitzero"`
	Plans   []Plan `json:"plans,omitzero"`
}

// PublicKeysReply is the reply of GET app/public-keys.php (plain, public):
// the operator's public keys an app pins — the Ed25519 keys that sign
// offline license files (use "license-file") and the RSA keys that sign
// replies (use "reply", PWF-REPLY-V1) — active and announced ones, sorted
// by use then kid; [] when the server has none.
type PublicKeysReply struct {
	Success bool        `json:"success"`
	Keys    []PublicKey `json:"keys"`
}

// PublicKey is one key of PublicKeysReply.
type PublicKey struct {
	Kid string `json:"kid"` // first 16 hex characters of SPKISHA256
	Alg string `json:"alg"` // AlgEd25519 or AlgRSASHA256
	Use string `json:"use"` // UseLicenseFile or UseReply
	// PublicKey is the SubjectPublicKeyInfo as PEM ("PUBLIC KEY").
	PublicKey string `json:"public_key"`
	// SPKISHA256 is the lowercase hex SHA-256 of the SubjectPublicKeyInfo
	// DER (what the SDKs' reply pinning compares).
	SPKISHA256 string `json:"spki_sha256"`
	// Active: the key signs now; announced keys (false) sign after a
	// rotation and can be pinned before it.
	Active bool `json:"active"`
}

// Uses and algorithms of PublicKey.
const (
	UseLicenseFile = "license-file"
	UseReply       = "reply"
	AlgEd25519     = "Ed25519"
	AlgRSASHA256   = "RSA-PKCS1v15-SHA256" // RSA-3072, PKCS#1 v1.5 signatures over SHA-256
)

// OrderRequest is the body of POST app/pricing.php (plain, public): a
// pending order of a plan (AppID may also be a query parameter).
type OrderRequest struct {
	AppID  string `json:"app_id"`
	PlanID int64  `json:"plan_id"`
	Email  string `json:"email"`
}

// Order is an order as its buyer sees it. LicenseKeys is null until the
// order is fulfilled.
type Order struct {
	OrderID     string     `json:"order_id"`
	Status      string     `json:"status"`
	PlanID      *int64     `json:"plan_id"`
	Plan        string     `json:"plan"`
	Type        string     `json:"type"`
	Amount      float64    `json:"amount"`
	AmountCents int64      `json:"amount_cents"`
	Currency    string     `json:"currency"`
	Email       string     `json:"email"`
	PaymentRef  string     `json:"payment_ref"`
	LicenseKeys []string   `json:"license_keys"`
	CreatedAt   time.Time  `json:"created_at"`
	FulfilledAt *time.Time `json:"fulfilled_at"`
}

// OrderReply answers POST app/pricing.php with the new order.
type OrderReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Order
}

// FulfillRequest is the body of app/fulfill.php (plain, server to server).
type FulfillRequest struct {
	OrderID    string `json:"order_id"`
	Secret     string `json:"secret"`
	PaymentRef string `json:"payment_ref,omitempty"`
}

// FulfillReply answers a fulfilment (repeatable) with the order and its
// first key as LicenseKey (absent when it delivered none).
type FulfillReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Order
	LicenseKey string `json:"license_key,omitempty"`
}

// PublicSubscription is a subscription as the public check shows it: no
// key, no e-mail. RenewalOrderID is null unless a renewal order is pending.
type PublicSubscription struct {
	ID                int64     `json:"id"`
	PlanID            *int64    `json:"plan_id"`
	Level             string    `json:"level"`
	Interval          string    `json:"interval"`
	PeriodDays        int       `json:"period_days"`
	Amount            float64   `json:"amount"`
	AmountCents       int64     `json:"amount_cents"`
	Currency          string    `json:"currency"`
	Status            string    `json:"status"`
	RenewsAt          time.Time `json:"renews_at"`
	CancelAtPeriodEnd bool      `json:"cancel_at_period_end"`
	RenewalOrderID    *string   `json:"renewal_order_id"`
	CreatedAt         time.Time `json:"created_at"`
}

// SubscriptionCheckReply is the reply of GET
// app/pricing.php?action=check&app_id= with license_key= or username=: the
// newest subscription, or null.
type SubscriptionCheckReply struct {
	Success      bool                `json:"success"`
	Active       bool                `json:"active"`
	Subscription *PublicSubscription `json:"subscription"`
}

// LicenseFileRequest is the inner body of auth/license-file.php
// (envelope, docs/offline.md). {license_key, hwid} asks for a license file
// for this key on this device (binding the device as a login does);
// {session_id, return: true} returns a borrowed seat: session_id is the
// session_id of the reply that issued a floating key's file (its
// borrow_id).
type LicenseFileRequest struct {
	LicenseKey string `json:"license_key,omitempty"`
	HWID       string `json:"hwid,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	Return     bool   `json:"return,omitempty"`
}

// LicenseFileReply is the reply that carries a license file: the inner
// reply of auth/license-file.php, and the answer of the air-gapped
// activation routes (customer/offline-activate.php, admin
// keys.php?action=offline-activate). LicenseFile is the armored document;
// the other members repeat what it says, for convenience. SessionID is
// set for a floating key only: the borrowed seat's id, to return it with
// {session_id, return: true}.
type LicenseFileReply struct {
	Success     bool      `json:"success"`
	Message     string    `json:"message"`
	LicenseFile string    `json:"license_file"`
	FileID      string    `json:"file_id"`
	ValidUntil  time.Time `json:"valid_until"`
	Floating    bool      `json:"floating"`
	SessionID   string    `json:"session_id,omitempty"`
}

// OfflineActivateRequest is the body of the air-gapped activation routes:
// Request is the activation request's text, as the machine made it
// (`keyward client offline-request`, or the SDK).
type OfflineActivateRequest struct {
	Request string `json:"request"`
}
