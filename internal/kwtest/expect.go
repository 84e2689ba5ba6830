package kwtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// What the black-box tests of every surface (clientapi, adminapi, portal,
// httpapi) check on a reply, and how they decode what they check.

// OK fails unless r is a 200 success.
func (r *Reply) OK(t testing.TB) {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("want 200 success:true, got %s (sealed=%v, body %v)", r, r.Sealed, r.Body)
	}
}

// Kill fails unless r is an enveloped heartbeat refusal with code and a
// non-empty message.
func (r *Reply) Kill(t testing.TB, code string) {
	t.Helper()
	r.sealedFail(t, code, "kill code %s must be enveloped, got plain %s", "kill code %s without a message: %v")
}

// SealedFail fails unless r is an enveloped business failure with code.
func (r *Reply) SealedFail(t testing.TB, code string) {
	t.Helper()
	r.sealedFail(t, code, "want an enveloped %s, got plain %s", "%s without a message: %v")
}

// sealedFail fails unless r is enveloped (else plain, with code and r) and
// answers code with a message (else noMessage, with code and the body).
func (r *Reply) sealedFail(t testing.TB, code, plain, noMessage string) {
	t.Helper()
	if !r.Sealed {
		t.Fatalf(plain, code, r)
	}
	ExpectCode(t, r, 200, code)
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf(noMessage, code, r.Body)
	}
}

// PlainFail fails unless r is a plain JSON failure with status and code.
func (r *Reply) PlainFail(t testing.TB, status int, code string) {
	t.Helper()
	if r.Sealed || envelope.IsEnvelope(r.Raw) {
		t.Fatalf("want a plain %d %s, got an envelope", status, code)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, r)
	}
	ExpectCode(t, r, status, code)
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf("%s without a message: %v", code, r.Body)
	}
}

// JSONFail fails unless r is a JSON failure (Content-Type exactly
// application/json, a message) with status and error_code.
func (r *Reply) JSONFail(t testing.TB, status int, code string) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, r)
	}
	if _, ok := r.Body["message"].(string); !ok {
		t.Fatalf("error reply has no message: %s", r)
	}
	ExpectCode(t, r, status, code)
}

// List returns a list field of r as objects, failing unless it is an array.
func (r *Reply) List(t testing.TB, name string) []map[string]any {
	t.Helper()
	raw, ok := r.Body[name].([]any)
	if !ok {
		t.Fatalf("reply has no %s array: %s", name, r)
	}
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i] = e.(map[string]any)
	}
	return out
}

// Refused fails unless r is a 4xx JSON failure with code.
func (r *Reply) Refused(t testing.TB, what string, status int, code string) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("%s: server error %s", what, r)
	}
	if r.Body == nil {
		t.Fatalf("%s: reply is not JSON: %s", what, r)
	}
	if r.Status != status || r.Body["success"] != false || r.Body["error_code"] != code {
		t.Fatalf("%s: got %s (sealed=%v, body %v), want %d %s", what, r, r.Sealed, r.Body, status, code)
	}
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf("%s: no message: %s", what, r)
	}
	r.NoInternals(t, what)
}

// NoInternals fails when a message shows Go, SQL or stack internals.
func (r *Reply) NoInternals(t testing.TB, what string) {
	t.Helper()
	msg := strings.ToLower(r.Str("message"))
	for _, bad := range []string{"json:", "invalid character", "unexpected end", "sql", "panic", "goroutine", "runtime",
		".go:", "internal/", "unmarshal", "http:", "pgx", "sqlite"} {
		if strings.Contains(msg, bad) {
			t.Fatalf("%s: message leaks internals (%q): %s", what, bad, r)
		}
	}
}

// RateLimited fails unless r is the limiter's plain 429: RATE_LIMITED with a
// message, an integer retry_after of at least 1 and an equal Retry-After
// header. It returns retry_after.
func (r *Reply) RateLimited(t testing.TB) int {
	t.Helper()
	r.PlainFail(t, http.StatusTooManyRequests, "RATE_LIMITED")
	ra := Int(t, "retry_after", Numbers(t, r.Raw)["retry_after"])
	if ra < 1 {
		t.Fatalf("retry_after %d, want at least 1: %s", ra, r)
	}
	h := r.Header.Get("Retry-After")
	if h != strconv.FormatInt(ra, 10) {
		t.Fatalf("Retry-After header %q, want %d (the body's retry_after): %s", h, ra, r)
	}
	return int(ra)
}

// BadCredentials fails unless r is the 401 INVALID_CREDENTIALS refusal.
func (r *Reply) BadCredentials(t testing.TB, what string) {
	t.Helper()
	if r.Status != 401 || r.Body["success"] != false || r.Body["error_code"] != "INVALID_CREDENTIALS" {
		t.Fatalf("%s: got %s, want 401 INVALID_CREDENTIALS", what, r)
	}
}

// Locked fails unless r is 429 TOO_MANY_ATTEMPTS with an integer
// retry_after equal to the Retry-After header and, when want > 0, to want.
// It returns retry_after.
func (r *Reply) Locked(t testing.TB, what string, want int) int {
	t.Helper()
	if r.Status != http.StatusTooManyRequests || r.Body["success"] != false || r.Body["error_code"] != "TOO_MANY_ATTEMPTS" {
		t.Fatalf("%s: got %s, want 429 TOO_MANY_ATTEMPTS", what, r)
	}
	if m := r.Str("message"); !strings.HasPrefix(m, "Too many failed attempts. Try again in ") {
		t.Fatalf("%s: message %q", what, m)
	}
	retry := int(Int(t, what+": retry_after", Numbers(t, r.Raw)["retry_after"]))
	if retry < 1 || retry > int(LockFor/time.Second) {
		t.Fatalf("%s: retry_after = %d, want 1..%d", what, retry, int(LockFor/time.Second))
	}
	if want > 0 && retry != want {
		t.Fatalf("%s: retry_after = %d, want %d", what, retry, want)
	}
	if h := r.Header.Get("Retry-After"); h != strconv.Itoa(retry) {
		t.Fatalf("%s: Retry-After header %q, want %q (the body's retry_after)", what, h, strconv.Itoa(retry))
	}
	return retry
}

// Strings returns a string array field of r.
func (r *Reply) Strings(t testing.TB, name string) []string {
	t.Helper()
	raw, ok := r.Body[name].([]any)
	if !ok {
		t.Fatalf("reply has no %s array: %s", name, r)
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		if out[i], ok = v.(string); !ok {
			t.Fatalf("%s[%d] = %#v, want a string", name, i, v)
		}
	}
	return out
}

// Timestamp is the wire form of every timestamp: ISO 8601 UTC, T and Z.
var Timestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)

// WireTime fails unless v is a wire timestamp and returns it.
func WireTime(t testing.TB, what string, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	if !ok || !Timestamp.MatchString(s) {
		t.Fatalf("%s = %#v, want an ISO 8601 UTC timestamp ending in Z", what, v)
	}
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("%s = %q: %v", what, s, err)
	}
	return ts
}

// Numbers decodes JSON keeping numbers as json.Number, so integers can be
// told from fractions.
func Numbers(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		t.Fatalf("not a JSON object: %v: %s", err, raw)
	}
	return m
}

// Int fails unless v (decoded with UseNumber) is a JSON integer.
func Int(t testing.TB, what string, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		t.Fatalf("%s = %#v, want a JSON integer", what, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s = %s: %v", what, n, err)
	}
	return i
}

// Num returns a number decoded without UseNumber as an int, failing unless
// it is integral.
func Num(t testing.TB, what string, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%s = %#v, want an integer", what, v)
	}
	return int(f)
}

// JSON marshals v, failing the test if it cannot.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bearer returns headers carrying token as a Bearer token, for a JSON body.
func Bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
}

// AppHeader is the header of a client request with secret.
func AppHeader(secret string) http.Header {
	return http.Header{"X-App-Secret": {secret}, "Content-Type": {"application/json"}}
}

// LogBuffer is a log destination safe for the server's goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }
