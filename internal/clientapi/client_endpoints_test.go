package clientapi_test

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
		return a.Env(kwtest.PathCheckKey, body)
	}
	return a.Plain(kwtest.PathCheckKey, body)
}

func TestClientCheckKeyMirrorsTheTransport(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Check")
		keys := a.GenerateKeys(5, "days", 1, 3)
		a.Login(keys[1], "pc")
		a.MustKeyAction(t, "ban", keys[2], nil)
		a.MustKeyAction(t, "pause", keys[3], nil)
		a.Login(keys[4], "pc")
		s.Clock.Advance(12 * time.Hour)
		a.MustKeyAction(t, "extend", keys[1], map[string]any{"days": 5})
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
					r.OK(t)
					raw := r.Raw
					if sealed {
						raw = clInner(t, a, r)
					}
					m := kwtest.Numbers(t, raw)
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
					if kwtest.Int(t, "key.max_devices", k["max_devices"]) != 3 || kwtest.Int(t, "key.duration", k["duration"]) < 1 {
						t.Fatalf("%s: key = %v", st.status, k)
					}
					if st.status == "unused" || st.status == "banned" || st.status == "paused" {
						// never logged in: time has not started
						if k["expires_at"] != nil || k["days_remaining"] != nil || k["activated_at"] != nil {
							t.Fatalf("unused key has times: %v", k)
						}
					} else {
						kwtest.WireTime(t, "key.expires_at", k["expires_at"])
						kwtest.WireTime(t, "key.activated_at", k["activated_at"])
						kwtest.Int(t, "key.days_remaining", k["days_remaining"])
					}
					if _, ok := m["features"].(map[string]any); !ok {
						t.Fatalf("%s: features = %#v", st.status, m["features"])
					}
				}
				// Unknown key: INVALID_KEY with valid:false, plain 401 or sealed.
				r := clCheck(a, sealed, map[string]any{"license_key": "NOPE0-NOPE0-NOPE0-NOPE0"})
				if sealed {
					r.SealedFail(t, "INVALID_KEY")
				} else {
					r.PlainFail(t, 401, "INVALID_KEY")
				}
				if v, ok := r.Body["valid"]; !ok || v != false {
					t.Fatalf("unknown key: valid = %#v (present %v)", v, ok)
				}
				// Missing key.
				r = clCheck(a, sealed, map[string]any{"hwid": "pc"})
				if sealed {
					r.SealedFail(t, "MISSING_FIELDS")
				} else {
					r.PlainFail(t, 400, "MISSING_FIELDS")
				}
			})
		}
		// check-key opens no session and binds no device.
		if d := a.Devices(t, keys[0]); len(d) != 0 {
			t.Fatalf("check-key bound %v", d)
		}
		if k := a.KeyView(t, keys[0]); k["status"] != "unused" {
			t.Fatalf("check-key activated the key: %v", k)
		}
		if n := len(a.Sessions(t, keys[0])); n != 0 {
			t.Fatalf("check-key opened %d sessions", n)
		}
		if d := a.Devices(t, keys[1]); len(d) != 1 {
			t.Fatalf("devices of keys[1] = %v", d)
		}
	})
}

// §5 and §7.2: headers of every client generation are accepted.
func TestClientHeadersOfAllGenerations(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Headers")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		body := kwtest.JSON(t, map[string]any{"license_key": key})
		for name, h := range map[string]http.Header{
			"charset":         {"X-App-Secret": {a.Secret}, "Content-Type": {"application/json; charset=utf-8"}},
			"no content type": {"X-App-Secret": {a.Secret}},
			"python-urllib":   {"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}, "User-Agent": {"Python-urllib/3.11"}},
			"padded secret":   {"X-App-Secret": {"  " + a.Secret + " "}, "Content-Type": {"application/json"}},
			"accept":          {"X-App-Secret": {a.Secret}, "Accept": {"application/json"}, "X-Pwf-Nonce": {strings.Repeat("a", 64)}},
		} {
			r := s.Do("POST", kwtest.PathCheckKey, h, body)
			if r.Status != 200 || r.Body["success"] != true || r.Body["valid"] != true {
				t.Fatalf("%s: %s", name, r)
			}
			if ce := r.Header.Get("Content-Encoding"); ce != "" {
				t.Fatalf("%s: reply compressed (%s)", name, ce)
			}
		}
		// The Go client sends no User-Agent when asked not to.
		req, _ := http.NewRequest("POST", s.URL+kwtest.PathCheckKey, bytes.NewReader(body))
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
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Validate")
		keys := a.GenerateKeys(5, "days", 2, 1)
		a.Login(keys[1], "pc")
		a.MustKeyAction(t, "ban", keys[2], nil)
		a.MustKeyAction(t, "pause", keys[3], nil)
		a.Login(keys[4], "pc")
		s.Clock.Advance(48 * time.Hour)
		a.MustKeyAction(t, "extend", keys[1], map[string]any{"days": 1})

		for _, k := range keys[:2] {
			r := a.Plain(kwtest.PathValidate, map[string]any{"license_key": k})
			r.OK(t)
			if r.Sealed || r.Body["valid"] != true || r.Obj("key")["license_key"] != k {
				t.Fatalf("validate %s: %s", k, r)
			}
		}
		for i, code := range map[int]string{2: "BANNED", 3: "PAUSED", 4: "EXPIRED"} {
			r := a.Plain(kwtest.PathValidate, map[string]any{"license_key": keys[i]})
			r.PlainFail(t, 401, code)
			if r.Body["valid"] != false {
				t.Fatalf("%s: valid = %#v", code, r.Body["valid"])
			}
		}
		r := a.Plain(kwtest.PathValidate, map[string]any{"license_key": "NOPE0-NOPE0-NOPE0-NOPE0"})
		r.PlainFail(t, 401, "INVALID_KEY")
		if r.Body["valid"] != false {
			t.Fatalf("unknown key: valid = %#v, want false as for every refused key", r.Body["valid"])
		}
		a.Plain(kwtest.PathValidate, map[string]any{}).PlainFail(t, 400, "MISSING_FIELDS")
		// Plain only: an envelope is not a request with a license_key.
		s.Do("POST", kwtest.PathValidate, kwtest.AppHeader(a.Secret), a.Seal(map[string]any{"license_key": keys[0]}).Marshal()).PlainFail(t,
			400, "MISSING_FIELDS")

		// No binding, no activation.
		if k := a.KeyView(t, keys[0]); k["status"] != "unused" || len(k["devices"].([]any)) != 0 {
			t.Fatalf("validate touched the key: %v", k)
		}
	})
}

// request-hwid-reset answers identically whether or not the key exists and
// queues (records hwid_reset.requested) only for existing keys.
func TestClientRequestHWIDReset(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Request")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc")

		send := func(body map[string]any) *kwtest.Reply { return a.Plain(kwtest.PathRequestHWID, body) }
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
			r.OK(t)
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
		send(map[string]any{"reason": "no key, no user"}).PlainFail(t, 400, "MISSING_FIELDS")
		send(map[string]any{"license_key": "", "username": ""}).PlainFail(t, 400, "MISSING_FIELDS")

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
		a.BeatOK(t, sid, key)
		if d := a.Devices(t, key); len(d) != 1 {
			t.Fatalf("devices = %v", d)
		}
	})
}

func TestClientSelfReset(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// Sessions outlive the cooldown so heartbeats can show what a reset
		// (or a refused one) did to them.
		srv := kwtest.Boot(t, engine, func(c *config.Config) { c.SessionTimeout = 48 * time.Hour })

		t.Run("move, cooldown, next_reset_at", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Move")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			sid := a.Login(key, "old-pc")
			a.LoginReply(key, "new-pc").SealedFail(t, "HWID_MISMATCH")

			at := s.Clock.Now()
			r := a.Plain(kwtest.PathSelfReset, map[string]any{"key": " " + key + " ", "reason": "Reset from app"})
			r.OK(t)
			if r.Body["message"] != "Hardware ID has been reset. You can now activate the key on a new device." {
				t.Fatalf("message = %v", r.Body["message"])
			}
			next := kwtest.WireTime(t, "next_reset_at", r.Body["next_reset_at"])
			if !next.Equal(at.Add(12 * time.Hour)) {
				t.Fatalf("next_reset_at = %v, want now + 12 h (default cooldown)", next)
			}
			if d := a.Devices(t, key); len(d) != 0 {
				t.Fatalf("devices after reset = %v", d)
			}
			a.Heartbeat(sid, key).Kill(t, "HWID_RESET")

			// The client's retry of the same reset (no device bound since) is
			// answered with success again and the same next_reset_at.
			s.Clock.Advance(30 * time.Second)
			r = a.Plain(kwtest.PathSelfReset, map[string]any{"key": key, "reason": "Reset from app"})
			r.OK(t)
			if got := kwtest.WireTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next) {
				t.Fatalf("retry next_reset_at = %v, want %v", got, next)
			}

			newSid := a.Login(key, "new-pc")
			// Now bound again: inside the cooldown, 429 RATE_LIMITED.
			s.Clock.Advance(time.Hour)
			r = a.Plain(kwtest.PathSelfReset, map[string]any{"key": key})
			r.PlainFail(t, 429, "RATE_LIMITED")
			if got := kwtest.WireTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next) {
				t.Fatalf("refusal next_reset_at = %v, want %v", got, next)
			}
			if r.Str("message") != "HWID was reset recently. Please wait ~11 hour(s) before resetting again." {
				t.Fatalf("message = %q", r.Str("message"))
			}
			wait := int(next.Sub(s.Clock.Now()).Seconds())
			if kwtest.Num(t, "retry_after", r.Body["retry_after"]) != wait || r.Header.Get("Retry-After") != strconv.Itoa(wait) {
				t.Fatalf("retry_after %v / Retry-After %q, want %d", r.Body["retry_after"], r.Header.Get("Retry-After"), wait)
			}
			a.BeatOK(t, newSid, key) // the refusal changed nothing

			s.Clock.Set(next.Add(-time.Second))
			r = a.Plain(kwtest.PathSelfReset, map[string]any{"license_key": key})
			r.PlainFail(t, 429, "RATE_LIMITED")
			if !strings.Contains(r.Str("message"), "~1 hour(s)") {
				t.Fatalf("message = %q", r.Str("message"))
			}
			s.Clock.Set(next)
			// The cooldown has passed; license_key is accepted as well as key.
			a.BeatOK(t, newSid, key)
			r = a.Plain(kwtest.PathSelfReset, map[string]any{"license_key": key, "reason": "again"})
			r.OK(t)
			if got := kwtest.WireTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(next.Add(12 * time.Hour)) {
				t.Fatalf("next_reset_at = %v", got)
			}
			a.Heartbeat(newSid, key).Kill(t, "HWID_RESET")
		})

		t.Run("cooldown setting and reason length", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Cooldown")
			a.SetSettings(t, map[string]any{"self_reset_cooldown_hours": 1})
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.Login(key, "pc")
			at := s.Clock.Now()
			reason := strings.Repeat("é", 200) // 400 bytes: cut to 255 bytes without splitting a character
			r := a.Plain(kwtest.PathSelfReset, map[string]any{"key": key, "reason": reason})
			r.OK(t)
			if got := kwtest.WireTime(t, "next_reset_at", r.Body["next_reset_at"]); !got.Equal(at.Add(time.Hour)) {
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
			a.MustKeyAction(t, "reset-hwid", keys[1], nil)
			a.Login(keys[2], "pc")
			a.MustKeyAction(t, "ban", keys[2], nil)
			a.Login(keys[3], "pc")

			a.Plain(kwtest.PathSelfReset, map[string]any{"key": "NOPE0-NOPE0-NOPE0-NOPE0"}).PlainFail(t, 404, "INVALID_KEY")
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": keys[0]}).PlainFail(t, 400, "KEY_NOT_ACTIVE")
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": keys[1]}).PlainFail(t, 400, "NO_HWID")
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": keys[2]}).PlainFail(t, 400, "KEY_NOT_ACTIVE")
			a.Plain(kwtest.PathSelfReset, map[string]any{"reason": "x"}).PlainFail(t, 400, "MISSING_FIELDS")
			s.Clock.Advance(24 * time.Hour)
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": keys[3]}).PlainFail(t, 400, "KEY_NOT_ACTIVE")
			if d := a.Devices(t, keys[3]); len(d) != 1 {
				t.Fatalf("expired key's device unbound by a refused reset: %v", d)
			}

			// Switched off: 403 SELF_RESET_DISABLED, nothing changes.
			k := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			sid := a.Login(k, "pc")
			a.SetSettings(t, map[string]any{"self_reset_enabled": false})
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": k, "reason": "x"}).PlainFail(t, 403, "SELF_RESET_DISABLED")
			a.BeatOK(t, sid, k)
			if d := a.Devices(t, k); len(d) != 1 {
				t.Fatalf("devices = %v", d)
			}
			a.SetSettings(t, map[string]any{"self_reset_enabled": true})
			a.Plain(kwtest.PathSelfReset, map[string]any{"key": k}).OK(t)
		})
	})
}
