package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Helpers of the client API conformance tests. Names start with cl so they do
// not collide with helpers of other test files in this package.

// Client routes of the route table.
const (
	clLogin       = "/api/auth/login.php"
	clHeartbeat   = "/api/auth/heartbeat.php"
	clLogout      = "/api/auth/logout.php"
	clCheckKey    = "/api/auth/check-key.php"
	clValidate    = "/api/update/validate.php"
	clRequestHWID = "/api/auth/request-hwid-reset.php"
	clSelfReset   = "/api/customer/reset-hwid.php"
)

// clStart boots a server for client tests. Background reaping is pushed out
// of the way so that only the test decides when sessions are reaped, and the
// admin token outlives the clock jumps of the tests.
func clStart(t *testing.T, engine string, configure func(*config.Config)) *kwtest.Server {
	t.Helper()
	return kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour, Configure: func(c *config.Config) {
		c.TokenTTL = 10 * 365 * 24 * time.Hour
		if configure != nil {
			configure(c)
		}
	}})
}

// clTimestamp is the wire form of every timestamp: ISO 8601 UTC, T and Z.
var clTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)

// clTime fails unless v is a wire timestamp and returns it.
func clTime(t testing.TB, what string, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	if !ok || !clTimestamp.MatchString(s) {
		t.Fatalf("%s = %#v, want an ISO 8601 UTC timestamp ending in Z", what, v)
	}
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("%s = %q: %v", what, s, err)
	}
	return ts
}

// clInner returns the decrypted inner JSON of a sealed reply, byte for byte.
func clInner(t testing.TB, a *kwtest.App, r *kwtest.Reply) []byte {
	t.Helper()
	if !r.Sealed {
		t.Fatalf("reply is not sealed: %s", r)
	}
	env, err := envelope.Parse(r.Raw)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := a.Keys.Verify(env, a.S.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// clNumbers decodes JSON keeping numbers as json.Number, so integers can be
// told from fractions.
func clNumbers(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, raw)
	}
	return m
}

// clInt fails unless v (decoded with UseNumber) is a JSON integer.
func clInt(t testing.TB, what string, v any) int64 {
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

// clNum returns a number decoded without UseNumber as an int, failing unless
// it is integral.
func clNum(t testing.TB, what string, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%s = %#v, want an integer", what, v)
	}
	return int(f)
}

// clOK fails unless r is a 200 success.
func clOK(t testing.TB, r *kwtest.Reply) {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("want 200 success:true, got %s (sealed=%v, body %v)", r, r.Sealed, r.Body)
	}
}

// clKill fails unless r is an enveloped heartbeat refusal with code and a
// non-empty message.
func clKill(t testing.TB, r *kwtest.Reply, code string) {
	t.Helper()
	if !r.Sealed {
		t.Fatalf("kill code %s must be enveloped, got plain %s", code, r)
	}
	kwtest.ExpectCode(t, r, 200, code)
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf("kill code %s without a message: %v", code, r.Body)
	}
}

// clSealedFail fails unless r is an enveloped business failure with code.
func clSealedFail(t testing.TB, r *kwtest.Reply, code string) {
	t.Helper()
	if !r.Sealed {
		t.Fatalf("want an enveloped %s, got plain %s", code, r)
	}
	kwtest.ExpectCode(t, r, 200, code)
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf("%s without a message: %v", code, r.Body)
	}
}

// clPlainFail fails unless r is a plain JSON failure with status and code.
func clPlainFail(t testing.TB, r *kwtest.Reply, status int, code string) {
	t.Helper()
	if r.Sealed || envelope.IsEnvelope(r.Raw) {
		t.Fatalf("want a plain %d %s, got an envelope", status, code)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, r)
	}
	kwtest.ExpectCode(t, r, status, code)
	if m, _ := r.Body["message"].(string); m == "" {
		t.Fatalf("%s without a message: %v", code, r.Body)
	}
}

// clKey returns the key as the admin API shows it (with devices and sessions).
func clKey(t testing.TB, a *kwtest.App, key string) map[string]any {
	t.Helper()
	return a.S.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")
}

// clDevices returns the HWIDs bound to key.
func clDevices(t testing.TB, a *kwtest.App, key string) []string {
	t.Helper()
	var out []string
	for _, d := range clKey(t, a, key)["devices"].([]any) {
		out = append(out, d.(map[string]any)["hwid"].(string))
	}
	return out
}

// clSessions returns the live sessions of the app, or of one key when key is
// not empty.
func clSessions(t testing.TB, a *kwtest.App, key string) []map[string]any {
	t.Helper()
	path := "/api/admin/sessions.php?app_id=" + a.ID
	if key != "" {
		path += "&license_key=" + url.QueryEscape(key)
	}
	var out []map[string]any
	for _, s := range a.S.MustAdmin("GET", path, nil).Body["sessions"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

// clSettings changes app settings through the admin API.
func clSettings(t testing.TB, a *kwtest.App, settings map[string]any) {
	t.Helper()
	a.S.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": settings})
}

// clAction applies an admin key action and fails unless it succeeds.
func clAction(t testing.TB, a *kwtest.App, action, key string, extra map[string]any) {
	t.Helper()
	if r := a.KeyAction(action, key, extra); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("key action %s: %s", action, r)
	}
}

// clLoginReply sends a sealed login and returns the opened reply.
func clLoginReply(a *kwtest.App, key, hwid string) *kwtest.Reply {
	a.S.T.Helper()
	return a.Env(clLogin, map[string]any{"license_key": key, "hwid": hwid})
}

// clBeatOK fails unless the session's heartbeat succeeds.
func clBeatOK(t testing.TB, a *kwtest.App, sid, key string) {
	t.Helper()
	r := a.Heartbeat(sid, key)
	if !r.Sealed {
		t.Fatalf("heartbeat reply not enveloped: %s", r)
	}
	clOK(t, r)
}

// clSub returns a view of s whose helpers report to t, for subtests sharing
// one server.
func clSub(t testing.TB, s *kwtest.Server) *kwtest.Server {
	c := *s
	c.T = t
	return &c
}

// clAppOn returns a view of a whose helpers report to t.
func clAppOn(t testing.TB, a *kwtest.App) *kwtest.App {
	c := *a
	c.S = clSub(t, a.S)
	return &c
}
