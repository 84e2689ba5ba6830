package adminapi_test

import (
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// The admin API of app user accounts: /api/admin/accounts.php (docs/api.md,
// Accounts). Helpers start with aa so they do not collide with other test
// files.

const (
	aaAccounts = "/api/admin/accounts.php"
	aaRegister = "/api/auth/account-register.php"
	aaLogin    = "/api/auth/account-login.php"
	aaChange   = "/api/auth/change-password.php"
	aaRedeem   = "/api/auth/account-redeem.php"
	aaPassword = "first-pass-123"
)

// aaTempRE is the temporary password of reset-password: 16 characters of an
// alphabet without look-alikes.
var aaTempRE = regexp.MustCompile(`^[abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789]{16}$`)

// aaApp creates an app with accounts on and 30 days of time at sign-up.
func aaApp(t testing.TB, s *kwtest.Server, name string) *kwtest.App {
	t.Helper()
	a := s.CreateApp(name)
	a.SetSettings(t, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	return a
}

// aaSignUp registers username with aaPassword and, when not empty, email.
func aaSignUp(t testing.TB, a *kwtest.App, username, email string) {
	t.Helper()
	body := map[string]any{"username": username, "password": aaPassword}
	if email != "" {
		body["email"] = email
	}
	a.Plain(aaRegister, body).OK(t)
}

// aaSignIn sends account-login from hwid.
func aaSignIn(a *kwtest.App, username, password, hwid string) *kwtest.Reply {
	a.S.T.Helper()
	return a.Plain(aaLogin, map[string]any{"username": username, "password": password, "hwid": hwid})
}

// aaGetReply is GET accounts.php?app_id=&username=.
func aaGetReply(a *kwtest.App, username string) *kwtest.Reply {
	a.S.T.Helper()
	return a.S.Admin("GET", aaAccounts+"?app_id="+url.QueryEscape(a.ID)+"&username="+url.QueryEscape(username), nil)
}

// aaGet returns one account with its devices, sessions and redeemed keys.
func aaGet(t testing.TB, a *kwtest.App, username string) map[string]any {
	t.Helper()
	r := aaGetReply(a, username)
	r.OK(t)
	acct := r.Obj("account")
	if acct == nil {
		t.Fatalf("GET account %s: no account object: %s", username, r)
	}
	return acct
}

// aaList is GET accounts.php?app_id= with the query (may be "").
func aaList(a *kwtest.App, query string) *kwtest.Reply {
	a.S.T.Helper()
	path := aaAccounts + "?app_id=" + url.QueryEscape(a.ID)
	if query != "" {
		path += "&" + query
	}
	return a.S.Admin("GET", path, nil)
}

// aaNames lists the usernames matching q (all pages, limit 1000).
func aaNames(t testing.TB, a *kwtest.App, q string) []string {
	t.Helper()
	r := aaList(a, "q="+url.QueryEscape(q))
	r.OK(t)
	if r.Body["next_cursor"] != nil {
		t.Fatalf("q=%q: next_cursor %v on a single page", q, r.Body["next_cursor"])
	}
	out := []string{}
	for _, v := range r.List(t, "accounts") {
		out = append(out, v["username"].(string))
	}
	return out
}

// aaAction applies an account action and returns the reply.
func aaAction(a *kwtest.App, action, username string, extra map[string]any) *kwtest.Reply {
	a.S.T.Helper()
	body := map[string]any{"username": username}
	for k, v := range extra {
		body[k] = v
	}
	return a.S.Admin("POST", aaAccounts+"?app_id="+url.QueryEscape(a.ID)+"&action="+url.QueryEscape(action), body)
}

// aaMust applies an action, fails unless it succeeds, and returns the account.
func aaMust(t testing.TB, a *kwtest.App, action, username string, extra map[string]any) map[string]any {
	t.Helper()
	r := aaAction(a, action, username, extra)
	r.OK(t)
	acct := r.Obj("account")
	if got, _ := acct["username"].(string); !strings.EqualFold(got, username) {
		t.Fatalf("%s %s: reply account %v", action, username, r)
	}
	return acct
}

// aaAudits returns the app's audit entries of action (newest first).
func aaAudits(t testing.TB, a *kwtest.App, action string) []map[string]any {
	t.Helper()
	return a.S.Audit(t, "app_id="+url.QueryEscape(a.ID)+"&action="+url.QueryEscape(action))
}

// aaAudited fails unless the newest entry of action targets username in the
// app, by the test admin, and returns it; want is how many entries of that
// action the app must have.
func aaAudited(t testing.TB, a *kwtest.App, action, username string, want int) map[string]any {
	t.Helper()
	es := aaAudits(t, a, action)
	if len(es) != want {
		t.Fatalf("%d %s audit entries, want %d: %v", len(es), action, want, es)
	}
	e := es[0]
	if e["action"] != action || e["app_id"] != a.ID || e["target"] != username {
		t.Fatalf("audit entry %v, want action %s, app %s, target %s", e, action, a.ID, username)
	}
	if actor, _ := e["actor"].(map[string]any); actor == nil || actor["name"] != "admin" {
		t.Fatalf("audit entry actor %v, want the admin", e["actor"])
	}
	return e
}

// The list shows every account with its full shape, in creation order.
func TestAdminAccountsList(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Accounts")
		created := s.Clock.Now()
		key := a.GenerateKeys(1, "days", 10, 2)[0]
		aaSignUp(t, a, "alice", "Alice@Example.com")
		a.Plain(aaRegister, map[string]any{"username": "bob", "password": aaPassword, "license_key": key}).OK(t)
		s.Clock.Advance(time.Hour)
		aaSignIn(a, "alice", aaPassword, "pc-1").OK(t)

		r := aaList(a, "")
		r.OK(t)
		if r.Body["next_cursor"] != nil {
			t.Fatalf("next_cursor = %v on the only page, want null", r.Body["next_cursor"])
		}
		list := r.List(t, "accounts")
		if len(list) != 2 || list[0]["username"] != "alice" || list[1]["username"] != "bob" {
			t.Fatalf("accounts = %v, want alice then bob", list)
		}
		for _, acct := range list {
			for _, f := range []string{"id", "username", "email", "status", "expires_at", "days_remaining", "max_devices",
				"license_key", "features", "password_reset_required", "last_login_at", "created_at", "key_type", "lifetime"} {
				if _, ok := acct[f]; !ok {
					t.Fatalf("account %v has no %s", acct["username"], f)
				}
			}
			if _, ok := acct["password_hash"]; ok {
				t.Fatalf("account %v shows its password hash", acct["username"])
			}
			for f := range acct {
				if strings.Contains(strings.ToLower(f), "password") && f != "password_reset_required" {
					t.Fatalf("account field %s", f)
				}
			}
		}
		alice, bob := list[0], list[1]
		kwtest.Num(t, "id", alice["id"])
		if alice["id"] == bob["id"] {
			t.Fatalf("alice and bob share id %v", alice["id"])
		}
		if alice["email"] != "Alice@Example.com" || alice["status"] != "active" || alice["license_key"] != "" ||
			alice["password_reset_required"] != false || alice["lifetime"] != false || alice["key_type"] != "days" {
			t.Fatalf("alice = %v", alice)
		}
		if f, ok := alice["features"].(map[string]any); !ok || len(f) != 0 {
			t.Fatalf("alice features = %#v, want {}", alice["features"])
		}
		if want := created.Add(30 * 24 * time.Hour); !kwtest.WireTime(t, "alice expires_at", alice["expires_at"]).Equal(want) {
			t.Fatalf("alice expires_at = %v, want %v", alice["expires_at"], want)
		}
		if kwtest.Num(t, "days_remaining", alice["days_remaining"]) != 30 || kwtest.Num(t, "max_devices", alice["max_devices"]) != 1 {
			t.Fatalf("alice days_remaining/max_devices = %v/%v, want 30/1", alice["days_remaining"], alice["max_devices"])
		}
		if got := kwtest.WireTime(t, "alice created_at", alice["created_at"]); !got.Equal(created) {
			t.Fatalf("alice created_at = %v, want %v", got, created)
		}
		if got := kwtest.WireTime(t, "alice last_login_at", alice["last_login_at"]); !got.Equal(created.Add(time.Hour)) {
			t.Fatalf("alice last_login_at = %v, want %v", got, created.Add(time.Hour))
		}
		if bob["last_login_at"] != nil || bob["email"] != "" {
			t.Fatalf("bob last_login_at/email = %#v/%#v, want null/\"\"", bob["last_login_at"], bob["email"])
		}
		if bob["license_key"] != key || kwtest.Num(t, "bob days_remaining", bob["days_remaining"]) != 40 {
			t.Fatalf("bob = %v, want license_key %s and 40 days", bob, key)
		}
	})
}

// q matches a substring of the username or e-mail in any case; % and _ are
// plain characters.
func TestAdminAccountsSearch(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Search")
		other := aaApp(t, s, "OtherApp")
		aaSignUp(t, a, "alice", "Alice@Example.com")
		aaSignUp(t, a, "Bob_Smith", "")
		aaSignUp(t, a, "bobxsmith", "bob@example.org")
		aaSignUp(t, a, "carol", "100%club@Mail.test")
		aaSignUp(t, a, "dave", "d.ave@example.COM")
		aaSignUp(t, other, "alice2", "alice@example.com")

		for q, want := range map[string][]string{
			"ALICE":       {"alice"},
			"ali":         {"alice"},
			"example.com": {"alice", "dave"},
			"EXAMPLE":     {"alice", "bobxsmith", "dave"},
			"bob":         {"Bob_Smith", "bobxsmith"},
			"bob_":        {"Bob_Smith"},
			"_":           {"Bob_Smith"},
			"%":           {"carol"},
			"0%c":         {"carol"},
			"a%e":         {},
			"b_b":         {},
			`\`:           {},
			"mail.TEST":   {"carol"},
			"nobody":      {},
		} {
			if got := aaNames(t, a, q); !reflect.DeepEqual(got, want) {
				t.Errorf("q=%q: %v, want %v", q, got, want)
			}
		}
		if got := aaNames(t, a, ""); len(got) != 5 {
			t.Errorf("no q: %v, want all 5 accounts of the app", got)
		}
		kwtest.ExpectCode(t, aaList(a, "q="+strings.Repeat("a", 201)), 400, "MISSING_FIELDS")
	})
}

// cursor and limit page through the accounts in order; next_cursor is null
// on the last page.
func TestAdminAccountsPaging(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Paging")
		var want []string
		for i := range 5 {
			u := "user" + strconv.Itoa(i)
			aaSignUp(t, a, u, "")
			want = append(want, u)
		}

		var got []string
		var sizes []int
		cursor := ""
		for page := 0; ; page++ {
			if page > 5 {
				t.Fatalf("paging does not end: %v", got)
			}
			q := "limit=2"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := aaList(a, q)
			r.OK(t)
			list := r.List(t, "accounts")
			sizes = append(sizes, len(list))
			for _, v := range list {
				got = append(got, v["username"].(string))
			}
			if r.Body["next_cursor"] == nil {
				break
			}
			c, ok := r.Body["next_cursor"].(string)
			if !ok || c == "" {
				t.Fatalf("next_cursor = %#v, want a string or null", r.Body["next_cursor"])
			}
			cursor = c
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(sizes, []int{2, 2, 1}) {
			t.Fatalf("pages of 2: sizes %v, accounts %v; want [2 2 1], %v", sizes, got, want)
		}

		// Paging combines with q.
		r := aaList(a, "q=USER&limit=3")
		r.OK(t)
		if n := len(r.List(t, "accounts")); n != 3 || r.Body["next_cursor"] == nil {
			t.Fatalf("q=USER&limit=3: %d accounts, next_cursor %v", n, r.Body["next_cursor"])
		}
		r = aaList(a, "q=USER&limit=3&cursor="+url.QueryEscape(r.Body["next_cursor"].(string)))
		r.OK(t)
		if n := len(r.List(t, "accounts")); n != 2 || r.Body["next_cursor"] != nil {
			t.Fatalf("second page of q=USER&limit=3: %d accounts, next_cursor %v; want 2, null", n, r.Body["next_cursor"])
		}
		kwtest.ExpectCode(t, aaList(a, "cursor=abc"), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, aaList(a, "limit=many"), 400, "MISSING_FIELDS")
	})
}

// username= returns one account (any case) with its devices, live sessions
// and redeemed keys.
func TestAdminAccountsDetail(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Detail")
		aaSignUp(t, a, "alice", "alice@example.com")
		key := a.GenerateKeys(1, "days", 7, 1)[0]
		t0 := s.Clock.Now()

		acct := aaGet(t, a, "alice")
		if d, _ := acct["devices"].([]any); d == nil || len(d) != 0 {
			t.Fatalf("devices of a new account = %#v, want []", acct["devices"])
		}
		if d, _ := acct["sessions"].([]any); d == nil || len(d) != 0 {
			t.Fatalf("sessions of a new account = %#v, want []", acct["sessions"])
		}
		if d, _ := acct["redeemed_keys"].([]any); d == nil || len(d) != 0 {
			t.Fatalf("redeemed_keys of a new account = %#v, want []", acct["redeemed_keys"])
		}

		login := aaSignIn(a, "alice", aaPassword, "pc-1")
		login.OK(t)
		s.Clock.Advance(time.Minute)
		a.Plain(aaRedeem, map[string]any{"username": "alice", "password": aaPassword, "license_key": key}).OK(t)

		acct = aaGet(t, a, "ALICE")
		if acct["username"] != "alice" || acct["email"] != "alice@example.com" || acct["license_key"] != key {
			t.Fatalf("account = %v", acct)
		}
		devices := acct["devices"].([]any)
		if len(devices) != 1 {
			t.Fatalf("devices = %v, want pc-1", devices)
		}
		d := devices[0].(map[string]any)
		if d["hwid"] != "pc-1" {
			t.Fatalf("device = %v, want pc-1", d)
		}
		if got := kwtest.WireTime(t, "first_seen_at", d["first_seen_at"]); !got.Equal(t0) {
			t.Fatalf("first_seen_at = %v, want %v", got, t0)
		}
		kwtest.WireTime(t, "last_seen_at", d["last_seen_at"])
		sessions := acct["sessions"].([]any)
		if len(sessions) != 1 {
			t.Fatalf("sessions = %v, want the one of pc-1", sessions)
		}
		ss := sessions[0].(map[string]any)
		if ss["hwid"] != "pc-1" || ss["username"] != "alice" || ss["license_key"] != "" || ss["ip"] != "127.0.0.1" {
			t.Fatalf("session = %v", ss)
		}
		if _, ok := ss["id"]; !ok {
			t.Fatalf("session without id: %v", ss)
		}
		if ss["id"] == login.Str("session_id") {
			t.Fatalf("the admin view shows the session token")
		}
		keys := acct["redeemed_keys"].([]any)
		if len(keys) != 1 {
			t.Fatalf("redeemed_keys = %v, want the one key", keys)
		}
		rk := keys[0].(map[string]any)
		if rk["license_key"] != key || kwtest.Num(t, "days_added", rk["days_added"]) != 7 || rk["lifetime"] != false {
			t.Fatalf("redeemed key = %v", rk)
		}
		if got := kwtest.WireTime(t, "redeemed_at", rk["redeemed_at"]); !got.Equal(t0.Add(time.Minute)) {
			t.Fatalf("redeemed_at = %v, want %v", got, t0.Add(time.Minute))
		}
	})
}

// Unknown usernames and apps are 404; app_id is required; every method
// needs the bearer token.
func TestAdminAccountsRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Refusals")
		other := aaApp(t, s, "Other")
		aaSignUp(t, a, "alice", "")
		aaSignUp(t, other, "olga", "")

		aaGetReply(a, "nobody").JSONFail(t, 404, "NOT_FOUND")
		aaGetReply(a, "olga").JSONFail(t, 404, "NOT_FOUND") // another app's account
		ghost := s.NewApp("no-such-app", "x")
		aaGetReply(ghost, "alice").JSONFail(t, 404, "NOT_FOUND")
		aaList(ghost, "").JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", aaAccounts, nil).JSONFail(t, 400, "MISSING_FIELDS")
		aaAction(a, "ban", "nobody", nil).JSONFail(t, 404, "NOT_FOUND")
		aaAction(ghost, "ban", "alice", nil).JSONFail(t, 404, "NOT_FOUND")
		aaAction(a, "ban", "olga", nil).JSONFail(t, 404, "NOT_FOUND")
		aaAction(a, "ban", "", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("POST", aaAccounts+"?app_id="+a.ID, map[string]any{"username": "alice"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("DELETE", aaAccounts, map[string]any{"app_id": a.ID, "username": "nobody"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", aaAccounts, map[string]any{"app_id": a.ID}).JSONFail(t, 400, "MISSING_FIELDS")
		if es := aaAudits(t, a, "account.ban"); len(es) != 0 {
			t.Fatalf("refused actions were audited: %v", es)
		}

		for _, m := range []string{"GET", "POST", "DELETE"} {
			path := aaAccounts + "?app_id=" + a.ID + "&username=alice&action=ban"
			body := kwtest.JSON(t, map[string]any{"app_id": a.ID, "username": "alice"})
			s.Do(m, path, http.Header{"Content-Type": {"application/json"}}, body).JSONFail(t, 401, "UNAUTHORIZED")
			s.Do(m, path, kwtest.Bearer("not-a-token"), body).JSONFail(t, 401, "UNAUTHORIZED")
		}
		if got := aaGet(t, a, "alice")["status"]; got != "active" {
			t.Fatalf("status after refused calls = %v, want active", got)
		}
	})
}

// ban / unban and pause / resume with their conflicts, each audited once.
func TestAdminAccountsBanPause(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "BanPause")
		aaSignUp(t, a, "alice", "")

		aaAction(a, "unban", "alice", nil).JSONFail(t, 409, "CONFLICT")
		aaAction(a, "resume", "alice", nil).JSONFail(t, 409, "CONFLICT")

		if acct := aaMust(t, a, "ban", "Alice", map[string]any{"reason": "chargeback"}); acct["status"] != "banned" {
			t.Fatalf("after ban: %v", acct)
		}
		e := aaAudited(t, a, "account.ban", "alice", 1)
		if d, _ := e["details"].(map[string]any); d == nil || d["reason"] != "chargeback" {
			t.Fatalf("ban audit details = %#v, want the reason", e["details"])
		}
		aaSignIn(a, "alice", aaPassword, "pc").PlainFail(t, 403, "BANNED")
		aaAction(a, "pause", "alice", nil).JSONFail(t, 409, "CONFLICT")
		aaAction(a, "resume", "alice", nil).JSONFail(t, 409, "CONFLICT")
		if acct := aaMust(t, a, "unban", "alice", nil); acct["status"] != "active" {
			t.Fatalf("after unban: %v", acct)
		}
		aaAudited(t, a, "account.unban", "alice", 1)
		aaAction(a, "unban", "alice", nil).JSONFail(t, 409, "CONFLICT")
		aaAudited(t, a, "account.unban", "alice", 1)
		aaSignIn(a, "alice", aaPassword, "pc").OK(t)

		if acct := aaMust(t, a, "pause", "alice", nil); acct["status"] != "paused" {
			t.Fatalf("after pause: %v", acct)
		}
		aaAudited(t, a, "account.pause", "alice", 1)
		if got := aaGet(t, a, "alice")["status"]; got != "paused" {
			t.Fatalf("status = %v, want paused", got)
		}
		aaSignIn(a, "alice", aaPassword, "pc").PlainFail(t, 403, "PAUSED")
		if acct := aaMust(t, a, "resume", "alice", nil); acct["status"] != "active" {
			t.Fatalf("after resume: %v", acct)
		}
		aaAudited(t, a, "account.resume", "alice", 1)
		aaAction(a, "resume", "alice", nil).JSONFail(t, 409, "CONFLICT")
		aaAudited(t, a, "account.resume", "alice", 1)
		aaSignIn(a, "alice", aaPassword, "pc").OK(t)

		// A paused account can be banned; unbanning makes it active.
		aaMust(t, a, "pause", "alice", nil)
		if acct := aaMust(t, a, "ban", "alice", nil); acct["status"] != "banned" {
			t.Fatalf("ban of a paused account: %v", acct)
		}
		if acct := aaMust(t, a, "unban", "alice", nil); acct["status"] != "active" {
			t.Fatalf("unban: %v", acct)
		}
	})
}

// reset-devices unbinds every device: the list is empty and another device
// can take the seat.
func TestAdminAccountsResetDevices(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Devices")
		aaSignUp(t, a, "alice", "")
		aaSignIn(a, "alice", aaPassword, "pc-1").OK(t)
		aaSignIn(a, "alice", aaPassword, "pc-2").PlainFail(t, 403, "HWID_MISMATCH")
		if d := aaGet(t, a, "alice")["devices"].([]any); len(d) != 1 {
			t.Fatalf("devices = %v, want pc-1", d)
		}

		aaMust(t, a, "reset-devices", "alice", nil)
		acct := aaGet(t, a, "alice")
		if d := acct["devices"].([]any); len(d) != 0 {
			t.Fatalf("devices after reset-devices = %v, want none", d)
		}
		if ss := acct["sessions"].([]any); len(ss) != 0 {
			t.Fatalf("sessions after reset-devices = %v, want none", ss)
		}
		aaAudited(t, a, "account.reset-devices", "alice", 1)
		aaSignIn(a, "alice", aaPassword, "pc-2").OK(t)
		if d := aaGet(t, a, "alice")["devices"].([]any); len(d) != 1 || d[0].(map[string]any)["hwid"] != "pc-2" {
			t.Fatalf("devices = %v, want pc-2", d)
		}
	})
}

// set-expiry takes an ISO 8601 time or lifetime true, never both or
// neither.
func TestAdminAccountsSetExpiry(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Expiry")
		aaSignUp(t, a, "alice", "")

		acct := aaMust(t, a, "set-expiry", "alice", map[string]any{"expires_at": "2027-01-01T00:00:00Z"})
		if acct["expires_at"] != "2027-01-01T00:00:00Z" || acct["status"] != "active" || acct["lifetime"] != false {
			t.Fatalf("after set-expiry: %v", acct)
		}
		if got := aaGet(t, a, "alice")["expires_at"]; got != "2027-01-01T00:00:00Z" {
			t.Fatalf("stored expires_at = %v", got)
		}
		e := aaAudited(t, a, "account.set-expiry", "alice", 1)
		if d, _ := e["details"].(map[string]any); d == nil || d["expires_at"] != "2027-01-01T00:00:00Z" || d["lifetime"] != false {
			t.Fatalf("set-expiry audit details = %#v", e["details"])
		}

		// Another offset is stored in UTC.
		acct = aaMust(t, a, "set-expiry", "alice", map[string]any{"expires_at": "2027-06-01T02:00:00+02:00"})
		if acct["expires_at"] != "2027-06-01T00:00:00Z" {
			t.Fatalf("expires_at with an offset = %v, want 2027-06-01T00:00:00Z", acct["expires_at"])
		}

		acct = aaMust(t, a, "set-expiry", "alice", map[string]any{"lifetime": true})
		if acct["expires_at"] != nil || acct["lifetime"] != true || acct["key_type"] != "lifetime" || acct["status"] != "active" {
			t.Fatalf("after set-expiry lifetime: %v", acct)
		}
		aaAudited(t, a, "account.set-expiry", "alice", 3)

		for _, body := range []map[string]any{
			{"expires_at": "2027-01-01T00:00:00Z", "lifetime": true},
			{},
			{"lifetime": false},
			{"expires_at": "next tuesday"},
			{"expires_at": "2027-01-01"},
			{"expires_at": "2027-13-01T00:00:00Z"},
		} {
			aaAction(a, "set-expiry", "alice", body).JSONFail(t, 400, "MISSING_FIELDS")
		}
		aaAudited(t, a, "account.set-expiry", "alice", 3)
		if got := aaGet(t, a, "alice"); got["expires_at"] != nil || got["lifetime"] != true {
			t.Fatalf("refused set-expiry changed the account: %v", got)
		}

		// A time in the past ends the account's time.
		past := s.Clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		if acct := aaMust(t, a, "set-expiry", "alice", map[string]any{"expires_at": past}); acct["status"] != "expired" {
			t.Fatalf("after a past expiry: %v", acct)
		}
		aaSignIn(a, "alice", aaPassword, "pc").PlainFail(t, 403, "EXPIRED")
	})
}

// reset-password returns a temporary password once; the old password stops
// working, the temporary one signs in only to be told to change it, and
// change-password with it as the current password ends the forced reset.
func TestAdminAccountsResetPassword(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Reset")
		aaSignUp(t, a, "alice", "")

		r := aaAction(a, "reset-password", "alice", nil)
		r.OK(t)
		temp := r.Str("temporary_password")
		if !aaTempRE.MatchString(temp) {
			t.Fatalf("temporary_password = %q, want 16 unambiguous letters and digits", temp)
		}
		if acct := r.Obj("account"); acct == nil || acct["password_reset_required"] != true {
			t.Fatalf("reply account = %v, want password_reset_required true", r.Obj("account"))
		}
		if aaGet(t, a, "alice")["password_reset_required"] != true {
			t.Fatalf("password_reset_required not stored")
		}
		e := aaAudited(t, a, "account.reset-password", "alice", 1)
		if raw := string(kwtest.JSON(t, e)); strings.Contains(raw, temp) {
			t.Fatalf("the audit entry shows the temporary password: %s", raw)
		}
		if r2 := aaAction(a, "reset-password", "alice", nil); r2.Str("temporary_password") == temp {
			t.Fatalf("a second reset gave the same temporary password")
		} else {
			r2.OK(t)
			temp = r2.Str("temporary_password")
		}

		aaSignIn(a, "alice", aaPassword, "pc").PlainFail(t, 401, "INVALID_CREDENTIALS")
		aaSignIn(a, "alice", temp, "pc").PlainFail(t, 403, "PASSWORD_RESET_REQUIRED")
		a.Plain(aaChange, map[string]any{"username": "alice", "current_password": temp,
			"new_password": "second-pass-456"}).OK(t)

		aaSignIn(a, "alice", "second-pass-456", "pc").OK(t)
		aaSignIn(a, "alice", temp, "pc").PlainFail(t, 401, "INVALID_CREDENTIALS")
		if aaGet(t, a, "alice")["password_reset_required"] != false {
			t.Fatalf("password_reset_required still true after change-password")
		}
	})
}

// Unknown actions are refused without a trace.
func TestAdminAccountsUnknownAction(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Unknown")
		aaSignUp(t, a, "alice", "")
		for _, action := range []string{"delete", "BAN", "extend", "reset-hwid", "nope"} {
			aaAction(a, action, "alice", nil).JSONFail(t, 400, "MISSING_FIELDS")
		}
		for _, e := range s.Audit(t, "app_id="+a.ID) {
			if action, _ := e["action"].(string); strings.HasPrefix(action, "account.") {
				t.Fatalf("a refused action was audited: %v", e)
			}
		}
		if got := aaGet(t, a, "alice")["status"]; got != "active" {
			t.Fatalf("status = %v, want active", got)
		}
	})
}

// DELETE removes the account (it is 404 afterwards and cannot sign in) and
// writes account.delete; its username can be taken again.
func TestAdminAccountsDelete(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := aaApp(t, s, "Delete")
		aaSignUp(t, a, "alice", "")
		aaSignUp(t, a, "bob", "")
		aaSignIn(a, "alice", aaPassword, "pc").OK(t)

		r := s.Admin("DELETE", aaAccounts, map[string]any{"app_id": a.ID, "username": "ALICE"})
		r.OK(t)
		aaGetReply(a, "alice").JSONFail(t, 404, "NOT_FOUND")
		aaAudited(t, a, "account.delete", "alice", 1)
		if got := aaNames(t, a, ""); !reflect.DeepEqual(got, []string{"bob"}) {
			t.Fatalf("accounts after delete = %v, want [bob]", got)
		}
		aaSignIn(a, "alice", aaPassword, "pc").PlainFail(t, 401, "INVALID_CREDENTIALS")
		s.Admin("DELETE", aaAccounts, map[string]any{"app_id": a.ID, "username": "alice"}).JSONFail(t, 404, "NOT_FOUND")
		aaAudited(t, a, "account.delete", "alice", 1)

		// app_id in the query string works too.
		s.Admin("DELETE", aaAccounts+"?app_id="+a.ID, map[string]any{"username": "bob"}).OK(t)
		aaAudited(t, a, "account.delete", "bob", 2)

		aaSignUp(t, a, "alice", "")
		if acct := aaGet(t, a, "alice"); acct["status"] != "active" {
			t.Fatalf("new alice = %v", acct)
		}
	})
}
