package license

import (
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// Wire error codes used by this package (sdk-compat §2.1).
const (
	CodeMissingFields      = wire.CodeMissingFields
	CodeInvalidKey         = wire.CodeInvalidKey
	CodeHWIDMismatch       = wire.CodeHWIDMismatch
	CodeDeviceLimit        = wire.CodeDeviceLimit
	CodeExpired            = wire.CodeExpired
	CodeBanned             = wire.CodeBanned
	CodePaused             = wire.CodePaused
	CodeMaintenance        = wire.CodeMaintenance
	CodeSessionExpired     = wire.CodeSessionExpired
	CodeSessionMismatch    = wire.CodeSessionMismatch
	CodeSessionRevoked     = wire.CodeSessionRevoked
	CodeHWIDReset          = wire.CodeHWIDReset
	CodeKeyNotActive       = wire.CodeKeyNotActive
	CodeNoHWID             = wire.CodeNoHWID
	CodeRateLimited        = wire.CodeRateLimited
	CodeSelfResetDisabled  = wire.CodeSelfResetDisabled
	CodeNotFound           = wire.CodeNotFound
	CodeConflict           = wire.CodeConflict
	CodeForbidden          = wire.CodeForbidden
	CodeOfflineDisabled    = wire.CodeOfflineDisabled
	CodeLicenseFileRevoked = wire.CodeLicenseFileRevoked
)

// endLogout is the end reason of a session closed by its own client; a later
// heartbeat on it answers SESSION_EXPIRED.
const endLogout = "LOGOUT"

var (
	errInvalidKey  = apperr.New(apperr.Unauthenticated, CodeInvalidKey, "Invalid license key.")
	errBanned      = apperr.New(apperr.Forbidden, CodeBanned, "This license key has been banned.")
	errPaused      = apperr.New(apperr.Forbidden, CodePaused, "This license key is paused.")
	errExpired     = apperr.New(apperr.Forbidden, CodeExpired, "This license key has expired.")
	errSessionGone = apperr.New(apperr.Forbidden, CodeSessionExpired, "Your session has expired. Please log in again.")
	errMismatch    = apperr.New(apperr.Forbidden, CodeSessionMismatch, "This session belongs to another license key.")
)

// ErrAppRevoked refuses every use of an app its owner revoked (client
// routes, resellers, the customer portal); its sessions end at their next
// heartbeat with SESSION_REVOKED instead.
var ErrAppRevoked = apperr.New(apperr.Forbidden, wire.CodeAppRevoked, "This application has been disabled by its publisher.")

// killError returns the heartbeat refusal for a session end reason. Every
// reason maps into the eight codes every SDK generation treats as final.
func killError(reason string, app *App) *apperr.Error {
	switch reason {
	case CodeBanned:
		return errBanned
	case CodePaused:
		return errPaused
	case CodeExpired:
		return errExpired
	case CodeMaintenance:
		msg := app.Settings.MaintenanceMessage
		if strings.TrimSpace(msg) == "" { // clients show the message; never send a blank one
			msg = DefaultSettings().MaintenanceMessage
		}
		return apperr.New(apperr.Forbidden, CodeMaintenance, msg)
	case CodeHWIDReset:
		return apperr.New(apperr.Forbidden, CodeHWIDReset, "This device's binding was reset. Please log in again.")
	case CodeSessionRevoked:
		return apperr.New(apperr.Forbidden, CodeSessionRevoked, "This session was revoked.")
	case CodeSessionMismatch:
		return errMismatch
	default:
		return errSessionGone
	}
}

// sessionKill is killError worded for the session's holder: an account
// session's ban, pause or expiry speaks of the account.
func sessionKill(sess *Session, reason string, app *App) *apperr.Error {
	if sess.AccountID != nil {
		switch reason {
		case CodeBanned, CodePaused, CodeExpired:
			return AccountStatusError(Status(strings.ToLower(reason)))
		}
	}
	return killError(reason, app)
}

func statusError(s Status) *apperr.Error {
	switch s {
	case StatusBanned:
		return errBanned
	case StatusPaused:
		return errPaused
	case StatusExpired:
		return errExpired
	case StatusRedeemed:
		return errKeyRedeemed
	}
	return nil
}

// ErrSessionGone is SESSION_EXPIRED: the session is unknown, ended or
// silent past the timeout.
var ErrSessionGone = errSessionGone

// MaintenanceError is the MAINTENANCE refusal carrying the app's message.
func MaintenanceError(app *App) *apperr.Error { return killError(CodeMaintenance, app) }

// StatusError is the refusal of a key in status st (BANNED, PAUSED,
// EXPIRED or KEY_REDEEMED); nil when the key may be used.
func StatusError(st Status) *apperr.Error { return statusError(st) }
