package client

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/wire"
)

// DefaultUserAgent is sent unless WithUserAgent says otherwise.
const DefaultUserAgent = "keyward-go/1 (+https://github.com/keyward/keyward)"

// maxReply caps the size of an API reply the client reads (downloads are
// streamed and not capped).
const maxReply = 4 << 20

// Client talks to one app of a keyward server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	secret    string
	keys      envelope.Keys
	http      *http.Client
	ua        string
	log       *slog.Logger
	now       func() time.Time
	pins      []*rsa.PublicKey
	autoClock bool

	mu     sync.Mutex
	offset time.Duration // server clock − local clock, learned from clock refusals
	trust  *trustState   // the newest signed trust_until (grace.go); nil: none
	store  Store         // where trust outlives the process (nil: nowhere)

	// tick makes the heartbeat loop's ticker; tests replace it to drive beats.
	tick func(d time.Duration) (<-chan time.Time, func())
}

// Option configures a Client.
type Option func(*Client) error

// WithHTTPClient sets the HTTP client (default: a client with a 30 s
// timeout). With pinned keys the client is copied and its redirect policy
// replaced so redirects are never followed.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) error {
		if h == nil {
			return errors.New("nil HTTP client")
		}
		c.http = h
		return nil
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) error { c.ua = ua; return nil } }

// WithLogger sets a logger for debug and warning messages (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// WithClock sets the local clock (default time.Now); for tests.
func WithClock(now func() time.Time) Option {
	return func(c *Client) error {
		if now != nil {
			c.now = now
		}
		return nil
	}
}

// WithPinnedKeys pins PWF-REPLY-V1 reply signing keys (PEM "PUBLIC KEY",
// RSA, 3072 bits recommended). Then every request carries a fresh
// X-PWF-Nonce, every reply must carry an X-PWF-Signature that verifies with
// one of the keys — checked before the body is parsed, for every status —
// and redirects are refused. Several keys allow rotation.
func WithPinnedKeys(pems ...[]byte) Option {
	return func(c *Client) error {
		if len(pems) == 0 {
			return errors.New("WithPinnedKeys: no keys")
		}
		for _, p := range pems {
			k, err := parsePinnedKey(p)
			if err != nil {
				return err
			}
			c.pins = append(c.pins, k)
		}
		return nil
	}
}

// WithAutoCorrectClock turns clock correction on or off (default on): a
// plain clock refusal with reason CLOCK_SKEW and an integer server_time > 0
// sets the client's clock offset and the request is re-stamped and resent
// once. The offset applies to outgoing envelopes and to the ±300 s check of
// reply envelopes.
func WithAutoCorrectClock(on bool) Option {
	return func(c *Client) error { c.autoClock = on; return nil }
}

// New returns a client for the app whose secret is appSecret on the keyward
// server at baseURL (e.g. "https://licenses.example.com"; a path prefix is
// kept).
func New(baseURL, appSecret string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil {
		return nil, fmt.Errorf("keyward: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("keyward: base URL %q must be http(s)://host[:port][/prefix]", baseURL)
	}
	secret := strings.TrimSpace(appSecret)
	if secret == "" {
		return nil, errors.New("keyward: empty app secret")
	}
	c := &Client{
		base: u, secret: secret, keys: envelope.Derive(secret),
		http: &http.Client{Timeout: 30 * time.Second}, ua: DefaultUserAgent,
		log: slog.New(slog.DiscardHandler), now: time.Now, autoClock: true,
		tick: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, fmt.Errorf("keyward: %w", err)
		}
	}
	if c.store != nil {
		c.loadTrust()
	}
	if len(c.pins) > 0 {
		h := *c.http
		h.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		c.http = &h
	}
	return c, nil
}

// ClockOffset returns the correction learned from the server's clock
// refusals (server clock minus local clock).
func (c *Client) ClockOffset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// serverNow is the local clock corrected by the learned offset.
func (c *Client) serverNow() time.Time { return c.now().Add(c.ClockOffset()) }

// transport kinds of a call.
const (
	plainCall    = iota // plain JSON both ways
	envelopeCall        // request sealed (when it has a body), reply must be sealed
)

type call struct {
	method string
	path   string // API path, e.g. /api/auth/login.php
	query  url.Values
	body   any // inner request (nil: no body)
	kind   int
	header http.Header
}

// reply is a decoded answer.
type reply struct {
	status int
	sealed bool
	body   map[string]any
	raw    []byte    // inner JSON (decrypted for envelopes)
	signed *exchange // the verified signed exchange (pinning on), else nil
}

// do performs c, resending once after a clock refusal when auto-correction
// is on, and decodes the reply into out (when not nil). A success:false
// reply is returned as *APIError.
func (c *Client) do(ctx context.Context, cl call, out any) (*reply, error) {
	r, err := c.roundTrip(ctx, cl)
	if err != nil {
		return nil, err
	}
	if !r.sealed && c.autoClock && r.body["success"] != true {
		if st, ok := serverTime(r.body); ok {
			off := time.Unix(st, 0).Sub(c.now()).Truncate(time.Second)
			c.mu.Lock()
			c.offset = off
			c.mu.Unlock()
			c.log.Warn("keyward: clock corrected from the server's refusal", "offset", off, "path", cl.path)
			if r, err = c.roundTrip(ctx, cl); err != nil {
				return nil, err
			}
		}
	}
	if err := c.check(r, cl); err != nil {
		c.noteRefusal(cl, err)
		return r, err
	}
	c.noteSuccess(r, cl)
	if out != nil {
		if err := json.Unmarshal(r.raw, out); err != nil {
			return r, fmt.Errorf("keyward: %s: %w: %v", cl.path, ErrBadReply, err)
		}
	}
	return r, nil
}

// serverTime returns server_time of a plain clock refusal when it is a JSON
// integer > 0 and reason is CLOCK_SKEW.
func serverTime(body map[string]any) (int64, bool) {
	if r, _ := body["reason"].(string); r != wire.ReasonClockSkew {
		return 0, false
	}
	n, ok := body["server_time"].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	if err != nil || v <= 0 || strings.ContainsAny(n.String(), ".eE") {
		return 0, false
	}
	return v, true
}

// check turns a decoded reply into an error when it is not a success.
func (c *Client) check(r *reply, cl call) error {
	succ, has := r.body["success"]
	if succ == true {
		if cl.kind == envelopeCall && !r.sealed {
			return &SecurityError{Err: ErrForgedReply, Method: cl.method, Path: cl.path}
		}
		return nil
	}
	e := &APIError{Status: r.status, Fields: r.body, Sealed: r.sealed}
	e.Code, _ = r.body["error_code"].(string)
	e.Message, _ = r.body["message"].(string)
	if e.Message == "" {
		e.Message, _ = r.body["detail"].(string)
	}
	if !has && r.status < 400 {
		return fmt.Errorf("keyward: %s: %w: no success field (HTTP %d)", cl.path, ErrBadReply, r.status)
	}
	return e
}

// roundTrip sends one request and returns the verified, decoded reply.
func (c *Client) roundTrip(ctx context.Context, cl call) (*reply, error) {
	var body []byte
	if cl.body != nil {
		inner, err := json.Marshal(cl.body)
		if err != nil {
			return nil, err
		}
		body = inner
		if cl.kind == envelopeCall {
			env, err := c.keys.Seal(inner, c.serverNow())
			if err != nil {
				return nil, err
			}
			body = env.Marshal()
		}
	}
	u := c.url(cl.path, cl.query)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-App-Secret", c.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.ua != "" {
		req.Header.Set("User-Agent", c.ua)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	nonce, err := c.stampNonce(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxReply {
		return nil, fmt.Errorf("keyward: %s: %w: reply over %d bytes", cl.path, ErrBadReply, maxReply)
	}
	if err := c.verifySignature(req, nonce, body, resp, raw); err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("keyward: %s: %w: HTTP %d to %q", cl.path, ErrBadReply, resp.StatusCode, resp.Header.Get("Location"))
	}
	r := &reply{status: resp.StatusCode}
	if nonce != "" {
		r.signed = &exchange{Nonce: nonce, Method: req.Method, Path: req.URL.Path, Request: body, Status: resp.StatusCode,
			Reply: raw, Signature: resp.Header.Get("X-PWF-Signature")}
	}
	if envelope.IsEnvelope(raw) {
		env, err := envelope.Parse(raw)
		if err != nil {
			return nil, &SecurityError{Err: ErrBadEnvelope, Method: cl.method, Path: cl.path, Detail: err.Error()}
		}
		plain, _, err := c.keys.Verify(env, c.serverNow())
		if errors.Is(err, envelope.ErrClockSkew) {
			return nil, &SecurityError{Err: ErrReplyClock, Method: cl.method, Path: cl.path,
				Detail: fmt.Sprintf("reply t=%d, corrected local clock %d", env.T, c.serverNow().Unix())}
		}
		if err != nil {
			return nil, &SecurityError{Err: ErrBadEnvelope, Method: cl.method, Path: cl.path, Detail: err.Error()}
		}
		r.sealed, raw = true, plain
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&r.body); err != nil || r.body == nil {
		if resp.StatusCode >= 400 {
			return nil, &APIError{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode) + " (the body is not JSON)"}
		}
		return nil, fmt.Errorf("keyward: %s: %w: HTTP %d, body is not a JSON object", cl.path, ErrBadReply, resp.StatusCode)
	}
	r.raw = raw
	return r, nil
}

// stampNonce adds a fresh X-PWF-Nonce when pinning is on.
func (c *Client) stampNonce(req *http.Request) (string, error) {
	if len(c.pins) == 0 {
		return "", nil
	}
	n, err := signing.NewNonce()
	if err != nil {
		return "", err
	}
	req.Header.Set("X-PWF-Nonce", n)
	return n, nil
}

// verifySignature checks the reply's X-PWF-Signature when pinning is on,
// before anything else looks at the reply; a redirect is refused even when
// signed.
func (c *Client) verifySignature(req *http.Request, nonce string, reqBody []byte, resp *http.Response, raw []byte) error {
	if len(c.pins) == 0 {
		return nil
	}
	sigs := resp.Header.Values("X-PWF-Signature")
	sig := ""
	switch len(sigs) {
	case 0:
	case 1:
		sig = sigs[0]
	default:
		return &SecurityError{Err: ErrBadSignature, Method: req.Method, Path: req.URL.Path, Detail: "several X-PWF-Signature headers"}
	}
	canon := ReplyCanonical(nonce, req.Method, req.URL.Path, reqBody, resp.StatusCode, raw)
	if err := VerifyReplySignature(c.pins, canon, sig); err != nil {
		return &SecurityError{Err: err, Method: req.Method, Path: req.URL.Path}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return &SecurityError{Err: ErrRedirect, Method: req.Method, Path: req.URL.Path, Detail: resp.Header.Get("Location")}
	}
	return nil
}

// url resolves an API path (and query) against the base URL.
func (c *Client) url(path string, q url.Values) *url.URL {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
	u.RawPath = ""
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return &u
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
