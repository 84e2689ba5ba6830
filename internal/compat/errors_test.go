package compat_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// §7.12: API errors are 4xx — never 5xx — with a JSON body that has
// success:false (or, for transport-level refusals, {"detail"}): 400
// crypto/validation, 401 secret/credentials, 403 disabled features, 404
// unknown key on reset, 409 conflicts, 429 rate limits with retry_after.
func TestCompat12_ErrorStatuses(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// The general per-IP limiter is on (test servers turn it off): with
		// the injected clock frozen its bucket never refills, so the flood
		// at the end meets it.
		s := start(t, engine, func(c *config.Config) { c.Limits.RateLimit, c.Limits.RateBurst = 1, 600 })
		a := richApp(t, s, "Statuses")
		off := s.CreateApp("Everything off")
		settings(t, off, map[string]any{"self_reset_enabled": false})
		c := NewClient(t, NET, a.App)
		co := NewClient(t, PY11, off)
		plain := func(r *Reply, status int, code string) {
			t.Helper()
			fail(t, r, status, code, false)
		}
		plain(c.Do("POST", pLogin, nil, c.Forge(obj("license_key", "x"), s.Clock.Now().Unix())), 400, "CRYPTO_ERROR")
		plain(c.Do("POST", pLogin, http.Header{"X-App-Secret": {strings.Repeat("ab", 32)}}, c.Seal(obj())), 401, "INVALID_APP")
		plain(c.Plain(pAccLogin, obj("username", "nobody", "password", "wrong-password", "hwid", "pc")), 401, "INVALID_CREDENTIALS")
		plain(co.Plain(pTrial, obj("hwid", "pc")), 403, "TRIAL_DISABLED")
		plain(co.Plain(pRegister, obj("username", "someone", "password", "password-1", "email", "")), 403, "ACCOUNTS_DISABLED")
		offKey := off.GenerateKeys(1, "days", 30, 1)[0]
		off.Login(offKey, "pc")
		plain(co.Plain(pSelfReset, obj("key", offKey, "reason", "x")), 403, "SELF_RESET_DISABLED")
		r := c.Plain(pSelfReset, obj("key", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", "reason", "x"))
		if r.Status != 404 && r.Status != 401 {
			t.Fatalf("reset of an unknown key: want 404 (or 401) INVALID_KEY, got %s", r)
		}
		plain(r, r.Status, "INVALID_KEY")
		plain(c.Plain(pSelfReset, obj("key", a.GenerateKeys(1, "days", 30, 1)[0], "reason", "x")), 400, "KEY_NOT_ACTIVE")
		used := a.GenerateKeys(1, "days", 30, 1)[0]
		ok(t, c.Plain(pRegister, obj("username", "first", "password", "password-1", "email", "", "license_key", used)), false)
		plain(c.Plain(pRegister, obj("username", "second", "password", "password-1", "email", "", "license_key", used)), 409, "KEY_ALREADY_USED")
		ok(t, c.Plain(pRegister, obj("username", "forever", "password", "password-1", "email", "",
			"license_key", a.GenerateKeys(1, "lifetime", 0, 1)[0])), false)
		plain(c.Plain(pRedeem, obj("username", "forever", "password", "password-1", "license_key", a.GenerateKeys(1, "days", 3, 1)[0])),
			409, "ALREADY_LIFETIME")

		// Malformed input on every route: a 4xx (or, behind a verified
		// envelope, an enveloped failure), never a 5xx, always a JSON body
		// with success:false.
		bodies := map[string][]byte{
			"empty": nil, "null": []byte("null"), "array": []byte(`[1,2]`), "truncated": []byte(`{"license_key":`),
			"wrong types": []byte(`{"license_key":["a"],"hwid":{"x":1},"session_id":7,"key":false,"username":1,"v":[],"link_id":"x"}`),
			"NUL":         []byte(`{"license_key":"A\u0000B","hwid":"\u0000","key":"\u0000","username":"\u0000","password":"\u0000"}`),
			"not UTF-8":   {'{', '"', 'h', 'w', 'i', 'd', '"', ':', '"', 0xff, 0xfe, '"', '}'},
			"huge":        append(append([]byte(`{"hwid":"`), bytes.Repeat([]byte("A"), 200<<10)...), '"', '}'),
			"deep":        []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)),
			"big number":  []byte(`{"license_key":1e400,"link_id":1e400,"v":1e400}`),
		}
		for _, rt := range allRoutes {
			for name, body := range bodies {
				if rt.method == "GET" && name != "empty" {
					continue
				}
				check := func(r *Reply, what string) {
					t.Helper()
					if r.Status >= 500 {
						t.Fatalf("%s %s with %s: HTTP %d (§7.12: never 5xx): %s", rt.method, rt.path, what, r.Status, r)
					}
					if r.Status >= 400 || r.Body["success"] != true {
						if _, detail := r.Body["detail"].(string); !detail && r.Body["success"] != false {
							t.Fatalf("%s %s with %s: failure without success:false: %s", rt.method, rt.path, what, r)
						}
					}
				}
				check(c.Do(rt.method, rt.path, nil, body), name)
				if rt.method == "POST" && json.Valid(body) {
					// The same garbage inside a valid envelope (enveloped routes).
					inner := json.RawMessage(body)
					if len(body) == 0 {
						inner = json.RawMessage(`{}`)
					}
					check(c.Do("POST", rt.path, nil, c.Seal(inner)), name+" (enveloped)")
				}
			}
		}

		// 429 with retry_after, plain, success:false: flood until the
		// limiter answers.
		var limited *Reply
		for i := 0; i < 1000 && limited == nil; i++ {
			if r := c.Plain(pCheckKey, obj("license_key", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ")); r.Status == 429 {
				limited = r
			}
		}
		if limited == nil {
			t.Fatal("the request limiter never answered 429")
		}
		fail(t, limited, 429, "RATE_LIMITED", false)
		if ra, has := limited.Body["retry_after"]; has && !isInt(ra) {
			t.Fatalf("retry_after = %#v, want integer seconds", ra)
		}
		// Login meets the same plain 429 before its envelope is verified.
		fail(t, c.Env(pLogin, obj("license_key", "x", "hwid", "y")), 429, "RATE_LIMITED", false)
	})
}

// §7.13 and §4: a stamp outside ±300 s gets the plain clock refusal
// (HTTP 400, CRYPTO_ERROR, reason CLOCK_SKEW, integer server_time, "expired"),
// from which PY1.1+/NET1.2+/CPP1.1+ correct their clock and resend once; a
// bad MAC gets CRYPTO_ERROR without reason and without "expired".
func TestCompat13_ClockRefusal(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Clocks")
		clockRefusal := func(t *testing.T, r *Reply) {
			t.Helper()
			fail(t, r, 400, "CRYPTO_ERROR", false)
			if r.Body["reason"] != "CLOCK_SKEW" {
				t.Fatalf("clock refusal without reason CLOCK_SKEW: %s", r)
			}
			st := must(t, r, "server_time")
			if n, _ := st.(json.Number).Int64(); !isInt(st) || n != s.Clock.Now().Unix() {
				t.Fatalf("server_time = %#v, want the integer %d: %s", st, s.Clock.Now().Unix(), r)
			}
			if !strings.Contains(strings.ToLower(r.Body["message"].(string)), "expired") {
				t.Fatalf("clock refusal message lacks \"expired\" (NET classifies by it): %s", r)
			}
		}
		for _, g := range allGens {
			t.Run(g.Name, func(t *testing.T) {
				for _, skew := range []int64{3600, -7200, 301} {
					c := NewClient(t, g, a.App)
					c.Skew = secs(skew)
					key := a.GenerateKeys(1, "days", 30, 1)[0]
					inner := obj("license_key", key, "hwid", "pc-clock")
					clockRefusal(t, c.Do("POST", pLogin, nil, c.Seal(inner)))
					clockRefusal(t, c.Do("POST", pHeartbeat, nil, c.Seal(obj("session_id", "x", "license_key", key))))
					if !g.Corrects {
						continue
					}
					// The SDK's automatic correction: offset from server_time,
					// re-stamp, resend once; the reply's t is then checked
					// against the corrected clock.
					r := c.Env(pLogin, inner)
					ok(t, r, true)
					if c.Offset == 0 {
						t.Fatal("the client did not correct its clock")
					}
					ok(t, beat(c, r.Body["session_id"].(string), key), true)
				}
			})
		}
		c := NewClient(t, NET, a.App)
		now := s.Clock.Now().Unix()
		for _, path := range []string{pLogin, pHeartbeat, pLogout, pCheckKey, pSlides, pUpdate, pSocial} {
			for _, stamp := range []int64{now, now - 3600} { // a forged, stale envelope must not learn the clock
				r := c.Do("POST", path, nil, c.Forge(obj("license_key", "x"), stamp))
				fail(t, r, 400, "CRYPTO_ERROR", false)
				if _, has := r.Body["reason"]; has {
					t.Fatalf("%s bad HMAC carries reason: %s", path, r)
				}
				if _, has := r.Body["server_time"]; has {
					t.Fatalf("%s bad HMAC carries server_time: %s", path, r)
				}
				if strings.Contains(strings.ToLower(r.Body["message"].(string)), "expired") {
					t.Fatalf("%s bad HMAC message says \"expired\" (clients would take it for a clock refusal): %s", path, r)
				}
			}
			clockRefusal(t, c.Do("POST", path, nil, c.SealAt(obj("license_key", "x"), now-3600)))
		}
	})
}
