package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Sign-in lockouts (docs/configuration.md, Abuse limits; sdk-compat §2.1):
// account-login, change-password and account-redeem of app user accounts,
// and the admin login. Test servers lock a username after 10 failures and an
// IP after 50 within 15 minutes, for 15 minutes (kwtest.Limits). Helpers
// start with lk so they do not collide with other test files.

const (
	lkChange = "/api/auth/change-password.php"
	lkRedeem = "/api/auth/account-redeem.php"

	lkUnknown = "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ" // a well-formed key no app has
)

// lkAdmin sends the admin login (from xff when not empty).
func lkAdmin(s *kwtest.Server, username, password, xff string) *kwtest.Reply {
	s.T.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	return s.Do("POST", kwtest.PathAdminLogin, h, kwtest.JSON(s.T, map[string]any{"username": username, "password": password}))
}

// lkFail sends n wrong-password account sign-ins for username, each 401.
func lkFail(t testing.TB, a *kwtest.App, username string, n int, xff string) {
	t.Helper()
	for i := range n {
		a.SignIn(username, kwtest.WrongPassword, xff).BadCredentials(t, "wrong password #"+strconv.Itoa(i+1)+" for "+username)
	}
}

// Nine wrong passwords are refused as wrong; the tenth too, and then the
// username is locked: even the right password is answered 429 with the time
// left, which runs down with the clock; once it has run out the right
// password works and the count started afresh at the lock.
func TestLockoutAccountLogin(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Lockout")
		a.RegisterUser(t, "alice")
		a.RegisterUser(t, "carol")

		lkFail(t, a, "alice", 10, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "right password right after the 10th failure", 900)
		a.SignIn("alice", kwtest.WrongPassword, "").Locked(t, "wrong password while locked", 900)
		a.SignIn("ALICE", kwtest.LockoutPassword, "").Locked(t, "another spelling of the username", 900)
		// Another username of the app (and the IP) are not locked.
		a.SignIn("carol", kwtest.LockoutPassword, "").OK(t)

		s.Clock.Advance(5 * time.Minute)
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "5 minutes into the lock", 600)
		if r := a.SignIn("alice", kwtest.LockoutPassword, ""); !strings.Contains(r.Str("message"), "10 minutes") {
			t.Fatalf("message with 600 s left: %s, want it to say 10 minutes", r)
		}
		s.Clock.Advance(10*time.Minute - time.Second)
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "1 s before the lock ends", 1)
		if r := a.SignIn("alice", kwtest.LockoutPassword, ""); !strings.Contains(r.Str("message"), "1 second") {
			t.Fatalf("message with 1 s left: %s, want it to say 1 second", r)
		}

		s.Clock.Advance(time.Second)
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)
		// The lock does not renew on the first failure after it: the count
		// restarted when it was set.
		lkFail(t, a, "alice", 9, "")
		lkFail(t, a, "alice", 1, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "ten more failures", 900)
	})
}

// A successful sign-in forgets the username's failures: 9 failures, a
// success and 9 more do not lock; the tenth after the success does.
func TestLockoutAccountSuccessClearsFailures(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Clears")
		a.RegisterUser(t, "alice")

		lkFail(t, a, "alice", 9, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)
		lkFail(t, a, "alice", 9, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)
		lkFail(t, a, "alice", 9, "")
		lkFail(t, a, "alice", 1, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "tenth failure since the last success", 900)
	})
}

// Failures spread beyond the window do not add up: 9, then 9 more after the
// window has passed, leave the username unlocked.
func TestLockoutAccountWindow(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Window")
		a.RegisterUser(t, "alice")

		lkFail(t, a, "alice", 9, "")
		s.Clock.Advance(15 * time.Minute)
		lkFail(t, a, "alice", 9, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)
	})
}

// An unknown username locks exactly like a known one: the same 401 before,
// the same 429 after, so a lockout tells nothing about existence.
func TestLockoutAccountUnknownUsername(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "NoLeak")
		a.RegisterUser(t, "alice")
		a.RegisterUser(t, "carol")

		for i := range 10 {
			known := a.SignIn("alice", kwtest.WrongPassword, "")
			unknown := a.SignIn("nobody", kwtest.WrongPassword, "")
			known.BadCredentials(t, "known username")
			unknown.BadCredentials(t, "unknown username")
			if string(known.Raw) != string(unknown.Raw) {
				t.Fatalf("failure #%d: known username answered %s, unknown %s", i+1, known.Raw, unknown.Raw)
			}
		}
		known := a.SignIn("alice", kwtest.LockoutPassword, "")
		unknown := a.SignIn("nobody", kwtest.LockoutPassword, "")
		known.Locked(t, "known username", 900)
		unknown.Locked(t, "unknown username", 900)
		if string(known.Raw) != string(unknown.Raw) || known.Header.Get("Retry-After") != unknown.Header.Get("Retry-After") {
			t.Fatalf("locked: known username answered %s (Retry-After %s), unknown %s (Retry-After %s)",
				known.Raw, known.Header.Get("Retry-After"), unknown.Raw, unknown.Header.Get("Retry-After"))
		}
		// 20 failures from this IP are under its limit of 50.
		a.SignIn("carol", kwtest.LockoutPassword, "").OK(t)
	})
}

// Per IP: with a limit of 5, failures over different usernames (known and
// unknown) from one IP lock that IP for every username of the app, the
// right password included; another IP, another app and, after the lock,
// the same IP are not locked.
func TestLockoutAccountPerIP(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) {
			c.TrustProxy = true
			c.LockoutIPFailures = 5
			c.LockoutFailures = 100
		})
		a := s.LockoutApp(t, "PerIP")
		other := s.LockoutApp(t, "OtherApp")
		for _, u := range []string{"alice", "bob", "carol"} {
			a.RegisterUser(t, u)
		}
		other.RegisterUser(t, "alice")
		const bad, good = "203.0.113.7", "198.51.100.9"

		for i, u := range []string{"alice", "bob", "ghost-1", "carol", "ghost-2"} {
			a.SignIn(u, kwtest.WrongPassword, bad).BadCredentials(t, "failure #"+strconv.Itoa(i+1)+" from "+bad)
		}
		a.SignIn("alice", kwtest.LockoutPassword, bad).Locked(t, "alice from the locked IP", 900)
		a.SignIn("dave", kwtest.WrongPassword, bad).Locked(t, "a fresh username from the locked IP", 900)
		// Earlier X-Forwarded-For entries are the client's: only the proxy's counts.
		a.SignIn("alice", kwtest.LockoutPassword, good+", "+bad).Locked(t, "spoofed chain ending in the locked IP", 900)

		a.SignIn("alice", kwtest.LockoutPassword, good).OK(t)
		a.SignIn("bob", kwtest.LockoutPassword, "").OK(t)              // the proxy itself, 127.0.0.1
		a.SignIn("carol", kwtest.LockoutPassword, bad+", "+good).OK(t) // the last entry decides
		other.SignIn("alice", kwtest.LockoutPassword, bad).OK(t)       // per app
		other.SignIn("ghost-1", kwtest.WrongPassword, bad).BadCredentials(t, "other app")

		s.Clock.Advance(5 * time.Minute)
		a.SignIn("alice", kwtest.LockoutPassword, bad).Locked(t, "5 minutes later", 600)
		s.Clock.Advance(10 * time.Minute)
		a.SignIn("alice", kwtest.LockoutPassword, bad).OK(t)
	})
}

// change-password with a wrong current password and account-redeem with a
// wrong password count toward the username's lockout, and both are refused
// while it holds.
func TestLockoutChangePasswordAndRedeemCount(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Counted")
		a.RegisterUser(t, "alice")
		key := a.GenerateKeys(1, "days", 30, 1)[0]

		for i := range 5 {
			a.PostFrom(lkChange, map[string]any{
				"username": "alice", "current_password": kwtest.WrongPassword, "new_password": "brand-new-pass-1"}, "").BadCredentials(t, "change-password #"+strconv.Itoa(i+1))

		}
		for i := range 4 {
			a.PostFrom(lkRedeem, map[string]any{
				"username": "alice", "password": kwtest.WrongPassword, "license_key": key}, "").BadCredentials(t, "account-redeem #"+strconv.Itoa(i+1))

		}
		a.PostFrom(lkChange, map[string]any{
			"username": "alice", "old_password": kwtest.WrongPassword, "new_password": "brand-new-pass-1"}, "").BadCredentials(t, "old_password alias")

		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "account-login", 900)
		a.PostFrom(lkChange, map[string]any{
			"username": "alice", "current_password": kwtest.LockoutPassword, "new_password": "brand-new-pass-1"}, "").Locked(t, "change-password with the right password",

			900)

		a.PostFrom(lkRedeem, map[string]any{
			"username": "alice", "password": kwtest.LockoutPassword, "license_key": key}, "").Locked(t, "account-redeem with the right password",

			900)

		s.Clock.Advance(kwtest.LockFor)
		// Nothing happened while locked: the password is unchanged and the key unused.
		a.PostFrom(lkRedeem, map[string]any{"username": "alice", "password": kwtest.LockoutPassword, "license_key": key}, "").OK(t)
		a.PostFrom(lkChange, map[string]any{"username": "alice", "current_password": kwtest.LockoutPassword,
			"new_password": "brand-new-pass-1"}, "").
			OK(t)

		a.SignIn("alice", "brand-new-pass-1", "").OK(t)
	})
}

// Unknown keys redeemed through a session count toward the username's
// lockout: ten of them lock account-login.
func TestLockoutRedeemUnknownKeysBySession(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "KeyGuessSession")
		a.RegisterUser(t, "alice")
		r := a.SignIn("alice", kwtest.LockoutPassword, "")
		r.OK(t)
		sid := r.Str("session_id")

		for range 10 {
			a.PostFrom(lkRedeem, map[string]any{"session_id": sid, "license_key": lkUnknown}, "").PlainFail(t,
				400, "INVALID_KEY")

		}
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "account-login after 10 unknown keys", 900)
		// The session cannot keep guessing while its account is locked.
		a.PostFrom(lkRedeem, map[string]any{"session_id": sid,
			"license_key": lkUnknown}, "").Locked(t, "redeem by session while locked",

			900)

	})
}

// Unknown keys count toward the per-IP lockout whichever way the account
// is given: by password or by session.
func TestLockoutRedeemUnknownKeysPerIP(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.LockoutIPFailures = 5; c.LockoutFailures = 100 })
		a := s.LockoutApp(t, "KeyGuessIP")
		a.RegisterUser(t, "alice")
		r := a.SignIn("alice", kwtest.LockoutPassword, "")
		r.OK(t)
		sid := r.Str("session_id")

		for range 3 {
			a.PostFrom(lkRedeem, map[string]any{"username": "alice", "password": kwtest.LockoutPassword,
				"license_key": lkUnknown}, "").
				PlainFail(t,
					400, "INVALID_KEY")

		}
		for range 2 {
			a.PostFrom(lkRedeem, map[string]any{"session_id": sid, "license_key": lkUnknown}, "").PlainFail(t,
				400, "INVALID_KEY")

		}
		a.PostFrom(lkRedeem, map[string]any{"username": "alice", "password": kwtest.LockoutPassword,
			"license_key": lkUnknown}, "").Locked(t, "redeem by password",

			900)

		a.PostFrom(lkRedeem, map[string]any{"session_id": sid,
			"license_key": lkUnknown}, "").Locked(t, "redeem by session",

			900)

		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "account-login", 900)
	})
}

// Unknown keys redeemed with the right password count toward the
// username's lockout too (docs/api.md: "Wrong passwords and unknown keys
// count toward the sign-in lockout"): ten of them lock the username.
//
// Fails at the time of writing: RedeemKey (internal/license/account_login.go)
// verifies the password first, and verifyAccount's Guard.Clear forgets the
// username's failures on every correct password, so each unknown key brings
// the count back to 1 and the username never locks.
func TestLockoutRedeemUnknownKeysByPassword(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "KeyGuessPassword")
		a.RegisterUser(t, "alice")

		for i := range 10 {
			r := a.PostFrom(lkRedeem, map[string]any{"username": "alice", "password": kwtest.LockoutPassword, "license_key": lkUnknown}, "")
			if r.Status == http.StatusTooManyRequests {
				t.Fatalf("redeem #%d locked already: %s", i+1, r)
			}
			r.PlainFail(t, 400, "INVALID_KEY")
		}

		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "account-login after 10 unknown keys redeemed with the right password",
			900)

	})
}

// The admin login locks per username like account sign-ins: 429
// TOO_MANY_ATTEMPTS with Retry-After, the right password included, the same
// for an unknown admin name; a token issued before keeps working; the lock
// ends on the clock.
func TestLockoutAdminLogin(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		token := s.AdminToken()

		for i := range 10 {
			known := lkAdmin(s, "admin", kwtest.WrongPassword, "")
			unknown := lkAdmin(s, "ghost", kwtest.WrongPassword, "")
			known.BadCredentials(t, "admin wrong password #"+strconv.Itoa(i+1))
			unknown.BadCredentials(t, "unknown admin #"+strconv.Itoa(i+1))
			if string(known.Raw) != string(unknown.Raw) {
				t.Fatalf("failure #%d: known admin answered %s, unknown %s", i+1, known.Raw, unknown.Raw)
			}
		}
		known := lkAdmin(s, "admin", kwtest.AdminPassword, "")
		unknown := lkAdmin(s, "ghost", kwtest.AdminPassword, "")
		known.Locked(t, "admin, right password", 900)
		unknown.Locked(t, "unknown admin", 900)
		if string(known.Raw) != string(unknown.Raw) {
			t.Fatalf("locked: known admin answered %s, unknown %s", known.Raw, unknown.Raw)
		}
		lkAdmin(s, "ADMIN", kwtest.AdminPassword, "").Locked(t, "ADMIN (any case)", 900)

		if r := s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(token), nil); r.Status != 200 {
			t.Fatalf("token issued before the lock: %s", r)
		}

		s.Clock.Advance(5 * time.Minute)
		lkAdmin(s, "admin", kwtest.AdminPassword, "").Locked(t, "5 minutes into the lock", 600)
		s.Clock.Advance(10 * time.Minute)
		if r := lkAdmin(s, "admin", kwtest.AdminPassword, ""); r.Status != 200 || r.Str("token") == "" {
			t.Fatalf("admin login after the lock: %s", r)
		}
		lkAdmin(s, "admin", kwtest.WrongPassword, "").BadCredentials(t, "first failure after the lock")
	})
}

// The admin login locks per IP: with a limit of 5, failures over several
// admin names from one IP lock it; another IP is not locked.
func TestLockoutAdminLoginPerIP(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) {
			c.TrustProxy = true
			c.LockoutIPFailures = 5
			c.LockoutFailures = 100
		})
		const bad, good = "203.0.113.7", "198.51.100.9"
		for i, u := range []string{"admin", "root", "admin", "ghost", "owner"} {
			lkAdmin(s, u, kwtest.WrongPassword, bad).BadCredentials(t, "failure #"+strconv.Itoa(i+1))
		}
		lkAdmin(s, "admin", kwtest.AdminPassword, bad).Locked(t, "admin from the locked IP", 900)
		if r := lkAdmin(s, "admin", kwtest.AdminPassword, good); r.Status != 200 || r.Str("token") == "" {
			t.Fatalf("admin login from another IP: %s", r)
		}
		if r := lkAdmin(s, "admin", kwtest.AdminPassword, ""); r.Status != 200 {
			t.Fatalf("admin login from the proxy itself: %s", r)
		}
		// Account sign-ins are counted apart from admin sign-ins.
		a := s.LockoutApp(t, "Apart")
		a.RegisterUser(t, "alice")
		a.SignIn("alice", kwtest.LockoutPassword, bad).OK(t)

		s.Clock.Advance(kwtest.LockFor)
		if r := lkAdmin(s, "admin", kwtest.AdminPassword, bad); r.Status != 200 {
			t.Fatalf("admin login from the IP after the lock: %s", r)
		}
	})
}

// --lockout-failures 0 turns the per-username lock off, for admins and
// accounts alike; the per-IP lock still applies.
func TestLockoutPerUsernameDisabled(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.LockoutFailures = 0 })
		a := s.LockoutApp(t, "NoUserLock")
		a.RegisterUser(t, "alice")

		for i := range 20 {
			lkAdmin(s, "admin", kwtest.WrongPassword, "").BadCredentials(t, "admin failure #"+strconv.Itoa(i+1))
		}
		if r := lkAdmin(s, "admin", kwtest.AdminPassword, ""); r.Status != 200 || r.Str("token") == "" {
			t.Fatalf("admin login after 20 failures with the per-username lock off: %s", r)
		}
		lkFail(t, a, "alice", 20, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)

		// The per-IP limit (50) still holds.
		lkFail(t, a, "alice", 30, "")
		a.SignIn("alice", kwtest.LockoutPassword, "").Locked(t, "the 51st attempt from the IP", 900)
	})
}
