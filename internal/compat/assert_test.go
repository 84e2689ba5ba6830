package compat_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Client paths (sdk-compat §1).
const (
	pLogin     = "/api/auth/login.php"
	pHeartbeat = "/api/auth/heartbeat.php"
	pLogout    = "/api/auth/logout.php"
	pCheckKey  = "/api/auth/check-key.php"
	pTrial     = "/api/auth/trial.php"
	pReqReset  = "/api/auth/request-hwid-reset.php"
	pSelfReset = "/api/customer/reset-hwid.php"
	pRegister  = "/api/auth/account-register.php"
	pAccLogin  = "/api/auth/account-login.php"
	pChangePw  = "/api/auth/change-password.php"
	pRedeem    = "/api/auth/account-redeem.php"
	pInfo      = "/api/app/info.php"
	pText      = "/api/app/text.php"
	pSlides    = "/api/app/slides.php"
	pUpdate    = "/api/update/check.php"
	pSocial    = "/api/app/social-click.php"
	pPricing   = "/api/app/pricing.php"
)

// start boots a server for one test function. Background reaping is out of
// the way (the tests decide with the clock) and the admin token outlives the
// clock jumps.
func start(t *testing.T, engine string, configure func(*config.Config)) *kwtest.Server {
	t.Helper()
	return kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour, Configure: func(c *config.Config) {
		c.TokenTTL = 10 * 365 * 24 * time.Hour
		if configure != nil {
			configure(c)
		}
	}})
}

// settings changes app settings through the admin API.
func settings(t testing.TB, a *kwtest.App, s map[string]any) {
	t.Helper()
	a.S.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, s)
}

// keyWith generates one key with extra generation fields (features, …).
func keyWith(t testing.TB, a *kwtest.App, keyType string, days, maxDevices int, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"app_id": a.ID, "count": 1, "key_type": keyType, "max_devices": maxDevices}
	if keyType == "days" {
		body["duration_value"] = days
	}
	for k, v := range extra {
		body[k] = v
	}
	r := a.S.MustAdmin("POST", "/api/admin/keys.php", body)
	return r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)
}

// get walks a dotted path through nested objects.
func get(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(path, ".") {
		o, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = o[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func must(t testing.TB, r *Reply, path string) any {
	t.Helper()
	v, ok := get(r.Body, path)
	if !ok {
		t.Fatalf("reply lacks %s: %s", path, r)
	}
	return v
}

// isInt reports whether v is a JSON integer (not 30.0, not "30").
func isInt(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	_, err := n.Int64()
	return err == nil && !strings.ContainsAny(string(n), ".eE")
}

func wantInt(t testing.TB, r *Reply, path string) int64 {
	t.Helper()
	v := must(t, r, path)
	if !isInt(v) {
		t.Fatalf("%s = %#v, want a JSON integer: %s", path, v, r)
	}
	n, _ := v.(json.Number).Int64()
	return n
}

func wantNumber(t testing.TB, r *Reply, path string) {
	t.Helper()
	if _, ok := must(t, r, path).(json.Number); !ok {
		t.Fatalf("%s is not a JSON number: %s", path, r)
	}
}

func wantStr(t testing.TB, r *Reply, path string) string {
	t.Helper()
	v, ok := must(t, r, path).(string)
	if !ok {
		t.Fatalf("%s is not a JSON string: %s", path, r)
	}
	return v
}

func wantNonEmpty(t testing.TB, r *Reply, path string) string {
	t.Helper()
	s := wantStr(t, r, path)
	if strings.TrimSpace(s) == "" {
		t.Fatalf("%s is empty: %s", path, r)
	}
	return s
}

func wantBool(t testing.TB, r *Reply, path string) bool {
	t.Helper()
	b, ok := must(t, r, path).(bool)
	if !ok {
		t.Fatalf("%s is not a JSON boolean: %s", path, r)
	}
	return b
}

func wantNull(t testing.TB, r *Reply, path string) {
	t.Helper()
	if v := must(t, r, path); v != nil {
		t.Fatalf("%s = %#v, want null (lifetime): %s", path, v, r)
	}
}

func wantObj(t testing.TB, r *Reply, path string) map[string]any {
	t.Helper()
	o, ok := must(t, r, path).(map[string]any)
	if !ok {
		t.Fatalf("%s is not a JSON object: %s", path, r)
	}
	return o
}

func wantArr(t testing.TB, r *Reply, path string) []any {
	t.Helper()
	a, ok := must(t, r, path).([]any)
	if !ok {
		t.Fatalf("%s is not a JSON array: %s", path, r)
	}
	return a
}

// isoZ is the timestamp form every client parses: ISO 8601 UTC, T and Z.
var isoZ = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

func wantTime(t testing.TB, r *Reply, path string) time.Time {
	t.Helper()
	s, ok := must(t, r, path).(string)
	if !ok || !isoZ.MatchString(s) {
		t.Fatalf("%s = %#v, want ISO 8601 UTC with T and Z: %s", path, must(t, r, path), r)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %q: %v", path, s, err)
	}
	return ts
}

// ok fails unless r is a success: success a JSON true, and for envelope
// routes (sealed) an envelope.
func ok(t testing.TB, r *Reply, sealed bool) {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true || r.Sealed != sealed {
		t.Fatalf("want HTTP 200 success:true (sealed=%v), got %s", sealed, r)
	}
}

// fail fails unless r is a refusal with the given status, error_code, a
// JSON false success, a non-empty message and the given transport.
func fail(t testing.TB, r *Reply, status int, code string, sealed bool) {
	t.Helper()
	if r.Status != status || r.Sealed != sealed {
		t.Fatalf("want HTTP %d %s (sealed=%v), got %s", status, code, sealed, r)
	}
	if b, isBool := r.Body["success"].(bool); !isBool || b {
		t.Fatalf("want success:false (a JSON boolean) with %s, got %s", code, r)
	}
	if r.Body["error_code"] != code {
		t.Fatalf("want error_code %s, got %s", code, r)
	}
	if m, _ := r.Body["message"].(string); strings.TrimSpace(m) == "" {
		t.Fatalf("refusal %s has no user-facing message: %s", code, r)
	}
}

// killCodes are the heartbeat codes every generation stops on (§2.2, §7.10).
var killCodes = map[string]bool{"BANNED": true, "PAUSED": true, "EXPIRED": true, "HWID_RESET": true, "MAINTENANCE": true,
	"SESSION_REVOKED": true, "SESSION_EXPIRED": true, "SESSION_MISMATCH": true}

// login opens a session with client c and returns the reply.
func login(t testing.TB, c *Client, key, hwid string) *Reply {
	t.Helper()
	r := c.Env(pLogin, obj("license_key", key, "hwid", hwid))
	ok(t, r, true)
	return r
}

func beat(c *Client, sid string, key any) *Reply {
	c.T.Helper()
	return c.Env(pHeartbeat, obj("session_id", sid, "license_key", key))
}

// sessionCount is the number of live sessions of a key (admin API).
func sessionCount(t testing.TB, a *kwtest.App, key string) int {
	t.Helper()
	r := a.S.MustAdmin("GET", "/api/admin/sessions.php?app_id="+a.ID+"&license_key="+key, nil)
	return len(r.Body["sessions"].([]any))
}

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }
