// Package client is the Go SDK of keyward, a self-hosted licence server.
// It speaks keyward's client API (the PWF Auth wire protocol): encrypted
// envelopes, licence-key and account sessions with a heartbeat kill switch,
// trials, self-service device resets, remote content and over-the-air
// updates. The envelope and the reply signing are keyward's own
// implementations (the server's internal/envelope and internal/signing, not
// copies), and nothing else outside the standard library is imported, so
// vendors can import the SDK into their apps without new dependencies.
//
// # Quick start
//
//	c, err := client.New("https://licenses.example.com", appSecret)
//	s, err := c.Login(ctx, licenseKey, hwid)
//	err = s.Run(ctx, client.HeartbeatOptions{OnKill: func(code string) { … }})
//
// Every call takes a context. Every method is safe for concurrent use.
//
// # Errors
//
// A refusal from the server is an *APIError carrying the wire error_code
// (errors.As). Sealed tells whether it came inside a verified envelope.
// Replies the client refuses to trust are *SecurityError values wrapping
// ErrUnsigned, ErrBadSignature, ErrRedirect, ErrForgedReply,
// ErrBadEnvelope, ErrReplyClock or ErrOrigin (errors.Is). A session ended by
// the server or by a failure budget is a *KillError; IsKill and KillCode
// recognise both forms.
//
// # Heartbeat and kill switch
//
// Session.Run beats at the server's heartbeat_interval. The eight kill codes
// (BANNED, PAUSED, EXPIRED, HWID_RESET, MAINTENANCE, SESSION_REVOKED,
// SESSION_EXPIRED, SESSION_MISMATCH) are delivered to OnKill and end the
// loop; unknown codes are transient. Only enveloped answers count: three
// consecutive unanswered beats end the session with NETWORK_LOST (or
// CLOCK_SKEW when each was a clock refusal), ten consecutive plain 429s with
// NETWORK_LOST.
//
// # Outage grace
//
// With pinned keys and an app whose offline trust is on, every signed reply
// to login, heartbeat and check-key carries trust_until, and the client
// keeps the newest (Trust). While the server is unreachable (network
// errors, timeouts, 5xx, plain 429s, untrustworthy replies) Run goes on in
// grace (EventGrace) until trust_until, then ends with NETWORK_LOST
// wrapping ErrGraceExpired; a real refusal (kill code, INVALID_KEY, …)
// ends it at once; a local clock turned back behind the last signed server
// time ends it with CLOCK_ROLLBACK (ErrClockRollback). Verdict turns any
// call's outcome into Allowed, Refused or Grace. Unsigned replies never
// give trust. WithStore keeps the trust across restarts (FileStore).
//
// # Clock correction
//
// With WithAutoCorrectClock (on by default) a plain clock refusal carrying
// reason CLOCK_SKEW and an integer server_time sets the client's clock
// offset and the request is re-stamped and resent once. The offset applies
// to outgoing envelopes and to the ±300 s check of reply envelopes.
//
// # Reply signing
//
// WithPinnedKeys pins the server's PWF-REPLY-V1 signing keys: every request
// then carries a fresh X-PWF-Nonce and every reply must carry a valid
// X-PWF-Signature (RSASSA-PKCS1-v1_5 SHA-256 over ReplyCanonical) made with
// one of them, checked before the reply is parsed; redirects are refused.
package client
