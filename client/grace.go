package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/wire"
)

// Outage grace. A keyward app with offline trust on (offline_enabled) puts
// trust_until — its clock plus offline_ttl_hours — in every signed reply to
// login, heartbeat and check-key. A client that pins the reply key keeps
// the newest such reply; while the server cannot be reached (no answer, a
// timeout, a 5xx, a reply it cannot trust) it may go on until trust_until,
// and it stops at once on a real refusal. An unsigned reply never gives
// trust: anyone between the app and the server could have written it.

// Status is the kind of a Verdict.
type Status int

// The three outcomes of a licence decision.
const (
	// Allowed: the server answered and the licence is good.
	Allowed Status = iota + 1
	// Refused: stop. The server refused (Code is its error code), or it
	// could not be reached and there is no trust to run on (NETWORK_LOST,
	// CLOCK_ROLLBACK, CLOCK_SKEW).
	Refused
	// Grace: the server could not be reached, and the newest signed reply
	// lets the app run until Verdict.Until.
	Grace
)

func (s Status) String() string {
	switch s {
	case Allowed:
		return "allowed"
	case Refused:
		return "refused"
	case Grace:
		return "grace"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Verdict is what an app should do after a call to the server.
type Verdict struct {
	Status Status
	// Until is, for Grace, when the grace ends; for Allowed, the
	// trust_until of the newest signed reply (zero when there is none).
	Until time.Time
	// Code is, for Refused, the server's error code or the client's own:
	// NETWORK_LOST (unreachable, no trust or trust run out), CLOCK_ROLLBACK,
	// CLOCK_SKEW.
	Code string
	// Err is the failure behind a Refused or Grace verdict. errors.Is
	// finds ErrNoTrust, ErrGraceExpired or ErrClockRollback in it when the
	// client refused grace.
	Err error
}

// CodeClockRollback is the client's own code (never sent by a server) for
// a local clock earlier than the last signed server time it saw.
const CodeClockRollback = "CLOCK_ROLLBACK"

// Grace errors, wrapped in Verdict.Err and in a heartbeat loop's KillError.
var (
	// ErrNoTrust: the server is unreachable and no signed trust_until for
	// the key is held (offline trust off, replies not pinned, or none yet).
	ErrNoTrust = errors.New("no signed offline trust")
	// ErrGraceExpired: the server is unreachable and trust_until has passed.
	ErrGraceExpired = errors.New("offline trust has run out")
	// ErrClockRollback: the local clock (with the learned correction) is
	// more than RollbackTolerance earlier than the newest signed server
	// time, or than the latest time the client saw while in grace. The
	// clock was turned back; grace is refused until the server is reached.
	ErrClockRollback = errors.New("the local clock is earlier than the last signed server time (clock rollback)")
)

// RollbackTolerance is how far the local clock may be behind the newest
// signed server time before it counts as turned back: the ±300 s the
// envelope already allows between the two clocks.
const RollbackTolerance = envelope.Window

// Trust is the offline trust of the newest signed reply.
type Trust struct {
	LicenseKey string    // the key the reply was for ("" for an account session's heartbeat)
	ServerTime time.Time // the server's clock when it sealed the reply
	Until      time.Time // trust_until
	// Seen is the latest local time (corrected) the client has seen while
	// holding this trust; a clock earlier than it is a rollback too.
	Seen time.Time
}

// trustState is a Trust with the signed exchange it came from, which is
// what a Store keeps.
type trustState struct {
	Trust
	ex      *exchange
	savedAt time.Time // ServerTime of the last record saved
}

// exchange is one signed request and reply, exactly as sent and received.
type exchange struct {
	Nonce     string `json:"nonce"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Request   []byte `json:"request"`
	Status    int    `json:"status"`
	Reply     []byte `json:"reply"`
	Signature string `json:"signature"`
}

// trustPaths are the routes whose signed replies carry trust_until.
var trustPaths = map[string]bool{"/api/auth/login.php": true, "/api/auth/heartbeat.php": true, "/api/auth/check-key.php": true}

// trustRoute reports whether a request path (the base URL's path prefix
// included) is a trust route's.
func trustRoute(path string) bool {
	for p := range trustPaths {
		if strings.HasSuffix(path, p) {
			return true
		}
	}
	return false
}

// Trust returns the offline trust the client holds (ok false: none).
func (c *Client) Trust() (t Trust, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trust == nil {
		return Trust{}, false
	}
	return c.trust.Trust, true
}

// refusalCode reports whether a sealed code on a trust route is the
// server refusing the licence (as opposed to RATE_LIMITED, or a code this
// SDK does not know, which are transient).
func refusalCode(code string) bool {
	switch code {
	case wire.CodeInvalidKey, wire.CodeHWIDMismatch, wire.CodeDeviceLimit, wire.CodeKeyRedeemed, wire.CodeKeyNotActive,
		wire.CodeInvalidApp, wire.CodeAppRevoked, wire.CodeMissingFields:
		return true
	}
	return IsKillCode(code)
}

// refused reports whether err is the server refusing: a sealed refusal
// code, or a plain 4xx that is neither a rate limit nor a clock refusal
// (with pinning on, such a reply was signed by the server).
func refused(err error) (*APIError, bool) {
	var api *APIError
	if !errors.As(err, &api) || api.Status >= 500 {
		return nil, false
	}
	if api.Sealed {
		return api, refusalCode(api.Code)
	}
	return api, api.Status >= 400 && api.Status != 429 && !api.ClockRefusal()
}

// noteRefusal drops the trust of the key a trust route was refused for.
// SESSION_EXPIRED is about the session, not the licence (an outage longer
// than the session timeout causes it): the trust stays for the new login.
func (c *Client) noteRefusal(cl call, err error) {
	if !trustPaths[cl.path] {
		return
	}
	if api, ok := refused(err); ok && api.Code != CodeSessionExpired {
		c.dropTrust(requestKey(cl.body))
	}
}

// noteSuccess keeps the trust of a signed success on a trust route: its
// trust_until, or, when it carries none (offline trust turned off, or a
// check-key of a key that is not valid), no trust for that key.
func (c *Client) noteSuccess(r *reply, cl call) {
	if !trustPaths[cl.path] || len(c.pins) == 0 || r.signed == nil {
		return
	}
	st, err := c.trustOf(r.signed)
	if err != nil {
		if !errors.Is(err, ErrNoTrust) {
			c.log.Warn("keyward: signed reply gives no trust", "path", cl.path, "err", err)
		}
		c.dropTrust(requestKey(cl.body))
		return
	}
	c.mu.Lock()
	if old := c.trust; old != nil && old.LicenseKey == st.LicenseKey {
		if st.ServerTime.Before(old.ServerTime) { // an older reply (a retry racing a beat)
			c.mu.Unlock()
			return
		}
		st.savedAt = old.savedAt
		if old.Seen.After(st.Seen) {
			st.Seen = old.Seen
		}
	}
	if now := c.now().Add(c.offset); now.After(st.Seen) {
		st.Seen = now
	}
	c.trust = st
	save := c.store != nil && (st.savedAt.IsZero() || st.ServerTime.Sub(st.savedAt) >= time.Minute)
	if save {
		st.savedAt = st.ServerTime
	}
	c.mu.Unlock()
	if save {
		c.saveTrust(st)
	}
}

// requestKey is the license_key of a trust route's request body.
func requestKey(body any) string {
	switch b := body.(type) {
	case wire.LoginRequest:
		return b.LicenseKey
	case wire.HeartbeatRequest:
		return b.LicenseKey
	case wire.CheckKeyRequest:
		return b.LicenseKey
	}
	return ""
}

// dropTrust forgets the trust held for key (and the stored record).
func (c *Client) dropTrust(key string) {
	c.mu.Lock()
	had := c.trust != nil && c.trust.LicenseKey == key
	if had {
		c.trust = nil
	}
	c.mu.Unlock()
	if had && c.store != nil {
		if err := c.store.Save(nil); err != nil {
			c.log.Warn("keyward: clearing the trust store", "err", err)
		}
	}
}

// Verdict turns the outcome of a call about key (Login, CheckKey, a
// Session's Beat) into what the app should do: Allowed when err is nil;
// Refused when the server refused; otherwise — no answer, a timeout, a
// 5xx, a rate limit, a reply the client could not trust — Grace while the
// newest signed reply for key promises trust and the clock has not been
// turned back, else Refused with NETWORK_LOST or CLOCK_ROLLBACK. Grace
// needs pinned reply keys (WithPinnedKeys) and an app with offline trust
// on. A check-key reply with valid:false is the caller's to refuse. The
// *KillError that Run returns is Refused with its code.
func (c *Client) Verdict(key string, err error) Verdict {
	key = strings.TrimSpace(key)
	if err == nil {
		v := Verdict{Status: Allowed}
		if t, ok := c.Trust(); ok && t.LicenseKey == key {
			v.Until = t.Until
		}
		return v
	}
	var kill *KillError
	if errors.As(err, &kill) { // Run's end: the session is over, whatever ended it
		return Verdict{Status: Refused, Code: kill.Code, Err: err}
	}
	if api, ok := refused(err); ok {
		return Verdict{Status: Refused, Code: api.Code, Err: err}
	}
	var api *APIError
	if errors.As(err, &api) && api.ClockRefusal() {
		// The server is up and refuses this computer's clock.
		return Verdict{Status: Refused, Code: CodeClockSkew, Err: err}
	}
	return c.grace(key, err)
}

// Verdict is the client's Verdict for the session's key.
func (s *Session) Verdict(err error) Verdict { return s.c.Verdict(s.LicenseKey, err) }

// grace decides whether an unreachable server leaves the app running.
func (c *Client) grace(key string, cause error) Verdict {
	c.mu.Lock()
	st := c.trust
	if st == nil || st.LicenseKey != key {
		c.mu.Unlock()
		return Verdict{Status: Refused, Code: CodeNetworkLost, Err: fmt.Errorf("%w: %w", ErrNoTrust, cause)}
	}
	now := c.now().Add(c.offset)
	switch {
	case now.Before(st.ServerTime.Add(-RollbackTolerance)) || now.Before(st.Seen.Add(-RollbackTolerance)):
		t := st.Trust
		c.mu.Unlock()
		return Verdict{Status: Refused, Code: CodeClockRollback, Err: fmt.Errorf("%w: local clock %s, last signed server time %s, latest time seen %s: %w",
			ErrClockRollback, now.UTC().Format(time.RFC3339), t.ServerTime.UTC().Format(time.RFC3339), t.Seen.UTC().Format(time.RFC3339), cause)}
	case !now.Before(st.Until):
		until := st.Until
		c.mu.Unlock()
		return Verdict{Status: Refused, Code: CodeNetworkLost, Err: fmt.Errorf("%w (trust_until %s): %w", ErrGraceExpired, until.UTC().Format(time.RFC3339), cause)}
	}
	save := false
	if now.After(st.Seen) {
		// The high-water mark goes to the store at most once a minute.
		save = c.store != nil && now.Sub(st.Seen) >= time.Minute
		st.Seen = now
	}
	until := st.Until
	c.mu.Unlock()
	if save {
		c.saveTrust(st)
	}
	return Verdict{Status: Grace, Until: until, Err: cause}
}

// trustOf reads the trust of a signed exchange: the signature must verify
// with a pinned key, the reply must be a sealed success on a trust route
// with trust_until (else ErrNoTrust), and the request's license_key names
// whose trust it is. The envelopes' MACs are checked, their ±300 s window
// not (a stored exchange is old by design).
func (c *Client) trustOf(ex *exchange) (*trustState, error) {
	if len(c.pins) == 0 {
		return nil, ErrNoTrust
	}
	if !trustRoute(ex.Path) || ex.Method != "POST" || ex.Status != 200 {
		return nil, fmt.Errorf("%w: %s %s %d is not a trust route's success", ErrBadReply, ex.Method, ex.Path, ex.Status)
	}
	if err := VerifyReplySignature(c.pins, ReplyCanonical(ex.Nonce, ex.Method, ex.Path, ex.Request, ex.Status, ex.Reply), ex.Signature); err != nil {
		return nil, err
	}
	inner, t, err := c.openStale(ex.Reply)
	if err != nil {
		return nil, fmt.Errorf("reply: %w", err)
	}
	var rep struct {
		Success    bool       `json:"success"`
		Valid      *bool      `json:"valid"`
		TrustUntil *time.Time `json:"trust_until"`
	}
	if err := json.Unmarshal(inner, &rep); err != nil || !rep.Success {
		return nil, fmt.Errorf("%w: not a success", ErrBadReply)
	}
	if rep.TrustUntil == nil || (rep.Valid != nil && !*rep.Valid) {
		return nil, ErrNoTrust
	}
	reqInner, _, err := c.openStale(ex.Request)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	var req struct {
		LicenseKey *string `json:"license_key"`
	}
	if err := json.Unmarshal(reqInner, &req); err != nil {
		return nil, fmt.Errorf("%w: request: %v", ErrBadReply, err)
	}
	key := ""
	if req.LicenseKey != nil {
		key = strings.TrimSpace(*req.LicenseKey)
	}
	server := time.Unix(t, 0)
	return &trustState{Trust: Trust{LicenseKey: key, ServerTime: server, Until: *rep.TrustUntil, Seen: server}, ex: ex}, nil
}

// openStale opens an envelope with the app's keys whatever its age.
func (c *Client) openStale(b []byte) ([]byte, int64, error) {
	env, err := envelope.Parse(b)
	if err != nil {
		return nil, 0, err
	}
	plain, _, err := c.keys.Verify(env, time.Unix(env.T, 0))
	if err != nil {
		return nil, 0, err
	}
	return plain, env.T, nil
}

// trustRecord is what a Store keeps: the signed exchange (verified again
// when loaded, so editing it gives nothing) and the latest time seen.
type trustRecord struct {
	V        int       `json:"v"`
	Exchange *exchange `json:"exchange"`
	Seen     int64     `json:"seen"` // Unix seconds
}

// maxTrustRecord bounds a stored record.
const maxTrustRecord = 64 << 10

func (c *Client) saveTrust(st *trustState) {
	c.mu.Lock()
	rec := trustRecord{V: 1, Exchange: st.ex, Seen: st.Seen.Unix()}
	c.mu.Unlock()
	b, err := json.Marshal(rec)
	if err == nil {
		err = c.store.Save(b)
	}
	if err != nil {
		c.log.Warn("keyward: saving offline trust", "err", err)
	}
}

// loadTrust adopts the store's record when it verifies; a record that does
// not (edited, another key pinned, another app) is ignored with a warning.
func (c *Client) loadTrust() {
	b, err := c.store.Load()
	if err != nil {
		c.log.Warn("keyward: reading offline trust", "err", err)
		return
	}
	if len(b) == 0 {
		return
	}
	st, err := c.parseTrustRecord(b)
	if err != nil {
		c.log.Warn("keyward: stored offline trust ignored", "err", err)
		return
	}
	st.savedAt = st.ServerTime
	c.mu.Lock()
	c.trust = st
	c.mu.Unlock()
}

// parseTrustRecord reads and verifies a stored record (untrusted bytes).
func (c *Client) parseTrustRecord(b []byte) (*trustState, error) {
	if len(b) > maxTrustRecord {
		return nil, fmt.Errorf("%w: trust record over %d bytes", ErrBadReply, maxTrustRecord)
	}
	var rec trustRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%w: trust record: %v", ErrBadReply, err)
	}
	if rec.V != 1 || rec.Exchange == nil {
		return nil, fmt.Errorf("%w: trust record version %d", ErrBadReply, rec.V)
	}
	st, err := c.trustOf(rec.Exchange)
	if err != nil {
		return nil, err
	}
	if seen := time.Unix(rec.Seen, 0); seen.After(st.Seen) {
		st.Seen = seen
	}
	return st, nil
}
