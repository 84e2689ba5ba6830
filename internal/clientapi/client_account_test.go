package clientapi_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// App user account conformance (sdk-compat §1.8–§1.11, §7.16): sign-up with
// and without a key, sign-in and its session, change-password, redeeming
// keys by password or by session, and what admin actions on accounts and
// redeemed keys do to them. Helpers start with ua (user account) so they do
// not collide with helpers of other test files in this package.

// Account routes of the route table.
const (
	uaRegister = "/api/auth/account-register.php"
	uaLogin    = "/api/auth/account-login.php"
	uaChange   = "/api/auth/change-password.php"
	uaRedeem   = "/api/auth/account-redeem.php"
)

// uaDay is one day of license time.
const uaDay = 24 * time.Hour

// uaStart boots a server whose sessions outlive the clock jumps of the
// account tests, so a heartbeat decides on the account's state, not on the
// session's silence.
func uaStart(t *testing.T, engine string) *kwtest.Server {
	t.Helper()
	return kwtest.Boot(t, engine, func(c *config.Config) { c.SessionTimeout = 48 * time.Hour })
}

// uaKeys generates n keys with feature flags (nil: none).
func uaKeys(t testing.TB, a *kwtest.App, n int, keyType string, days, maxDevices int, features map[string]any) []string {
	t.Helper()
	body := map[string]any{"app_id": a.ID, "count": n, "key_type": keyType, "max_devices": maxDevices}
	if keyType == "days" {
		body["duration_value"] = days
	}
	if features != nil {
		body["features"] = features
	}
	var out []string
	for _, k := range a.S.MustAdmin("POST", "/api/admin/keys.php", body).Body["keys"].([]any) {
		out = append(out, k.(map[string]any)["license_key"].(string))
	}
	return out
}

// uaSignIn sends account-login and returns the reply.
func uaSignIn(a *kwtest.App, username, password, hwid string) *kwtest.Reply {
	a.S.T.Helper()
	return a.Plain(uaLogin, map[string]any{"username": username, "password": password, "hwid": hwid})
}

// uaSession signs in and returns the new session_id, failing otherwise.
func uaSession(t testing.TB, a *kwtest.App, username, password, hwid string) string {
	t.Helper()
	r := uaSignIn(a, username, password, hwid)
	r.OK(t)
	sid := r.Str("session_id")
	if sid == "" {
		t.Fatalf("account-login without a session_id: %s", r)
	}
	return sid
}

// uaAccountReply is GET accounts.php?app_id=&username= as sent.
func uaAccountReply(a *kwtest.App, username string) *kwtest.Reply {
	a.S.T.Helper()
	return a.S.Admin("GET", "/api/admin/accounts.php?app_id="+a.ID+"&username="+url.QueryEscape(username), nil)
}

// uaAccount returns the account as the admin API shows it.
func uaAccount(t testing.TB, a *kwtest.App, username string) map[string]any {
	t.Helper()
	r := uaAccountReply(a, username)
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("GET account %s: %s", username, r)
	}
	return r.Obj("account")
}

// uaNoAccount fails unless the app has no account named username.
func uaNoAccount(t testing.TB, a *kwtest.App, username string) {
	t.Helper()
	kwtest.ExpectCode(t, uaAccountReply(a, username), 404, "NOT_FOUND")
}

// uaAccounts returns the usernames of every account of the app.
func uaAccounts(t testing.TB, a *kwtest.App) []string {
	t.Helper()
	var out []string
	for _, v := range a.S.MustAdmin("GET", "/api/admin/accounts.php?app_id="+a.ID, nil).Body["accounts"].([]any) {
		out = append(out, v.(map[string]any)["username"].(string))
	}
	return out
}

// uaAct applies an admin account action and fails unless it succeeds.
func uaAct(t testing.TB, a *kwtest.App, action, username string, extra map[string]any) {
	t.Helper()
	body := map[string]any{"username": username}
	for k, v := range extra {
		body[k] = v
	}
	a.S.MustAdmin("POST", "/api/admin/accounts.php?app_id="+a.ID+"&action="+action, body)
}

// uaExpiry returns the account's expires_at as the admin API shows it.
func uaExpiry(t testing.TB, a *kwtest.App, username string) time.Time {
	t.Helper()
	return kwtest.WireTime(t, "account expires_at", uaAccount(t, a, username)["expires_at"])
}

// uaStamp is the wire form of t.
func uaStamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// uaMessage fails unless r's message contains want.
func uaMessage(t testing.TB, r *kwtest.Reply, want string) {
	t.Helper()
	if m := r.Str("message"); !strings.Contains(m, want) {
		t.Fatalf("message %q does not mention %q: %s", m, want, r)
	}
}

// uaEqualTime fails unless v is a wire timestamp equal to want.
func uaEqualTime(t testing.TB, what string, v any, want time.Time) {
	t.Helper()
	if got := kwtest.WireTime(t, what, v); !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// uaInt fails unless v is the JSON integer want.
func uaInt(t testing.TB, what string, v any, want int) {
	t.Helper()
	if got := kwtest.Num(t, what, v); got != want {
		t.Fatalf("%s = %d, want %d", what, got, want)
	}
}

func TestAccountDisabledByDefault(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.CreateApp("NoAccounts")
		st := s.AppSettings(t, a.ID)
		for name, want := range map[string]any{"accounts_enabled": false, "account_key_required": false,
			"account_signup_days": 0.0, "account_max_devices": 1.0, "account_redeem_mode": "stack",
			"account_takes_key_devices": true, "account_password_min_length": 8.0} {
			if st[name] != want {
				t.Fatalf("%s of a new app = %#v, want %#v", name, st[name], want)
			}
		}
		key := a.GenerateKeys(1, "days", 30, 1)[0]
		a.Plain(uaRegister, map[string]any{"username": "alice", "password": "password1", "license_key": key}).PlainFail(t,
			403, "ACCOUNTS_DISABLED")

		a.Plain(uaRegister, map[string]any{"username": "alice", "password": "password1"}).PlainFail(t, 403, "ACCOUNTS_DISABLED")
		uaSignIn(a, "alice", "password1", "pc").PlainFail(t, 403, "ACCOUNTS_DISABLED")
		a.Plain(uaChange, map[string]any{"username": "alice", "current_password": "password1",
			"new_password": "password2"}).PlainFail(t,
			403, "ACCOUNTS_DISABLED")

		a.Plain(uaRedeem, map[string]any{"username": "alice", "password": "password1", "license_key": key}).PlainFail(t,
			403, "ACCOUNTS_DISABLED")

		// The refused sign-up neither created the account nor used the key.
		if n := len(uaAccounts(t, a)); n != 0 {
			t.Fatalf("%d accounts after refused sign-ups", n)
		}
		if st := a.KeyView(t, key)["status"]; st != "unused" {
			t.Fatalf("key status after a refused sign-up = %v", st)
		}
		a.SetSettings(t, map[string]any{"accounts_enabled": true})
		a.SignUp(t, "alice", "password1", key)
		a.SetSettings(t, map[string]any{"accounts_enabled": false})
		uaSignIn(a, "alice", "password1", "pc").PlainFail(t, 403, "ACCOUNTS_DISABLED")
	})
}

func TestAccountRegisterWithoutKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)

		t.Run("no sign-up days: an account without time", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "NoTime", map[string]any{"account_signup_days": 0, "account_max_devices": 2})
			now := s.Clock.Now()
			r := a.Plain(uaRegister, map[string]any{"username": "AliceSmith", "password": "password1", "email": "alice@example.com"})
			r.OK(t)
			if m := r.Str("message"); m == "" {
				t.Fatalf("register reply without a message: %s", r)
			}
			u := r.Obj("user")
			if id := kwtest.Num(t, "user.id", u["id"]); id <= 0 {
				t.Fatalf("user.id = %d", id)
			}
			if u["username"] != "AliceSmith" {
				t.Fatalf("user.username = %v, want the case as given", u["username"])
			}
			if u["status"] != "expired" {
				t.Fatalf("user.status = %v, want expired (no time)", u["status"])
			}
			uaEqualTime(t, "user.expires_at", u["expires_at"], now)
			uaInt(t, "user.days_remaining", u["days_remaining"], 0)
			uaInt(t, "user.max_devices", u["max_devices"], 2)
			if !reflect.DeepEqual(r.Obj("key"), map[string]any{"days_added": 0.0, "lifetime": false}) {
				t.Fatalf("key = %v, want {days_added:0, lifetime:false}", r.Obj("key"))
			}
			// No time: sign-in is refused until a key is redeemed.
			uaSignIn(a, "AliceSmith", "password1", "pc").PlainFail(t, 403, "EXPIRED")
			if n := len(uaAccount(t, a, "alicesmith")["sessions"].([]any)); n != 0 {
				t.Fatalf("%d sessions after a refused sign-in", n)
			}
		})

		t.Run("sign-up days: time from now, sign-in works", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Signup7", map[string]any{"account_signup_days": 7})
			now := s.Clock.Now()
			u := a.SignUp(t, "bob", "password1", "")
			uaEqualTime(t, "user.expires_at", u["expires_at"], now.Add(7*uaDay))
			uaInt(t, "user.days_remaining", u["days_remaining"], 7)
			uaInt(t, "user.max_devices", u["max_devices"], 1)
			if u["status"] != "active" {
				t.Fatalf("user.status = %v, want active", u["status"])
			}
			r := uaSignIn(a, "bob", "password1", "pc")
			r.OK(t)
			uaEqualTime(t, "login user.expires_at", r.Obj("user")["expires_at"], now.Add(7*uaDay))
			if _, ok := r.Body["license_key"]; ok {
				t.Fatalf("license_key present for an account that redeemed no key: %s", r)
			}
			a.BeatOK(t, r.Str("session_id"), "")
		})
	})
}

func TestAccountRegisterValidation(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Validate", map[string]any{"account_signup_days": 1})
		reg := func(body map[string]any) *kwtest.Reply { return a.Plain(uaRegister, body) }
		refuse := func(body map[string]any, status int, code, mentions string) {
			t.Helper()
			r := reg(body)
			r.PlainFail(t, status, code)
			if mentions != "" {
				uaMessage(t, r, mentions)
			}
		}

		// Missing fields.
		refuse(map[string]any{}, 400, "MISSING_FIELDS", "username")
		refuse(map[string]any{"username": "carol1"}, 400, "MISSING_FIELDS", "password")
		refuse(map[string]any{"password": "password1"}, 400, "MISSING_FIELDS", "username")
		refuse(map[string]any{"username": "", "password": ""}, 400, "MISSING_FIELDS", "username")

		// Usernames: 3 to 32 of letters, digits, '.', '_', '-', starting with
		// a letter or digit.
		for _, u := range []string{"ab", strings.Repeat("u", 33), "carol one", "_carol", ".carol", "-carol", "carol@home",
			"cärol", "carol\t", "car/ol"} {
			refuse(map[string]any{"username": u, "password": "password1"}, 400, "MISSING_FIELDS", "username")
		}

		// Passwords: at least account_password_min_length (8) characters, at
		// most 72 bytes (bcrypt reads no more).
		refuse(map[string]any{"username": "carol1", "password": "pass123"}, 400, "MISSING_FIELDS", "password")
		refuse(map[string]any{"username": "carol1", "password": strings.Repeat("p", 73)}, 400, "MISSING_FIELDS", "password")
		refuse(map[string]any{"username": "carol1", "password": strings.Repeat("é", 37)}, 400, "MISSING_FIELDS", "password") // 37 characters, 74 bytes

		// E-mail addresses.
		for _, e := range []string{"nope", "@example.com", "carol@", "carol @example.com", strings.Repeat("e", 250) + "@x.io"} {
			refuse(map[string]any{"username": "carol1", "password": "password1", "email": e}, 400, "MISSING_FIELDS", "email")
		}

		// None of the refusals created carol1.
		uaNoAccount(t, a, "carol1")
		a.SignUp(t, "carol1", "password1", "")

		// The boundaries themselves are accepted.
		a.SignUp(t, "abc", "12345678", "")
		a.SignUp(t, strings.Repeat("u", 32), strings.Repeat("p", 72), "")
		a.SignUp(t, "d.e_f-9", strings.Repeat("é", 8), "") // 8 characters, 16 bytes
		if r := reg(map[string]any{"username": "erin", "password": "password1", "email": "erin@example.com"}); r.Status != 200 {
			t.Fatalf("register with an e-mail: %s", r)
		}

		// A higher minimum length applies.
		a.SetSettings(t, map[string]any{"account_password_min_length": 12})
		refuse(map[string]any{"username": "frank", "password": "password123"}, 400, "MISSING_FIELDS", "12")
		a.SignUp(t, "frank", "password1234", "")

		// Usernames are unique regardless of case; the first spelling stays.
		a.SignUp(t, "Alice", "password1234", "")
		for _, u := range []string{"alice", "ALICE", "Alice"} {
			refuse(map[string]any{"username": u, "password": "another-password"}, 409, "USERNAME_EXISTS", "")
		}
		if got := uaAccount(t, a, "aLiCe")["username"]; got != "Alice" {
			t.Fatalf("username = %v, want Alice", got)
		}
		// The existing account still signs in with its own password only.
		uaSignIn(a, "alice", "password1234", "pc").OK(t)
		uaSignIn(a, "alice", "another-password", "pc").PlainFail(t, 401, "INVALID_CREDENTIALS")

		// account_key_required: no key, no account.
		a.SetSettings(t, map[string]any{"account_key_required": true})
		refuse(map[string]any{"username": "gina", "password": "password1234"}, 400, "KEY_REQUIRED", "")
		refuse(map[string]any{"username": "gina", "password": "password1234", "license_key": "   "}, 400, "KEY_REQUIRED", "")
		uaNoAccount(t, a, "gina")
		key := a.GenerateKeys(1, "days", 3, 1)[0]
		a.SignUp(t, "gina", "password1234", key)

		want := []string{"carol1", "abc", strings.Repeat("u", 32), "d.e_f-9", "erin", "frank", "Alice", "gina"}
		got := uaAccounts(t, a)
		if len(got) != len(want) {
			t.Fatalf("accounts = %v, want %v", got, want)
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Fatalf("accounts = %v, want %v", got, want)
			}
		}
	})
}

func TestAccountRegisterWithKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "WithKey", map[string]any{"account_signup_days": 0})
		s.Clock.Advance(time.Hour)
		now := s.Clock.Now()

		key := a.GenerateKeys(1, "days", 30, 3)[0]
		r := a.Plain(uaRegister, map[string]any{"username": "keyuser", "password": "password1", "email": "",
			"license_key": "  " + key + " "}) // the key is trimmed
		r.OK(t)
		uaMessage(t, r, "+30 days")
		u := r.Obj("user")
		uaEqualTime(t, "user.expires_at", u["expires_at"], now.Add(30*uaDay))
		uaInt(t, "user.days_remaining", u["days_remaining"], 30)
		uaInt(t, "user.max_devices", u["max_devices"], 3)
		if u["status"] != "active" || u["username"] != "keyuser" {
			t.Fatalf("user = %v", u)
		}
		if !reflect.DeepEqual(r.Obj("key"), map[string]any{"days_added": 30.0, "lifetime": false}) {
			t.Fatalf("key = %v, want {days_added:30, lifetime:false}", r.Obj("key"))
		}

		// The key is redeemed and no longer signs in on its own.
		if st := a.KeyView(t, key)["status"]; st != "redeemed" {
			t.Fatalf("key status = %v, want redeemed", st)
		}
		a.LoginReply(key, "pc").SealedFail(t, "KEY_REDEEMED")
		if n := len(a.KeyView(t, key)["devices"].([]any)); n != 0 {
			t.Fatalf("the refused login bound %d devices", n)
		}
		acct := uaAccount(t, a, "keyuser")
		if acct["license_key"] != key {
			t.Fatalf("account license_key = %v, want %s", acct["license_key"], key)
		}

		refuse := func(k string, status int, code string) {
			t.Helper()
			a.Plain(uaRegister, map[string]any{"username": "other", "password": "password1", "license_key": k}).PlainFail(t,
				status, code)

			uaNoAccount(t, a, "other")
		}
		// Used once: refused for another sign-up, which creates nothing.
		refuse(key, 409, "KEY_ALREADY_USED")
		// Activated by a license login: refused, and the key stays active.
		active := a.GenerateKeys(1, "days", 30, 1)[0]
		sid := a.Login(active, "pc")
		refuse(active, 409, "KEY_IN_USE")
		if st := a.KeyView(t, active)["status"]; st != "active" {
			t.Fatalf("active key after a refused sign-up: %v", st)
		}
		a.BeatOK(t, sid, active)
		// Unknown, banned and paused keys.
		refuse("NOPE0-NOPE0-NOPE0-NOPE0", 400, "INVALID_KEY")
		banned := a.GenerateKeys(1, "days", 30, 1)[0]
		a.MustKeyAction(t, "ban", banned, nil)
		refuse(banned, 403, "BANNED")
		paused := a.GenerateKeys(1, "days", 30, 1)[0]
		a.MustKeyAction(t, "pause", paused, nil)
		refuse(paused, 403, "PAUSED")
		for _, k := range []string{banned, paused} {
			if st := a.KeyView(t, k)["status"]; st == "redeemed" {
				t.Fatalf("refused key %s became redeemed", k)
			}
		}
		// A taken username with a good key leaves the key unused.
		fresh := a.GenerateKeys(1, "days", 30, 1)[0]
		a.Plain(uaRegister, map[string]any{"username": "KEYUSER", "password": "password1", "license_key": fresh}).PlainFail(t,
			409, "USERNAME_EXISTS")

		if st := a.KeyView(t, fresh)["status"]; st != "unused" {
			t.Fatalf("key of a refused sign-up = %v, want unused", st)
		}

		// A lifetime key makes a lifetime account.
		life := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		r = a.Plain(uaRegister, map[string]any{"username": "forever", "password": "password1", "license_key": life})
		r.OK(t)
		u = r.Obj("user")
		if v, ok := u["expires_at"]; !ok || v != nil {
			t.Fatalf("lifetime user.expires_at = %v (present %v), want null", v, ok)
		}
		if v, ok := u["days_remaining"]; !ok || v != nil {
			t.Fatalf("lifetime user.days_remaining = %v (present %v), want null", v, ok)
		}
		if u["lifetime"] != true || u["status"] != "active" {
			t.Fatalf("lifetime user = %v", u)
		}
		if !reflect.DeepEqual(r.Obj("key"), map[string]any{"days_added": 0.0, "lifetime": true}) {
			t.Fatalf("key = %v, want {days_added:0, lifetime:true}", r.Obj("key"))
		}
		if st := a.KeyView(t, life)["status"]; st != "redeemed" {
			t.Fatalf("lifetime key status = %v, want redeemed", st)
		}
		uaSignIn(a, "forever", "password1", "pc").OK(t)
	})
}

func TestAccountLogin(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Login", map[string]any{"account_signup_days": 0, "heartbeat_interval": 45})
		now := s.Clock.Now()
		key := uaKeys(t, a, 1, "days", 30, 2, map[string]any{"pro": true, "tier": "gold"})[0]
		a.SignUp(t, "Dave", "password1", key)

		r := uaSignIn(a, "dave", "password1", "pc-1") // the username is case-insensitive
		r.OK(t)
		if r.Sealed {
			t.Fatal("account-login reply is enveloped, want plain JSON")
		}
		raw := kwtest.Numbers(t, r.Raw)
		if kwtest.Int(t, "heartbeat_interval", raw["heartbeat_interval"]) != 45 {
			t.Fatalf("heartbeat_interval = %v, want 45", raw["heartbeat_interval"])
		}
		sid, ok := r.Body["session_id"].(string)
		if !ok || sid == "" {
			t.Fatalf("session_id = %#v, want a non-empty string", r.Body["session_id"])
		}
		if r.Body["license_key"] != key {
			t.Fatalf("top-level license_key = %v, want %s", r.Body["license_key"], key)
		}
		u := r.Obj("user")
		if u["username"] != "Dave" || u["status"] != "active" || u["license_key"] != key {
			t.Fatalf("user = %v", u)
		}
		uaEqualTime(t, "user.expires_at", u["expires_at"], now.Add(30*uaDay))
		uaInt(t, "user.days_remaining", u["days_remaining"], 30)
		if !reflect.DeepEqual(r.Obj("features"), map[string]any{"pro": true, "tier": "gold"}) {
			t.Fatalf("features = %v, want the redeemed key's", r.Body["features"])
		}
		acct := uaAccount(t, a, "Dave")
		uaEqualTime(t, "last_login_at", acct["last_login_at"], now)
		if n := len(acct["sessions"].([]any)); n != 1 {
			t.Fatalf("%d account sessions, want 1", n)
		}

		// Other spellings sign in too.
		for _, name := range []string{"DAVE", "Dave", "dAvE"} {
			uaSignIn(a, name, "password1", "pc-1").OK(t)
		}

		// Wrong password and unknown user are indistinguishable.
		wrong := uaSignIn(a, "dave", "password2", "pc-1")
		wrong.PlainFail(t, 401, "INVALID_CREDENTIALS")
		unknown := uaSignIn(a, "nobody", "password1", "pc-1")
		unknown.PlainFail(t, 401, "INVALID_CREDENTIALS")
		if string(wrong.Raw) != string(unknown.Raw) {
			t.Fatalf("wrong password answered %s, unknown user %s", wrong.Raw, unknown.Raw)
		}

		// Missing fields.
		for _, body := range []map[string]any{
			{"password": "password1", "hwid": "pc-1"},
			{"username": "dave", "hwid": "pc-1"},
			{"username": "dave", "password": "password1"},
		} {
			a.Plain(uaLogin, body).PlainFail(t, 400, "MISSING_FIELDS")
		}

		// The session works with the envelope endpoints.
		sid = uaSession(t, a, "dave", "password1", "pc-1")
		s.Clock.Advance(30 * time.Second)
		a.BeatOK(t, sid, "")
		// A license_key sent along is not compared with an account session:
		// not the redeemed key, not another key of the app.
		other := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		for _, lk := range []string{key, other, "SOMETHING-ELSE"} {
			r := a.Heartbeat(sid, lk)
			if !r.Sealed {
				t.Fatalf("heartbeat reply not enveloped: %s", r)
			}
			r.OK(t)
		}
		r = a.Env(kwtest.PathHeartbeat, map[string]any{"session_id": sid})
		r.OK(t)
		if !r.Sealed {
			t.Fatal("heartbeat reply not enveloped")
		}

		r = a.Env(kwtest.PathLogout, map[string]any{"session_id": sid})
		r.OK(t)
		if !r.Sealed || r.Body["message"] != "Logged out successfully" {
			t.Fatalf("logout reply: sealed=%v %v", r.Sealed, r.Body)
		}
		a.Heartbeat(sid, "").Kill(t, "SESSION_EXPIRED")
	})
}

func TestAccountDeviceBinding(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)

		t.Run("one device: HWID_MISMATCH, same-device relogin retires the old session", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "OneDevice", map[string]any{"account_signup_days": 30, "account_max_devices": 1})
			a.SignUp(t, "solo", "password1", "")
			s1 := uaSession(t, a, "solo", "password1", "pc-1")
			uaSignIn(a, "solo", "password1", "pc-2").PlainFail(t, 403, "HWID_MISMATCH")
			a.BeatOK(t, s1, "")

			s.Clock.Advance(time.Minute)
			s2 := uaSession(t, a, "solo", "password1", "pc-1")
			a.Heartbeat(s1, "").Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, s2, "")
			acct := uaAccount(t, a, "solo")
			devices := acct["devices"].([]any)
			if len(devices) != 1 || devices[0].(map[string]any)["hwid"] != "pc-1" {
				t.Fatalf("devices = %v, want [pc-1]", devices)
			}
			if n := len(acct["sessions"].([]any)); n != 1 {
				t.Fatalf("%d live sessions, want 1", n)
			}
		})

		t.Run("two devices: the third is DEVICE_LIMIT", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "TwoDevices", map[string]any{"account_signup_days": 30, "account_max_devices": 2})
			a.SignUp(t, "duo", "password1", "")
			sa := uaSession(t, a, "duo", "password1", "pc-a")
			sb := uaSession(t, a, "duo", "password1", "pc-b")
			r := uaSignIn(a, "duo", "password1", "pc-c")
			r.PlainFail(t, 403, "DEVICE_LIMIT")
			uaInt(t, "devices_used", r.Body["devices_used"], 2)
			uaInt(t, "max_devices", r.Body["max_devices"], 2)
			a.BeatOK(t, sa, "")
			a.BeatOK(t, sb, "")
			if n := len(uaAccount(t, a, "duo")["devices"].([]any)); n != 2 {
				t.Fatalf("%d devices bound, want 2 (the refused one must not be bound)", n)
			}
			// A bound device signs in again.
			uaSignIn(a, "duo", "password1", "pc-b").OK(t)
		})
	})
}

func TestAccountKillCodes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)
		// Each case signs an account in, applies the cause and expects code
		// at the session's next heartbeat; after (optional) checks what a
		// new sign-in gets.
		for _, c := range []struct {
			name, code string
			kill       func(t *testing.T, a *kwtest.App, user string)
			after      func(t *testing.T, a *kwtest.App, user string)
		}{
			{name: "ban", code: "BANNED",
				kill: func(t *testing.T, a *kwtest.App, user string) { uaAct(t, a, "ban", user, nil) },
				after: func(t *testing.T, a *kwtest.App, user string) {
					uaSignIn(a, user, "password1", "pc").PlainFail(t, 403, "BANNED")
					uaAct(t, a, "unban", user, nil)
					uaSignIn(a, user, "password1", "pc").OK(t)
				}},
			{name: "pause", code: "PAUSED",
				kill: func(t *testing.T, a *kwtest.App, user string) { uaAct(t, a, "pause", user, nil) },
				after: func(t *testing.T, a *kwtest.App, user string) {
					uaSignIn(a, user, "password1", "pc").PlainFail(t, 403, "PAUSED")
					uaAct(t, a, "resume", user, nil)
					uaSignIn(a, user, "password1", "pc").OK(t)
				}},
			{name: "reset-devices", code: "HWID_RESET",
				kill: func(t *testing.T, a *kwtest.App, user string) { uaAct(t, a, "reset-devices", user, nil) },
				after: func(t *testing.T, a *kwtest.App, user string) {
					if n := len(uaAccount(t, a, user)["devices"].([]any)); n != 0 {
						t.Fatalf("%d devices after reset-devices", n)
					}
					uaSignIn(a, user, "password1", "another-pc").OK(t) // the seat is free
				}},
			{name: "set-expiry in the past", code: "EXPIRED",
				kill: func(t *testing.T, a *kwtest.App, user string) {
					uaAct(t, a, "set-expiry", user, map[string]any{"expires_at": uaStamp(a.S.Clock.Now().Add(-time.Hour))})
				},
				after: func(t *testing.T, a *kwtest.App, user string) {
					uaSignIn(a, user, "password1", "pc").PlainFail(t, 403, "EXPIRED")
				}},
			{name: "expiry passes", code: "EXPIRED",
				kill: func(t *testing.T, a *kwtest.App, user string) {
					s := a.S
					exp := s.Clock.Now().Add(2 * time.Hour)
					uaAct(t, a, "set-expiry", user, map[string]any{"expires_at": uaStamp(exp)})
					sid := uaSession(t, a, user, "password1", "pc")
					s.Clock.Advance(2*time.Hour - time.Second)
					a.BeatOK(t, sid, "") // one second left
					s.Clock.Advance(time.Second)
					a.Heartbeat(sid, "").Kill(t, "EXPIRED")
				},
				after: func(t *testing.T, a *kwtest.App, user string) {
					if st := uaAccount(t, a, user)["status"]; st != "expired" {
						t.Fatalf("account status = %v, want expired", st)
					}
					uaSignIn(a, user, "password1", "pc").PlainFail(t, 403, "EXPIRED")
				}},
			{name: "delete", code: "SESSION_REVOKED",
				kill: func(t *testing.T, a *kwtest.App, user string) {
					a.S.MustAdmin("DELETE", "/api/admin/accounts.php", map[string]any{"app_id": a.ID, "username": user})
				},
				after: func(t *testing.T, a *kwtest.App, user string) {
					uaNoAccount(t, a, user)
					uaSignIn(a, user, "password1", "pc").PlainFail(t, 401, "INVALID_CREDENTIALS")
				}},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := clSub(t, srv)
				a := s.AccountsApp(t, "Kill "+c.name, map[string]any{"account_signup_days": 30, "account_max_devices": 2})
				a.SignUp(t, "victim", "password1", "")
				sid := uaSession(t, a, "victim", "password1", "pc")
				a.BeatOK(t, sid, "")
				c.kill(t, a, "victim")
				a.Heartbeat(sid, "").Kill(t, c.code)
				// A kill is final: the session stays dead.
				a.Heartbeat(sid, "").Kill(t, c.code)
				if c.after != nil {
					c.after(t, a, "victim")
				}
			})
		}
	})
}

func TestAccountChangePassword(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Passwords", map[string]any{"account_signup_days": 30, "account_max_devices": 2})
		a.SignUp(t, "Erin", "password-one", "")
		s1 := uaSession(t, a, "erin", "password-one", "pc-1")
		s2 := uaSession(t, a, "erin", "password-one", "pc-2")
		change := func(body map[string]any) *kwtest.Reply { return a.Plain(uaChange, body) }

		// Refusals change nothing.
		change(map[string]any{"username": "erin", "current_password": "wrong-password",
			"new_password": "password-two"}).PlainFail(t,
			401, "INVALID_CREDENTIALS")

		change(map[string]any{"username": "nobody", "current_password": "password-one",
			"new_password": "password-two"}).PlainFail(t,
			401, "INVALID_CREDENTIALS")

		r := change(map[string]any{"username": "erin", "current_password": "password-one", "new_password": "short"})
		r.PlainFail(t, 400, "MISSING_FIELDS")
		uaMessage(t, r, "new_password")
		change(map[string]any{"username": "erin", "current_password": "password-one",
			"new_password": strings.Repeat("n", 73)}).PlainFail(t,
			400, "MISSING_FIELDS")

		r = change(map[string]any{"username": "erin", "current_password": "password-one", "new_password": "password-one"})
		r.PlainFail(t, 400, "MISSING_FIELDS")
		uaMessage(t, r, "new_password")
		for _, body := range []map[string]any{
			{"current_password": "password-one", "new_password": "password-two"},
			{"username": "erin", "new_password": "password-two"},
			{"username": "erin", "current_password": "password-one"},
		} {
			change(body).PlainFail(t, 400, "MISSING_FIELDS")
		}
		a.BeatOK(t, s1, "")
		a.BeatOK(t, s2, "")
		uaSignIn(a, "erin", "password-one", "pc-1").OK(t)
		s1 = uaSession(t, a, "erin", "password-one", "pc-1")

		// current_password: every session ends, only the new password works.
		r = change(map[string]any{"username": "ERIN", "current_password": "password-one", "new_password": "password-two"})
		r.OK(t)
		if r.Str("message") == "" {
			t.Fatalf("change-password reply without a message: %s", r)
		}
		a.Heartbeat(s1, "").Kill(t, "SESSION_REVOKED")
		a.Heartbeat(s2, "").Kill(t, "SESSION_REVOKED")
		if n := len(uaAccount(t, a, "erin")["sessions"].([]any)); n != 0 {
			t.Fatalf("%d live sessions after change-password", n)
		}
		uaSignIn(a, "erin", "password-one", "pc-1").PlainFail(t, 401, "INVALID_CREDENTIALS")
		s3 := uaSession(t, a, "erin", "password-two", "pc-1")

		// old_password (PY1.0) is an alias of current_password.
		change(map[string]any{"username": "erin", "old_password": "password-two", "new_password": "password-three"}).OK(t)
		a.Heartbeat(s3, "").Kill(t, "SESSION_REVOKED")
		uaSignIn(a, "erin", "password-two", "pc-1").PlainFail(t, 401, "INVALID_CREDENTIALS")
		uaSignIn(a, "erin", "password-three", "pc-1").OK(t)
		// A wrong alias value is a wrong password.
		change(map[string]any{"username": "erin", "old_password": "password-two",
			"new_password": "password-four"}).PlainFail(t,
			401, "INVALID_CREDENTIALS")

	})
}

// uaRedeemOK redeems key onto username by password and returns the reply.
func uaRedeemOK(t testing.TB, a *kwtest.App, username, password, key string) *kwtest.Reply {
	t.Helper()
	r := a.Plain(uaRedeem, map[string]any{"username": username, "password": password, "license_key": key})
	r.OK(t)
	return r
}

func TestAccountRedeemWithPassword(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)

		t.Run("an account without time redeems, then signs in", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Redeem", map[string]any{"account_signup_days": 0})
			a.SignUp(t, "frank", "password1", "")
			uaSignIn(a, "frank", "password1", "pc").PlainFail(t, 403, "EXPIRED")
			s.Clock.Advance(time.Hour)
			now := s.Clock.Now()
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			r := a.Plain(uaRedeem, map[string]any{"username": "Frank", "password": "password1", "license_key": " " + key + " "})
			r.OK(t)
			uaMessage(t, r, "+30 days")
			raw := kwtest.Numbers(t, r.Raw)
			if kwtest.Int(t, "days_added", raw["days_added"]) != 30 || kwtest.Int(t, "days_remaining", raw["days_remaining"]) != 30 ||
				kwtest.Int(t, "max_devices", raw["max_devices"]) != 1 {
				t.Fatalf("redeem reply = %v", raw)
			}
			if r.Body["lifetime"] != false || r.Body["mode"] != "stack" {
				t.Fatalf("lifetime = %v, mode = %v; want false, stack", r.Body["lifetime"], r.Body["mode"])
			}
			uaEqualTime(t, "expires_at", r.Body["expires_at"], now.Add(30*uaDay))
			if st := a.KeyView(t, key)["status"]; st != "redeemed" {
				t.Fatalf("key status = %v, want redeemed", st)
			}
			r = uaSignIn(a, "frank", "password1", "pc")
			r.OK(t)
			if r.Body["license_key"] != key {
				t.Fatalf("login license_key = %v, want %s", r.Body["license_key"], key)
			}
			// Another account cannot redeem the same key.
			a.SignUp(t, "fred", "password1", "")
			a.Plain(uaRedeem, map[string]any{"username": "fred", "password": "password1", "license_key": key}).PlainFail(t,
				409, "KEY_ALREADY_USED")

			uaEqualTime(t, "fred expires_at", uaAccount(t, a, "fred")["expires_at"], now)
		})

		t.Run("stack adds to the time left; expired time counts from now", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Stack", map[string]any{"account_signup_days": 10})
			a.SignUp(t, "gina", "password1", "")
			now := s.Clock.Now()
			r := uaRedeemOK(t, a, "gina", "password1", a.GenerateKeys(1, "days", 30, 1)[0])
			uaEqualTime(t, "expires_at", r.Body["expires_at"], now.Add(40*uaDay))
			uaInt(t, "days_remaining", r.Body["days_remaining"], 40)
			if r.Body["mode"] != "stack" {
				t.Fatalf("mode = %v", r.Body["mode"])
			}
			uaEqualTime(t, "account expires_at", uaAccount(t, a, "gina")["expires_at"], now.Add(40*uaDay))

			// An account whose time ran out gets the key's days from now.
			a.SignUp(t, "hank", "password1", "")
			s.Clock.Advance(15 * uaDay)
			r = uaRedeemOK(t, a, "hank", "password1", a.GenerateKeys(1, "days", 30, 1)[0])
			uaEqualTime(t, "expires_at", r.Body["expires_at"], s.Clock.Now().Add(30*uaDay))
		})

		t.Run("restart counts the key's days from now", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Restart", map[string]any{"account_signup_days": 10, "account_redeem_mode": "restart"})
			a.SignUp(t, "ivy", "password1", "")
			now := s.Clock.Now()
			r := uaRedeemOK(t, a, "ivy", "password1", a.GenerateKeys(1, "days", 30, 1)[0])
			uaEqualTime(t, "expires_at", r.Body["expires_at"], now.Add(30*uaDay))
			uaInt(t, "days_added", r.Body["days_added"], 30)
			if r.Body["mode"] != "restart" {
				t.Fatalf("mode = %v, want restart", r.Body["mode"])
			}
		})

		t.Run("lifetime, then ALREADY_LIFETIME", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Lifetime", map[string]any{"account_signup_days": 3})
			a.SignUp(t, "jack", "password1", "")
			r := uaRedeemOK(t, a, "jack", "password1", a.GenerateKeys(1, "lifetime", 0, 1)[0])
			uaMessage(t, r, "lifetime")
			if r.Body["lifetime"] != true {
				t.Fatalf("lifetime = %v", r.Body["lifetime"])
			}
			for _, f := range []string{"expires_at", "days_remaining"} {
				if v, ok := r.Body[f]; !ok || v != nil {
					t.Fatalf("%s = %v (present %v), want null", f, v, ok)
				}
			}
			uaInt(t, "days_added", r.Body["days_added"], 0)
			if v := uaAccount(t, a, "jack")["expires_at"]; v != nil {
				t.Fatalf("account expires_at = %v, want null", v)
			}
			more := a.GenerateKeys(1, "days", 30, 1)[0]
			a.Plain(uaRedeem, map[string]any{"username": "jack", "password": "password1", "license_key": more}).PlainFail(t,
				409, "ALREADY_LIFETIME")

			if st := a.KeyView(t, more)["status"]; st != "unused" {
				t.Fatalf("refused key status = %v, want unused", st)
			}
			a.Plain(uaRedeem, map[string]any{"username": "jack", "password": "password1",
				"license_key": a.GenerateKeys(1, "lifetime", 0, 1)[0]}).PlainFail(t,
				409, "ALREADY_LIFETIME")

		})

		t.Run("account_takes_key_devices", func(t *testing.T) {
			s := clSub(t, srv)
			takes := s.AccountsApp(t, "Takes", map[string]any{"account_signup_days": 3, "account_max_devices": 2})
			if v := s.AppSettings(t, takes.ID)["account_takes_key_devices"]; v != true {
				t.Fatalf("account_takes_key_devices default = %v, want true", v)
			}
			takes.SignUp(t, "kim", "password1", "")
			r := uaRedeemOK(t, takes, "kim", "password1", takes.GenerateKeys(1, "days", 30, 5)[0])
			uaInt(t, "max_devices", r.Body["max_devices"], 5)
			uaInt(t, "account max_devices", uaAccount(t, takes, "kim")["max_devices"], 5)
			// A key with fewer seats never lowers them.
			r = uaRedeemOK(t, takes, "kim", "password1", takes.GenerateKeys(1, "days", 30, 1)[0])
			uaInt(t, "max_devices", r.Body["max_devices"], 5)
			for _, pc := range []string{"pc-1", "pc-2", "pc-3", "pc-4", "pc-5"} {
				uaSession(t, takes, "kim", "password1", pc)
			}
			uaSignIn(takes, "kim", "password1", "pc-6").PlainFail(t, 403, "DEVICE_LIMIT")

			keeps := s.AccountsApp(t, "Keeps", map[string]any{"account_signup_days": 3, "account_max_devices": 2,
				"account_takes_key_devices": false})

			keeps.SignUp(t, "lee", "password1", "")
			r = uaRedeemOK(t, keeps, "lee", "password1", keeps.GenerateKeys(1, "days", 30, 5)[0])
			uaInt(t, "max_devices", r.Body["max_devices"], 2)
			uaInt(t, "account max_devices", uaAccount(t, keeps, "lee")["max_devices"], 2)
			// Sign-up with a key follows the same setting.
			u := keeps.SignUp(t, "lou", "password1", keeps.GenerateKeys(1, "days", 30, 5)[0])
			uaInt(t, "user.max_devices", u["max_devices"], 2)
		})

		t.Run("refusals", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "RedeemRefusals", map[string]any{"account_signup_days": 3})
			a.SignUp(t, "mia", "password1", "")
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			redeem := func(body map[string]any) *kwtest.Reply { return a.Plain(uaRedeem, body) }
			redeem(map[string]any{"username": "mia", "password": "wrong-pass", "license_key": key}).PlainFail(t, 401, "INVALID_CREDENTIALS")
			redeem(map[string]any{"username": "nobody", "password": "password1", "license_key": key}).PlainFail(t, 401, "INVALID_CREDENTIALS")
			redeem(map[string]any{"username": "mia", "password": "password1"}).PlainFail(t, 400, "MISSING_FIELDS")
			redeem(map[string]any{"username": "mia", "license_key": key}).PlainFail(t, 400, "MISSING_FIELDS")
			redeem(map[string]any{"password": "password1", "license_key": key}).PlainFail(t, 400, "MISSING_FIELDS")
			redeem(map[string]any{"username": "mia", "password": "password1", "license_key": "NOPE0-NOPE0-NOPE0-NOPE0"}).PlainFail(t,
				400, "INVALID_KEY")

			active := a.GenerateKeys(1, "days", 30, 1)[0]
			a.Login(active, "pc")
			redeem(map[string]any{"username": "mia", "password": "password1", "license_key": active}).PlainFail(t, 409, "KEY_IN_USE")
			banned := a.GenerateKeys(1, "days", 30, 1)[0]
			a.MustKeyAction(t, "ban", banned, nil)
			redeem(map[string]any{"username": "mia", "password": "password1", "license_key": banned}).PlainFail(t, 403, "BANNED")
			// A banned account redeems nothing.
			uaAct(t, a, "ban", "mia", nil)
			redeem(map[string]any{"username": "mia", "password": "password1", "license_key": key}).PlainFail(t, 403, "BANNED")
			if st := a.KeyView(t, key)["status"]; st != "unused" {
				t.Fatalf("key after refusals = %v, want unused", st)
			}
			uaAct(t, a, "unban", "mia", nil)
			uaRedeemOK(t, a, "mia", "password1", key)
		})
	})
}

func TestAccountRedeemWithSession(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "RedeemSession", map[string]any{"account_signup_days": 30})
		a.SignUp(t, "nora", "password1", "")
		now := s.Clock.Now()
		sid := uaSession(t, a, "nora", "password1", "pc")
		redeem := func(body map[string]any) *kwtest.Reply { return a.Plain(uaRedeem, body) }

		key := a.GenerateKeys(1, "days", 30, 1)[0]
		r := redeem(map[string]any{"session_id": sid, "license_key": key})
		r.OK(t)
		uaInt(t, "days_added", r.Body["days_added"], 30)
		uaEqualTime(t, "expires_at", r.Body["expires_at"], now.Add(60*uaDay))
		if r.Body["mode"] != "stack" || r.Body["lifetime"] != false {
			t.Fatalf("redeem reply = %v", r.Body)
		}
		// The session goes on.
		a.BeatOK(t, sid, "")

		// A license-key session is not an account session.
		other := a.GenerateKeys(1, "days", 30, 1)[0]
		plainKey := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		ksid := a.Login(plainKey, "pc")
		redeem(map[string]any{"session_id": ksid, "license_key": other}).PlainFail(t, 403, "SESSION_EXPIRED")
		redeem(map[string]any{"session_id": "no-such-session", "license_key": other}).PlainFail(t, 403, "SESSION_EXPIRED")
		redeem(map[string]any{"session_id": strings.Repeat("ab", 32), "license_key": other}).PlainFail(t, 403, "SESSION_EXPIRED")
		// The password form with a wrong password.
		redeem(map[string]any{"username": "nora", "password": "wrong-pass", "license_key": other}).PlainFail(t, 401, "INVALID_CREDENTIALS")
		// The session of another app.
		b := s.AccountsApp(t, "OtherApp", map[string]any{"account_signup_days": 30})
		b.SignUp(t, "nora", "password1", "")
		bsid := uaSession(t, b, "nora", "password1", "pc")
		redeem(map[string]any{"session_id": bsid, "license_key": other}).PlainFail(t, 403, "SESSION_EXPIRED")
		// A logged-out account session.
		gone := uaSession(t, a, "nora", "password1", "pc")
		a.Heartbeat(sid, "").Kill(t, "SESSION_EXPIRED") // retired by the same-device sign-in
		a.Env(kwtest.PathLogout, map[string]any{"session_id": gone}).OK(t)
		redeem(map[string]any{"session_id": gone, "license_key": other}).PlainFail(t, 403, "SESSION_EXPIRED")
		if st := a.KeyView(t, other)["status"]; st != "unused" {
			t.Fatalf("key after refused redeems = %v, want unused", st)
		}
		a.BeatOK(t, ksid, plainKey)
		uaEqualTime(t, "account expires_at", uaAccount(t, a, "nora")["expires_at"], now.Add(60*uaDay))
	})
}

func TestAccountKeyBanTakesTimeBack(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)

		t.Run("days key: ban moves the expiry back, unban gives it again", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "BanDays", map[string]any{"account_signup_days": 10})
			now := s.Clock.Now()
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			a.SignUp(t, "olga", "password1", key)
			if got := uaExpiry(t, a, "olga"); !got.Equal(now.Add(40 * uaDay)) {
				t.Fatalf("expires_at = %v, want sign-up days + key days", got)
			}
			sid := uaSession(t, a, "olga", "password1", "pc")

			a.MustKeyAction(t, "ban", key, nil)
			if got := uaExpiry(t, a, "olga"); !got.Equal(now.Add(10 * uaDay)) {
				t.Fatalf("expires_at after ban = %v, want %v", got, now.Add(10*uaDay))
			}
			if st := a.KeyView(t, key)["status"]; st != "banned" {
				t.Fatalf("key status after ban = %v", st)
			}
			a.BeatOK(t, sid, "") // ten days are left
			// Banning again takes nothing more.
			a.MustKeyAction(t, "ban", key, nil)
			if got := uaExpiry(t, a, "olga"); !got.Equal(now.Add(10 * uaDay)) {
				t.Fatalf("expires_at after a second ban = %v", got)
			}

			a.MustKeyAction(t, "unban", key, nil)
			if got := uaExpiry(t, a, "olga"); !got.Equal(now.Add(40 * uaDay)) {
				t.Fatalf("expires_at after unban = %v, want %v", got, now.Add(40*uaDay))
			}
			if st := a.KeyView(t, key)["status"]; st != "redeemed" {
				t.Fatalf("key status after unban = %v, want redeemed", st)
			}
			a.LoginReply(key, "pc").SealedFail(t, "KEY_REDEEMED")
			a.BeatOK(t, sid, "")
		})

		t.Run("days key: a ban that leaves no time kills at the next heartbeat", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "BanPast", map[string]any{"account_signup_days": 0})
			signup := s.Clock.Now()
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			a.SignUp(t, "pete", "password1", key)
			sid := uaSession(t, a, "pete", "password1", "pc")
			s.Clock.Advance(uaDay)
			a.BeatOK(t, sid, "")

			a.MustKeyAction(t, "ban", key, nil)
			if got := uaExpiry(t, a, "pete"); !got.Equal(signup) {
				t.Fatalf("expires_at after ban = %v, want the sign-up time %v", got, signup)
			}
			if st := uaAccount(t, a, "pete")["status"]; st != "expired" {
				t.Fatalf("account status after ban = %v, want expired", st)
			}
			a.Heartbeat(sid, "").Kill(t, "EXPIRED")
			uaSignIn(a, "pete", "password1", "pc").PlainFail(t, 403, "EXPIRED")

			a.MustKeyAction(t, "unban", key, nil)
			if got := uaExpiry(t, a, "pete"); !got.Equal(signup.Add(30 * uaDay)) {
				t.Fatalf("expires_at after unban = %v, want %v", got, signup.Add(30*uaDay))
			}
			a.BeatOK(t, uaSession(t, a, "pete", "password1", "pc"), "")
		})

		t.Run("lifetime key: ban restores the prior expiry, unban lifetime again", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "BanLifetime", map[string]any{"account_signup_days": 10})
			now := s.Clock.Now()
			a.SignUp(t, "quinn", "password1", "")
			life := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			uaRedeemOK(t, a, "quinn", "password1", life)
			sid := uaSession(t, a, "quinn", "password1", "pc")

			a.MustKeyAction(t, "ban", life, nil)
			acct := uaAccount(t, a, "quinn")
			uaEqualTime(t, "expires_at after ban", acct["expires_at"], now.Add(10*uaDay))
			if acct["lifetime"] != false {
				t.Fatalf("lifetime after ban = %v", acct["lifetime"])
			}
			a.BeatOK(t, sid, "")

			a.MustKeyAction(t, "unban", life, nil)
			acct = uaAccount(t, a, "quinn")
			if acct["expires_at"] != nil || acct["lifetime"] != true {
				t.Fatalf("after unban: expires_at %v, lifetime %v; want null, true", acct["expires_at"], acct["lifetime"])
			}
			if st := a.KeyView(t, life)["status"]; st != "redeemed" {
				t.Fatalf("key status after unban = %v, want redeemed", st)
			}
			// And again: the same prior expiry comes back.
			a.MustKeyAction(t, "ban", life, nil)
			uaEqualTime(t, "expires_at after the second ban", uaAccount(t, a, "quinn")["expires_at"], now.Add(10*uaDay))
			a.MustKeyAction(t, "unban", life, nil)
			a.BeatOK(t, sid, "")
		})

		t.Run("lifetime key of an account without prior time", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "BanLifetimeNoTime", map[string]any{"account_signup_days": 0})
			life := a.GenerateKeys(1, "lifetime", 0, 1)[0]
			a.SignUp(t, "rosa", "password1", life)
			sid := uaSession(t, a, "rosa", "password1", "pc")
			s.Clock.Advance(time.Hour)
			a.MustKeyAction(t, "ban", life, nil)
			a.Heartbeat(sid, "").Kill(t, "EXPIRED")
			a.MustKeyAction(t, "unban", life, nil)
			if v := uaAccount(t, a, "rosa")["expires_at"]; v != nil {
				t.Fatalf("expires_at after unban = %v, want null", v)
			}
			uaSignIn(a, "rosa", "password1", "pc").OK(t)
		})

		t.Run("other actions on a redeemed key are CONFLICT", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "RedeemedActions", map[string]any{"account_signup_days": 0})
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			a.SignUp(t, "sam", "password1", key)
			for _, c := range []struct {
				action string
				extra  map[string]any
			}{{"pause", nil}, {"resume", nil}, {"unban", nil}, {"extend", map[string]any{"days": 5}}, {"reset-hwid", nil}} {
				r := a.KeyAction(c.action, key, c.extra)
				r.JSONFail(t, 409, "CONFLICT")
			}
			if st := a.KeyView(t, key)["status"]; st != "redeemed" {
				t.Fatalf("key status = %v, want redeemed", st)
			}
			uaEqualTime(t, "expires_at", uaAccount(t, a, "sam")["expires_at"], s.Clock.Now().Add(30*uaDay))
		})
	})
}

func TestAccountMaintenanceAndTransport(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Transport", map[string]any{"account_signup_days": 30})
		a.SignUp(t, "tina", "password1", "")
		key := a.GenerateKeys(1, "days", 30, 1)[0]

		t.Run("maintenance", func(t *testing.T) {
			a := clAppOn(t, a)
			sid := uaSession(t, a, "tina", "password1", "pc")
			a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": "Back at noon."})
			for name, r := range map[string]*kwtest.Reply{
				"register": a.Plain(uaRegister, map[string]any{"username": "uma", "password": "password1"}),
				"login":    uaSignIn(a, "tina", "password1", "pc"),
				"redeem":   a.Plain(uaRedeem, map[string]any{"username": "tina", "password": "password1", "license_key": key}),
			} {
				r.PlainFail(t, 403, "MAINTENANCE")
				if r.Str("message") != "Back at noon." {
					t.Fatalf("%s: message = %q, want the app's maintenance message", name, r.Str("message"))
				}
			}
			a.Heartbeat(sid, "").Kill(t, "MAINTENANCE")
			a.SetSettings(t, map[string]any{"maintenance": false})
			uaNoAccount(t, a, "uma")
			if st := a.KeyView(t, key)["status"]; st != "unused" {
				t.Fatalf("key after a refused redeem = %v", st)
			}
			uaSignIn(a, "tina", "password1", "pc").OK(t)
		})

		t.Run("app secret", func(t *testing.T) {
			s := clSub(t, s)
			for _, path := range []string{uaRegister, uaLogin, uaChange, uaRedeem} {
				body := []byte(`{"username":"tina","password":"password1","hwid":"pc"}`)
				wrong := s.Do("POST", path, http.Header{"X-App-Secret": {strings.Repeat("0", 64)},
					"Content-Type": {"application/json"}}, body)
				wrong.PlainFail(t, 401, "INVALID_APP")
				none := s.Do("POST", path, http.Header{"Content-Type": {"application/json"}}, body)
				none.PlainFail(t, 401, "INVALID_APP")
			}
		})

		t.Run("methods", func(t *testing.T) {
			a := clAppOn(t, a)
			for _, path := range []string{uaRegister, uaLogin, uaChange, uaRedeem} {
				for _, m := range []string{"GET", "PUT", "DELETE"} {
					r := a.S.Do(m, path, http.Header{"X-App-Secret": {a.Secret}}, nil)
					if r.Status != 405 || r.Header.Get("Allow") != "POST" || r.Body["error_code"] != "METHOD_NOT_ALLOWED" {
						t.Fatalf("%s %s: %s (Allow %q)", m, path, r, r.Header.Get("Allow"))
					}
				}
			}
		})

		t.Run("wrong JSON types", func(t *testing.T) {
			a := clAppOn(t, a)
			for _, c := range []struct {
				path string
				body string
			}{
				{uaRegister, `{"username":12345,"password":"password1"}`},
				{uaRegister, `{"username":"vera","password":12345678}`},
				{uaRegister, `{"username":"vera","password":"password1","email":7}`},
				{uaRegister, `{"username":"vera","password":"password1","license_key":["k"]}`},
				{uaRegister, `["vera","password1"]`},
				{uaRegister, `not json`},
				{uaLogin, `{"username":12345,"password":"password1","hwid":"pc"}`},
				{uaLogin, `{"username":"tina","password":"password1","hwid":{"id":1}}`},
				{uaLogin, `{"username":"tina","password":true,"hwid":"pc"}`},
				{uaChange, `{"username":12345,"current_password":"password1","new_password":"password2"}`},
				{uaChange, `{"username":"tina","current_password":"password1","new_password":99999999}`},
				{uaRedeem, `{"username":12345,"password":"password1","license_key":"K"}`},
				{uaRedeem, `{"session_id":123,"license_key":"K"}`},
				{uaRedeem, `{"username":"tina","password":"password1","license_key":12345}`},
				{uaRegister, `{"username":"ve\u0000ra","password":"password1"}`},
			} {
				a.Plain(c.path, c.body).PlainFail(t, 400, "MISSING_FIELDS")
			}
			uaNoAccount(t, a, "vera")
			// Nothing changed for tina.
			uaSignIn(a, "tina", "password1", "pc").OK(t)
		})
	})
}

func TestAccountEvents(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Events", map[string]any{"account_signup_days": 0})
		k1 := a.GenerateKeys(1, "days", 30, 1)[0]
		k2 := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		a.SignUp(t, "Walt", "password1", "")
		a.SignUp(t, "xena", "password1", k1)
		// Refusals record nothing.
		a.Plain(uaRegister, map[string]any{"username": "yann", "password": "password1", "license_key": k1}).PlainFail(t,
			409, "KEY_ALREADY_USED")

		a.Plain(uaRegister, map[string]any{"username": "walt", "password": "password2"}).PlainFail(t, 409, "USERNAME_EXISTS")
		a.Plain(uaRedeem, map[string]any{"username": "walt", "password": "password1", "license_key": k1}).PlainFail(t,
			409, "KEY_ALREADY_USED")

		uaRedeemOK(t, a, "walt", "password1", k2)

		evs, err := s.DB.Events(context.Background(), 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		var created, redeemed []map[string]any
		for _, e := range evs {
			switch e.Type {
			case "account.created":
				created = append(created, e.Data)
			case "key.redeemed":
				redeemed = append(redeemed, e.Data)
			default:
				continue
			}
			if e.AppID != a.ID || e.Data["app_id"] != a.ID {
				t.Fatalf("%s event of app %q / %v, want %s", e.Type, e.AppID, e.Data["app_id"], a.ID)
			}
		}
		if len(created) != 2 || created[0]["username"] != "Walt" || created[0]["license_key"] != "" ||
			created[1]["username"] != "xena" || created[1]["license_key"] != k1 {
			t.Fatalf("account.created events = %v", created)
		}
		if len(redeemed) != 2 ||
			redeemed[0]["username"] != "xena" || redeemed[0]["license_key"] != k1 || redeemed[0]["days_added"] != 30.0 ||
			redeemed[0]["lifetime"] != false ||
			redeemed[1]["username"] != "Walt" || redeemed[1]["license_key"] != k2 || redeemed[1]["days_added"] != 0.0 ||
			redeemed[1]["lifetime"] != true {
			t.Fatalf("key.redeemed events = %v", redeemed)
		}
	})
}
