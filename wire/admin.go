package wire

import "encoding/json"

// The admin API's reply shapes (/api/admin/*.php). The server encodes these
// types and the dashboard decodes them; docs/api.md describes each route.
// Timestamps are UTC strings such as "2026-11-20T08:00:00Z"; a pointer
// field is JSON null when unset, and a field tagged omitempty is absent
// where its doc says so.
//
// The customer portal's and reseller API's replies are in portal.go.

// MessageReply is the reply of an admin action that reports only a message
// ("Key deleted.").
type MessageReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// CountReply is the reply of an admin action on several records: how many
// it touched.
type CountReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// AdminLoginReply is the reply of POST login.php and totp.php: a token, or (on a
// password sign-in of an admin with two-factor sign-in on) requires_2fa with
// the step-one token that totp.php takes with a code.
type AdminLoginReply struct {
	Success     bool   `json:"success"`
	Token       string `json:"token,omitempty"`
	Requires2FA bool   `json:"requires_2fa,omitempty"`
	Step1Token  string `json:"step1_token,omitempty"`
}

// Key is a license key as the admin API shows it: the client's KeyInfo
// fields plus the key string, floating, note, features and creation time.
type Key struct {
	LicenseKey    string  `json:"license_key"`
	Status        string  `json:"status"`
	KeyType       string  `json:"key_type"`
	Duration      int     `json:"duration"`
	ActivatedAt   *string `json:"activated_at"`
	ExpiresAt     *string `json:"expires_at"`
	DaysRemaining *int    `json:"days_remaining"`
	MaxDevices    int     `json:"max_devices"`
	// Floating keys bind no device: MaxDevices counts the live sessions on
	// any machines (seats held while the app runs).
	Floating        bool            `json:"floating"`
	Note            string          `json:"note"`
	Features        json.RawMessage `json:"features"`
	CreatedAt       string          `json:"created_at"`
	LastSelfResetAt *string         `json:"last_self_reset_at"`
}

// KeyDetail is one key with its bound devices and live sessions (GET
// keys.php?license_key=). Seats are the sessions holding a seat (heard from
// within the session timeout; last_seen_at as fresh as the server knows),
// SeatsInUse their count, with BorrowedSeats: for a floating key, what
// max_devices limits.
type KeyDetail struct {
	Key
	Devices    []Device  `json:"devices"`
	Sessions   []Session `json:"sessions"`
	SeatsInUse int       `json:"seats_in_use"`
	Seats      []Session `json:"seat_sessions"`
	// BorrowedSeats are the machines holding a seat of a floating key by a
	// borrowed license file and no live session (counted in SeatsInUse).
	BorrowedSeats int `json:"borrowed_seats"`
	// LicenseFiles are the license files issued for the key, newest first
	// (at most 200).
	LicenseFiles []LicenseFile `json:"license_files"`
}

// LicenseFileStateReply answers keys.php?action=revoke-license-file: the
// file as it now is.
type LicenseFileStateReply struct {
	Success bool        `json:"success"`
	File    LicenseFile `json:"file"`
}

// LicenseFile is one issued license file of a key (docs/offline.md), as
// the key detail lists it. Source is online, offline (the customer portal)
// or admin; Floating marks a borrowed seat, held until ReturnedAt or
// ValidUntil. A revoked file is not renewed, but stays valid offline until
// ValidUntil.
type LicenseFile struct {
	ID         string  `json:"id"`
	HWID       string  `json:"hwid"`
	Kid        string  `json:"kid"`
	Source     string  `json:"source"`
	Floating   bool    `json:"floating"`
	IssuedAt   string  `json:"issued_at"`
	ValidUntil string  `json:"valid_until"`
	ReturnedAt *string `json:"returned_at"`
	RevokedAt  *string `json:"revoked_at"`
}

// Device is a machine bound to a key or an account.
type Device struct {
	HWID        string `json:"hwid"`
	FirstSeenAt string `json:"first_seen_at"`
	LastSeenAt  string `json:"last_seen_at"`
}

// Session is a live client session.
type Session struct {
	ID         string `json:"id"`
	LicenseKey string `json:"license_key"`
	Username   string `json:"username"`
	HWID       string `json:"hwid"`
	IP         string `json:"ip"`
	AppVersion string `json:"app_version"`
	CreatedAt  string `json:"created_at"`
	LastSeenAt string `json:"last_seen_at"`
}

// KeyListReply is a page of keys (GET keys.php); NextCursor is null on the
// last page.
type KeyListReply struct {
	Success    bool    `json:"success"`
	Keys       []Key   `json:"keys"`
	NextCursor *string `json:"next_cursor"`
}

// KeysReply is the keys one request generated (POST keys.php with count).
type KeysReply struct {
	Success bool  `json:"success"`
	Keys    []Key `json:"keys"`
}

// KeyReply is one key after a change (create, update, action).
type KeyReply struct {
	Success bool `json:"success"`
	Key     Key  `json:"key"`
}

// KeyDetailReply is the reply of GET keys.php?license_key=.
type KeyDetailReply struct {
	Success bool      `json:"success"`
	Key     KeyDetail `json:"key"`
}

// ImportReply is the reply of POST keys-import.php: the report of a dry
// run or of an applied import. A refused import (IMPORT_REJECTED) carries
// the same report in the error reply's report.
type ImportReply struct {
	Success bool         `json:"success"`
	Report  ImportReport `json:"report"`
}

// ImportReport is what a key import found and, when applied, did. The
// import is all or nothing: ToInsert and ToUpdate are what applying does,
// zero while any key has a problem.
type ImportReport struct {
	// DryRun is true when nothing was changed.
	DryRun bool `json:"dry_run"`
	// Format is the file's format as read: csv or json.
	Format string `json:"format"`
	// Merge says whether keys the app already has are updated (merge=true)
	// or refused.
	Merge bool `json:"merge"`
	// Rows counts the keys in the file, Valid those without a problem.
	Rows  int `json:"rows"`
	Valid int `json:"valid"`
	// ToInsert counts the keys applying adds, ToUpdate the existing keys it
	// changes (merge), Unchanged the existing keys the file already matches.
	ToInsert  int `json:"to_insert"`
	ToUpdate  int `json:"to_update"`
	Unchanged int `json:"unchanged"`
	// Devices counts the device bindings applying adds.
	Devices int `json:"devices"`
	// ByStatus counts the valid keys by their status after the import.
	ByStatus map[string]int `json:"by_status"`
	// Imported and Updated count the keys added and changed (0 in a dry run).
	Imported int `json:"imported"`
	Updated  int `json:"updated"`
	// ErrorCount counts the problems, Errors lists the first 1000.
	ErrorCount int           `json:"error_count"`
	Errors     []ImportError `json:"errors"`
	// Changes lists, for the first 1000 existing keys a merge changes, what
	// changes (ToUpdate counts all).
	Changes []ImportChange `json:"changes"`
	// Ignored lists the columns (CSV) or members (JSON) the import does not
	// read, such as days_remaining.
	Ignored []string `json:"ignored"`
}

// ImportError is one problem of an import file, at Line (of the CSV, 1
// being the header, or where the key's JSON object starts) and, when it is
// about one field, Field (its canonical name, such as expires_at);
// LicenseKey names the key when its row gave one (a minified JSON file has
// every key on line 1).
type ImportError struct {
	Line       int    `json:"line"`
	LicenseKey string `json:"license_key,omitempty"`
	Field      string `json:"field,omitempty"`
	Message    string `json:"message"`
}

// ImportChange is what a merge changes on one existing key.
type ImportChange struct {
	Line       int           `json:"line"`
	LicenseKey string        `json:"license_key"`
	Fields     []FieldChange `json:"fields"`
}

// FieldChange is one field's old and new value as text ("" is none; times
// as 2026-11-20T08:00:00Z; for hwids, New lists the devices added, which
// join the bound ones).
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// BulkDryRunReply is how many keys a bulk action would touch (POST
// keys-bulk.php without dry_run false).
type BulkDryRunReply struct {
	Success bool   `json:"success"`
	DryRun  bool   `json:"dry_run"`
	Op      string `json:"op"`
	Count   int    `json:"count"`
	Message string `json:"message"`
}

// BulkReply is the outcome of an applied bulk action.
type BulkReply struct {
	Success  bool   `json:"success"`
	DryRun   bool   `json:"dry_run"`
	Op       string `json:"op"`
	Matched  int    `json:"matched"`
	Affected int    `json:"affected"`
	Skipped  int    `json:"skipped"`
}

// SessionListReply is a page of live sessions (GET sessions.php).
type SessionListReply struct {
	Success    bool      `json:"success"`
	Sessions   []Session `json:"sessions"`
	NextCursor *string   `json:"next_cursor"`
}

// AuditActor is who made an audited change; Token names the personal access
// token of a "token" actor.
type AuditActor struct {
	Kind  string `json:"kind"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	IP    string `json:"ip"`
	Token string `json:"token,omitempty"`
}

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	ID      int64          `json:"id"`
	At      string         `json:"at"`
	Action  string         `json:"action"`
	AppID   string         `json:"app_id"`
	Target  string         `json:"target"`
	Details map[string]any `json:"details"`
	Actor   AuditActor     `json:"actor"`
}

// AuditListReply is a page of the audit log, newest first (GET audit.php).
type AuditListReply struct {
	Success    bool         `json:"success"`
	Entries    []AuditEntry `json:"entries"`
	NextCursor *string      `json:"next_cursor"`
}

// ResetRequest is a client's request to reset its devices, which the owner
// approves or denies (or which was approved automatically: DecidedBy
// "auto").
type ResetRequest struct {
	ID         int64   `json:"id"`
	LicenseKey string  `json:"license_key"`
	Username   string  `json:"username"`
	HWID       string  `json:"hwid"`
	Reason     string  `json:"reason"`
	Status     string  `json:"status"`
	CreatedAt  string  `json:"created_at"`
	DecidedAt  *string `json:"decided_at"`
	DecidedBy  string  `json:"decided_by"`
}

// ResetRequestListReply is the reply of GET hwid-resets.php.
type ResetRequestListReply struct {
	Success    bool           `json:"success"`
	Requests   []ResetRequest `json:"requests"`
	NextCursor *string        `json:"next_cursor"`
}

// ResetRequestReply is the reply of POST hwid-resets.php.
type ResetRequestReply struct {
	Success bool         `json:"success"`
	Request ResetRequest `json:"request"`
}

// Detection is what leak and abuse detection reported: Kind is
// key.suspected_leak or suspicious_activity, Subject the key or address.
type Detection struct {
	ID        int64          `json:"id"`
	Kind      string         `json:"kind"`
	Subject   string         `json:"subject"`
	Details   map[string]any `json:"details"`
	CreatedAt string         `json:"created_at"`
}

// DetectionListReply is the reply of GET detections.php.
type DetectionListReply struct {
	Success    bool        `json:"success"`
	Detections []Detection `json:"detections"`
}

// KeyTextsReply is the reply of GET texts.php with license_key: the app's
// texts and that key's overrides (an empty object when it has none).
type KeyTextsReply struct {
	Success   bool              `json:"success"`
	Texts     map[string]string `json:"texts"`
	Overrides map[string]string `json:"overrides"`
}

// AdminTextReply is the reply of PUT texts.php: the text saved.
type AdminTextReply struct {
	Success bool   `json:"success"`
	Name    string `json:"name"`
	Value   string `json:"value"`
}

// AdminSocialLink is a link the app shows (app/info.php), with how often it was
// followed.
type AdminSocialLink struct {
	ID        int64  `json:"id"`
	Platform  string `json:"platform"`
	URL       string `json:"url"`
	Label     string `json:"label"`
	Order     int    `json:"order"`
	Clicks    int64  `json:"clicks"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// SocialLinkListReply is the reply of GET social-links.php.
type SocialLinkListReply struct {
	Success     bool              `json:"success"`
	SocialLinks []AdminSocialLink `json:"social_links"`
}

// SocialLinkReply is one link, created or changed.
type SocialLinkReply struct {
	Success    bool            `json:"success"`
	SocialLink AdminSocialLink `json:"social_link"`
}
