package dashboard_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// sessField returns the value of the first hidden field name on the page
// (after the text after, when given).
func sessField(t *testing.T, p *webPage, name, after string) string {
	t.Helper()
	body := p.Body
	if after != "" {
		i := strings.Index(body, after)
		if i < 0 {
			t.Fatalf("%q not on the page", after)
		}
		body = body[i:]
	}
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no field %s on %s", name, p.URL)
	}
	return m[1]
}

// sessSettings changes app settings through the admin API.
func sessSettings(s *site, app *kwtest.App, settings map[string]any) {
	s.t.Helper()
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": settings})
}

// sessKey reads a key (with devices and sessions) through the admin API.
func sessKey(s *site, app *kwtest.App, key string) map[string]any {
	s.t.Helper()
	return s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")
}

func TestSessionsListAndRevoke(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Sessions app")
	keys := app.GenerateKeys(2, "lifetime", 0, 1)
	sid := app.Login(keys[0], "HWID-SESS-ONE")
	app.Login(keys[1], "HWID-SESS-TWO")
	base := "/dashboard/apps/" + app.ID + "/sessions"

	p := s.get(base).must(t)
	for _, want := range []string{keys[0], keys[1], "HWID-SESS-ONE", "HWID-SESS-TWO", "Revoke", "Last heartbeat"} {
		if !p.Has(want) {
			t.Fatalf("sessions page lacks %q: %s", want, p.Text())
		}
	}
	if !strings.Contains(p.Body, `href="/dashboard/apps/`+app.ID+`/keys/`+keys[0]+`"`) {
		t.Fatal("the key does not link to its key page")
	}
	id := sessField(t, p, "session_id", "HWID-SESS-ONE")

	// Filtered by key: only that key's session.
	f := s.get(base + "?license_key=" + url.QueryEscape(keys[1])).must(t)
	if !f.Has("HWID-SESS-TWO") || f.Has("HWID-SESS-ONE") {
		t.Fatalf("key filter: %s", f.Text())
	}
	// An unknown key is the API's refusal on the page.
	if u := s.get(base + "?license_key=NOPE-NOPE").must(t); !strings.Contains(u.Text(), "NOT_FOUND") && !strings.Contains(u.Text(), "not found") {
		t.Fatalf("unknown key filter: %s", u.Text())
	}

	// Without confirm: a confirmation page, and the session lives on.
	s.get(base)
	c := s.post(base+"/revoke", url.Values{"session_id": {id}}).must(t)
	if !c.Has("Revoke this session?") || !strings.Contains(c.Body, `name="confirm" value="yes"`) {
		t.Fatalf("no confirmation page: %s", c.Text())
	}
	if r := app.Heartbeat(sid, keys[0]); r.Body["success"] != true {
		t.Fatalf("heartbeat after an unconfirmed revoke: %v", r)
	}

	// Confirmed: the client's next heartbeat is refused with the kill code.
	s.get(base)
	d := s.post(base+"/revoke", url.Values{"session_id": {id}, "confirm": {"yes"}}).must(t)
	if d.flash() != "Session revoked." || d.URL != base {
		t.Fatalf("revoke: %q at %s", d.flash(), d.URL)
	}
	if r := app.Heartbeat(sid, keys[0]); r.Body["success"] != false || r.Body["error_code"] != "SESSION_REVOKED" {
		t.Fatalf("heartbeat after revoke: %v", r)
	}
	if d.Has("HWID-SESS-ONE") || !d.Has("HWID-SESS-TWO") {
		t.Fatalf("the revoked session is still listed: %s", d.Text())
	}

	// A viewer may look but not revoke: the API's refusal as a message.
	s.AddMember(app.ID, "viewer2", "viewer password 2", "viewer")
	v := auditSiteAs(t, s, "viewer2", "viewer password 2")
	v.get(base).must(t)
	if vp := v.post(base+"/revoke", url.Values{"session_id": {sessField(t, d, "session_id", "HWID-SESS-TWO")}, "confirm": {"yes"}}).must(t); !strings.Contains(vp.flash(), "FORBIDDEN") || !vp.Has("HWID-SESS-TWO") {
		t.Fatalf("viewer revoke: %q", vp.flash())
	}

	// An unknown session: the API's refusal, nothing else changes.
	s.get(base)
	e := s.post(base+"/revoke", url.Values{"session_id": {"no-such-session"}, "confirm": {"yes"}}).must(t)
	if e.flash() == "" || e.flash() == "Session revoked." || !e.Has("HWID-SESS-TWO") {
		t.Fatalf("unknown session: %q %s", e.flash(), e.Text())
	}
}

func TestResetsApproveAndDeny(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Resets app")
	keys := app.GenerateKeys(2, "lifetime", 0, 1)
	app.Login(keys[0], "HWID-RESET-A")
	app.Login(keys[1], "HWID-RESET-B")
	for i, k := range keys {
		if r := app.Plain("/api/auth/request-hwid-reset.php", map[string]any{"license_key": k, "reason": "new computer " + string(rune('A'+i))}); r.Body["success"] != true {
			t.Fatalf("reset request: %v", r)
		}
	}
	base := "/dashboard/apps/" + app.ID + "/resets"
	p := s.get(base).must(t)
	for _, want := range []string{keys[0], keys[1], "new computer A", "new computer B", "pending", "Approve", "Deny"} {
		if !p.Has(want) {
			t.Fatalf("resets page lacks %q: %s", want, p.Text())
		}
	}
	idA := sessField(t, p, "id", "new computer A")
	idB := sessField(t, p, "id", "new computer B")

	// Approve without confirm: a confirmation page; the device stays bound.
	c := s.post(base+"/decide", url.Values{"id": {idA}, "action": {"approve"}}).must(t)
	if !c.Has("Approve this reset request?") {
		t.Fatalf("no confirmation: %s", c.Text())
	}
	if devs, _ := sessKey(s, app, keys[0])["devices"].([]any); len(devs) != 1 {
		t.Fatalf("devices after an unconfirmed approve: %v", devs)
	}

	// Bad input changes nothing.
	s.get(base)
	if b := s.post(base+"/decide", url.Values{"id": {"x"}, "action": {"approve"}, "confirm": {"yes"}}).must(t); !strings.Contains(b.flash(), "Choose a reset request") {
		t.Fatalf("bad id: %q", b.flash())
	}

	s.get(base)
	a := s.post(base+"/decide", url.Values{"id": {idA}, "action": {"approve"}, "confirm": {"yes"}}).must(t)
	if a.flash() != "Request approved." {
		t.Fatalf("approve: %q", a.flash())
	}
	if devs, _ := sessKey(s, app, keys[0])["devices"].([]any); len(devs) != 0 {
		t.Fatalf("devices after approve: %v", devs)
	}
	if a.Has("new computer A") || !a.Has("new computer B") {
		t.Fatalf("pending list after approve: %s", a.Text())
	}

	d := s.post(base+"/decide", url.Values{"id": {idB}, "action": {"deny"}}).must(t)
	if d.flash() != "Request denied." {
		t.Fatalf("deny: %q", d.flash())
	}
	if devs, _ := sessKey(s, app, keys[1])["devices"].([]any); len(devs) != 1 {
		t.Fatalf("a denied request unbound devices: %v", devs)
	}
	if !d.Has("No requests here.") {
		t.Fatalf("pending list after both decided: %s", d.Text())
	}
	all := s.get(base + "?status=all").must(t)
	if !all.Has("approved") || !all.Has("denied") || !all.Has("new computer A") {
		t.Fatalf("all requests: %s", all.Text())
	}
	// Deciding twice is the API's refusal.
	s.get(base)
	if again := s.post(base+"/decide", url.Values{"id": {idB}, "action": {"approve"}, "confirm": {"yes"}}).must(t); again.flash() == "" || again.flash() == "Request approved." {
		t.Fatalf("deciding twice: %q", again.flash())
	} else if devs, _ := sessKey(s, app, keys[1])["devices"].([]any); len(devs) != 1 {
		t.Fatalf("a refused approve unbound devices: %v", devs)
	}
}

// sessAccount reads an account through the admin API (nil when missing).
func sessAccount(s *site, app *kwtest.App, username string) map[string]any {
	s.t.Helper()
	r := s.Admin("GET", "/api/admin/accounts.php?app_id="+app.ID+"&username="+url.QueryEscape(username), nil)
	if r.Status == 404 {
		return nil
	}
	if r.Status != 200 {
		s.t.Fatalf("account %s: %v", username, r)
	}
	return r.Obj("account")
}

func TestAccountsActions(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Accounts app")
	sessSettings(s, app, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	for _, u := range []string{"alice", "bobby"} {
		if r := app.Plain("/api/auth/account-register.php", map[string]any{"username": u, "password": "correct horse 1", "email": u + "@example.com"}); r.Body["success"] != true {
			t.Fatalf("register %s: %v", u, r)
		}
	}
	base := "/dashboard/apps/" + app.ID + "/accounts"
	p := s.get(base).must(t)
	for _, want := range []string{"alice", "bobby", "alice@example.com", "active", "Ban", "Reset devices", "Delete"} {
		if !p.Has(want) {
			t.Fatalf("accounts page lacks %q: %s", want, p.Text())
		}
	}
	if q := s.get(base + "?q=ali").must(t); !q.Has("alice@example.com") || q.Has("bobby") {
		t.Fatalf("search: %s", q.Text())
	}
	if r := app.Plain("/api/auth/account-login.php", map[string]any{"username": "alice", "password": "correct horse 1", "hwid": "ACCT-HW-1"}); r.Body["success"] != true {
		t.Fatalf("account login: %v", r)
	}
	one := s.get(base + "/alice").must(t)
	if !one.Has("alice@example.com") || !one.Has("Set expiry") || !one.Has("Reset password") || strings.Count(one.Text(), "ACCT-HW-1") != 2 {
		t.Fatalf("account page (a device and a session): %s", one.Text())
	}
	// Reset devices from the account page: confirmed, back there, no devices left.
	if c := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"reset-devices"}, "from": {"account"}}).must(t); !c.Has("Reset devices alice?") {
		t.Fatalf("no confirmation: %s", c.Text())
	}
	if devs, _ := sessAccount(s, app, "alice")["devices"].([]any); len(devs) != 1 {
		t.Fatalf("devices after an unconfirmed reset: %v", devs)
	}
	rd := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"reset-devices"}, "from": {"account"}, "confirm": {"yes"}}).must(t)
	if devs, _ := sessAccount(s, app, "alice")["devices"].([]any); rd.flash() != "Devices reset." || rd.URL != base+"/alice" || len(devs) != 0 || rd.Has("ACCT-HW-1") {
		t.Fatalf("reset devices: %q at %s, %v", rd.flash(), rd.URL, devs)
	}

	// Ban without confirm: confirmation, still active.
	s.get(base)
	if c := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"ban"}}).must(t); !c.Has("Ban alice?") {
		t.Fatalf("no confirmation: %s", c.Text())
	}
	if st := sessAccount(s, app, "alice")["status"]; st != "active" {
		t.Fatalf("status after an unconfirmed ban: %v", st)
	}
	b := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"ban"}, "confirm": {"yes"}}).must(t)
	if b.flash() != "Account banned." || sessAccount(s, app, "alice")["status"] != "banned" {
		t.Fatalf("ban: %q %v", b.flash(), sessAccount(s, app, "alice")["status"])
	}
	if u := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"unban"}}).must(t); u.flash() != "Account unbanned." || sessAccount(s, app, "alice")["status"] != "active" {
		t.Fatalf("unban: %q", u.flash())
	}

	// Set expiry: a bad date changes nothing; a good one is saved.
	before := sessAccount(s, app, "alice")["expires_at"]
	s.get(base + "/alice")
	bad := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"set-expiry"}, "expires": {"soon"}, "from": {"account"}}).must(t)
	if !strings.Contains(bad.flash(), "enter a date") || bad.URL != base+"/alice" || sessAccount(s, app, "alice")["expires_at"] != before {
		t.Fatalf("bad expiry: %q at %s", bad.flash(), bad.URL)
	}
	ok := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"set-expiry"}, "expires": {"2030-01-02"}, "from": {"account"}}).must(t)
	if ok.flash() != "Expiry changed." || !strings.HasPrefix(sessStr(sessAccount(s, app, "alice")["expires_at"]), "2030-01-02") {
		t.Fatalf("set expiry: %q %v", ok.flash(), sessAccount(s, app, "alice")["expires_at"])
	}
	lt := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"set-expiry"}, "lifetime": {"on"}, "from": {"account"}}).must(t)
	if lt.flash() != "Expiry changed." || sessAccount(s, app, "alice")["expires_at"] != nil {
		t.Fatalf("lifetime: %q %v", lt.flash(), sessAccount(s, app, "alice")["expires_at"])
	}

	// Reset password: confirmed, shows the temporary password once.
	pw := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"reset-password"}, "confirm": {"yes"}}).must(t)
	if !pw.Has("Temporary password") || !strings.Contains(pw.Body, `data-copy="temp-password"`) || sessAccount(s, app, "alice")["password_reset_required"] != true {
		t.Fatalf("reset password: %s", pw.Text())
	}

	// An unknown action is refused before the API.
	if x := s.post(base+"/action", url.Values{"username": {"alice"}, "action": {"explode"}}).must(t); !strings.Contains(x.flash(), "Choose an action") {
		t.Fatalf("unknown action: %q", x.flash())
	}

	// Delete: without confirm nothing happens; with it the account goes.
	s.get(base)
	if c := s.post(base+"/delete", url.Values{"username": {"bobby"}}).must(t); !c.Has("Delete account bobby?") || sessAccount(s, app, "bobby") == nil {
		t.Fatalf("unconfirmed delete: %s", c.Text())
	}
	del := s.post(base+"/delete", url.Values{"username": {"bobby"}, "confirm": {"yes"}}).must(t)
	if del.flash() != "Account deleted." || sessAccount(s, app, "bobby") != nil || del.Has("bobby@example.com") {
		t.Fatalf("delete: %q %s", del.flash(), del.Text())
	}
	// A missing account is the API's 404 message.
	if m := s.post(base+"/delete", url.Values{"username": {"bobby"}, "confirm": {"yes"}}).must(t); m.flash() == "" || m.flash() == "Account deleted." {
		t.Fatalf("deleting a missing account: %q", m.flash())
	}
}

func TestTrialsList(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Trials app")
	base := "/dashboard/apps/" + app.ID + "/trials"
	if p := s.get(base).must(t); !p.Has("No trials yet.") || !p.Has("Trials are off") {
		t.Fatalf("empty trials page: %s", p.Text())
	}
	sessSettings(s, app, map[string]any{"trial_enabled": true})
	r := app.Plain("/api/auth/trial.php", map[string]any{"hwid": "TRIAL-DEVICE-77"})
	if r.Body["success"] != true {
		t.Fatalf("trial: %v", r)
	}
	key := r.Str("trial_key")
	p := s.get(base).must(t)
	for _, want := range []string{"TRIAL-DEVICE-77", key, "active", "Trials are on"} {
		if !p.Has(want) {
			t.Fatalf("trials page lacks %q: %s", want, p.Text())
		}
	}
	// Once the trial's key is deleted, the row says so.
	s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key})
	if p := s.get(base).must(t); !p.Has("key deleted") || !p.Has("TRIAL-DEVICE-77") {
		t.Fatalf("trial with a deleted key: %s", p.Text())
	}
}

// sessStr shows a JSON value as text.
func sessStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
