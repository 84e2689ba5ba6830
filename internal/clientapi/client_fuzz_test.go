package clientapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// FuzzClientRoutes posts fuzzed bodies to every client route of one SQLite
// server (started once): the answer is never a 5xx, always a JSON object
// with a boolean success, and a plain answer on an envelope route never
// claims success (sdk-compat §7.4, §7.12).
func FuzzClientRoutes(f *testing.F) {
	s := kwtest.Start(f, kwtest.Options{Engine: "sqlite"})
	a := s.CreateApp("Fuzz")
	keys := a.GenerateKeys(3, "lifetime", 0, 2)
	sid := a.Login(keys[2], "pc")
	env := a.Seal(map[string]any{"license_key": keys[1], "hwid": "pc"}).Marshal()

	a.SetSettings(f, map[string]any{"trial_enabled": true, "accounts_enabled": true, "account_signup_days": 3})
	if r := a.Plain("/api/auth/account-register.php", map[string]any{"username": "fuzzer", "password": "secret123"}); r.Status != 200 {
		f.Fatalf("register: %s", r)
	}

	routes := []string{kwtest.PathCheckKey, kwtest.PathValidate, kwtest.PathRequestHWID, kwtest.PathSelfReset, kwtest.PathLogin, kwtest.PathHeartbeat, kwtest.PathLogout,
		"/api/auth/trial.php", "/api/auth/account-register.php", "/api/auth/account-login.php",
		"/api/auth/change-password.php", "/api/auth/account-redeem.php", "/api/app/slides.php", "/api/app/social-click.php",
		"/api/app/pricing.php", "/api/app/fulfill.php", "/api/update/check.php"}
	envRoute := map[string]bool{kwtest.PathLogin: true, kwtest.PathHeartbeat: true, kwtest.PathLogout: true, "/api/app/slides.php": true, "/api/app/social-click.php": true,
		"/api/update/check.php": true}
	for i, body := range []string{
		`{"license_key":"` + keys[0] + `"}`,
		`{"license_key":" ` + keys[0] + ` ","hwid":"pc"}`,
		`{"license_key":"` + keys[1] + `","username":"","reason":"Device changed","hwid":"h"}`,
		`{"key":"` + keys[0] + `","reason":"Reset from app"}`,
		`{"license_key":"NOPE0-NOPE0-NOPE0-NOPE0"}`,
		`{"session_id":"` + sid + `","license_key":""}`,
		`{"license_key":12}`,
		`{"license_key":null,"username":"bob"}`,
		`{}`, ``, `[]`, `null`, `"x"`, `{"license_key":`, "\xff", `{"p":"","t":0,"s":""}`,
		string(env),
		`{"p":"AAAA","t":"1","s":"zz"}`,
		`{"license_key":"` + strings.Repeat("A", 5000) + `"}`,
		`{"license_key":"` + keys[1] + `","hwid":"pc\u0000","reason":"\u0000"}`,
		`{"key":"` + keys[1] + `\u0000"}`,
		`{"hwid":"trial-pc"}`,
		`{"username":"fuzzer","password":"secret123","hwid":"pc"}`,
		`{"username":"Fuzzer2","password":"secret123","email":"a@b.c","license_key":"` + keys[0] + `"}`,
		`{"username":"fuzzer","old_password":"secret123","new_password":"secret1234"}`,
		`{"username":"fuzzer","password":"secret123","license_key":"` + keys[1] + `"}`,
		`{"session_id":"` + sid + `","license_key":"` + keys[0] + `"}`,
		`{"username":["x"],"password":{"a":1},"hwid":7}`,
		`{"app_id":"` + a.ID + `","plan_id":1,"email":"a@b.c"}`, `{"order_id":"ORD-1","secret":"x","payment_ref":7}`,
		`{"v":"1.0.0","channel":"beta","os":"darwin","arch":"aarch64","hwid":"h","license_key":null}`,
		`{"version":"1.2","channel":"nightly"}`, `{"v":7,"os":["x"]}`,
		`{"action":"get_slides"}`, `{"link_id":1}`, `{"link_id":"7"}`, `{"platform":"discord"}`, `{"link_id":-1,"platform":7}`,
	} {
		for r := range routes {
			f.Add(uint8(r+i), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		req, err := http.NewRequest("POST", s.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = kwtest.AppHeader(a.Secret)
		resp, err := kwtest.HTTP.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, resp.StatusCode, raw)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("POST %s %q: Content-Type %q", path, body, ct)
		}
		if envelope.IsEnvelope(raw) {
			// Only a verified envelope gets a sealed answer; open it.
			e, err := envelope.Parse(raw)
			if err != nil {
				t.Fatalf("POST %s: bad reply envelope %s", path, raw)
			}
			inner, _, err := a.Keys.Verify(e, s.Clock.Now())
			if err != nil {
				t.Fatalf("POST %s: reply envelope does not verify: %v", path, err)
			}
			raw = inner
		} else if resp.StatusCode < 400 && envRoute[path] {
			t.Fatalf("POST %s %q: plain %d answer on an envelope route: %s", path, body, resp.StatusCode, raw)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("POST %s %q: reply is not a JSON object: %s", path, body, raw)
		}
		ok, isBool := m["success"].(bool)
		if !isBool {
			t.Fatalf("POST %s: success = %#v", path, m["success"])
		}
		if !ok {
			if code, _ := m["error_code"].(string); code == "" || code == "INTERNAL" {
				t.Fatalf("POST %s %q: failure without a client error code: %s", path, body, raw)
			}
		}
		if resp.StatusCode >= 400 && ok {
			t.Fatalf("POST %s: %d with success:true", path, resp.StatusCode)
		}
	})
}
