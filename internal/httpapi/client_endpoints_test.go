package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// check-key (mirrored transport), update/validate, request-hwid-reset and
// customer/reset-hwid (sdk-compat §1.4, §1.6, §1.7, §7.5, §7.15).

// clCheck sends check-key plain or sealed.
func clCheck(a *kwtest.App, sealed bool, body map[string]any) *kwtest.Reply {
	a.S.T.Helper()
	if sealed {
		return a.Env(clCheckKey, body)
	}
	return a.Plain(clCheckKey, body)
}

func TestClientCheckKeyMirrorsTheTransport(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := clStart(t, engine, nil)
		a := s.CreateApp("Check")
		keys := a.GenerateKeys(5, "days", 1, 3)
		a.Login(keys[1], "pc")
		clAction(t, a, "ban", keys[2], nil)
		clAction(t, a, "pause", keys[3], nil)
		a.Login(keys[4], "pc")
		s.Clock.Advance(12 * time.Hour)
		clAction(t, a, "extend", keys[1], map[string]any{"days": 5})
		s.Clock.Advance(12 * time.Hour) // keys[4] has now expired
		states := []struct {
			key    string
			status string
			valid  bool
		}{{keys[0], "unused", true}, {keys[1], "active", true}, {keys[2], "banned", false},
			{keys[3], "paused", false}, {keys[4], "expired", false}}

		for _, sealed := range []bool{false, true} {
			t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
				a := clAppOn(t, a)
				for _, st := range states {
					r := clCheck(a, sealed, map[string]any{"license_key": st.key, "hwid": "pc-probe"})
					if r.Sealed != sealed {
						t.Fatalf("%s: request sealed=%v, reply sealed=%v", st.status, sealed, r.Sealed)
					}
					clOK(t, r)
					raw := r.Raw
					if sealed {
						raw = clInner(t, a, r)
					}
					m := clNumbers(t, raw)
					if m["valid"] != st.valid {
						t.Fatalf("%s: valid = %#v, want %v", st.status, m["valid"], st.valid)
					}
					if msg, _ := m["message"].(string); msg == "" {
						t.Fatalf("%s: no message", st.status)
					}
					k, ok := m["key"].(map[string]any)
					if !ok || k["status"] != st.status || k["key_type"] != "days" || k["license_key"] != st.key {
						t.Fatalf("%s: key = %#v", st.status, m["key"])
					}
					if clInt(t, "key.max_devices", k["max_devices"]) != 3 || clInt(t, "key.duration", k["duration"]) < 1 {
						t.Fatalf("%s: key = %v", st.status, k)
					}
					if st.status == "unused" || st.status == "banned" || st.status == "paused" {
						// never logged in: time has not started
						if k["expires_at"] != nil || k["days_remaining"] != nil || k["activated_at"] != nil {
							t.Fatalf("unused key has times: %v", k)
						}
					} else {
						clTime(t, "key.expires_at", k["expires_at"])
						clTime(t, "key.activated_at", k["activated_at"])
						clInt(t, "key.days_remaining", k["days_remaining"])
					}
					if _, ok := m["features"].(map[string]any); !ok {
						t.Fatalf("%s: features = %#v", st.status, m["features"])
					}
				}
				// Unknown key: INVALID_KEY with valid:false, plain 401 or sealed.
				r := clCheck(a, sealed, map[string]any{"license_key": "NOPE0-NOPE0-NOPE0-NOPE0"})
				if sealed {
					clSealedFail(t, r, "INVALID_KEY")
				} else {
					clPlainFail(t, r, 401, "INVALID_KEY")
				}
				if v, ok := r.Body["valid"]; !ok || v != false {
					t.Fatalf("unknown key: valid = %#v (present %v)", v, ok)
				}
				// Missing key.
				r = clCheck(a, sealed, map[string]any{"hwid": "pc"})
				if sealed {
					clSealedFail(t, r, "MISSING_FIELDS")
				} else {
					clPlainFail(t, r, 400, "MISSING_FIELDS")
				}
			})
		}
		// check-key opens no session and binds no device.
		if d := clDevices(t, a, keys[0]); len(d) != 0 {
			t.Fatalf("check-key bound %v", d)
		}
		if k := clKey(t, a, keys[0]); k["status"] != "unused" {
			t.Fatalf("check-key activated the key: %v", k)
		}
		if n := len(clSessions(t, a, keys[0])); n != 0 {
			t.Fatalf("check-key opened %d sessions", n)
		}
		if d := clDevices(t, a, keys[1]); len(d) != 1 {
			t.Fatalf("devices of keys[1] = %v", d)
		}
	})
}

// §5 and §7.2: headers of every client generation are accepted.
func TestClientHeadersOfAllGenerations(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := clStart(t, engine, nil)
		a := s.CreateApp("Headers")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		body := clJSON(t, map[string]any{"license_key": key})
		for name, h := range map[string]http.Header{
			"charset":         {"X-App-Secret": {a.Secret}, "Content-Type": {"application/json; charset=utf-8"}},
			"no content type": {"X-App-Secret": {a.Secret}},
			"python-urllib":   {"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}, "User-Agent": {"Python-urllib/3.11"}},
			"padded secret":   {"X-App-Secret": {"  " + a.Secret + " "}, "Content-Type": {"application/json"}},
			"accept":          {"X-App-Secret": {a.Secret}, "Accept": {"application/json"}, "X-Pwf-Nonce": {strings.Repeat("a", 64)}},
		} {
			r := s.Do("POST", clCheckKey, h, body)
			if r.Status != 200 || r.Body["success"] != true || r.Body["valid"] != true {
				t.Fatalf("%s: %s", name, r)
			}
			if ce := r.Header.Get("Content-Encoding"); ce != "" {
				t.Fatalf("%s: reply compressed (%s)", name, ce)
			}
		}
		// The Go client sends no User-Agent when asked not to.
		req, _ := http.NewRequest("POST", s.URL+clCheckKey, bytes.NewReader(body))
		req.Header = http.Header{"X-App-Secret": {a.Secret}, "User-Agent": {""}, "Accept-Encoding": {"gzip"}}
		resp, err := kwtest.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("no UA / gzip accepted: %d %v", resp.StatusCode, resp.Header)
		}
	})
}

func TestClientValidate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := clStart(t, engine, nil)
		a := s.CreateApp("Validate")
		keys := a.GenerateKeys(5, "days", 2, 1)
		a.Login(keys[1], "pc")
		clAction(t, a, "ban", keys[2], nil)
		clAction(t, a, "pause", keys[3], nil)
		a.Login(keys[4], "pc")
		s.Clock.Advance(48 * time.Hour)
		clAction(t, a, "extend", keys[1], map[string]any{"days": 1})

		for _, k := range keys[:2] {
			r := a.Plain(clValidate, map[string]any{"license_key": k})
			clOK(t, r)
			if r.Sealed || r.Body["valid"] != true || r.Obj("key")["license_key"] != k {
				t.Fatalf("validate %s: %s", k, r)
			}
		}
		for i, code := range map[int]string{2: "BANNED", 3: "PAUSED", 4: "EXPIRED"} {
			r := a.Plain(clValidate, map[string]any{"license_key": keys[i]})
			clPlainFail(t, r, 401, code)
			if r.Body["valid"] != false {
				t.Fatalf("%s: valid = %#v", code, r.Body["valid"])
			}
		}
		r := a.Plain(clValidate, map[string]any{"license_key": "NOPE0-NOPE0-NOPE0-NOPE0"})
		clPlainFail(t, r, 401, "INVALID_KEY")
		if r.Body["valid"] != false {
			t.Fatalf("unknown key: valid = %#v, want false as for every refused key", r.Body["valid"])
		}
		clPlainFail(t, a.Plain(clValidate, map[string]any{}), 400, "MISSING_FIELDS")
		// Plain only: an envelope is not a request with a license_key.
		clPlainFail(t, s.Do("POST", clValidate, clHeader(a.Secret), a.Seal(map[string]any{"license_key": keys[0]}).Marshal()),
			400, "MISSING_FIELDS")
		// No binding, no activation.
		if k := clKey(t, a, keys[0]); k["status"] != "unused" || len(k["devices"].([]any)) != 0 {
			t.Fatalf("validate touched the key: %v", k)
		}
	})
}

// request-hwid-reset answers identically whether or not the key exists and
// queues (records hwid_reset.requested) only for existing keys.
func TestClientRequestHWIDReset(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := clStart(t, engine, nil)
		a := s.CreateApp("Request")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc")

		send := func(body map[string]any) *kwtest.Reply { return a.Plain(clRequestHWID, body) }
		bodies := []map[string]any{
			{"license_key": key, "reason": "New PC", "hwid": "pc-new"},                // PY
			{"license_key": " " + key + " ", "reason": "Device changed"},              // NET, padded
			{"license_key": key, "username": "", "reason": strings.Repeat("r", 1500)}, // VBX
			{"license_key": "NOPE0-NOPE0-NOPE0-NOPE0", "reason": "New PC", "hwid": "pc-new"},
			{"license_key": "x", "reason": ""},
			{"username": "alice", "reason": "New PC"},
			{"license_key": nil, "username": "bob"}, // GEN: current key may be null
		}
		var first *kwtest.Reply
		for i, b := range bodies {
			r := send(b)
			clOK(t, r)
			if first == nil {
				first = r
				if r.Body["message"] != "Request submitted." {
					t.Fatalf("message = %v", r.Body["message"])
				}
				continue
			}
			if r.Status != first.Status || !bytes.Equal(r.Raw, first.Raw) || r.Header.Get("Content-Type") != first.Header.Get("Content-Type") ||
				r.Header.Get("Content-Length") != first.Header.Get("Content-Length") {
				t.Fatalf("body %d answered %s, the first %s", i, r, first)
			}
		}
		clPlainFail(t, send(map[string]any{"reason": "no key, no user"}), 400, "MISSING_FIELDS")
		clPlainFail(t, send(map[string]any{"license_key": "", "username": ""}), 400, "MISSING_FIELDS")

		// Three requests for the existing key were queued, none for the others.
		evs, err := s.DB.Events(context.Background(), 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		var got []map[string]any
		for _, e := range evs {
			if e.Type == "hwid_reset.requested" {
				if e.AppID != a.ID || e.Data["license_key"] != key {
					t.Fatalf("request event for %v / %v", e.AppID, e.Data)
				}
				got = append(got, e.Data)
			}
		}
		if len(got) != 3 {
			t.Fatalf("%d hwid_reset.requested events, want 3: %v", len(got), got)
		}
		if got[0]["hwid"] != "pc-new" || got[0]["reason"] != "New PC" || len(got[2]["reason"].(string)) != 1000 {
			t.Fatalf("queued requests: %v", got)
		}
		// A request changes nothing by itself.
		clBeatOK(t, a, sid, key)
		if d := clDevices(t, a, key); len(d) != 1 {
			t.Fatalf("devices = %v", d)
		}
	})
}

func TestClientSelfReset(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// Sessions outlive the cooldown so heartbeats can show what a reset
		// (or a refused one) did to them.
		srv := clStart(t, engine, func(c *config.Config) { c.SessionTimeout = 48 * time.Hour })

		t.Run("move, cooldown, next_reset_at", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Move")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			sid := a.Login(key, "old-pc")
			clSealedFail(t, clLoginReply(a, key, "new-pc"), "HWID_MISMATCH")

			at := s.Clock.Now()
			r := a.Plain(clSelfReset, map[string]any{"key": " " + key + " ", "reason": "Reset from app"})
			clOK(t, r)
			if r.Body["message"] != "Hardware ID has been reset. You can now activate the key on a new device." {
				t.Fatalf("message = %v", r.Body["message"])
			}
			next := clTime(t, "next_reset_at", r.Body["next_reset_at"])
			if !next.Equal(at.Add(12 * time.Hour)) {
				t.Fatalf("next_reset_at = %v, want now + 12 h (default cooldown)", next)
			}
			if d := clDevices(t, a, key); len(d) != 0 {
				t.Fatalf("devices after reset = %v", d)
			}
			clKill(t, a.Heartbeat(sid, key), "HWID_RESET")

			// The client's retry of the same reset (no device bound since) is
			// answered with success again and the same next_reset_at.
			s.Clock.Advance(30 * time.Second)
			r = a.Plain(clSelfReset, map[string]any{"key": key, "reason": "Reset from app"})
			clOK(t, r)
			if got := clTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next) {
				t.Fatalf("retry next_reset_at = %v, want %v", got, next)
			}

			newSid := a.Login(key, "new-pc")
			// Now bound again: inside the cooldown, 429 RATE_LIMITED.
			s.Clock.Advance(time.Hour)
			r = a.Plain(clSelfReset, map[string]any{"key": key})
			clPlainFail(t, r, 429, "RATE_LIMITED")
			if got := clTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next) {
				t.Fatalf("refusal next_reset_at = %v, want %v", got, next)
			}
			if r.Str("message") != "HWID was reset recently. Please wait ~11 hour(s) before resetting again." {
				t.Fatalf("message = %q", r.Str("message"))
			}
			wait := int(next.Sub(s.Clock.Now()).Seconds())
			if clNum(t, "retry_after", r.Body["retry_after"]) != wait || r.Header.Get("Retry-After") != strconv.Itoa(wait) {
				t.Fatalf("retry_after %v / Retry-After %q, want %d", r.Body["retry_after"], r.Header.Get("Retry-After"), wait)
			}
			clBeatOK(t, a, newSid, key) // the refusal changed nothing

			s.Clock.Set(next.Add(-time.Second))
			r = a.Plain(clSelfReset, map[string]any{"license_key": key})
			clPlainFail(t, r, 429, "RATE_LIMITED")
			if !strings.Contains(r.Str("message"), "~1 hour(s)") {
				t.Fatalf("message = %q", r.Str("message"))
			}
			s.Clock.Set(next)
			// The cooldown has passed; license_key is accepted as well as key.
			clBeatOK(t, a, newSid, key)
			r = a.Plain(clSelfReset, map[string]any{"license_key": key, "reason": "again"})
			clOK(t, r)
			if got := clTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next.Add(12 * time.Hour)) {
				t.Fatalf("next_reset_at = %v", got)
			}
			clKill(t, a.Heartbeat(newSid, key), "HWID_RESET")
		})

		t.Run("cooldown setting and reason length", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Cooldown")
			clSettings(t, a, map[string]any{"self_reset_cooldown_hours": 1})
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.Login(key, "pc")
			at := s.Clock.Now()
			reason := strings.Repeat("é", 200) // 400 bytes: cut to 255 bytes without splitting a character
			r := a.Plain(clSelfReset, map[string]any{"key": key, "reason": reason})
			clOK(t, r)
			if got := clTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(at.Add(time.Hour)) {
				t.Fatalf("next_reset_at = %v, want now + 1 h", got)
			}
			entries := s.MustAdmin("GET", "/api/admin/audit.php?app_id="+a.ID+"&action=key.self_reset", nil).Body["entries"].([]any)
			if len(entries) != 1 {
				t.Fatalf("%d self-reset audit entries, want 1", len(entries))
			}
			got := entries[0].(map[string]any)["details"].(map[string]any)["reason"].(string)
			if got != strings.Repeat("é", 127) {
				t.Fatalf("audited reason has %d bytes, want 254 (127 × é)", len(got))
			}
		})

		t.Run("refusals", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Refusals")
			keys := a.GenerateKeys(4, "days", 1, 1)
			a.Login(keys[1], "pc")
			clAction(t, a, "reset-hwid", keys[1], nil)
			a.Login(keys[2], "pc")
			clAction(t, a, "ban", keys[2], nil)
			a.Login(keys[3], "pc")

			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": "NOPE0-NOPE0-NOPE0-NOPE0"}), 404, "INVALID_KEY")
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": keys[0]}), 400, "KEY_NOT_ACTIVE")
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": keys[1]}), 400, "NO_HWID")
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": keys[2]}), 400, "KEY_NOT_ACTIVE")
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"reason": "x"}), 400, "MISSING_FIELDS")
			s.Clock.Advance(24 * time.Hour)
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": keys[3]}), 400, "KEY_NOT_ACTIVE")
			if d := clDevices(t, a, keys[3]); len(d) != 1 {
				t.Fatalf("expired key's device unbound by a refused reset: %v", d)
			}

			// Switched off: 403 SELF_RESET_DISABLED, nothing changes.
			k := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			sid := a.Login(k, "pc")
			clSettings(t, a, map[string]any{"self_reset_enabled": false})
			clPlainFail(t, a.Plain(clSelfReset, map[string]any{"key": k, "reason": "x"}), 403, "SELF_RESET_DISABLED")
			clBeatOK(t, a, sid, k)
			if d := clDevices(t, a, k); len(d) != 1 {
				t.Fatalf("devices = %v", d)
			}
			clSettings(t, a, map[string]any{"self_reset_enabled": true})
			clOK(t, a.Plain(clSelfReset, map[string]any{"key": k}))
		})
	})
}
