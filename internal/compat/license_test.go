package compat_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// plainCheckKey: the generations that call check-key with plain JSON (§1.4).
func plainCheckKey(g Gen) bool { return g.Name == "VBX" || g.Name == "JS3P" }

// checkKey sends check-key the way g does: plain (VBX, JS3P) or an envelope
// (with hwid for python).
func checkKey(c *Client, key string) *Reply {
	c.T.Helper()
	switch {
	case plainCheckKey(c.G):
		return c.Plain(pCheckKey, obj("license_key", key))
	case strings.HasPrefix(c.G.Name, "PY"):
		return c.Env(pCheckKey, obj("license_key", key, "hwid", "pc-"+c.G.Name))
	}
	return c.Env(pCheckKey, obj("license_key", key))
}

// §7.5: check-key in both transports, mirrored, with success, valid,
// key{status, expires_at, days_remaining, key_type, max_devices} and
// features; failures with error_code and message; no session, no binding.
func TestCompat05_CheckKeyMirrorsTransport(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := s.CreateApp("Check")
		unused := keyWith(t, a, "days", 30, 3, map[string]any{"features": map[string]any{"pro": true}})
		active := keyWith(t, a, "days", 30, 3, map[string]any{"features": map[string]any{"pro": true}})
		life := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		banned := a.GenerateKeys(1, "days", 7, 1)[0]
		a.Login(active, "pc-active")
		a.Login(life, "pc-life")
		if r := a.KeyAction("ban", banned, nil); r.Status != 200 {
			t.Fatalf("ban: %s", r)
		}
		for _, g := range []Gen{PY10, PY11, NET10, NET, GENpy, GENcs, VBX, JS3P} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a)
				sealed := !plainCheckKey(g)
				r := checkKey(c, unused)
				ok(t, r, sealed)
				if !wantBool(t, r, "valid") || wantStr(t, r, "key.status") != "unused" || wantStr(t, r, "key.key_type") != "days" {
					t.Fatalf("unused key: want valid:true status unused key_type days: %s", r)
				}
				wantNull(t, r, "key.expires_at") // time starts at first login
				if v := must(t, r, "key.days_remaining"); v != nil && !isInt(v) {
					t.Fatalf("key.days_remaining = %#v, want an integer or null", v)
				}
				if wantInt(t, r, "key.max_devices") != 3 {
					t.Fatalf("key.max_devices: %s", r)
				}
				if f := wantObj(t, r, "features"); f["pro"] != true {
					t.Fatalf("features.pro = %#v, want JSON true: %s", f["pro"], r)
				}

				r = checkKey(c, active)
				ok(t, r, sealed)
				if !wantBool(t, r, "valid") || wantStr(t, r, "key.status") != "active" {
					t.Fatalf("active key: %s", r)
				}
				wantTime(t, r, "key.expires_at")
				if d := wantInt(t, r, "key.days_remaining"); d != 30 {
					t.Fatalf("key.days_remaining = %d, want 30", d)
				}

				r = checkKey(c, life)
				ok(t, r, sealed)
				wantNull(t, r, "key.expires_at")
				wantNull(t, r, "key.days_remaining")
				if wantStr(t, r, "key.key_type") != "lifetime" {
					t.Fatalf("lifetime key_type: %s", r)
				}

				// JS3P reads success && valid: a banned key must not be both.
				r = checkKey(c, banned)
				if r.Sealed != sealed || r.Body["success"] == true && wantBool(t, r, "valid") {
					t.Fatalf("banned key: want valid:false (or a failure) in kind, got %s", r)
				}

				r = checkKey(c, "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ")
				if sealed {
					fail(t, r, 200, "INVALID_KEY", true)
				} else {
					if r.Status < 400 || r.Status >= 500 {
						t.Fatalf("plain INVALID_KEY: want a 4xx, got %s", r)
					}
					fail(t, r, r.Status, "INVALID_KEY", false)
				}
				if v, has := r.Body["valid"]; has && v != false {
					t.Fatalf("unknown key: valid = %#v", v)
				}
			})
		}
		// No session opened, no device bound, the unused key still unused.
		if n := sessionCount(t, a, unused); n != 0 {
			t.Fatalf("check-key opened %d sessions", n)
		}
		k := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+unused, nil).Obj("key")
		if k["status"] != "unused" || len(k["devices"].([]any)) != 0 {
			t.Fatalf("check-key changed the key: %v", k)
		}
	})
}

// §7.6: the field aliases of older and newer clients.
func TestCompat06_FieldAliases(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Aliases")

		t.Run("update-v-or-version", func(t *testing.T) {
			for _, tc := range []struct {
				g    Gen
				body O
			}{
				{PY10, obj("version", "1.0.0")},
				{PY11, obj("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", "")},
				{NET, obj("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", "")},
				{GENpy, obj("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", nil)},
				{GENcs, obj("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", nil)},
			} {
				r := NewClient(t, tc.g, a.App).Env(pUpdate, tc.body)
				ok(t, r, true)
				if !wantBool(t, r, "update_available") || wantStr(t, r, "update.version") != "1.1.0" {
					t.Fatalf("%s update check %v: %s", tc.g.Name, tc.body, r)
				}
			}
		})

		t.Run("social-link_id-or-platform", func(t *testing.T) {
			ok(t, NewClient(t, PY10, a.App).Env(pSocial, obj("platform", "discord")), true)
			for _, g := range []Gen{PY11, NET, GENpy} {
				ok(t, NewClient(t, g, a.App).Env(pSocial, obj("link_id", a.LinkID)), true)
			}
			links := s.MustAdmin("GET", "/api/admin/social-links.php?app_id="+a.ID, nil).Body["social_links"].([]any)
			if c := links[0].(map[string]any)["clicks"]; c != float64(4) {
				t.Fatalf("clicks = %v, want 4 (one platform click, three link_id clicks)", c)
			}
		})

		t.Run("slides-empty-or-get_slides", func(t *testing.T) {
			for _, tc := range []struct {
				g    Gen
				body O
			}{{PY10, obj()}, {PY11, obj("action", "get_slides")}, {NET, obj("action", "get_slides")}, {GENpy, obj("action", "get_slides")}} {
				r := NewClient(t, tc.g, a.App).Env(pSlides, tc.body)
				ok(t, r, true)
				if len(wantArr(t, r, "slides")) != 1 {
					t.Fatalf("%s slides: %s", tc.g.Name, r)
				}
			}
		})

		t.Run("password-current-or-old", func(t *testing.T) {
			for _, tc := range []struct {
				g     Gen
				field string
			}{{PY10, "old_password"}, {PY11, "current_password"}, {NET, "current_password"}, {VBX, "current_password"}, {GENpy, "current_password"}} {
				c := NewClient(t, tc.g, a.App)
				user := "pw" + uniq()
				ok(t, c.Plain(pRegister, obj("username", user, "password", "old-password-1", "email", "")), false)
				ok(t, c.Plain(pChangePw, obj("username", user, tc.field, "old-password-1", "new_password", "new-password-2")), false)
				ok(t, c.Plain(pAccLogin, obj("username", user, "password", "new-password-2", "hwid", "pc")), false)
			}
		})

		t.Run("register-forms", func(t *testing.T) {
			key := func() string { return a.GenerateKeys(1, "days", 30, 1)[0] }
			for _, tc := range []struct {
				name string
				g    Gen
				body func(user string) O
				key  bool
			}{
				{"PY1.0-key-hwid", PY10, func(u string) O {
					return obj("username", u, "password", "password-1", "license_key", key(), "hwid", "pc")
				}, true},
				{"PY1.1-no-key", PY11, func(u string) O { return obj("username", u, "password", "password-1", "email", "") }, false},
				{"PY1.1-key-untrimmed", PY11, func(u string) O {
					return obj("username", u, "password", "password-1", "email", u+"@example.com", "license_key", "  "+key()+"\n")
				}, true},
				{"NET1.0-email", NET10, func(u string) O { return obj("username", u, "password", "password-1", "email", "") }, false},
				{"NET1.3-key", NET, func(u string) O {
					return obj("username", u, "password", "password-1", "email", "", "license_key", key())
				}, true},
				{"VBX", VBX, func(u string) O { return obj("username", u, "password", "password-1", "email", "") }, false},
				{"GEN", GENpy, func(u string) O { return obj("username", u, "password", "password-1", "email", "") }, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := NewClient(t, tc.g, a.App).Plain(pRegister, tc.body("reg"+uniq()))
					ok(t, r, false)
					if tc.key && wantInt(t, r, "key.days_added") != 30 {
						t.Fatalf("register with key: key.days_added: %s", r)
					}
				})
			}
		})

		t.Run("optional-hwid-and-username", func(t *testing.T) {
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			py := NewClient(t, PY11, a.App)
			sid := login(t, py, key, "pc-hw").Body["session_id"].(string)
			ok(t, py.Env(pHeartbeat, obj("session_id", sid, "license_key", key, "hwid", "pc-hw")), true) // PY, CPP
			ok(t, NewClient(t, NET, a.App).Env(pHeartbeat, obj("session_id", sid, "license_key", key)), true)
			ok(t, py.Env(pCheckKey, obj("license_key", key, "hwid", "pc-hw")), true)
			for _, tc := range []struct {
				g    Gen
				body O
			}{
				{PY11, obj("license_key", key, "reason", "", "hwid", "pc-hw")},
				{NET, obj("license_key", key, "reason", "Device changed")},
				{VBX, obj("license_key", key, "reason", "new pc", "username", "")},
				{VBX, obj("license_key", key, "reason", "new pc", "username", "someone")},
				{GENpy, obj("license_key", key, "reason", "")},
			} {
				ok(t, NewClient(t, tc.g, a.App).Plain(pReqReset, tc.body), false)
			}
		})

		t.Run("license_key-empty-or-null", func(t *testing.T) {
			key := a.GenerateKeys(1, "days", 30, 2)[0]
			for _, v := range []any{"", nil} {
				c := NewClient(t, NET, a.App)
				sid := login(t, c, key, "pc-null").Body["session_id"].(string)
				ok(t, beat(c, sid, v), true)
				ok(t, c.Env(pLogout, obj("session_id", sid, "license_key", v)), true)
			}
			// Account sessions: no key at all (PY1.0 sends null, NET null, PY1.1 "").
			user := "nokey" + uniq()
			ok(t, NewClient(t, PY11, a.App).Plain(pRegister, obj("username", user, "password", "password-1", "email", "")), false)
			for _, tc := range []struct {
				g Gen
				v any
			}{{PY10, nil}, {NET, nil}, {PY11, ""}, {JS3P, ""}} {
				c := NewClient(t, tc.g, a.App)
				r := c.Plain(pAccLogin, obj("username", user, "password", "password-1", "hwid", "pc-acc"))
				ok(t, r, false)
				sid := r.Body["session_id"].(string)
				ok(t, beat(c, sid, tc.v), true)
				ok(t, c.Env(pLogout, obj("session_id", sid, "license_key", tc.v)), true)
			}
		})
	})
}

// §7.7: sessions keyed on session_id, session_id a non-empty JSON string,
// heartbeat_interval a JSON integer ≥ 5 (server-dictated) on login and
// account-login, beats 60 s apart plus misses tolerated.
func TestCompat07_Sessions(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Sessions")
		user := "sess" + uniq()
		ok(t, NewClient(t, PY11, a.App).Plain(pRegister, obj("username", user, "password", "password-1", "email", "")), false)
		for _, g := range allGens {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				for _, r := range []*Reply{
					login(t, c, a.GenerateKeys(1, "days", 30, 1)[0], "pc-"+g.Name),
					c.Plain(pAccLogin, obj("username", user, "password", "password-1", "hwid", "pc-account")),
				} {
					ok(t, r, r.Sealed)
					wantNonEmpty(t, r, "session_id")
					if iv := wantInt(t, r, "heartbeat_interval"); iv != 30 { // CPP and GEN-C# need a JSON integer
						t.Fatalf("heartbeat_interval = %d, want the default 30", iv)
					}
				}
			})
		}

		// The interval is the server's: clients floor it at 5, so the server
		// never dictates less.
		if r := s.Admin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"heartbeat_interval": 4}); r.Status != 400 {
			t.Fatalf("heartbeat_interval 4 accepted: %s", r)
		}
		settings(t, a.App, map[string]any{"heartbeat_interval": 5})
		c := NewClient(t, CPP11, a.App)
		key := a.GenerateKeys(1, "days", 30, 2)[0]
		r := login(t, c, key, "pc-a")
		if wantInt(t, r, "heartbeat_interval") != 5 {
			t.Fatalf("heartbeat_interval after setting 5: %s", r)
		}
		r2 := c.Plain(pAccLogin, obj("username", user, "password", "password-1", "hwid", "pc-account"))
		if wantInt(t, r2, "heartbeat_interval") != 5 {
			t.Fatalf("account-login heartbeat_interval after setting 5: %s", r2)
		}
		settings(t, a.App, map[string]any{"heartbeat_interval": 30})

		// Two sessions of one key, told apart by session_id alone (no
		// license_key, as account-style clients send).
		sidA := r.Body["session_id"].(string)
		sidB := login(t, c, key, "pc-b").Body["session_id"].(string)
		if sidA == sidB {
			t.Fatal("two logins got the same session_id")
		}
		// PY1.0 beats every 60 s whatever the interval; a client may miss
		// beats: gaps of 60, 120 and 180 s keep the session.
		for _, gap := range []time.Duration{60, 60, 120, 180} {
			s.Clock.Advance(gap * time.Second)
			ok(t, beat(c, sidA, nil), true)
			ok(t, beat(c, sidB, ""), true)
		}
		ok(t, c.Env(pLogout, obj("session_id", sidA, "license_key", key)), true)
		ok(t, beat(c, sidB, key), true)
		fail(t, beat(c, sidA, key), 200, "SESSION_EXPIRED", true)
		// Silence well past any timeout ends the session with a kill code.
		s.Clock.Advance(time.Hour)
		fail(t, beat(c, sidB, key), 200, "SESSION_EXPIRED", true)
	})
}

// §7.8: the login success every generation reads, and account-login's extras.
func TestCompat08_LoginSuccess(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Login shape")
		feats := map[string]any{"pro": true, "tier": "gold", "seats": 3}
		for _, g := range allGens {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				key := keyWith(t, a.App, "days", 30, 2, map[string]any{"features": feats})
				hwid := "pc-" + g.Name
				r := login(t, c, key, hwid)
				if wantStr(t, r, "message") == "" {
					t.Fatalf("login message empty: %s", r)
				}
				wantNonEmpty(t, r, "session_id")
				wantInt(t, r, "heartbeat_interval")
				if wantStr(t, r, "user.license_key") != key || wantStr(t, r, "user.hwid") != hwid {
					t.Fatalf("user.license_key/hwid: %s", r)
				}
				if wantStr(t, r, "user.key_type") != "days" || wantStr(t, r, "user.status") != "active" {
					t.Fatalf("user.key_type/status: %s", r)
				}
				wantNumber(t, r, "user.duration")
				act := wantTime(t, r, "user.activated_at")
				exp := wantTime(t, r, "user.expires_at")
				if !act.Equal(s.Clock.Now()) || !exp.Equal(act.Add(30*24*time.Hour)) {
					t.Fatalf("activated_at %v expires_at %v, want now and now+30d", act, exp)
				}
				if wantInt(t, r, "user.days_remaining") != 30 || wantInt(t, r, "user.max_devices") != 2 {
					t.Fatalf("user.days_remaining/max_devices: %s", r)
				}
				f := wantObj(t, r, "features")
				if f["pro"] != true || f["tier"] != "gold" || f["seats"] != json.Number("3") {
					t.Fatalf("features = %v, want the key's flags with their JSON types", f)
				}
				if wantStr(t, r, "app.name") != "Login shape" || wantStr(t, r, "app.message") != "Welcome back" {
					t.Fatalf("app block: %s", r)
				}
				wantStr(t, r, "app.version")
				if _, has := r.Body["seller"]; has {
					for _, f := range []string{"seller.type", "seller.name", "seller.contact"} {
						wantStr(t, r, f)
					}
				}
				if _, has := r.Body["texts"]; has {
					for k, v := range wantObj(t, r, "texts") {
						if _, isStr := v.(string); !isStr {
							t.Fatalf("texts.%s is not a string: %s", k, r)
						}
					}
				}
				if _, has := r.Body["slides"]; has {
					wantArr(t, r, "slides")
				}
			})
		}

		t.Run("lifetime", func(t *testing.T) {
			r := login(t, NewClient(t, JS3P, a.App), a.GenerateKeys(1, "lifetime", 0, 1)[0], "pc-life")
			wantNull(t, r, "user.expires_at")
			wantNull(t, r, "user.days_remaining")
			if wantStr(t, r, "user.key_type") != "lifetime" {
				t.Fatalf("lifetime key_type: %s", r)
			}
		})

		// account-login: NET and GEN read the top-level license_key, PY1.1+
		// falls back to user.license_key, PY1.0 reads only user.license_key.
		t.Run("account-login", func(t *testing.T) {
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			user := "Acc" + uniq()
			ok(t, NewClient(t, NET, a.App).Plain(pRegister, obj("username", user, "password", "password-1", "email", "", "license_key", key)), false)
			for _, g := range []Gen{PY10, PY11, NET, GENpy, GENcs, VBX} {
				r := NewClient(t, g, a.App).Plain(pAccLogin, obj("username", user, "password", "password-1", "hwid", "pc-acc"))
				ok(t, r, false)
				wantNonEmpty(t, r, "session_id")
				wantInt(t, r, "heartbeat_interval")
				if wantStr(t, r, "license_key") != key || wantStr(t, r, "user.license_key") != key {
					t.Fatalf("%s account-login: want license_key and user.license_key %s: %s", g.Name, key, r)
				}
				if wantStr(t, r, "user.username") != user {
					t.Fatalf("user.username: %s", r)
				}
				wantTime(t, r, "user.expires_at")
			}
		})
	})
}

// §7.9: every timestamp is ISO 8601 UTC with T and Z; lifetime is null for
// expires_at and days_remaining; booleans are JSON booleans — across every
// client reply.
func TestCompat09_TimestampsAndTypes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Types")
		s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "title": "Windowed",
			"starts_at": "2026-10-01T00:00:00Z", "ends_at": "2027-01-01T00:00:00Z"})
		c := NewClient(t, NET, a.App)
		py := NewClient(t, PY11, a.App)
		days := a.GenerateKeys(3, "days", 30, 1)
		life := a.GenerateKeys(3, "lifetime", 0, 1)
		var replies []*Reply
		add := func(r *Reply) *Reply {
			t.Helper()
			if r.Body["success"] != true {
				t.Fatalf("setup call failed: %s", r)
			}
			replies = append(replies, r)
			return r
		}
		add(login(t, c, days[0], "pc-1"))
		lr := add(login(t, c, life[0], "pc-2"))
		add(checkKey(c, days[0]))
		add(checkKey(NewClient(t, VBX, a.App), days[1]))
		lc := add(checkKey(NewClient(t, JS3P, a.App), life[0]))
		add(py.Plain(pTrial, obj("hwid", "trial-pc")))
		add(py.Plain(pSelfReset, obj("key", days[0], "reason", "moving")))
		add(py.Plain(pRegister, obj("username", "types1", "password", "password-1", "email", "", "license_key", days[2])))
		lreg := add(py.Plain(pRegister, obj("username", "types2", "password", "password-1", "email", "", "license_key", life[1])))
		add(py.Plain(pAccLogin, obj("username", "types1", "password", "password-1", "hwid", "pc-3")))
		add(py.Plain(pRedeem, obj("username", "types1", "password", "password-1", "license_key", a.GenerateKeys(1, "days", 5, 1)[0])))
		lred := add(py.Plain(pRedeem, obj("username", "types1", "password", "password-1", "license_key", life[2])))
		add(c.Get(pInfo, nil))
		add(c.Env(pUpdate, obj("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", "")))
		add(c.Env(pSlides, obj("action", "get_slides")))

		for _, r := range replies {
			walkTypes(t, r, "", r.Body)
		}
		for _, tc := range []struct {
			r     *Reply
			paths []string
		}{
			{lr, []string{"user.expires_at", "user.days_remaining"}},
			{lc, []string{"key.expires_at", "key.days_remaining"}},
			{lreg, []string{"user.expires_at", "user.days_remaining"}},
			{lred, []string{"expires_at", "days_remaining"}},
		} {
			for _, p := range tc.paths {
				wantNull(t, tc.r, p)
			}
		}
		if !wantBool(t, lreg, "key.lifetime") || !wantBool(t, lred, "lifetime") {
			t.Fatalf("lifetime grants must say lifetime:true: %s / %s", lreg, lred)
		}
		if wantBool(t, replies[len(replies)-3], "app.maintenance_mode") {
			t.Fatal("maintenance_mode true")
		}
	})
}

// boolFields are members clients read as booleans.
var boolFields = map[string]bool{"success": true, "valid": true, "update_available": true, "maintenance_mode": true,
	"lifetime": true, "is_mandatory": true}

// walkTypes checks every member of a reply: *_at strings are ISO 8601 UTC
// with Z, known booleans are booleans, days_remaining is an integer or null.
func walkTypes(t *testing.T, r *Reply, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := strings.TrimPrefix(path+"."+k, ".")
			switch {
			case strings.HasSuffix(k, "_at") && e != nil:
				if s, isStr := e.(string); !isStr || !isoZ.MatchString(s) {
					t.Fatalf("%s = %#v: want ISO 8601 UTC with T and Z: %s", p, e, r)
				}
			case boolFields[k]:
				if _, isBool := e.(bool); !isBool {
					t.Fatalf("%s = %#v: want a JSON boolean: %s", p, e, r)
				}
			case k == "days_remaining" || k == "max_devices" || k == "heartbeat_interval" || k == "days_added":
				if e != nil && !isInt(e) {
					t.Fatalf("%s = %#v: want a JSON integer: %s", p, e, r)
				}
			}
			walkTypes(t, r, p, e)
		}
	case []any:
		for _, e := range x {
			walkTypes(t, r, path+"[]", e)
		}
	}
}

// §7.10: heartbeat kill codes are enveloped and only ever the eight codes
// every generation stops on, each with a message; never HWID_MISMATCH,
// INVALID_KEY or a KEY_* code.
func TestCompat10_HeartbeatKillCodes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// Sessions outlive a day of silence so that a key's expiry, not the
		// session timeout, is what the last beat meets.
		s := start(t, engine, func(c *config.Config) { c.SessionTimeout = 48 * time.Hour })
		a := richApp(t, s, "Kill codes")
		admin := func(method, path string, body map[string]any) {
			t.Helper()
			body["app_id"] = a.ID
			s.MustAdmin(method, path, body)
		}
		kill := func(t *testing.T, c *Client, sid string, key any, want string) {
			t.Helper()
			r := beat(c, sid, key)
			fail(t, r, 200, want, true)
			if !killCodes[want] {
				t.Fatalf("test bug: %s is not a kill code", want)
			}
		}
		type scenario struct {
			name string
			g    Gen
			want string
			do   func(key, sid string)
		}
		user := func() (string, string) {
			u := "kill" + uniq()
			ok(t, NewClient(t, PY11, a.App).Plain(pRegister, obj("username", u, "password", "password-1", "email", "")), false)
			return u, "password-1"
		}
		for _, sc := range []scenario{
			{"ban", PY11, "BANNED", func(key, _ string) { a.KeyAction("ban", key, nil) }},
			{"pause", NET, "PAUSED", func(key, _ string) { a.KeyAction("pause", key, nil) }},
			{"admin-reset-hwid", CPP11, "HWID_RESET", func(key, _ string) { a.KeyAction("reset-hwid", key, nil) }},
			{"self-reset-hwid", GENcs, "HWID_RESET", func(key, _ string) {
				ok(t, NewClient(t, NET, a.App).Plain(pSelfReset, obj("key", key, "reason", "Reset from app")), false)
			}},
			{"maintenance", GENpy, "MAINTENANCE", func(string, string) { settings(t, a.App, map[string]any{"maintenance": true}) }},
			{"session-revoked", VBX, "SESSION_REVOKED", func(_, sid string) { admin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": sid}) }},
			{"key-deleted", JS3P, "SESSION_REVOKED", func(key, _ string) {
				admin("DELETE", "/api/admin/keys.php", map[string]any{"license_key": key})
			}},
			{"key-rotated", PY10, "SESSION_REVOKED", func(key, _ string) { a.KeyAction("rotate", key, nil) }},
			{"logged-out", NET10, "SESSION_EXPIRED", func(key, sid string) {
				ok(t, NewClient(t, NET10, a.App).Env(pLogout, obj("session_id", sid, "license_key", key)), true)
			}},
			{"retired-by-new-login", PY11, "SESSION_EXPIRED", func(key, _ string) {
				login(t, NewClient(t, PY11, a.App), key, "pc-retired-by-new-login") // same device, one seat
			}},
		} {
			t.Run(sc.name+"/"+sc.g.Name, func(t *testing.T) {
				c := NewClient(t, sc.g, a.App)
				key := a.GenerateKeys(1, "days", 30, 1)[0]
				sid := login(t, c, key, "pc-"+sc.name).Body["session_id"].(string)
				ok(t, beat(c, sid, key), true)
				sc.do(key, sid)
				kill(t, c, sid, key, sc.want)
				settings(t, a.App, map[string]any{"maintenance": false})
				// The session is over: later beats still get a kill code.
				if r := beat(c, sid, key); !r.Sealed || r.Body["success"] != false || !killCodes[r.Body["error_code"].(string)] {
					t.Fatalf("beat after %s: %s", sc.want, r)
				}
			})
		}

		t.Run("unknown-session/CPP1.0", func(t *testing.T) {
			kill(t, NewClient(t, CPP10, a.App), "0123456789abcdef", a.GenerateKeys(1, "days", 1, 1)[0], "SESSION_EXPIRED")
		})

		t.Run("mismatch/NET", func(t *testing.T) {
			c := NewClient(t, NET, a.App)
			key, other := a.GenerateKeys(1, "days", 30, 1)[0], a.GenerateKeys(1, "days", 30, 1)[0]
			sid := login(t, c, key, "pc-mm").Body["session_id"].(string)
			kill(t, c, sid, other, "SESSION_MISMATCH")
			ok(t, beat(c, sid, key), true) // the session stays its key's
		})

		// A second machine's login on a bound one-device key is refused, and
		// the running session is not told HWID_MISMATCH.
		t.Run("other-device-login/PY1.1", func(t *testing.T) {
			c := NewClient(t, PY11, a.App)
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			sid := login(t, c, key, "pc-first").Body["session_id"].(string)
			fail(t, c.Env(pLogin, obj("license_key", key, "hwid", "pc-second")), 200, "HWID_MISMATCH", true)
			ok(t, beat(c, sid, key), true)
		})

		accountCase := func(name string, g Gen, want string, do func(u, pw string)) {
			t.Run("account-"+name+"/"+g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				u, pw := user()
				r := c.Plain(pAccLogin, obj("username", u, "password", pw, "hwid", "pc-"+name))
				ok(t, r, false)
				sid := r.Body["session_id"].(string)
				ok(t, beat(c, sid, nil), true)
				do(u, pw)
				kill(t, c, sid, nil, want)
			})
		}
		accountCase("password-changed", NET, "SESSION_REVOKED", func(u, pw string) {
			ok(t, NewClient(t, NET, a.App).Plain(pChangePw, obj("username", u, "current_password", pw, "new_password", "password-2")), false)
		})
		accountCase("banned", PY11, "BANNED", func(u, _ string) {
			s.MustAdmin("POST", "/api/admin/accounts.php?app_id="+a.ID+"&action=ban", map[string]any{"username": u})
		})
		accountCase("expired", GENcs, "EXPIRED", func(u, _ string) {
			s.MustAdmin("POST", "/api/admin/accounts.php?app_id="+a.ID+"&action=set-expiry", map[string]any{"username": u,
				"expires_at": s.Clock.Now().Add(-time.Hour).Format(time.RFC3339)})
		})

		// Last (the clock moves a day): a one-day key's running session.
		t.Run("key-expired/GEN-py", func(t *testing.T) {
			c := NewClient(t, GENpy, a.App)
			key := a.GenerateKeys(1, "days", 1, 1)[0]
			sid := login(t, c, key, "pc-exp").Body["session_id"].(string)
			s.Clock.Advance(25 * time.Hour)
			kill(t, c, sid, key, "EXPIRED")
		})
	})
}

// §7.11: login refusals, enveloped, each success:false with its code and a
// message (trial, reset and account codes: items 14–16).
func TestCompat11_LoginRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Refusals")
		keys := a.GenerateKeys(8, "days", 1, 1)
		multi := a.GenerateKeys(1, "days", 30, 2)[0]
		gens := []Gen{PY10, PY11, NET10, NET, CPP10, CPP11, VBX, GENpy, GENcs, JS3P}
		refuse := func(i int, inner O, code string) *Reply {
			t.Helper()
			c := NewClient(t, gens[i%len(gens)], a.App)
			r := c.Env(pLogin, inner)
			fail(t, r, 200, code, true)
			return r
		}
		refuse(0, obj("license_key", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", "hwid", "pc"), "INVALID_KEY")
		login(t, NewClient(t, NET, a.App), keys[0], "pc-owner")
		refuse(1, obj("license_key", keys[0], "hwid", "pc-other"), "HWID_MISMATCH")
		login(t, NewClient(t, NET, a.App), multi, "pc-m1")
		login(t, NewClient(t, NET, a.App), multi, "pc-m2")
		r := refuse(2, obj("license_key", multi, "hwid", "pc-m3"), "DEVICE_LIMIT")
		if wantInt(t, r, "devices_used") != 2 || wantInt(t, r, "max_devices") != 2 {
			t.Fatalf("DEVICE_LIMIT needs devices_used and max_devices: %s", r)
		}
		a.KeyAction("ban", keys[1], nil)
		refuse(3, obj("license_key", keys[1], "hwid", "pc"), "BANNED")
		a.KeyAction("pause", keys[2], nil)
		refuse(4, obj("license_key", keys[2], "hwid", "pc"), "PAUSED")
		ok(t, NewClient(t, PY11, a.App).Plain(pRegister, obj("username", "redeemer", "password", "password-1", "email", "",
			"license_key", keys[3])), false)
		refuse(5, obj("license_key", keys[3], "hwid", "pc"), "KEY_REDEEMED")
		refuse(6, obj("hwid", "pc"), "MISSING_FIELDS")
		refuse(7, obj("license_key", keys[4]), "MISSING_FIELDS")
		refuse(8, obj("license_key", 12345, "hwid", "pc"), "MISSING_FIELDS")
		settings(t, a.App, map[string]any{"maintenance": true})
		refuse(9, obj("license_key", keys[5], "hwid", "pc"), "MAINTENANCE")
		settings(t, a.App, map[string]any{"maintenance": false})
		login(t, NewClient(t, NET, a.App), keys[6], "pc-exp")
		s.Clock.Advance(25 * time.Hour)
		refuse(0, obj("license_key", keys[6], "hwid", "pc-exp"), "EXPIRED")
		// OPEN_ACCESS_LIMIT belongs to the vendor's open-access mode, which
		// keyward does not have; RATE_LIMITED is item 12's.
	})
}
