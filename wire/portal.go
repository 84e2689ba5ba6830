package wire

import "encoding/json"

// The customer portal's replies (/api/customer/*.php, plain JSON) and the
// reseller API's (/api/reseller/*.php). Timestamps are UTC strings; a
// pointer field is JSON null when unset.

// CustomerLoginReply is the reply of POST customer/login.php: a bearer token
// for the other customer routes; Kind is "key" or "account".
type CustomerLoginReply struct {
	Success   bool   `json:"success"`
	Token     string `json:"token"`
	TokenType string `json:"token_type"` // "Bearer"
	Kind      string `json:"kind"`
	ExpiresAt string `json:"expires_at"`
}

// CustomerKey is the signed-in key of customer/key.php: the client's KeyInfo
// fields plus the key's features (the app's defaults merged in).
type CustomerKey struct {
	LicenseKey    string  `json:"license_key"`
	Status        string  `json:"status"`
	KeyType       string  `json:"key_type"`
	Duration      int     `json:"duration"`
	ActivatedAt   *string `json:"activated_at"`
	ExpiresAt     *string `json:"expires_at"`
	DaysRemaining *int    `json:"days_remaining"`
	MaxDevices    int     `json:"max_devices"`
	// Floating keys bind no device: MaxDevices counts the machines holding
	// a seat (the reply's Seats).
	Floating bool            `json:"floating"`
	Features json.RawMessage `json:"features"`
}

// CustomerSeats are the seats of a floating key (customer/key.php):
// SeatsInUse of MaxDevices held, one Machines entry per seat.
type CustomerSeats struct {
	SeatsInUse int            `json:"seats_in_use"`
	MaxDevices int            `json:"max_devices"`
	Machines   []CustomerSeat `json:"machines"`
}

// CustomerSeat is one seat of a floating key: a machine's live session
// (SessionID, which sessions.php ends), a license file it borrowed
// (Borrowed, FileID, which license-files.php returns, held until
// ValidUntil), or both. Since is when the seat was taken (the session's
// start, else the file's issue); LastHeartbeatAt is null for a seat held
// by a borrowed file alone.
type CustomerSeat struct {
	HWID            string  `json:"hwid"`
	Since           string  `json:"since"`
	LastHeartbeatAt *string `json:"last_heartbeat_at"`
	Borrowed        bool    `json:"borrowed"`
	SessionID       *string `json:"session_id"`
	FileID          *string `json:"file_id"`
	ValidUntil      *string `json:"valid_until"`
}

// CustomerAccount is the signed-in account of customer/key.php, with the
// keys redeemed onto it.
type CustomerAccount struct {
	Username      string          `json:"username"`
	Email         string          `json:"email"`
	Status        string          `json:"status"`
	Lifetime      bool            `json:"lifetime"`
	ExpiresAt     *string         `json:"expires_at"`
	DaysRemaining *int            `json:"days_remaining"`
	MaxDevices    int             `json:"max_devices"`
	Features      json.RawMessage `json:"features"`
	RedeemedKeys  []string        `json:"redeemed_keys"`
	CreatedAt     string          `json:"created_at"`
}

// CustomerSession is one of the customer's live sessions.
type CustomerSession struct {
	SessionID       string `json:"session_id"`
	HWID            string `json:"hwid"`
	IP              string `json:"ip"`
	StartedAt       string `json:"started_at"`
	LastHeartbeatAt string `json:"last_heartbeat_at"`
}

// CustomerKeyReply is the reply of GET customer/key.php: Key is present for
// a key sign-in, Account for an account sign-in (the other is absent).
type CustomerKeyReply struct {
	Success        bool              `json:"success"`
	Kind           string            `json:"kind"`
	AppID          string            `json:"app_id"`
	AppName        string            `json:"app_name"`
	Devices        []Device          `json:"devices"`
	Sessions       []CustomerSession `json:"sessions"`
	TokenExpiresAt string            `json:"token_expires_at"`
	Key            *CustomerKey      `json:"key,omitempty"`
	Account        *CustomerAccount  `json:"account,omitempty"`
	// Seats are a floating key's seats (absent for any other key and for
	// an account sign-in).
	Seats *CustomerSeats `json:"seats,omitempty"`
	// LicenseFiles are the license files issued for the key, newest first
	// (at most 200): present for every key sign-in, absent for an account
	// sign-in.
	LicenseFiles []LicenseFile `json:"license_files,omitzero"`
}

// CustomerLicenseFileReply is the reply of POST customer/license-files.php
// action=return: the file after the change.
type CustomerLicenseFileReply struct {
	Success bool        `json:"success"`
	Message string      `json:"message"`
	File    LicenseFile `json:"file"`
}

// CustomerOrder is one of the customer's orders; SubscriptionID marks a
// renewal order (null otherwise), FulfilledAt is null until fulfilled.
type CustomerOrder struct {
	OrderID        string   `json:"order_id"`
	Plan           string   `json:"plan"`
	Kind           string   `json:"kind"`
	Status         string   `json:"status"`
	AmountCents    int64    `json:"amount_cents"`
	Currency       string   `json:"currency"`
	LicenseKeys    []string `json:"license_keys"`
	SubscriptionID *int64   `json:"subscription_id"`
	CreatedAt      string   `json:"created_at"`
	FulfilledAt    *string  `json:"fulfilled_at"`
}

// CustomerOrdersReply is the reply of GET customer/orders.php, newest first.
type CustomerOrdersReply struct {
	Success bool            `json:"success"`
	Orders  []CustomerOrder `json:"orders"`
}

// CustomerSubscription is one of the customer's subscriptions.
type CustomerSubscription struct {
	ID          int64  `json:"id"`
	Plan        string `json:"plan"`
	Period      string `json:"period"`
	PeriodDays  int    `json:"period_days"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	LicenseKey  string `json:"license_key"`
	Status      string `json:"status"`
	RenewsAt    string `json:"renews_at"`
	CreatedAt   string `json:"created_at"`
}

// CustomerSubscriptionsReply is the reply of GET customer/subscriptions.php.
type CustomerSubscriptionsReply struct {
	Success       bool                   `json:"success"`
	Subscriptions []CustomerSubscription `json:"subscriptions"`
}

// CustomerCancelReply is the reply of POST customer/subscriptions.php
// action=cancel: the subscription after the change.
type CustomerCancelReply struct {
	Success      bool                 `json:"success"`
	Message      string               `json:"message"`
	Subscription CustomerSubscription `json:"subscription"`
}

// ResellerSelf is the signed-in reseller as reseller/me.php shows it (never
// its token; TokenHint is the token's first characters).
type ResellerSelf struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Email     string            `json:"email"`
	Status    string            `json:"status"`
	Balance   int64             `json:"balance"`
	Products  []ResellerProduct `json:"products"`
	TokenHint string            `json:"token_hint"`
	CreatedAt string            `json:"created_at"`
}

// ResellerApp is the app a reseller sells keys of.
type ResellerApp struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ResellerMeReply is the reply of GET reseller/me.php.
type ResellerMeReply struct {
	Success  bool         `json:"success"`
	Reseller ResellerSelf `json:"reseller"`
	App      ResellerApp  `json:"app"`
}

// ResellerGenerateReply is the reply of POST reseller/keys.php (generate):
// the keys made, what they cost and the balance left.
type ResellerGenerateReply struct {
	Success bool  `json:"success"`
	Keys    []Key `json:"keys"`
	Charged int64 `json:"charged"`
	Balance int64 `json:"balance"`
}

// ResellerLedgerReply is the reply of GET reseller/ledger.php: the balance
// and a page of its history, newest first; NextCursor is null on the last
// page.
type ResellerLedgerReply struct {
	Success    bool          `json:"success"`
	Balance    int64         `json:"balance"`
	Entries    []LedgerEntry `json:"entries"`
	NextCursor *string       `json:"next_cursor"`
}
