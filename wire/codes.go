package wire

// Error codes: the error_code of a success:false reply. Each is sent with a
// user-safe message; the HTTP status (or 200 inside an envelope) depends on
// the route (docs/api.md, "Errors").

// Request and transport refusals.
const (
	// CodeMissingFields: a required field is absent or empty, a field has the
	// wrong type or is out of range, or the body is not a JSON object (400).
	CodeMissingFields = "MISSING_FIELDS"
	// CodeBodyTooLarge: the request body (or an uploaded artifact) is larger
	// than the route allows (400).
	CodeBodyTooLarge = "BODY_TOO_LARGE"
	// CodeInvalidApp: the X-App-Secret header is missing or names no app
	// (plain 401, before any envelope is read).
	CodeInvalidApp = "INVALID_APP"
	// CodeAppRevoked: the app's owner revoked it; every client route but
	// heartbeat refuses (403). Its sessions end with SESSION_REVOKED.
	CodeAppRevoked = "APP_REVOKED"
	// CodeCryptoError: the request envelope is malformed, fails its MAC,
	// cannot be decrypted, or its timestamp is more than 300 s from the
	// server's clock (plain 400; the clock refusal adds reason CLOCK_SKEW and
	// server_time, and only it says "expired").
	CodeCryptoError = "CRYPTO_ERROR"
	// CodeRateLimited: too many requests from one address or session, or the
	// same envelope is still being answered (429, with retry_after).
	CodeRateLimited = "RATE_LIMITED"
	// CodeTooManyAttempts: sign-in failures locked the username, address or
	// app for a while (429, with retry_after).
	CodeTooManyAttempts = "TOO_MANY_ATTEMPTS"
	// CodeNotFound: no such resource or endpoint (404).
	CodeNotFound = "NOT_FOUND"
	// CodeMethodNotAllowed: the route exists but not with this method (405).
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeConflict: the state forbids the change, or the name is taken (409).
	CodeConflict = "CONFLICT"
	// CodeForbidden: an admin's role does not allow this on that app (403).
	CodeForbidden = "FORBIDDEN"
	// CodeUnauthorized: a bearer token (admin, customer, reseller, metrics)
	// is missing, invalid or expired (401).
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeInvalidCredentials: wrong username or password, unknown key on
	// customer sign-in, or wrong order fulfilment secret (401).
	CodeInvalidCredentials = "INVALID_CREDENTIALS"
	// CodeInternal: an internal failure; the message is generic (500, or
	// inside an envelope on envelope routes).
	CodeInternal = "INTERNAL"
)

// ReasonClockSkew is the reason of the plain CRYPTO_ERROR clock refusal; the
// reply also carries server_time (sdk-compat §4).
const ReasonClockSkew = "CLOCK_SKEW"

// Licence refusals on login, check-key, validate, update check and the
// self-service reset.
const (
	// CodeInvalidKey: no such licence key for this app (401; 404 on the
	// self-service reset; 400 on account register and redeem).
	CodeInvalidKey = "INVALID_KEY"
	// CodeHWIDMismatch: the key is bound to other devices (403; login only,
	// never on heartbeat).
	CodeHWIDMismatch = "HWID_MISMATCH"
	// CodeDeviceLimit: the key is on max_devices devices already (403, with
	// devices_used and max_devices).
	CodeDeviceLimit = "DEVICE_LIMIT"
	// CodeKeyNotActive: the key cannot be used in its state, for example a
	// self-service reset of an unused key (400).
	CodeKeyNotActive = "KEY_NOT_ACTIVE"
	// CodeNoHWID: login without a hwid (400).
	CodeNoHWID = "NO_HWID"
	// CodeSelfResetDisabled: the app does not allow self-service resets, or
	// the cooldown has not passed (403, with next_reset_at when cooling down).
	CodeSelfResetDisabled = "SELF_RESET_DISABLED"
)

// Kill codes: a heartbeat answers one of these, enveloped, when the session
// ended; every SDK generation stops the session on them. BANNED, PAUSED,
// EXPIRED and MAINTENANCE also refuse login.
const (
	// CodeBanned: the key or account was banned.
	CodeBanned = "BANNED"
	// CodePaused: the key or account was paused.
	CodePaused = "PAUSED"
	// CodeExpired: the key or account expired.
	CodeExpired = "EXPIRED"
	// CodeMaintenance: the app is in maintenance mode; the message is the
	// owner's maintenance message.
	CodeMaintenance = "MAINTENANCE"
	// CodeHWIDReset: the key's device binding was reset (by the owner or a
	// self-service reset).
	CodeHWIDReset = "HWID_RESET"
	// CodeSessionRevoked: the owner revoked the session or the app.
	CodeSessionRevoked = "SESSION_REVOKED"
	// CodeSessionExpired: the session is unknown, timed out or logged out.
	CodeSessionExpired = "SESSION_EXPIRED"
	// CodeSessionMismatch: the session belongs to another licence key.
	CodeSessionMismatch = "SESSION_MISMATCH"
)

// KillCodes lists the eight heartbeat kill codes.
var KillCodes = [...]string{CodeBanned, CodePaused, CodeExpired, CodeHWIDReset, CodeMaintenance,
	CodeSessionRevoked, CodeSessionExpired, CodeSessionMismatch}

// License-file refusals (auth/license-file.php, offline activation;
// docs/offline.md).
const (
	// CodeOfflineDisabled: the app issues no license files (its
	// offline_enabled setting is off) (403).
	CodeOfflineDisabled = "OFFLINE_DISABLED"
	// CodeLicenseFileRevoked: the operator revoked the last license file of
	// this key on this device; a new one is issued only by an admin (403).
	CodeLicenseFileRevoked = "LICENSE_FILE_REVOKED"
)

// Trial refusals (auth/trial.php).
const (
	// CodeTrialDisabled: the app offers no trials (403).
	CodeTrialDisabled = "TRIAL_DISABLED"
	// CodeTrialUsed: this device's trial is over (403).
	CodeTrialUsed = "TRIAL_USED"
	// CodeTrialLimit: too many trials from one address (403).
	CodeTrialLimit = "TRIAL_LIMIT"
)

// App user account refusals (auth/account-*.php).
const (
	// CodeAccountsDisabled: the app has no user accounts (403).
	CodeAccountsDisabled = "ACCOUNTS_DISABLED"
	// CodeUsernameExists: registration with a taken username (409).
	CodeUsernameExists = "USERNAME_EXISTS"
	// CodeKeyRequired: the app requires a licence key to register (400).
	CodeKeyRequired = "KEY_REQUIRED"
	// CodeKeyAlreadyUsed: the key was already redeemed onto an account (409).
	CodeKeyAlreadyUsed = "KEY_ALREADY_USED"
	// CodeKeyInUse: the key is activated on a device and cannot be
	// redeemed (409).
	CodeKeyInUse = "KEY_IN_USE"
	// CodeKeyRedeemed: login with a key redeemed onto an account; sign in
	// with the account instead (403).
	CodeKeyRedeemed = "KEY_REDEEMED"
	// CodeAlreadyLifetime: redeeming a timed key onto a lifetime account (409).
	CodeAlreadyLifetime = "ALREADY_LIFETIME"
	// CodePasswordResetRequired: the owner requires a new password before the
	// next sign-in (403).
	CodePasswordResetRequired = "PASSWORD_RESET_REQUIRED"
)

// Admin, reseller and release refusals (admin API, reseller API).
const (
	// CodeInvalidCode: a wrong or reused two-factor code (401).
	CodeInvalidCode = "INVALID_CODE"
	// CodeTOTPEnabled: two-factor sign-in is already on (409).
	CodeTOTPEnabled = "TOTP_ENABLED"
	// CodeTOTPDisabled: two-factor sign-in is not on (409).
	CodeTOTPDisabled = "TOTP_DISABLED"
	// CodeTOTPNotEnrolled: confirming two-factor enrolment before starting it (409).
	CodeTOTPNotEnrolled = "TOTP_NOT_ENROLLED"
	// CodeTokenRevoked: the personal access token was revoked (403).
	CodeTokenRevoked = "TOKEN_REVOKED"
	// CodeTokenNotAllowed: an action needs a signed-in admin, not a personal
	// access token (403).
	CodeTokenNotAllowed = "TOKEN_NOT_ALLOWED"
	// CodeLastOwner: removing or demoting an app's last owner (409).
	CodeLastOwner = "LAST_OWNER"
	// CodeTooManyKeys: a bulk operation would change more keys than allowed (400).
	CodeTooManyKeys = "TOO_MANY_KEYS"
	// CodeCountChanged: a bulk operation's filter matches a different number
	// of keys than the caller confirmed (409).
	CodeCountChanged = "COUNT_CHANGED"
	// CodeImportRejected: a key CSV import failed validation; nothing was
	// imported (400, with the rejected rows).
	CodeImportRejected = "IMPORT_REJECTED"
	// CodeInsufficientCredit: a reseller's balance does not cover the keys (409).
	CodeInsufficientCredit = "INSUFFICIENT_CREDIT"
	// CodeResellerDisabled: the reseller account is disabled (403).
	CodeResellerDisabled = "RESELLER_DISABLED"
	// CodeBalanceLimit: a credit change would take a reseller's balance out
	// of range (409).
	CodeBalanceLimit = "BALANCE_LIMIT"
	// CodeVersionExists: a release with that version already exists (409).
	CodeVersionExists = "VERSION_EXISTS"
	// CodeNoArtifact: publishing a release without artifacts (409).
	CodeNoArtifact = "NO_ARTIFACT"
	// CodeNotDraft: deleting a release that is not a draft (409).
	CodeNotDraft = "NOT_DRAFT"
	// CodeNotPublished: changing the rollout of a draft release (409).
	CodeNotPublished = "NOT_PUBLISHED"
	// CodeAlreadyPublished: publishing a published release (409).
	CodeAlreadyPublished = "ALREADY_PUBLISHED"
	// CodeReleaseYanked: changing a yanked release (409).
	CodeReleaseYanked = "RELEASE_YANKED"
	// CodeRolloutHalted: changing a halted rollout before resuming it (409).
	CodeRolloutHalted = "ROLLOUT_HALTED"
	// CodeArtifactPublished: replacing an artifact of a published release (409).
	CodeArtifactPublished = "ARTIFACT_PUBLISHED"
	// CodeChecksumMismatch: an uploaded artifact's sha256 differs from the
	// one the upload claimed (400).
	CodeChecksumMismatch = "CHECKSUM_MISMATCH"
)
