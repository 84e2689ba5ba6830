package compat_test

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

	"github.com/keyward/keyward/internal/kwtest"
)

var trialKeyRe = regexp.MustCompile(`^TRIAL-[0-9A-Z]{5}-[0-9A-Z]{5}-[0-9A-Z]{5}$`)

// §7.14: trial.php {hwid} answers the new key as both trial_key (VBX-pkg,
// C# console) and license_key (hand-written VBX, .NET fixture), with
// expires_at; refusals TRIAL_DISABLED, TRIAL_USED, TRIAL_LIMIT.
func TestCompat14_Trial(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Trials")
		settings(t, a.App, map[string]any{"trial_duration": 2, "trial_duration_unit": "hours"})
		for _, g := range []Gen{PY10, PY11, NET10, NET, CPP11, VBX, GENpy, GENcs, JS3P} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				r := c.Plain(pTrial, obj("hwid", "trial-"+g.Name))
				ok(t, r, false)
				tk, lk := wantNonEmpty(t, r, "trial_key"), wantNonEmpty(t, r, "license_key")
				if tk != lk || !trialKeyRe.MatchString(tk) {
					t.Fatalf("trial_key %q and license_key %q must be the same TRIAL-… key", tk, lk)
				}
				if exp := wantTime(t, r, "expires_at"); !exp.Equal(s.Clock.Now().Add(2 * time.Hour)) {
					t.Fatalf("expires_at %v, want now+2h", exp)
				}
				// The key works as a license key on that device.
				login(t, c, tk, "trial-"+g.Name)
			})
		}

		t.Run("TRIAL_DISABLED", func(t *testing.T) {
			off := s.CreateApp("No trials")
			fail(t, NewClient(t, VBX, off).Plain(pTrial, obj("hwid", "pc")), 403, "TRIAL_DISABLED", false)
		})
		t.Run("TRIAL_LIMIT", func(t *testing.T) {
			capped := s.CreateApp("Capped trials")
			settings(t, capped, map[string]any{"trial_enabled": true, "trial_ip_limit": 1})
			c := NewClient(t, NET, capped)
			ok(t, c.Plain(pTrial, obj("hwid", "cap-1")), false)
			fail(t, c.Plain(pTrial, obj("hwid", "cap-2")), 403, "TRIAL_LIMIT", false)
		})
		t.Run("TRIAL_USED", func(t *testing.T) {
			c := NewClient(t, PY11, a.App)
			ok(t, c.Plain(pTrial, obj("hwid", "used-pc")), false)
			s.Clock.Advance(3 * time.Hour)
			fail(t, c.Plain(pTrial, obj("hwid", "used-pc")), 403, "TRIAL_USED", false)
		})
	})
}

// §7.15: the self-service move (/api/customer/reset-hwid.php {key, reason})
// unbinds every device, ends every session, honours the switch and the
// cooldown and returns next_reset_at; the deprecated request-hwid-reset.php
// answers the same whether or not the key exists.
func TestCompat15_HWIDReset(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Resets")
		// reason: PY/NET cut it to 255 UTF-16 units without splitting a pair.
		long := strings.Repeat("é", 253) + "😀"
		for _, tc := range []struct {
			g      Gen
			key    func(string) string
			reason string
		}{
			{NET, func(k string) string { return k }, "Reset from app"},
			{PY11, func(k string) string { return " " + k + " " }, long},
			{CPP11, func(k string) string { return k }, ""},
			{VBX, func(k string) string { return k }, "Moving to my new laptop"},
		} {
			t.Run(tc.g.Name, func(t *testing.T) {
				c := NewClient(t, tc.g, a.App)
				key := a.GenerateKeys(1, "days", 30, 2)[0]
				sid1 := login(t, c, key, "old-pc-1").Body["session_id"].(string)
				sid2 := login(t, c, key, "old-pc-2").Body["session_id"].(string)
				r := c.Plain(pSelfReset, obj("key", tc.key(key), "reason", tc.reason)) // exactly these two fields
				ok(t, r, false)
				wantNonEmpty(t, r, "message")
				if next := wantTime(t, r, "next_reset_at"); !next.Equal(s.Clock.Now().Add(12 * time.Hour)) {
					t.Fatalf("next_reset_at %v, want now + the 12 h default cooldown", next)
				}
				fail(t, beat(c, sid1, key), 200, "HWID_RESET", true)
				fail(t, beat(c, sid2, key), 200, "HWID_RESET", true)
				k := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+key, nil).Obj("key")
				if len(k["devices"].([]any)) != 0 {
					t.Fatalf("devices after the move: %v", k["devices"])
				}
				login(t, c, key, "new-pc")
				s.Clock.Advance(5 * time.Minute) // past a client's retry window
				r = c.Plain(pSelfReset, obj("key", key, "reason", "again"))
				fail(t, r, 429, "RATE_LIMITED", false)
				if m := r.Body["message"].(string); !strings.Contains(m, "Please wait ~") || !strings.Contains(m, "hour") {
					t.Fatalf("cooldown message %q, want \"… Please wait ~N hour(s) …\"", m)
				}
			})
		}

		t.Run("refusals", func(t *testing.T) {
			c := NewClient(t, NET, a.App)
			fail(t, c.Plain(pSelfReset, obj("key", a.GenerateKeys(1, "days", 30, 1)[0], "reason", "x")), 400, "KEY_NOT_ACTIVE", false)
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			a.Login(key, "pc")
			a.KeyAction("reset-hwid", key, nil)
			fail(t, c.Plain(pSelfReset, obj("key", key, "reason", "x")), 400, "NO_HWID", false)
			settings(t, a.App, map[string]any{"self_reset_enabled": false})
			a.Login(key, "pc")
			fail(t, c.Plain(pSelfReset, obj("key", key, "reason", "x")), 403, "SELF_RESET_DISABLED", false)
			settings(t, a.App, map[string]any{"self_reset_enabled": true})
		})

		// Deprecated request-hwid-reset.php: no probing whether a key exists.
		t.Run("deprecated-request", func(t *testing.T) {
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			for _, tc := range []struct {
				g    Gen
				body func(k string) O
			}{
				{PY10, func(k string) O { return obj("license_key", k, "reason", "", "hwid", "pc") }},
				{PY11, func(k string) O { return obj("license_key", k, "reason", "", "hwid", "pc") }},
				{NET, func(k string) O { return obj("license_key", k, "reason", "Device changed") }},
				{VBX, func(k string) O { return obj("license_key", k, "reason", "new pc", "username", "") }},
				{GENpy, func(k string) O { return obj("license_key", k, "reason", "") }},
			} {
				c := NewClient(t, tc.g, a.App)
				real := c.Plain(pReqReset, tc.body(key))
				fake := c.Plain(pReqReset, tc.body("ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ"))
				ok(t, real, false)
				if real.Status != fake.Status || !bytes.Equal(real.Raw, fake.Raw) {
					t.Fatalf("%s: request-hwid-reset differs for a real and an unknown key:\n%s\n%s", tc.g.Name, real, fake)
				}
			}
		})
	})
}

// §7.16: app user accounts — register (optional key, redeemed), login
// (session + heartbeat_interval), change-password (ends every session),
// redeem (both forms, top-level fields), lockout via 429.
func TestCompat16_Accounts(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Accounts")
		settings(t, a.App, map[string]any{"account_signup_days": 0})
		net, py := NewClient(t, NET, a.App), NewClient(t, PY11, a.App)

		// Register with a key (NET1.3 RegisterAccountWithKeyAsync).
		key := keyWith(t, a.App, "days", 30, 3, nil)
		r := net.Plain(pRegister, obj("username", "alice", "password", "password-1", "email", "alice@example.com", "license_key", key))
		ok(t, r, false)
		wantInt(t, r, "user.id")
		if wantStr(t, r, "user.username") != "alice" || wantStr(t, r, "user.status") != "active" {
			t.Fatalf("register user block: %s", r)
		}
		wantTime(t, r, "user.expires_at")
		if wantInt(t, r, "user.days_remaining") != 30 || wantInt(t, r, "user.max_devices") != 3 {
			t.Fatalf("register user days/devices: %s", r)
		}
		if wantInt(t, r, "key.days_added") != 30 || wantBool(t, r, "key.lifetime") {
			t.Fatalf("register key block: %s", r)
		}
		fail(t, net.Env(pLogin, obj("license_key", key, "hwid", "pc")), 200, "KEY_REDEEMED", true)
		fail(t, py.Plain(pRegister, obj("username", "bob", "password", "password-1", "email", "", "license_key", key)), 409, "KEY_ALREADY_USED", false)
		fail(t, py.Plain(pRegister, obj("username", "ALICE", "password", "other-pass-9", "email", "")), 409, "USERNAME_EXISTS", false)
		inUse := a.GenerateKeys(1, "days", 30, 1)[0]
		a.Login(inUse, "pc")
		r = py.Plain(pRegister, obj("username", "carol", "password", "password-1", "email", "", "license_key", inUse))
		fail(t, r, r.Status, "KEY_IN_USE", false)
		r = py.Plain(pRegister, obj("username", "carol", "password", "password-1", "email", "", "license_key", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ"))
		fail(t, r, r.Status, "INVALID_KEY", false)
		settings(t, a.App, map[string]any{"account_key_required": true})
		fail(t, NewClient(t, VBX, a.App).Plain(pRegister, obj("username", "dave", "password", "password-1", "email", "")), 400, "KEY_REQUIRED", false)
		settings(t, a.App, map[string]any{"account_key_required": false})

		// Login: a session like a key's, beaten without a license_key.
		r = net.Plain(pAccLogin, obj("username", "alice", "password", "password-1", "hwid", "pc-a"))
		ok(t, r, false)
		sid := wantNonEmpty(t, r, "session_id")
		wantInt(t, r, "heartbeat_interval")
		ok(t, beat(net, sid, nil), true)
		fail(t, net.Plain(pAccLogin, obj("username", "alice", "password", "nope-nope", "hwid", "pc-a")), 401, "INVALID_CREDENTIALS", false)

		// Redeem, password form (PY1.1) and session form (NET1.3).
		r = py.Plain(pRedeem, obj("username", "alice", "password", "password-1", "license_key", " "+a.GenerateKeys(1, "days", 10, 1)[0]+" "))
		ok(t, r, false)
		if wantInt(t, r, "days_added") != 10 || wantBool(t, r, "lifetime") || wantInt(t, r, "days_remaining") != 40 {
			t.Fatalf("redeem (password form): %s", r)
		}
		wantTime(t, r, "expires_at")
		wantInt(t, r, "max_devices")
		if wantStr(t, r, "mode") != "stack" {
			t.Fatalf("redeem mode: %s", r)
		}
		r = net.Plain(pRedeem, obj("session_id", sid, "license_key", a.GenerateKeys(1, "days", 5, 1)[0]))
		ok(t, r, false)
		if wantInt(t, r, "days_remaining") != 45 {
			t.Fatalf("redeem (session form): %s", r)
		}
		keySid := login(t, net, a.GenerateKeys(1, "days", 5, 1)[0], "pc-k").Body["session_id"].(string)
		r = net.Plain(pRedeem, obj("session_id", keySid, "license_key", a.GenerateKeys(1, "days", 5, 1)[0]))
		fail(t, r, r.Status, "SESSION_EXPIRED", false)

		// An account without time redeems with its password (login refuses it).
		ok(t, py.Plain(pRegister, obj("username", "erin", "password", "password-1", "email", "")), false)
		r = py.Plain(pAccLogin, obj("username", "erin", "password", "password-1", "hwid", "pc-e"))
		fail(t, r, r.Status, "EXPIRED", false)
		ok(t, py.Plain(pRedeem, obj("username", "erin", "password", "password-1", "license_key", a.GenerateKeys(1, "lifetime", 0, 1)[0])), false)
		r = py.Plain(pRedeem, obj("username", "erin", "password", "password-1", "license_key", a.GenerateKeys(1, "days", 5, 1)[0]))
		fail(t, r, 409, "ALREADY_LIFETIME", false)

		// change-password ends every session of the account.
		r2 := py.Plain(pAccLogin, obj("username", "alice", "password", "password-1", "hwid", "pc-a"))
		ok(t, r2, false)
		ok(t, py.Plain(pChangePw, obj("username", "alice", "current_password", "password-1", "new_password", "password-2")), false)
		fail(t, beat(net, sid, nil), 200, "SESSION_REVOKED", true)
		fail(t, beat(py, r2.Body["session_id"].(string), ""), 200, "SESSION_REVOKED", true)

		// Lockout: repeated wrong passwords lock the username with a 429,
		// which every SDK reads as a refusal (success:false) or a transport error.
		var locked *Reply
		for i := 0; i < 20 && locked == nil; i++ {
			if r := py.Plain(pAccLogin, obj("username", "alice", "password", "wrong-guess", "hwid", "pc-a")); r.Status == 429 {
				locked = r
			} else {
				fail(t, r, 401, "INVALID_CREDENTIALS", false)
			}
		}
		if locked == nil || locked.Body["success"] != false {
			t.Fatalf("no 429 lockout after 20 wrong passwords: %v", locked)
		}
		r = py.Plain(pAccLogin, obj("username", "alice", "password", "password-2", "hwid", "pc-a"))
		if r.Status != 429 || r.Body["success"] != false {
			t.Fatalf("a locked username signed in: %s", r)
		}
	})
}

// §7.17: app content — info, text (Bearer key), slides, update check on
// every channel, social-click by link_id, the public price list.
func TestCompat17_AppContent(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Content")
		vip := a.GenerateKeys(1, "days", 30, 1)[0]
		s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": a.ID, "name": "welcome_message", "value": "Hello VIP",
			"license_key": vip})
		a.Release("1.2.0-beta.1", []byte("beta build"), map[string]any{"channel": "beta"})
		a.Release("1.3.0-alpha.1", []byte("alpha build"), map[string]any{"channel": "alpha"})
		for _, g := range []Gen{PY10, PY11, NET, GENpy, GENcs, VBX} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				r := c.Get(pInfo, nil)
				ok(t, r, true)
				if wantStr(t, r, "app.name") != "Content" || wantStr(t, r, "app.login_message") != "Welcome back" {
					t.Fatalf("info app block: %s", r)
				}
				wantStr(t, r, "app.version")
				if wantStr(t, r, "app.download_url") != "https://downloads.example.com/app" {
					t.Fatalf("info download_url: %s", r)
				}
				if wantBool(t, r, "app.maintenance_mode") {
					t.Fatalf("maintenance_mode: %s", r)
				}
				wantStr(t, r, "app.maintenance_msg")
				if id := socialLinkID(t, r); id != a.LinkID {
					t.Fatalf("social link id %d, want %d", id, a.LinkID)
				}

				hdr := http.Header{"Authorization": {"Bearer " + vip}}
				if g.Name == "PY1.0" {
					hdr = nil // PY1.0 sends the key only when passed one: defaults
				}
				r = c.Get(pText, hdr)
				ok(t, r, true)
				want := "Hello VIP"
				if hdr == nil {
					want = "Hello"
				}
				if got := wantStr(t, r, "texts.welcome_message"); got != want {
					t.Fatalf("texts.welcome_message = %q, want %q", got, want)
				}

				r = c.Env(pSlides, obj("action", "get_slides"))
				ok(t, r, true)
				if sl := wantArr(t, r, "slides"); len(sl) != 1 || sl[0].(map[string]any)["title"] != "New in 1.1" {
					t.Fatalf("slides: %s", r)
				}

				for ch, wantV := range map[string]string{"stable": "1.1.0", "beta": "1.2.0-beta.1", "alpha": "1.3.0-alpha.1"} {
					r = c.Env(pUpdate, obj("v", "1.0.0", "channel", ch, "hwid", "pc", "license_key", ""))
					ok(t, r, true)
					if !wantBool(t, r, "update_available") || wantStr(t, r, "update.version") != wantV {
						t.Fatalf("channel %s: %s", ch, r)
					}
					if sum := wantStr(t, r, "update.sha256"); !isLowerHex64(sum) {
						t.Fatalf("update.sha256 %q", sum)
					}
					if wantInt(t, r, "update.size") <= 0 || !strings.HasPrefix(wantStr(t, r, "update.download_url"), "api/update/download.php?v=") {
						t.Fatalf("update size/download_url: %s", r)
					}
				}
				r = c.Env(pUpdate, obj("v", "1.1.0", "channel", "stable", "hwid", "pc", "license_key", ""))
				ok(t, r, true)
				if wantBool(t, r, "update_available") {
					t.Fatalf("up to date, yet update_available: %s", r)
				}
			})
		}
		before := clicks(t, a)
		for _, g := range []Gen{PY11, NET, GENcs} {
			ok(t, NewClient(t, g, a.App).Env(pSocial, obj("link_id", a.LinkID)), true)
		}
		if got := clicks(t, a); got != before+3 {
			t.Fatalf("clicks %v → %v, want +3", before, got)
		}
		r := NewClient(t, GENpy, a.App).Do("GET", pPricing+"?app_id="+a.ID, http.Header{"X-App-Secret": nil}, nil)
		ok(t, r, false)
		if pl := wantArr(t, r, "plans"); len(pl) != 1 {
			t.Fatalf("pricing plans: %s", r)
		}

		settings(t, a.App, map[string]any{"maintenance": true, "maintenance_message": "Back at noon"})
		r = NewClient(t, NET, a.App).Get(pInfo, nil)
		if !wantBool(t, r, "app.maintenance_mode") || wantStr(t, r, "app.maintenance_msg") != "Back at noon" {
			t.Fatalf("info in maintenance: %s", r)
		}
	})
}

// socialLinkID finds the social links list (its name is not pinned by any
// SDK) and returns the first link's id, which must be a JSON integer.
func socialLinkID(t *testing.T, r *Reply) int64 {
	t.Helper()
	for _, v := range r.Body {
		if arr, isArr := v.([]any); isArr && len(arr) > 0 {
			if m, isObj := arr[0].(map[string]any); isObj && m["url"] != nil {
				if !isInt(m["id"]) {
					t.Fatalf("social link id %#v is not a JSON integer", m["id"])
				}
				n, _ := m["id"].(json.Number).Int64()
				return n
			}
		}
	}
	t.Fatalf("no social links in %s", r)
	return 0
}

func clicks(t *testing.T, a *rich) float64 {
	t.Helper()
	links := a.S.MustAdmin("GET", "/api/admin/social-links.php?app_id="+a.ID, nil).Body["social_links"].([]any)
	return links[0].(map[string]any)["clicks"].(float64)
}

// §7.18: replies are never compressed, whatever Accept-Encoding says (no SDK
// decompresses; a signed reply covers the bytes on the wire).
func TestCompat18_NoCompression(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Uncompressed")
		for i := 0; i < 20; i++ { // a reply large enough to be worth compressing
			s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "title": "Slide",
				"body": strings.Repeat("compressible text ", 100)})
		}
		key := a.GenerateKeys(1, "days", 30, 1)[0]
		for _, ae := range []string{"gzip", "gzip, deflate, br, zstd", "*"} {
			c := NewClient(t, JS3P, a.App)
			c.G.Header = http.Header{"Accept-Encoding": {ae}}
			var replies []*Reply
			replies = append(replies,
				c.Env(pSlides, obj("action", "get_slides")),
				c.Env(pLogin, obj("license_key", key, "hwid", "pc")),
				c.Plain(pCheckKey, obj("license_key", key)),
				c.Get(pInfo, nil),
				c.Get(pText, nil),
				c.Plain(pTrial, obj("hwid", "gz-"+ae)),
				c.Do("GET", pPricing+"?app_id="+a.ID, nil, nil),
				c.Do("POST", pLogin, http.Header{"X-App-Secret": nil}, nil),
				c.Do("POST", pLogin, nil, c.Forge(obj(), s.Clock.Now().Unix())),
			)
			for i, r := range replies {
				if ce := r.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
					t.Fatalf("reply %d to Accept-Encoding %q is compressed (%s)", i, ae, ce)
				}
				if cl := r.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(r.Raw)) {
					t.Fatalf("reply %d: Content-Length %s, body %d bytes", i, cl, len(r.Raw))
				}
				if r.Body == nil {
					t.Fatalf("reply %d is not JSON", i)
				}
			}
			if len(replies[0].Raw) < 20*1000 {
				t.Fatalf("slides reply only %d bytes: the test needs a large one", len(replies[0].Raw))
			}
		}
	})
}

// §7.19: a client's single retry after a dropped connection posts the same
// request again. A repeated envelope gets the first reply (freshly sealed)
// and changes nothing more; repeated plain posts are answered sensibly.
func TestCompat19_DuplicatePosts(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Retries")
		for _, g := range []Gen{PY11, NET, CPP11} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				key := a.GenerateKeys(1, "days", 30, 3)[0]

				loginBody := c.Seal(obj("license_key", key, "hwid", "pc-retry"))
				first := c.Do("POST", pLogin, nil, loginBody)
				ok(t, first, true)
				s.Clock.Advance(time.Second) // the retry comes a little later
				again := c.Do("POST", pLogin, nil, loginBody)
				ok(t, again, true)
				if again.Body["session_id"] != first.Body["session_id"] {
					t.Fatalf("a repeated login opened another session: %v vs %v", first.Body["session_id"], again.Body["session_id"])
				}
				if again.EnvT != s.Clock.Now().Unix() {
					t.Fatalf("repeat reply t %d, want it sealed now (%d)", again.EnvT, s.Clock.Now().Unix())
				}
				if n := sessionCount(t, a.App, key); n != 1 {
					t.Fatalf("%d sessions after a login and its retry", n)
				}
				sid := first.Body["session_id"].(string)

				// Concurrent: the retry arrives while the first is in flight.
				body := c.Seal(obj("license_key", key, "hwid", "pc-race"))
				var wg sync.WaitGroup
				rs := make([]*Reply, 2)
				for i := range rs {
					wg.Add(1)
					go func() { defer wg.Done(); rs[i] = c.Do("POST", pLogin, nil, body) }()
				}
				wg.Wait()
				var sessions []any
				for _, r := range rs {
					if r.Status == 429 { // "still being processed": a plain, retryable refusal
						fail(t, r, 429, "RATE_LIMITED", false)
						continue
					}
					ok(t, r, true)
					sessions = append(sessions, r.Body["session_id"])
				}
				if len(sessions) == 0 || len(sessions) == 2 && sessions[0] != sessions[1] {
					t.Fatalf("concurrent duplicates of one login: sessions %v (want one session, answered to both)", sessions)
				}
				if n := sessionCount(t, a.App, key); n != 2 {
					t.Fatalf("%d sessions, want 2 (one per distinct login)", n)
				}

				beatBody := c.Seal(obj("session_id", sid, "license_key", key))
				ok(t, c.Do("POST", pHeartbeat, nil, beatBody), true)
				ok(t, c.Do("POST", pHeartbeat, nil, beatBody), true)

				before := clicks(t, a)
				click := c.Seal(obj("link_id", a.LinkID))
				ok(t, c.Do("POST", pSocial, nil, click), true)
				ok(t, c.Do("POST", pSocial, nil, click), true)
				if got := clicks(t, a); got != before+1 {
					t.Fatalf("a repeated click counted %v times", got-before)
				}

				logoutBody := c.Seal(obj("session_id", sid, "license_key", key))
				l1 := c.Do("POST", pLogout, nil, logoutBody)
				l2 := c.Do("POST", pLogout, nil, logoutBody)
				ok(t, l1, true)
				ok(t, l2, true)
				if l1.Body["message"] != l2.Body["message"] {
					t.Fatalf("logout retry answered differently: %s / %s", l1, l2)
				}

				// Plain posts a retry may repeat: trial, reset, register, redeem.
				n := uniq()
				t1 := c.Plain(pTrial, obj("hwid", "retry-trial-"+n))
				t2 := c.Plain(pTrial, obj("hwid", "retry-trial-"+n))
				ok(t, t1, false)
				ok(t, t2, false)
				if t1.Body["trial_key"] != t2.Body["trial_key"] {
					t.Fatalf("a repeated trial request got another key: %s / %s", t1, t2)
				}
				ok(t, c.Plain(pSelfReset, obj("key", key, "reason", "retry")), false)
				ok(t, c.Plain(pSelfReset, obj("key", key, "reason", "retry")), false)
				spare := a.GenerateKeys(1, "days", 30, 1)[0]
				reg := obj("username", "retry"+n, "password", "password-1", "email", "", "license_key", spare)
				r1, r2 := c.Plain(pRegister, reg), c.Plain(pRegister, reg)
				ok(t, r1, false)
				ok(t, r2, false)
				red := obj("username", "retry"+n, "password", "password-1", "license_key", a.GenerateKeys(1, "days", 7, 1)[0])
				d1, d2 := c.Plain(pRedeem, red), c.Plain(pRedeem, red)
				ok(t, d1, false)
				ok(t, d2, false)
				if d1.Body["days_remaining"] != d2.Body["days_remaining"] {
					t.Fatalf("a repeated redeem added the key twice: %s / %s", d1, d2)
				}
			})
		}
	})
}
