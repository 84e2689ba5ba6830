package clientapi_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Heartbeat conformance (sdk-compat §1.2, §2.2, §7.10; api-reference state
// table): the OK reply, the eight kill codes (always enveloped), exact expiry
// at request time, and the seat a killed session frees.

func TestClientHeartbeatOK(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Beat")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc")

		s.Clock.Advance(30 * time.Second)
		r := a.Heartbeat(sid, key)
		r.OK(t)
		var inner map[string]any
		inner = kwtest.Numbers(t, clInner(t, a, r))
		if !reflect.DeepEqual(inner, map[string]any{"success": true, "message": "Heartbeat OK"}) {
			t.Fatalf("heartbeat reply = %v", inner)
		}
		// The reply's t is the server's clock (clients check it against their
		// corrected clock).
		env, err := envelope.Parse(r.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if env.T != s.Clock.Now().Unix() {
			t.Fatalf("reply t = %d, want the server clock %d", env.T, s.Clock.Now().Unix())
		}

		// §7.6: license_key may be empty, null or absent (account sessions);
		// PY and CPP add hwid; keys are trimmed.
		for name, body := range map[string]map[string]any{
			"empty key":   {"session_id": sid, "license_key": ""},
			"null key":    {"session_id": sid, "license_key": nil},
			"no key":      {"session_id": sid},
			"with hwid":   {"session_id": sid, "license_key": key, "hwid": "pc"},
			"padded key":  {"session_id": sid, "license_key": " " + key + " "},
			"other hwid":  {"session_id": sid, "license_key": key, "hwid": "something-else"},
			"extra field": {"session_id": sid, "license_key": key, "client": "PwfAuthCpp/1.1"},
		} {
			t.Run(name, func(t *testing.T) {
				s.Clock.Advance(30 * time.Second)
				r := clAppOn(t, a).Env(kwtest.PathHeartbeat, body)
				if !r.Sealed {
					t.Fatalf("not enveloped: %s", r)
				}
				r.OK(t)
			})
		}
		// A missing session_id is a validation failure, still enveloped.
		a.Env(kwtest.PathHeartbeat, map[string]any{"license_key": key}).SealedFail(t, "MISSING_FIELDS")
	})
}

// hbCase is one way to kill a session.
type hbCase struct {
	name string
	code string
	// keyWide: the kill ends every session of the key (both test sessions).
	keyWide bool
	days    int // 0: lifetime key
	// kill ends session sa (and sb when keyWide) by the case's cause; it
	// returns nothing, the heartbeats that follow observe the kill.
	kill func(t *testing.T, a *kwtest.App, key, sa, sb string)
	// restore undoes the cause so that the key can log in again (nil: none).
	restore func(t *testing.T, a *kwtest.App, key string)
	// device is the device the seat check logs in from ("" → pc-b).
	device string
	// noSeatCheck: the kill itself hands the seat to a new session.
	noSeatCheck bool
}

// hbTimeout is the session timeout of the kill-code server: long enough to
// carry sessions across a key's expiry day.
const hbTimeout = 48 * time.Hour

func hbCases() []hbCase {
	return []hbCase{
		{name: "BANNED by admin", code: "BANNED", keyWide: true,
			kill: func(t *testing.T, a *kwtest.App, key, _, _ string) { a.MustKeyAction(t, "ban", key, nil) },
			restore: func(t *testing.T, a *kwtest.App, key string) {
				a.MustKeyAction(t, "unban", key, nil)
			}},
		{name: "PAUSED by admin", code: "PAUSED", keyWide: true,
			kill:    func(t *testing.T, a *kwtest.App, key, _, _ string) { a.MustKeyAction(t, "pause", key, nil) },
			restore: func(t *testing.T, a *kwtest.App, key string) { a.MustKeyAction(t, "resume", key, nil) }},
		{name: "EXPIRED at the exact second", code: "EXPIRED", keyWide: true, days: 1,
			kill: func(t *testing.T, a *kwtest.App, key, sa, sb string) {
				exp := kwtest.WireTime(t, "expires_at", a.KeyView(t, key)["expires_at"])
				a.S.Clock.Set(exp.Add(-time.Second))
				a.BeatOK(t, sa, key)
				a.BeatOK(t, sb, key)
				a.S.Clock.Set(exp) // no sweep has run: the heartbeat itself decides
				if st := a.KeyView(t, key)["status"]; st != "expired" {
					t.Fatalf("status at expires_at = %v", st)
				}
			},
			restore: func(t *testing.T, a *kwtest.App, key string) {
				a.MustKeyAction(t, "extend", key, map[string]any{"days": 1})
			}},
		{name: "HWID_RESET by admin", code: "HWID_RESET", keyWide: true, device: "pc-c",
			kill: func(t *testing.T, a *kwtest.App, key, _, _ string) { a.MustKeyAction(t, "reset-hwid", key, nil) }},
		{name: "MAINTENANCE", code: "MAINTENANCE", keyWide: true,
			kill: func(t *testing.T, a *kwtest.App, _, _, _ string) {
				a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": "Upgrading, back soon."})
			},
			restore: func(t *testing.T, a *kwtest.App, _ string) { a.SetSettings(t, map[string]any{"maintenance": false}) }},
		{name: "SESSION_REVOKED by admin", code: "SESSION_REVOKED",
			kill: func(t *testing.T, a *kwtest.App, key, sa, _ string) {
				var id string
				for _, ss := range a.Sessions(t, key) {
					if ss["hwid"] == "pc-a" {
						id = ss["id"].(string)
					}
				}
				a.S.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": id})
			}},
		{name: "SESSION_REVOKED by key rotation", code: "SESSION_REVOKED", keyWide: true, noSeatCheck: true,
			kill: func(t *testing.T, a *kwtest.App, key, _, _ string) { a.MustKeyAction(t, "rotate", key, nil) }},
		{name: "SESSION_EXPIRED after the timeout", code: "SESSION_EXPIRED",
			kill: func(t *testing.T, a *kwtest.App, key, sa, sb string) {
				// sa was last seen at its login, 1 s ago.
				a.S.Clock.Advance(hbTimeout / 2)
				a.BeatOK(t, sb, key)
				a.S.Clock.Advance(hbTimeout/2 - time.Second)
				a.BeatOK(t, sa, key) // silent for exactly the timeout: still alive
				a.BeatOK(t, sb, key)
				a.S.Clock.Advance(hbTimeout / 2)
				a.BeatOK(t, sb, key)
				a.S.Clock.Advance(hbTimeout/2 + time.Second) // sa silent for timeout + 1 s
			}},
		{name: "SESSION_EXPIRED reaped", code: "SESSION_EXPIRED",
			kill: func(t *testing.T, a *kwtest.App, key, sa, sb string) {
				a.S.Clock.Advance(hbTimeout / 2)
				a.BeatOK(t, sb, key)
				a.S.Clock.Advance(hbTimeout/2 + time.Second)
				if _, err := a.S.License.ReapSessions(context.Background()); err != nil {
					t.Fatal(err)
				}
				for _, ss := range a.Sessions(t, key) {
					if ss["hwid"] == "pc-a" {
						t.Fatalf("silent session not reaped: %v", ss)
					}
				}
			}},
		{name: "SESSION_EXPIRED by overflow", code: "SESSION_EXPIRED", noSeatCheck: true,
			kill: func(t *testing.T, a *kwtest.App, key, sa, sb string) {
				a.S.Clock.Advance(time.Second)
				a.Login(key, "pc-a") // retires sa, the oldest session of pc-a
			}},
	}
}

func TestClientHeartbeatKillCodes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, func(c *config.Config) { c.SessionTimeout = hbTimeout })
		for _, tc := range hbCases() {
			t.Run(tc.name, func(t *testing.T) {
				s := clSub(t, srv)
				a := s.CreateApp(tc.name)
				var key string
				if tc.days > 0 {
					key = a.GenerateKeys(1, "days", tc.days, 2)[0]
				} else {
					key = a.GenerateKeys(1, "lifetime", 0, 2)[0]
				}
				sa := a.Login(key, "pc-a")
				s.Clock.Advance(time.Second)
				sb := a.Login(key, "pc-b")
				a.BeatOK(t, sa, key)
				var saID string
				for _, ss := range a.Sessions(t, key) {
					if ss["hwid"] == "pc-a" {
						saID = ss["id"].(string)
					}
				}

				tc.kill(t, a, key, sa, sb)
				// (After a rotation heartbeats still carry the string the
				// client logged in with.)
				r := a.Heartbeat(sa, key)
				r.Kill(t, tc.code)
				if tc.code == "MAINTENANCE" && r.Body["message"] != "Upgrading, back soon." {
					t.Fatalf("maintenance message = %v", r.Body["message"])
				}
				// The code is final: the next beat answers the same.
				a.Heartbeat(sa, key).Kill(t, tc.code)
				// The session is gone from the live list.
				live := a.Sessions(t, "")
				for _, ss := range live {
					if ss["id"] == saID {
						t.Fatalf("killed session still live: %v", live)
					}
				}
				if tc.keyWide {
					a.Heartbeat(sb, key).Kill(t, tc.code)
				} else {
					a.BeatOK(t, sb, key)
				}
				if tc.restore != nil {
					tc.restore(t, a, key)
				}
				if tc.noSeatCheck {
					return
				}
				hbSeatFreed(t, a, key, sb, tc)
			})
		}
	})
}

// hbSeatFreed checks that killed sessions no longer hold seats: two logins on
// one device retire nothing when the killed sessions are out of the count,
// whereas a killed session still counted would make the second login retire
// the first.
func hbSeatFreed(t *testing.T, a *kwtest.App, key, sb string, tc hbCase) {
	t.Helper()
	dev := tc.device
	if dev == "" {
		dev = "pc-b"
	}
	a.S.Clock.Advance(time.Second)
	n1 := a.Login(key, dev)
	if !tc.keyWide {
		// sb on pc-b is alive and holds one seat, n1 the other; were the
		// killed session still counted, n1 would have retired sb.
		a.BeatOK(t, sb, key)
		a.BeatOK(t, n1, key)
		if live := a.Sessions(t, key); len(live) != 2 {
			t.Fatalf("%d live sessions after relogin, want 2: %v", len(live), live)
		}
		return
	}
	a.S.Clock.Advance(time.Second)
	n2 := a.Login(key, dev)
	a.BeatOK(t, n1, key)
	a.BeatOK(t, n2, key)
	if live := a.Sessions(t, key); len(live) != 2 {
		t.Fatalf("%d live sessions, want 2: %v", len(live), live)
	}
}

func TestClientHeartbeatSessionChecks(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Checks")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		sid := a.Login(keys[0], "pc")

		// Another key than the session's: SESSION_MISMATCH, enveloped.
		a.Heartbeat(sid, keys[1]).Kill(t, "SESSION_MISMATCH")
		a.Heartbeat(sid, "AAAAA-BBBBB-CCCCC-DDDDD").Kill(t, "SESSION_MISMATCH")

		// Unknown session IDs: SESSION_EXPIRED (never INVALID_KEY or KEY_*).
		a.Heartbeat("0123456789abcdef", keys[0]).Kill(t, "SESSION_EXPIRED")
		a.Heartbeat("0123456789abcdef", "").Kill(t, "SESSION_EXPIRED")

		// A session of another app is unknown here, and stays alive there.
		b := s.CreateApp("Elsewhere")
		kb := b.GenerateKeys(1, "lifetime", 0, 1)[0]
		sb := b.Login(kb, "pc")
		a.Heartbeat(sb, kb).Kill(t, "SESSION_EXPIRED")
		b.BeatOK(t, sb, kb)

		// A deleted key: its sessions answer SESSION_REVOKED.
		k2 := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		s2 := a.Login(k2, "pc")
		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": k2})
		a.Heartbeat(s2, k2).Kill(t, "SESSION_REVOKED")
		a.Heartbeat(s2, "").Kill(t, "SESSION_REVOKED")

		// A logged-out session: SESSION_EXPIRED.
		k3 := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		s3 := a.Login(k3, "pc")
		a.Env(kwtest.PathLogout, map[string]any{"session_id": s3}).OK(t)
		a.Heartbeat(s3, k3).Kill(t, "SESSION_EXPIRED")

		// A self-service reset: HWID_RESET.
		k4 := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		s4 := a.Login(k4, "pc")
		a.Plain(kwtest.PathSelfReset, map[string]any{"key": k4}).OK(t)
		a.Heartbeat(s4, k4).Kill(t, "HWID_RESET")
	})
}

// The default timeout of the test server (180 s): a session survives exactly
// 180 s of silence and not 181.
func TestClientHeartbeatDefaultTimeout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Timeout")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc")
		s.Clock.Advance(180 * time.Second)
		a.BeatOK(t, sid, key)
		s.Clock.Advance(181 * time.Second)
		a.Heartbeat(sid, key).Kill(t, "SESSION_EXPIRED")
		if n := len(a.Sessions(t, key)); n != 0 {
			t.Fatalf("%d live sessions after the timeout kill, want 0", n)
		}
	})
}

// MAINTENANCE always carries a message to show (§7.10), the app's or, when
// the owner left it blank, a default one.
func TestClientMaintenanceMessage(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Blank")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		sid := a.Login(keys[0], "pc")
		for _, blank := range []string{"", "   "} {
			a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": blank})
			r := a.Heartbeat(sid, keys[0])
			r.Kill(t, "MAINTENANCE")
			if strings.TrimSpace(r.Str("message")) == "" {
				t.Fatalf("heartbeat MAINTENANCE with a blank message: %q", r.Str("message"))
			}
			r = a.LoginReply(keys[1], "pc")
			r.SealedFail(t, "MAINTENANCE")
			if strings.TrimSpace(r.Str("message")) == "" {
				t.Fatalf("login MAINTENANCE with a blank message: %q", r.Str("message"))
			}
		}
		a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": "Till noon."})
		if r := a.LoginReply(keys[1], "pc"); r.Str("message") != "Till noon." {
			t.Fatalf("message = %q, want the app's", r.Str("message"))
		}
	})
}
