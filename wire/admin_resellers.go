package wire

// ResellerProduct is a product a reseller may sell: the terms of the key it
// makes and its price in balance units.
type ResellerProduct struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	KeyType    string `json:"key_type"`
	Duration   int    `json:"duration_value"`
	MaxDevices int    `json:"max_devices"`
	Price      int64  `json:"price"`
}

// Reseller is a reseller account of an app as the admin API shows it
// (never its token; TokenHint is the token's first characters).
type Reseller struct {
	ID        string            `json:"id"`
	AppID     string            `json:"app_id"`
	Name      string            `json:"name"`
	Email     string            `json:"email"`
	TokenHint string            `json:"token_hint"`
	Balance   int64             `json:"balance"`
	Products  []ResellerProduct `json:"products"`
	Status    string            `json:"status"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt string            `json:"updated_at"`
}

// LedgerEntry is one change of a reseller's balance. Actor is
// "<kind>:<name>" of who made it.
type LedgerEntry struct {
	ID           int64  `json:"id"`
	ResellerID   string `json:"reseller_id"`
	ResellerName string `json:"reseller_name"`
	At           string `json:"at"`
	Delta        int64  `json:"delta"`
	BalanceAfter int64  `json:"balance_after"`
	Reason       string `json:"reason"`
	Detail       string `json:"detail"`
	Actor        string `json:"actor"`
}

// ResellerListReply is the reply of GET resellers.php.
type ResellerListReply struct {
	Success   bool       `json:"success"`
	Resellers []Reseller `json:"resellers"`
}

// ResellerActivityReply is the reply of GET resellers.php with id (one
// reseller, which Reseller then carries) or action=activity (every
// reseller's ledger): newest first.
type ResellerActivityReply struct {
	Success    bool          `json:"success"`
	Reseller   *Reseller     `json:"reseller,omitempty"`
	Activity   []LedgerEntry `json:"activity"`
	NextCursor *string       `json:"next_cursor"`
}

// ResellerReply is one reseller after a change; Token, the reseller's API
// token, is present (once) on creation and rotation.
type ResellerReply struct {
	Success  bool     `json:"success"`
	Reseller Reseller `json:"reseller"`
	Token    string   `json:"token,omitempty"`
}

// SuccessReply is a bare success.
type SuccessReply struct {
	Success bool `json:"success"`
}
