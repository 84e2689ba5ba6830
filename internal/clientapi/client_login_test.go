package clientapi_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Login conformance (sdk-compat §1.1, §7.7–§7.9, §7.11; api-reference
// "Licenses and sessions"): binding, device limits, activation, reply shape,
// aliases, overflow retirement, logout and refusal codes.

func TestClientLoginBindsAndActivates(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, nil)

		t.Run("first login binds the device and activates the key", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Bind")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			before := a.KeyView(t, key)
			if before["status"] != "unused" || before["activated_at"] != nil || len(before["devices"].([]any)) != 0 {
				t.Fatalf("fresh key: %v", before)
			}
			s.Clock.Advance(90 * time.Minute)
			at := s.Clock.Now()
			r := a.LoginReply(key, "pc-1")
			r.OK(t)
			if !r.Sealed {
				t.Fatal("login reply not enveloped")
			}
			after := a.KeyView(t, key)
			if after["status"] != "active" {
				t.Fatalf("status after login = %v, want active", after["status"])
			}
			if got := kwtest.WireTime(t, "activated_at", after["activated_at"]); !got.Equal(at) {
				t.Fatalf("activated_at = %v, want %v", got, at)
			}
			if d := a.Devices(t, key); !reflect.DeepEqual(d, []string{"pc-1"}) {
				t.Fatalf("devices = %v, want [pc-1]", d)
			}
			if n := len(a.Sessions(t, key)); n != 1 {
				t.Fatalf("%d live sessions, want 1", n)
			}
			// A later login on the bound device still works and keeps the binding.
			s.Clock.Advance(time.Hour)
			a.Login(key, "pc-1")
			if got := kwtest.WireTime(t, "activated_at", a.KeyView(t, key)["activated_at"]); !got.Equal(at) {
				t.Fatalf("activated_at moved to %v on a second login", got)
			}
			if d := a.Devices(t, key); len(d) != 1 {
				t.Fatalf("devices after relogin = %v", d)
			}
		})

		t.Run("devices up to max_devices, then DEVICE_LIMIT with counts", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Limit")
			key := a.GenerateKeys(1, "lifetime", 0, 3)[0]
			for _, pc := range []string{"pc-a", "pc-b", "pc-c"} {
				a.Login(key, pc)
			}
			r := a.LoginReply(key, "pc-d")
			r.SealedFail(t, "DEVICE_LIMIT")
			inner := kwtest.Numbers(t, clInner(t, a, r))
			if n := kwtest.Int(t, "devices_used", inner["devices_used"]); n != 3 {
				t.Fatalf("devices_used = %d, want 3", n)
			}
			if n := kwtest.Int(t, "max_devices", inner["max_devices"]); n != 3 {
				t.Fatalf("max_devices = %d, want 3", n)
			}
			d := a.Devices(t, key)
			slices.Sort(d)
			if !reflect.DeepEqual(d, []string{"pc-a", "pc-b", "pc-c"}) {
				t.Fatalf("devices = %v; the refused device must not be bound", d)
			}
			if n := len(a.Sessions(t, key)); n != 3 {
				t.Fatalf("%d live sessions after a refused login, want 3", n)
			}
			// A bound device still gets in.
			a.Login(key, "pc-b")
		})

		t.Run("single-device key answers HWID_MISMATCH on another device", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Single")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.Login(key, "pc-1")
			r := a.LoginReply(key, "pc-2")
			r.SealedFail(t, "HWID_MISMATCH")
			if _, ok := r.Body["devices_used"]; ok {
				t.Fatalf("HWID_MISMATCH carries devices_used: %v", r.Body)
			}
			if d := a.Devices(t, key); !reflect.DeepEqual(d, []string{"pc-1"}) {
				t.Fatalf("devices = %v", d)
			}
		})

		t.Run("days keys count from activation", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Days")
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			// Unused: no expiry yet, whatever time passes. (The clock is off
			// the whole second: timestamps are sent to the second.)
			s.Clock.Advance(10*24*time.Hour + 3*time.Hour + 17*time.Minute + 700*time.Millisecond)
			ck := a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": key})
			ck.OK(t)
			if k := ck.Obj("key"); k["status"] != "unused" || k["expires_at"] != nil || k["days_remaining"] != nil {
				t.Fatalf("unused days key: %v", k)
			}
			at := s.Clock.Now().Truncate(time.Second)
			r := a.LoginReply(key, "pc-1")
			r.OK(t)
			u := r.Obj("user")
			if got := kwtest.WireTime(t, "activated_at", u["activated_at"]); !got.Equal(at) {
				t.Fatalf("activated_at = %v, want %v", got, at)
			}
			if got := kwtest.WireTime(t, "expires_at", u["expires_at"]); !got.Equal(at.Add(30 * 24 * time.Hour)) {
				t.Fatalf("expires_at = %v, want activation + 30 days (%v)", got, at.Add(30*24*time.Hour))
			}
			if n := kwtest.Num(t, "days_remaining", u["days_remaining"]); n != 30 {
				t.Fatalf("days_remaining = %d, want 30", n)
			}
			if u["key_type"] != "days" || kwtest.Num(t, "duration", u["duration"]) != 30 {
				t.Fatalf("key_type/duration = %v/%v", u["key_type"], u["duration"])
			}
			// Days remaining count down, rounded up.
			s.Clock.Advance(24*time.Hour + time.Minute)
			r = a.LoginReply(key, "pc-1")
			r.OK(t)
			if n := kwtest.Num(t, "days_remaining", r.Obj("user")["days_remaining"]); n != 29 {
				t.Fatalf("days_remaining a day later = %d, want 29", n)
			}
		})

		t.Run("lifetime keys have null expires_at and days_remaining", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Lifetime")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			r := a.LoginReply(key, "pc-1")
			r.OK(t)
			u := r.Obj("user")
			for _, f := range []string{"expires_at", "days_remaining"} {
				v, ok := u[f]
				if !ok || v != nil {
					t.Fatalf("user.%s = %#v (present %v), want null", f, v, ok)
				}
			}
			if u["key_type"] != "lifetime" {
				t.Fatalf("key_type = %v", u["key_type"])
			}
		})
	})
}

// §7.8 and §7.9: every field of the login reply with its JSON type.
func TestClientLoginReplyShape(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Shape")
		a.SetSettings(t, map[string]any{"login_message": "Welcome <b>back</b>", "heartbeat_interval": 45})
		r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "count": 1, "key_type": "days",
			"duration_value": 7, "max_devices": 2, "features": map[string]any{"pro": true, "tier": "gold", "seats": 3}})
		key := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)

		login := a.LoginReply(key, "HWID-0001")
		login.OK(t)
		m := kwtest.Numbers(t, clInner(t, a, login))
		if m["success"] != true {
			t.Fatalf("success = %#v, want JSON true", m["success"])
		}
		if msg, _ := m["message"].(string); msg == "" {
			t.Fatalf("message = %#v", m["message"])
		}
		if sid, _ := m["session_id"].(string); sid == "" {
			t.Fatalf("session_id = %#v, want a non-empty string", m["session_id"])
		}
		if n := kwtest.Int(t, "heartbeat_interval", m["heartbeat_interval"]); n != 45 {
			t.Fatalf("heartbeat_interval = %d, want the app's 45", n)
		}
		u, ok := m["user"].(map[string]any)
		if !ok {
			t.Fatalf("user = %#v", m["user"])
		}
		want := map[string]string{"license_key": key, "key_type": "days", "hwid": "HWID-0001", "status": "active"}
		for f, v := range want {
			if u[f] != v {
				t.Fatalf("user.%s = %#v, want %q", f, u[f], v)
			}
		}
		if n := kwtest.Int(t, "user.duration", u["duration"]); n != 7 {
			t.Fatalf("user.duration = %d", n)
		}
		if n := kwtest.Int(t, "user.max_devices", u["max_devices"]); n != 2 {
			t.Fatalf("user.max_devices = %d", n)
		}
		if n := kwtest.Int(t, "user.days_remaining", u["days_remaining"]); n != 7 {
			t.Fatalf("user.days_remaining = %d", n)
		}
		kwtest.WireTime(t, "user.activated_at", u["activated_at"])
		kwtest.WireTime(t, "user.expires_at", u["expires_at"])
		f, ok := m["features"].(map[string]any)
		if !ok || f["pro"] != true || f["tier"] != "gold" || kwtest.Int(t, "features.seats", f["seats"]) != 3 || len(f) != 3 {
			t.Fatalf("features = %#v", m["features"])
		}
		app, ok := m["app"].(map[string]any)
		if !ok || app["name"] != "Shape" || app["version"] != "1.0.0" || app["message"] != "Welcome <b>back</b>" {
			t.Fatalf("app = %#v", m["app"])
		}
		// Keys without features still send an object.
		plain := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		r2 := a.LoginReply(plain, "pc")
		r2.OK(t)
		if f, ok := r2.Body["features"].(map[string]any); !ok || len(f) != 0 {
			t.Fatalf("features of a key without flags = %#v, want {}", r2.Body["features"])
		}
		if !strings.Contains(string(clInner(t, a, r2)), `"features":{}`) {
			t.Fatalf("features not an empty object: %s", clInner(t, a, r2))
		}
	})
}

func TestClientLoginAcceptsClientVariants(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Variants")
		keys := a.GenerateKeys(3, "lifetime", 0, 1)

		// VBX trims the key, JS3P strips whitespace: surrounding blanks are ignored.
		r := a.LoginReply("  "+keys[0]+"\t\n", "pc-1")
		r.OK(t)
		if r.Obj("user")["license_key"] != keys[0] {
			t.Fatalf("user.license_key = %v", r.Obj("user")["license_key"])
		}
		// Extra fields some clients send are ignored.
		r = a.Env(kwtest.PathLogin, map[string]any{"license_key": keys[1], "hwid": "ext-5f1c", "version": "1.2.3", "nonce": 7})
		r.OK(t)
		// HWIDs are opaque: up to 256 characters of anything.
		long := strings.Repeat("é", 128) // 256 bytes
		r = a.LoginReply(keys[2], long)
		r.OK(t)
		if r.Obj("user")["hwid"] != long {
			t.Fatal("hwid not returned verbatim")
		}
	})
}

func TestClientLoginRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, nil)

		t.Run("unknown and foreign keys are INVALID_KEY", func(t *testing.T) {
			s := clSub(t, srv)
			a, b := s.CreateApp("Mine"), s.CreateApp("Other")
			foreign := b.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.LoginReply("AAAAA-BBBBB-CCCCC-DDDDD", "pc").SealedFail(t, "INVALID_KEY")
			a.LoginReply(foreign, "pc").SealedFail(t, "INVALID_KEY")
			if k := b.KeyView(t, foreign); k["status"] != "unused" {
				t.Fatalf("foreign key touched: %v", k)
			}
		})

		t.Run("banned paused expired", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("States")
			keys := a.GenerateKeys(4, "days", 1, 1)
			a.MustKeyAction(t, "ban", keys[0], nil)
			a.MustKeyAction(t, "pause", keys[1], nil)
			a.Login(keys[2], "pc")
			a.Login(keys[3], "pc")
			a.MustKeyAction(t, "ban", keys[3], nil) // banned after activation
			s.Clock.Advance(24 * time.Hour)
			a.LoginReply(keys[0], "pc").SealedFail(t, "BANNED")
			a.LoginReply(keys[1], "pc").SealedFail(t, "PAUSED")
			a.LoginReply(keys[2], "pc").SealedFail(t, "EXPIRED")
			a.LoginReply(keys[3], "pc").SealedFail(t, "BANNED")
			// Refused logins bind nothing and open nothing.
			for _, k := range keys[:2] {
				if d := a.Devices(t, k); len(d) != 0 {
					t.Fatalf("refused key %s got devices %v", k, d)
				}
			}
			// Only the expired key's earlier session (ended at its next
			// heartbeat or by the reaper) is live; the refusals opened none.
			for i, want := range []int{0, 0, 1, 0} {
				if n := len(a.Sessions(t, keys[i])); n != want {
					t.Fatalf("key %d: %d live sessions, want %d", i, n, want)
				}
			}
		})

		t.Run("maintenance", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Maint")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": "Back at 5 pm."})
			r := a.LoginReply(key, "pc")
			r.SealedFail(t, "MAINTENANCE")
			if r.Body["message"] != "Back at 5 pm." {
				t.Fatalf("maintenance message = %v", r.Body["message"])
			}
			if k := a.KeyView(t, key); k["status"] != "unused" {
				t.Fatalf("key activated during maintenance: %v", k)
			}
			a.SetSettings(t, map[string]any{"maintenance": false})
			a.Login(key, "pc")
		})

		t.Run("missing and invalid fields", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Fields")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			for name, inner := range map[string]map[string]any{
				"no hwid":          {"license_key": key},
				"empty hwid":       {"license_key": key, "hwid": ""},
				"null hwid":        {"license_key": key, "hwid": nil},
				"no key":           {"hwid": "pc"},
				"blank key":        {"license_key": "   ", "hwid": "pc"},
				"hwid of 257":      {"license_key": key, "hwid": strings.Repeat("h", 257)},
				"numeric key":      {"license_key": 12345, "hwid": "pc"},
				"object hwid":      {"license_key": key, "hwid": map[string]any{"id": 1}},
				"empty inner body": {},
			} {
				t.Run(name, func(t *testing.T) {
					clAppOn(t, a).Env(kwtest.PathLogin, inner).SealedFail(t, "MISSING_FIELDS")
				})
			}
			if k := a.KeyView(t, key); k["status"] != "unused" || len(k["devices"].([]any)) != 0 {
				t.Fatalf("key changed by refused logins: %v", k)
			}
		})
	})
}

// When a login would exceed max_devices live sessions, the oldest session is
// retired (service.go retireOverflow): one already silent past the timeout
// first, then the oldest of the logging-in device, else the oldest overall. The retired session's next heartbeat
// answers SESSION_EXPIRED.
func TestClientLoginOverflowRetiresTheOldestSession(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, nil)

		t.Run("single seat: a new session replaces the old one", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("One")
			key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			s1 := a.Login(key, "pc")
			s.Clock.Advance(time.Second)
			s2 := a.Login(key, "pc")
			a.Heartbeat(s1, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, s2, key)
			if n := len(a.Sessions(t, key)); n != 1 {
				t.Fatalf("%d live sessions, want 1", n)
			}
		})

		t.Run("the same device's oldest session goes first", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("SameDevice")
			key := a.GenerateKeys(1, "lifetime", 0, 2)[0]
			a1 := a.Login(key, "pc-a")
			s.Clock.Advance(time.Second)
			b1 := a.Login(key, "pc-b")
			s.Clock.Advance(time.Second)
			b2 := a.Login(key, "pc-b") // retires b1, not the older a1
			a.Heartbeat(b1, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, a1, key)
			a.BeatOK(t, b2, key)
			s.Clock.Advance(time.Second)
			b3 := a.Login(key, "pc-b") // again b2, though a1 is older
			a.Heartbeat(b2, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, a1, key)
			a.BeatOK(t, b3, key)
			if n := len(a.Sessions(t, key)); n != 2 {
				t.Fatalf("%d live sessions, want 2", n)
			}
		})

		t.Run("otherwise the oldest session overall", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Oldest")
			key := a.GenerateKeys(1, "lifetime", 0, 2)[0]
			a1 := a.Login(key, "pc-a")
			s.Clock.Advance(time.Second)
			a2 := a.Login(key, "pc-a") // a free seat: nothing retired
			a.BeatOK(t, a1, key)
			s.Clock.Advance(time.Second)
			b1 := a.Login(key, "pc-b") // no session of pc-b: the oldest (a1) goes
			a.Heartbeat(a1, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, a2, key)
			a.BeatOK(t, b1, key)
			// Both devices bound: a third device is refused, nothing retired.
			a.LoginReply(key, "pc-c").SealedFail(t, "DEVICE_LIMIT")
			a.BeatOK(t, a2, key)
			a.BeatOK(t, b1, key)
		})

		t.Run("a session silent past the timeout goes before a live one", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Stale")
			key := a.GenerateKeys(1, "lifetime", 0, 2)[0]
			b1 := a.Login(key, "pc-b")
			s.Clock.Advance(time.Second)
			a1 := a.Login(key, "pc-a") // pc-b's b1 is older, and will go silent
			for range 7 {              // 7 × 30 s: past the 180 s timeout for b1
				s.Clock.Advance(30 * time.Second)
				a.BeatOK(t, a1, key)
				if err := s.License.FlushTouches(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			a2 := a.Login(key, "pc-a") // not yet reaped, b1 is dead: it goes, not a1
			a.BeatOK(t, a1, key)
			a.BeatOK(t, a2, key)
			a.Heartbeat(b1, key).Kill(t, "SESSION_EXPIRED")
		})

		t.Run("many sessions on one device: the oldest is retired", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Crashy")
			key := a.GenerateKeys(1, "lifetime", 0, 3)[0]
			var sids []string
			for range 3 {
				sids = append(sids, a.Login(key, "pc"))
				s.Clock.Advance(time.Second)
			}
			b := a.Login(key, "pc-b") // no session of pc-b: oldest overall (sids[0])
			a.Heartbeat(sids[0], key).Kill(t, "SESSION_EXPIRED")
			for _, sid := range append(sids[1:], b) {
				a.BeatOK(t, sid, key)
			}
		})
	})
}

// Logout ends the session at once, frees its seat and keeps the device bound.
func TestClientLogout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Logout")
		key := a.GenerateKeys(1, "lifetime", 0, 2)[0]
		sa := a.Login(key, "pc-a")
		s.Clock.Advance(time.Second)
		sb := a.Login(key, "pc-b")

		r := a.Env(kwtest.PathLogout, map[string]any{"session_id": sa, "license_key": key})
		r.OK(t)
		if !r.Sealed || r.Body["message"] != "Logged out successfully" {
			t.Fatalf("logout reply: sealed=%v %v", r.Sealed, r.Body)
		}
		live := a.Sessions(t, key)
		if len(live) != 1 || live[0]["hwid"] != "pc-b" {
			t.Fatalf("live sessions after logout: %v", live)
		}
		// The seat is free now: another login on pc-b retires nothing.
		s.Clock.Advance(time.Second)
		sb2 := a.Login(key, "pc-b")
		a.BeatOK(t, sb, key)
		a.BeatOK(t, sb2, key)
		// The device stays bound.
		d := a.Devices(t, key)
		slices.Sort(d)
		if !reflect.DeepEqual(d, []string{"pc-a", "pc-b"}) {
			t.Fatalf("devices after logout = %v", d)
		}
		a.LoginReply(key, "pc-c").SealedFail(t, "DEVICE_LIMIT")
		// The logged-out session is gone for good.
		a.Heartbeat(sa, key).Kill(t, "SESSION_EXPIRED")

		// Clients ignore logout failures and send license_key "" or null, or
		// none, and log out unknown or ended sessions: all answer success.
		for i, inner := range []map[string]any{
			{"session_id": sb, "license_key": ""},
			{"session_id": sb2, "license_key": nil},
			{"session_id": sa},
			{"session_id": "no-such-session"},
		} {
			r := a.Env(kwtest.PathLogout, inner)
			if !r.Sealed || r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("logout %d: %s %v", i, r, r.Body)
			}
		}
		if n := len(a.Sessions(t, key)); n != 0 {
			t.Fatalf("%d live sessions, want 0", n)
		}
		a.Env(kwtest.PathLogout, map[string]any{"license_key": key}).SealedFail(t, "MISSING_FIELDS")

		// A session of another app is not logged out through this app.
		b := s.CreateApp("Other")
		kb := b.GenerateKeys(1, "lifetime", 0, 1)[0]
		sother := b.Login(kb, "pc")
		a.Env(kwtest.PathLogout, map[string]any{"session_id": sother}).OK(t)
		b.BeatOK(t, sother, kb)
	})
}
