package wire

// Profile is the signed-in admin's account and role per app (GET
// profile.php).
type Profile struct {
	ID        string `json:"id"`
	Username  string `json:"username"`
	Email     string `json:"email"`
	Operator  bool   `json:"operator"`
	TwoFactor bool   `json:"two_factor"`
	CreatedAt string `json:"created_at"`
	// Apps maps app_id to the admin's role on it.
	Apps map[string]string `json:"apps"`
}

// ProfileReply is the reply of GET profile.php.
type ProfileReply struct {
	Success bool    `json:"success"`
	Profile Profile `json:"profile"`
}

// PasswordChangedReply is the reply of PUT profile.php with new_password:
// a fresh token (other sign-ins have ended).
type PasswordChangedReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Token   string `json:"token"`
}

// EmailChangedReply is the reply of PUT profile.php with email.
type EmailChangedReply struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Email   string `json:"email"`
}

// TOTPEnrolReply is the reply of POST 2fa.php action=enrol: the secret to
// add to an authenticator app, as text, otpauth URI and QR code (a data:
// URI of a PNG).
type TOTPEnrolReply struct {
	Success    bool   `json:"success"`
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauth_uri"`
	QRPNG      string `json:"qr_png"`
	Message    string `json:"message"`
}

// RecoveryCodesReply is the reply of POST 2fa.php action=confirm or
// recovery_codes: one-time recovery codes, shown once.
type RecoveryCodesReply struct {
	Success       bool     `json:"success"`
	RecoveryCodes []string `json:"recovery_codes"`
	Message       string   `json:"message"`
}

// AccessToken is a personal access token of the signed-in admin.
type AccessToken struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Hint       string  `json:"hint"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
}

// NewAccessToken is a token just minted, with its secret (shown once).
type NewAccessToken struct {
	AccessToken
	Token string `json:"token"`
}

// AccessTokenListReply is the reply of GET tokens.php.
type AccessTokenListReply struct {
	Success bool          `json:"success"`
	Tokens  []AccessToken `json:"tokens"`
}

// NewAccessTokenReply is the reply of POST tokens.php.
type NewAccessTokenReply struct {
	Success bool           `json:"success"`
	Message string         `json:"message"`
	Token   NewAccessToken `json:"token"`
}

// Member is a team member of an app.
type Member struct {
	Username  string `json:"username"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

// MemberListReply is the reply of GET members.php.
type MemberListReply struct {
	Success bool     `json:"success"`
	Members []Member `json:"members"`
}

// MemberReply is the reply of PUT members.php.
type MemberReply struct {
	Success bool   `json:"success"`
	Member  Member `json:"member"`
}

// SigningKey is a public key replies are signed with (GET signing.php):
// SPKISHA256 is what a client pins; Active marks the key signing now
// (others are announced for a rotation).
type SigningKey struct {
	ID         string `json:"id"`
	SPKISHA256 string `json:"spki_sha256"`
	PublicKey  string `json:"public_key"`
	Active     bool   `json:"active"`
}

// SigningKeysReply is the reply of GET signing.php; Signing is false when
// replies are not signed (no key directory).
type SigningKeysReply struct {
	Success bool         `json:"success"`
	Signing bool         `json:"signing"`
	Keys    []SigningKey `json:"keys"`
}
