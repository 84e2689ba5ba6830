package client

import (
	"errors"
	"fmt"

	"github.com/keyward/keyward/wire"
)

// APIError is a refusal from the server: a reply with success:false. Code is
// the wire error_code (empty for transport-level refusals that carry none,
// such as {"detail":…} bodies); Fields holds the whole decoded reply, so
// extra fields such as devices_used, retry_after or next_reset_at are at hand.
type APIError struct {
	Status  int            // HTTP status of the reply (enveloped replies are normally 200)
	Code    string         // error_code, e.g. "INVALID_KEY"
	Message string         // user-safe message (or the "detail" of a plain refusal)
	Fields  map[string]any // every field of the reply
	// Sealed reports whether the refusal arrived inside a verified envelope.
	// Plain refusals on envelope routes were made before the server verified
	// the request (bad secret, rate limit, clock).
	Sealed bool
}

func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = "HTTP " + fmt.Sprint(e.Status)
	}
	if e.Message == "" {
		return "keyward: " + code
	}
	return "keyward: " + code + ": " + e.Message
}

// ClockRefusal reports whether e is the server's plain clock refusal
// (reason CLOCK_SKEW, or CRYPTO_ERROR with "expired" in the message).
func (e *APIError) ClockRefusal() bool {
	if e.Sealed {
		return false
	}
	if r, _ := e.Fields["reason"].(string); r == wire.ReasonClockSkew {
		return true
	}
	return e.Code == wire.CodeCryptoError && containsFold(e.Message, "expired")
}

// Sentinel errors. Security failures are wrapped in a *SecurityError, so both
// errors.Is(err, ErrUnsigned) and errors.As(err, &secErr) work.
var (
	// ErrUnsigned: pinning is on and the reply has no X-PWF-Signature.
	ErrUnsigned = errors.New("reply is not signed")
	// ErrBadSignature: the reply's signature does not verify with any pinned key.
	ErrBadSignature = errors.New("reply signature does not verify")
	// ErrRedirect: the server answered with a redirect while pinning is on.
	ErrRedirect = errors.New("redirect refused")
	// ErrForgedReply: a plain success:true on a route whose replies must be
	// enveloped — no genuine keyward server sends one.
	ErrForgedReply = errors.New("plain success on an envelope route")
	// ErrBadEnvelope: a reply envelope failed its MAC, was malformed or could
	// not be decrypted.
	ErrBadEnvelope = errors.New("reply envelope does not verify")
	// ErrReplyClock: a reply envelope's timestamp is outside ±300 s of the
	// corrected local clock.
	ErrReplyClock = errors.New("reply envelope timestamp outside the window")
	// ErrOrigin: a download URL points to another origin while pinning is on.
	ErrOrigin = errors.New("download URL is on another origin")

	// ErrChecksum: a downloaded artifact does not match the offer's sha256 or size.
	ErrChecksum = errors.New("download does not match the offered sha256")
	// ErrBadReply: the reply is not the JSON the route promises.
	ErrBadReply = errors.New("unexpected reply")
)

// SecurityError is a reply the client refused to trust.
type SecurityError struct {
	Err    error  // one of the security sentinels above
	Method string // request method
	Path   string // request path
	Detail string // optional extra information
}

func (e *SecurityError) Error() string {
	s := "keyward: security: " + e.Method + " " + e.Path + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *SecurityError) Unwrap() error { return e.Err }

// Kill codes a heartbeat may answer with: each ends the session. The client
// adds NETWORK_LOST (the failure budget ran out) and CLOCK_SKEW (every
// unanswered beat of the streak was a clock refusal).
const (
	CodeBanned          = wire.CodeBanned
	CodePaused          = wire.CodePaused
	CodeExpired         = wire.CodeExpired
	CodeHWIDReset       = wire.CodeHWIDReset
	CodeMaintenance     = wire.CodeMaintenance
	CodeSessionRevoked  = wire.CodeSessionRevoked
	CodeSessionExpired  = wire.CodeSessionExpired
	CodeSessionMismatch = wire.CodeSessionMismatch
	CodeNetworkLost     = "NETWORK_LOST" // the client's own: never sent by a server
	CodeClockSkew       = wire.ReasonClockSkew
)

var killCodes = func() map[string]bool {
	m := make(map[string]bool, len(wire.KillCodes))
	for _, c := range wire.KillCodes {
		m[c] = true
	}
	return m
}()

// IsKillCode reports whether code is one of the eight server kill codes.
// Unknown codes are transient, as in every official SDK.
func IsKillCode(code string) bool { return killCodes[code] }

// KillError ends a heartbeat loop: a server kill code, or NETWORK_LOST /
// CLOCK_SKEW when a failure budget ran out (Err then holds the last failure).
type KillError struct {
	Code    string
	Message string
	Err     error
}

func (e *KillError) Error() string {
	s := "keyward: session ended: " + e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += " (last failure: " + e.Err.Error() + ")"
	}
	return s
}

func (e *KillError) Unwrap() error { return e.Err }

// IsKill reports whether err ends the session: a *KillError, or an enveloped
// *APIError carrying one of the eight kill codes (as returned by
// Session.Beat).
func IsKill(err error) bool {
	var k *KillError
	if errors.As(err, &k) {
		return true
	}
	var a *APIError
	return errors.As(err, &a) && a.Sealed && IsKillCode(a.Code)
}

// KillCode returns the kill code of err, or "" when IsKill(err) is false.
func KillCode(err error) string {
	var k *KillError
	if errors.As(err, &k) {
		return k.Code
	}
	var a *APIError
	if errors.As(err, &a) && a.Sealed && IsKillCode(a.Code) {
		return a.Code
	}
	return ""
}
