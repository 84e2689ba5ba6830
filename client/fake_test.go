package client

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

const fakeSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

var testKeys struct {
	once      sync.Once
	sign, alt *rsa.PrivateKey
}

// signingKeys returns two RSA-3072 test keys, generated once per process.
func signingKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	testKeys.once.Do(func() {
		var err error
		if testKeys.sign, err = rsa.GenerateKey(rand.Reader, 3072); err != nil {
			panic(err)
		}
		if testKeys.alt, err = rsa.GenerateKey(rand.Reader, 3072); err != nil {
			panic(err)
		}
	})
	return testKeys.sign, testKeys.alt
}

func publicPEM(t testing.TB, k *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// canonParts are the inputs of a PWF-REPLY-V1 signature; a tamper function
// may change them before the fake signs, to simulate a reply altered in
// transit or signed for another request.
type canonParts struct {
	nonce, method, path string
	req                 []byte
	status              int
	body                []byte
}

// fake is a minimal keyward look-alike: it opens request envelopes with the
// SDK's own envelope code, answers what answer says and, with signer set,
// signs its replies (PWF-REPLY-V1) like a server with an operator key.
type fake struct {
	t      testing.TB
	keys   envelope.Keys
	now    func() time.Time
	signer *rsa.PrivateKey
	tamper func(*canonParts)
	answer func(path string, inner map[string]any) (status int, reply any, sealed bool, header http.Header)

	mu       sync.Mutex
	nonces   []string
	requests []string
	srv      *httptest.Server
}

func newFake(t testing.TB) *fake {
	f := &fake{t: t, keys: envelope.Derive(fakeSecret), now: time.Now}
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		switch path {
		case "/api/auth/login.php":
			return 200, map[string]any{"success": true, "session_id": "sess-1", "heartbeat_interval": 30,
				"user": map[string]any{"license_key": inner["license_key"]}}, true, nil
		case "/api/auth/heartbeat.php":
			return 200, map[string]any{"success": true, "message": "Heartbeat OK"}, true, nil
		}
		return 404, map[string]any{"success": false, "error_code": "NOT_FOUND", "message": "no"}, false, nil
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqBody, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.nonces = append(f.nonces, r.Header.Get("X-PWF-Nonce"))
	f.requests = append(f.requests, r.URL.Path)
	f.mu.Unlock()
	var inner map[string]any
	if len(reqBody) > 0 {
		if envelope.IsEnvelope(reqBody) {
			env, err := envelope.Parse(reqBody)
			if err != nil {
				f.t.Errorf("fake: %v", err)
			}
			plain, _, err := f.keys.Verify(env, f.now())
			if errors.Is(err, envelope.ErrClockSkew) {
				f.write(w, r, reqBody, 400, map[string]any{"success": false, "error_code": "CRYPTO_ERROR",
					"reason": "CLOCK_SKEW", "server_time": f.now().Unix(), "message": "Request expired."}, false, nil)
				return
			} else if err != nil {
				f.t.Errorf("fake: %v", err)
			}
			json.Unmarshal(plain, &inner)
		} else {
			json.Unmarshal(reqBody, &inner)
		}
	}
	status, reply, sealed, h := f.answer(r.URL.Path, inner)
	f.write(w, r, reqBody, status, reply, sealed, h)
}

func (f *fake) write(w http.ResponseWriter, r *http.Request, reqBody []byte, status int, reply any, sealed bool, h http.Header) {
	var body []byte
	switch v := reply.(type) {
	case []byte:
		body = v
	default:
		body, _ = json.Marshal(v)
	}
	if sealed {
		env, err := f.keys.Seal(body, f.now())
		if err != nil {
			f.t.Fatal(err)
		}
		body = env.Marshal()
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	if f.signer != nil {
		p := canonParts{nonce: r.Header.Get("X-PWF-Nonce"), method: r.Method, path: r.URL.Path, req: reqBody, status: status, body: body}
		if f.tamper != nil {
			f.tamper(&p)
		}
		sum := sha256.Sum256(ReplyCanonical(p.nonce, p.method, p.path, p.req, p.status, p.body))
		sig, err := rsa.SignPKCS1v15(rand.Reader, f.signer, crypto.SHA256, sum[:])
		if err != nil {
			f.t.Fatal(err)
		}
		w.Header().Set("X-PWF-Signature", base64.StdEncoding.EncodeToString(sig))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func (f *fake) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := New(f.srv.URL, fakeSecret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Signed replies: a valid signature passes; unsigned, wrong-key, and
// replies whose body, status, path, method, request or nonce differ from
// what was signed fail with a security error before parsing; redirects are
// refused even when signed.
func TestPinnedReplies(t *testing.T) {
	ctx := context.Background()
	key, alt := signingKeys(t)
	f := newFake(t)
	f.signer = key
	c := f.client(t, WithPinnedKeys(publicPEM(t, key)))

	s, err := c.Login(ctx, "K", "hw")
	if err != nil || s.ID != "sess-1" {
		t.Fatalf("signed login: %v", err)
	}
	if err := s.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if len(f.nonces) != 2 || !hex64.MatchString(f.nonces[0]) || !hex64.MatchString(f.nonces[1]) || f.nonces[0] == f.nonces[1] {
		t.Fatalf("nonces %q", f.nonces)
	}
	f.mu.Unlock()

	// A signed refusal (4xx) is verified and then returned as an APIError.
	_, err = c.CheckKey(ctx, "K")
	apiErr(t, err, 404, "NOT_FOUND", false)

	// Key rotation: any pinned key verifies.
	c2 := f.client(t, WithPinnedKeys(publicPEM(t, alt), publicPEM(t, key)))
	if _, err := c2.Login(ctx, "K", "hw"); err != nil {
		t.Fatalf("second pinned key: %v", err)
	}

	fail := func(name string, want error, setup func()) {
		t.Helper()
		f.signer, f.tamper = key, nil
		setup()
		_, err := c.Login(ctx, "K", "hw")
		var se *SecurityError
		if !errors.Is(err, want) || !errors.As(err, &se) || se.Path != "/api/auth/login.php" {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	fail("unsigned", ErrUnsigned, func() { f.signer = nil })
	fail("wrong key", ErrBadSignature, func() { f.signer = alt })
	fail("changed body", ErrBadSignature, func() { f.tamper = func(p *canonParts) { p.body = append(p.body, ' ') } })
	fail("changed status", ErrBadSignature, func() { f.tamper = func(p *canonParts) { p.status = 201 } })
	fail("changed path", ErrBadSignature, func() { f.tamper = func(p *canonParts) { p.path = "/api/auth/check-key.php" } })
	fail("changed method", ErrBadSignature, func() { f.tamper = func(p *canonParts) { p.method = "GET" } })
	fail("changed request", ErrBadSignature, func() { f.tamper = func(p *canonParts) { p.req = []byte("{}") } })
	fail("replayed nonce", ErrBadSignature, func() {
		f.tamper = func(p *canonParts) { p.nonce = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }
	})

	// Plain garbage with a signature of the wrong shape.
	old := f.answer
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		return 200, map[string]any{"success": true}, true, http.Header{"X-Pwf-Signature": {"!"}}
	}
	f.signer = nil
	if _, err := c.Login(ctx, "K", "hw"); !errors.Is(err, ErrBadSignature) {
		t.Errorf("malformed signature: %v", err)
	}

	// Redirects: refused when signed, refused when unsigned, never followed.
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		if path == "/elsewhere" {
			return 200, map[string]any{"success": true, "session_id": "evil", "heartbeat_interval": 30}, true, nil
		}
		return 302, []byte(""), false, http.Header{"Location": {"/elsewhere"}}
	}
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
	fail("signed redirect", ErrRedirect, func() {})
	fail("unsigned redirect", ErrUnsigned, func() { f.signer = nil })
	f.mu.Lock()
	for _, p := range f.requests {
		if p == "/elsewhere" {
			t.Error("a redirect was followed with pinning on")
		}
	}
	f.mu.Unlock()
	f.answer = old
}

// The clock-correction resend carries a fresh nonce and is signed too.
func TestPinnedClockRetryHasFreshNonce(t *testing.T) {
	key, _ := signingKeys(t)
	f := newFake(t)
	f.signer = key
	local := time.Now()
	f.now = func() time.Time { return local.Add(2 * time.Hour) }
	c := f.client(t, WithPinnedKeys(publicPEM(t, key)), WithClock(func() time.Time { return local }))
	if _, err := c.Login(context.Background(), "K", "hw"); err != nil {
		t.Fatal(err)
	}
	if off := c.ClockOffset(); off < 2*time.Hour-time.Second || off > 2*time.Hour+time.Second {
		t.Fatalf("offset %v", off)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nonces) != 2 || f.nonces[0] == f.nonces[1] || !hex64.MatchString(f.nonces[1]) {
		t.Fatalf("nonces %q", f.nonces)
	}
}

// Bad pinned keys are refused by New.
func TestPinnedKeyParsing(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	for name, p := range map[string][]byte{
		"not PEM": []byte("hello"),
		"private": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}),
		"small":   publicPEM(t, small),
	} {
		if _, err := New("http://127.0.0.1:1", fakeSecret, WithPinnedKeys(p)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, u := range []string{"ftp://x", "http://", "https://u@host", "http://h/?q=1", "no scheme"} {
		if _, err := New(u, fakeSecret); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
	if _, err := New("http://h", " "); err == nil {
		t.Error("empty secret accepted")
	}
}

// Replies that cannot be trusted even without pinning: a plain success on
// an envelope route, and an envelope whose MAC is wrong.
func TestForgedReplies(t *testing.T) {
	ctx := context.Background()
	f := newFake(t)
	c := f.client(t)
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		return 200, map[string]any{"success": true, "session_id": "x", "heartbeat_interval": 30}, false, nil
	}
	if _, err := c.Login(ctx, "K", "hw"); !errors.Is(err, ErrForgedReply) {
		t.Fatalf("plain success: %v", err)
	}
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		other := envelope.Derive("another secret")
		env, _ := other.Seal([]byte(`{"success":true}`), time.Now())
		return 200, env.Marshal(), false, nil
	}
	if _, err := c.Login(ctx, "K", "hw"); !errors.Is(err, ErrBadEnvelope) {
		t.Fatalf("foreign envelope: %v", err)
	}
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		env, _ := f.keys.Seal([]byte(`{"success":true}`), time.Now().Add(-time.Hour))
		return 200, env.Marshal(), false, nil
	}
	if _, err := c.Login(ctx, "K", "hw"); !errors.Is(err, ErrReplyClock) {
		t.Fatalf("stale reply envelope: %v", err)
	}
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		return 502, []byte("<html>bad gateway</html>"), false, nil
	}
	_, err := c.Login(ctx, "K", "hw")
	apiErr(t, err, 502, "", false)
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		return 401, map[string]any{"detail": "Invalid app secret"}, false, nil
	}
	a := apiErr(t, c.ChangePassword(ctx, "u", "p", "q"), 401, "", false)
	if a.Message != "Invalid app secret" {
		t.Fatalf("detail: %q", a.Message)
	}
}

// A fake session on f for budget tests.
func fakeSession(t *testing.T, f *fake) *Session {
	s, err := f.client(t).Login(context.Background(), "K", "hw")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A server that stops answering: three unanswered beats end the session
// with NETWORK_LOST.
func TestBudgetUnanswered(t *testing.T) {
	f := newFake(t)
	s := fakeSession(t, f)
	b := runLoop(t, s)
	if e := b.beat(t); e.Kind != EventOK {
		t.Fatalf("%+v", e)
	}
	f.srv.Close()
	for i := 1; i <= 2; i++ {
		if e := b.beat(t); e.Kind != EventUnanswered || e.Unanswered != i || e.Err == nil {
			t.Fatalf("beat %d: %+v", i, e)
		}
	}
	if e := b.beat(t); e.Kind != EventKill || e.Code != CodeNetworkLost {
		t.Fatalf("third: %+v", e)
	}
	b.ended(t, CodeNetworkLost)
}

// Plain 429s have a budget of 10 of their own; unanswered beats in between
// do not reset it, nor it them; an enveloped answer resets both; enveloped
// non-kill codes and forged plain successes are classified as such.
func TestBudgetRateLimited(t *testing.T) {
	f := newFake(t)
	s := fakeSession(t, f)
	var mu sync.Mutex
	mode := "429"
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		switch mode {
		case "429":
			return 429, map[string]any{"success": false, "detail": "Rate limit exceeded. Try again later.", "retry_after": 60}, false, nil
		case "html429":
			return 429, []byte("slow down"), false, nil
		case "badmac":
			return 400, map[string]any{"success": false, "error_code": "CRYPTO_ERROR", "message": "HMAC verification failed."}, false, nil
		case "forged":
			return 200, map[string]any{"success": true}, false, nil
		case "transient":
			return 200, map[string]any{"success": false, "error_code": "RATE_LIMITED", "message": "slow"}, true, nil
		case "unknown":
			return 200, map[string]any{"success": false, "error_code": "SOMETHING_NEW", "message": "?"}, true, nil
		}
		return 200, map[string]any{"success": true}, true, nil
	}
	set := func(m string) { mu.Lock(); mode = m; mu.Unlock() }
	b := runLoop(t, s)
	expect := func(kind EventKind, code string, un, rl int) {
		t.Helper()
		e := b.beat(t)
		if e.Kind != kind || e.Code != code || e.Unanswered != un || e.RateLimited != rl {
			t.Fatalf("got %+v, want %s %s unanswered=%d rate_limited=%d", e, kind, code, un, rl)
		}
	}
	for i := 1; i <= 5; i++ {
		expect(EventRateLimited, "", 0, i)
	}
	set("badmac")
	expect(EventUnanswered, "CRYPTO_ERROR", 1, 5)
	set("forged")
	e := b.beat(t)
	if e.Kind != EventUnanswered || !errors.Is(e.Err, ErrForgedReply) || e.Unanswered != 2 {
		t.Fatalf("forged: %+v", e)
	}
	set("ok")
	expect(EventOK, "", 0, 0)
	set("transient")
	expect(EventTransient, "RATE_LIMITED", 0, 0)
	set("unknown")
	expect(EventTransient, "SOMETHING_NEW", 0, 0)
	set("429")
	for i := 1; i <= 7; i++ {
		expect(EventRateLimited, "", 0, i)
	}
	set("badmac")
	expect(EventUnanswered, "CRYPTO_ERROR", 1, 7)
	set("html429")
	expect(EventRateLimited, "", 1, 8)
	set("429")
	expect(EventRateLimited, "", 1, 9)
	expect(EventKill, CodeNetworkLost, 1, 10)
	b.ended(t, CodeNetworkLost)
}

// Run returns the context's error when it ends, without calling OnKill.
func TestRunStopsWithContext(t *testing.T) {
	f := newFake(t)
	s := fakeSession(t, f)
	manualTicks(s.c)
	ctx, cancel := context.WithCancel(context.Background())
	killed := false
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, HeartbeatOptions{OnKill: func(string) { killed = true }}) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || killed {
		t.Fatalf("Run: %v, killed %v", err, killed)
	}
}

// The vector of sdk-compat §3.1: its canonical string has the documented
// hashes and its signature is a 384-byte RSA-3072 signature. The vendor's
// public key (SPKI SHA-256 4e7d8a41…) is not available under /work/shared,
// so the verifier itself is exercised with a generated key over the
// vector's canonical string, and every single-field change fails.
func TestSignedReplyVector(t *testing.T) {
	raw, err := readVector()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Nonce, Method, Path, Request, Body, Signature string
		Status                                        int
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	rq, rp := sha256.Sum256([]byte(v.Request)), sha256.Sum256([]byte(v.Body))
	canon := string(ReplyCanonical(v.Nonce, v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body)))
	lines := regexp.MustCompile("\n").Split(canon, -1)
	if len(lines) != 7 || lines[0] != "PWF-REPLY-V1" || lines[5] != "200" || lines[3] != "/api/auth/login.php" {
		t.Fatalf("canonical %q", canon)
	}
	if l := lines[4]; l[:8] != "dfcb2021" || l[60:] != "67da" || l != hexOf(rq[:]) {
		t.Fatalf("request hash %s", l)
	}
	if l := lines[6]; l[:8] != "838963bc" || l[60:] != "698c" || l != hexOf(rp[:]) {
		t.Fatalf("reply hash %s", l)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(v.Signature)
	if err != nil || len(sig) != 384 {
		t.Fatalf("vector signature: %d bytes, %v", len(sig), err)
	}
	key, alt := signingKeys(t)
	sum := sha256.Sum256([]byte(canon))
	mine, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	pins := []*rsa.PublicKey{&key.PublicKey}
	b64 := base64.StdEncoding.EncodeToString(mine)
	if err := VerifyReplySignature(pins, []byte(canon), b64); err != nil {
		t.Fatal(err)
	}
	// The vendor's signature does not verify with our key (nor should it),
	// and does with the vendor's public key, alone or among other pins.
	if err := VerifyReplySignature(pins, []byte(canon), v.Signature); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("vendor signature with a test key: %v", err)
	}
	vendorPEM, err := readVectorKey()
	if err != nil {
		t.Fatal(err)
	}
	vendor, err := parsePinnedKey(vendorPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyReplySignature([]*rsa.PublicKey{&key.PublicKey, vendor}, []byte(canon), v.Signature); err != nil {
		t.Fatalf("the published vector does not verify with its key: %v", err)
	}
	for name, c := range map[string][]byte{
		"nonce": ReplyCanonical(v.Nonce[1:]+"b", v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body)),
		"body":  ReplyCanonical(v.Nonce, v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body+" ")),
	} {
		if err := VerifyReplySignature([]*rsa.PublicKey{vendor}, c, v.Signature); !errors.Is(err, ErrBadSignature) {
			t.Errorf("vector with a changed %s verifies: %v", name, err)
		}
	}
	if err := VerifyReplySignature([]*rsa.PublicKey{&alt.PublicKey}, []byte(canon), b64); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("wrong key: %v", err)
	}
	for name, c := range map[string][]byte{
		"nonce":   ReplyCanonical(v.Nonce[1:]+"b", v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body)),
		"method":  ReplyCanonical(v.Nonce, "GET", v.Path, []byte(v.Request), v.Status, []byte(v.Body)),
		"path":    ReplyCanonical(v.Nonce, v.Method, "/api/auth/logout.php", []byte(v.Request), v.Status, []byte(v.Body)),
		"request": ReplyCanonical(v.Nonce, v.Method, v.Path, []byte(`{"test":"request2"}`), v.Status, []byte(v.Body)),
		"status":  ReplyCanonical(v.Nonce, v.Method, v.Path, []byte(v.Request), 201, []byte(v.Body)),
		"body":    ReplyCanonical(v.Nonce, v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body+" ")),
	} {
		if err := VerifyReplySignature(pins, c, b64); !errors.Is(err, ErrBadSignature) {
			t.Errorf("changed %s: %v", name, err)
		}
	}
	for _, s := range []string{"", "AAAA", "!", b64 + "\n", " " + b64} {
		if err := VerifyReplySignature(pins, []byte(canon), s); err == nil {
			t.Errorf("signature %q accepted", s)
		}
	}
	if !bytes.Equal(ReplyCanonicalHashed(v.Nonce, v.Method, v.Path, []byte(v.Request), v.Status, rp[:]), []byte(canon)) {
		t.Error("ReplyCanonicalHashed differs from ReplyCanonical")
	}
}
