package wire

import "encoding/json"

// AdminAccount is a user account as the admin API shows it (accounts.php):
// the client's account fields plus the last key redeemed ("" until there
// is one), features, whether the next sign-in must change the password,
// and the last sign-in (null before the first).
type AdminAccount struct {
	ID                    int64           `json:"id"`
	Username              string          `json:"username"`
	Email                 string          `json:"email"`
	Status                string          `json:"status"`
	ExpiresAt             *string         `json:"expires_at"`
	DaysRemaining         *int            `json:"days_remaining"`
	MaxDevices            int             `json:"max_devices"`
	KeyType               string          `json:"key_type"` // days or lifetime
	Lifetime              bool            `json:"lifetime"`
	LicenseKey            string          `json:"license_key"`
	Features              json.RawMessage `json:"features"`
	PasswordResetRequired bool            `json:"password_reset_required"`
	LastLoginAt           *string         `json:"last_login_at"`
	CreatedAt             string          `json:"created_at"`
}

// RedeemedKey is a key redeemed onto an account: the days it added, or
// Lifetime.
type RedeemedKey struct {
	LicenseKey string `json:"license_key"`
	DaysAdded  int    `json:"days_added"`
	Lifetime   bool   `json:"lifetime"`
	RedeemedAt string `json:"redeemed_at"`
}

// AdminAccountDetail is one account with its devices, live sessions and
// redeemed keys (GET accounts.php?username=).
type AdminAccountDetail struct {
	AdminAccount
	Devices      []Device      `json:"devices"`
	Sessions     []Session     `json:"sessions"`
	RedeemedKeys []RedeemedKey `json:"redeemed_keys"`
}

// AccountListReply is a page of accounts (GET accounts.php); NextCursor is
// null on the last page.
type AccountListReply struct {
	Success    bool           `json:"success"`
	Accounts   []AdminAccount `json:"accounts"`
	NextCursor *string        `json:"next_cursor"`
}

// AccountDetailReply is the reply of GET accounts.php?username=.
type AccountDetailReply struct {
	Success bool               `json:"success"`
	Account AdminAccountDetail `json:"account"`
}

// AccountReply is one account after an action (POST accounts.php);
// TemporaryPassword, shown once, is present only after action
// reset-password.
type AccountReply struct {
	Success           bool         `json:"success"`
	Account           AdminAccount `json:"account"`
	TemporaryPassword string       `json:"temporary_password,omitempty"`
}

// Trial is a free trial a device took (trials.php). LicenseKey and Status
// are null once the trial's key was deleted; ExpiresAt is null when the key
// has no expiry (or is gone).
type Trial struct {
	ID         int64   `json:"id"`
	HWID       string  `json:"hwid"`
	IP         string  `json:"ip"`
	CreatedAt  string  `json:"created_at"`
	LicenseKey *string `json:"license_key"`
	Status     *string `json:"status"`
	ExpiresAt  *string `json:"expires_at"`
}

// TrialListReply is a page of trials, newest first (GET trials.php);
// NextCursor is null on the last page.
type TrialListReply struct {
	Success    bool    `json:"success"`
	Trials     []Trial `json:"trials"`
	NextCursor *string `json:"next_cursor"`
}
