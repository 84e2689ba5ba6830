package adminapi_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Device-reset requests: clients queue them (request-hwid-reset), the team
// lists and decides them, and the app's auto-approve rule decides some at
// once. Helpers start with rr so they do not collide with other test files.

const (
	rrPassword = "reset-tests-pass-1"
)

// rrDecide posts a decision with token.
func rrDecide(s *kwtest.Server, token, appID string, id any, action string) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs(token, "POST", kwtest.PathAdminResets, map[string]any{"app_id": appID, "id": id, "action": action})
}

// A queued request is listed as pending with what the client sent;
// approving it clears the key's devices, its live session answers
// HWID_RESET at the next heartbeat, and the key binds a new device.
// Deciding it again is 409.
func TestAdminResetRequestsApprove(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Resets")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc-1")
		other := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		otherSID := a.Login(other, "pc-9")

		asked := license.Timestamp(s.Clock.Now())
		a.RequestHWIDReset(t, map[string]any{"license_key": key, "hwid": "pc-2", "reason": "new pc"})
		req := s.OneResetRequest(t, a.ID, "pending")
		if req["license_key"] != key || req["username"] != "" || req["hwid"] != "pc-2" || req["reason"] != "new pc" ||
			req["status"] != "pending" || req["created_at"] != asked || req["decided_at"] != nil || req["decided_by"] != "" {
			t.Fatalf("pending request %v", req)
		}
		if _, ok := req["id"].(float64); !ok {
			t.Fatalf("request id %#v, want a number", req["id"])
		}
		if l := s.ResetRequests(t, s.AdminToken(), a.ID, "approved"); len(l) != 0 {
			t.Fatalf("approved requests before any decision: %v", l)
		}
		// Queuing changes nothing by itself.
		a.BeatOK(t, sid, key)
		if d := a.Devices(t, key); len(d) != 1 {
			t.Fatalf("devices after the request: %v", d)
		}

		s.Clock.Advance(time.Minute)
		r := rrDecide(s, s.AdminToken(), a.ID, req["id"], "approve")
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("approve: %s", r)
		}
		if d := r.Obj("request"); d["status"] != "approved" || d["decided_by"] != "admin" || d["decided_at"] != license.Timestamp(s.Clock.Now()) ||
			d["id"] != req["id"] {
			t.Fatalf("approved request view %v", d)
		}
		if d := a.Devices(t, key); len(d) != 0 {
			t.Fatalf("devices after approval: %v", d)
		}
		a.Heartbeat(sid, key).Kill(t, "HWID_RESET")
		a.BeatOK(t, otherSID, other) // another key's session is untouched
		a.Login(key, "pc-2")

		rrDecide(s, s.AdminToken(), a.ID, req["id"], "approve").JSONFail(t, 409, "CONFLICT")
		rrDecide(s, s.AdminToken(), a.ID, req["id"], "deny").JSONFail(t, 409, "CONFLICT")
		if l := s.ResetRequests(t, s.AdminToken(), a.ID, "pending"); len(l) != 0 {
			t.Fatalf("pending requests after approval: %v", l)
		}
		if got := s.OneResetRequest(t, a.ID, "approved"); got["decided_by"] != "admin" {
			t.Fatalf("approved list %v", got)
		}
		if l := s.ResetRequests(t, s.AdminToken(), a.ID, ""); len(l) != 1 {
			t.Fatalf("all requests: %v", l)
		}
		es := s.Audit(t, "action=hwid_reset.approve&app_id="+a.ID)
		if len(es) != 1 || es[0]["target"] != key {
			t.Fatalf("hwid_reset.approve entries %v", es)
		}

		rrDecide(s, s.AdminToken(), a.ID, 999999, "approve").JSONFail(t, 404, "NOT_FOUND")
		rrDecide(s, s.AdminToken(), a.ID, req["id"], "maybe").JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", kwtest.PathAdminResets+"?app_id="+a.ID+"&status=open", nil).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// Denying a request leaves the devices and sessions alone; it too is
// decided once.
func TestAdminResetRequestsDeny(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Denials")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "pc-1")
		a.RequestHWIDReset(t, map[string]any{"license_key": key, "reason": "please"})
		req := s.OneResetRequest(t, a.ID, "pending")

		s.Clock.Advance(time.Minute)
		r := rrDecide(s, s.AdminToken(), a.ID, req["id"], "deny")
		if d := r.Obj("request"); r.Status != 200 || d["status"] != "denied" || d["decided_by"] != "admin" ||
			d["decided_at"] != license.Timestamp(s.Clock.Now()) {
			t.Fatalf("deny: %s", r)
		}
		if d := a.Devices(t, key); len(d) != 1 || d[0] != "pc-1" {
			t.Fatalf("devices after a denial: %v", d)
		}
		a.BeatOK(t, sid, key)
		rrDecide(s, s.AdminToken(), a.ID, req["id"], "deny").JSONFail(t, 409, "CONFLICT")
		rrDecide(s, s.AdminToken(), a.ID, req["id"], "approve").JSONFail(t, 409, "CONFLICT")
		a.BeatOK(t, sid, key)
		s.OneResetRequest(t, a.ID, "denied")
		if l := s.ResetRequests(t, s.AdminToken(), a.ID, "pending"); len(l) != 0 {
			t.Fatalf("pending after a denial: %v", l)
		}
	})
}

// Viewers list requests but may not decide them; support may (and is named
// as the decider); non-members may do neither; a request is decided only
// through its own app.
func TestAdminResetRequestsRoles(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Decisions")
		b := s.CreateApp("Another")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		viewer := s.AddMember(a.ID, "vic", rrPassword, "viewer")
		support := s.AddMember(a.ID, "sue", rrPassword, "support")
		outsider := s.AddMember(b.ID, "nora", rrPassword, "owner")
		a.RequestHWIDReset(t, map[string]any{"license_key": keys[0]})
		a.RequestHWIDReset(t, map[string]any{"license_key": keys[1]})
		reqs := s.ResetRequests(t, viewer, a.ID, "pending")
		if len(reqs) != 2 || reqs[0]["license_key"] != keys[1] {
			t.Fatalf("requests as the viewer sees them (newest first): %v", reqs)
		}

		rrDecide(s, viewer, a.ID, reqs[0]["id"], "approve").JSONFail(t, 403, "FORBIDDEN")
		rrDecide(s, viewer, a.ID, reqs[0]["id"], "deny").JSONFail(t, 403, "FORBIDDEN")
		s.AdminAs(outsider, "GET", kwtest.PathAdminResets+"?app_id="+a.ID, nil).JSONFail(t, 403, "FORBIDDEN")
		rrDecide(s, outsider, a.ID, reqs[0]["id"], "approve").JSONFail(t, 403, "FORBIDDEN")
		// Through another app the request does not exist.
		rrDecide(s, s.AdminToken(), b.ID, reqs[0]["id"], "approve").JSONFail(t, 404, "NOT_FOUND")
		rrDecide(s, outsider, b.ID, reqs[0]["id"], "approve").JSONFail(t, 404, "NOT_FOUND")
		if l := s.ResetRequests(t, viewer, a.ID, "pending"); len(l) != 2 {
			t.Fatalf("refused decisions decided something: %v", l)
		}

		r := rrDecide(s, support, a.ID, reqs[0]["id"], "approve")
		if r.Status != 200 || r.Obj("request")["decided_by"] != "sue" {
			t.Fatalf("support approves: %s", r)
		}
		r = rrDecide(s, support, a.ID, reqs[1]["id"], "deny")
		if r.Status != 200 || r.Obj("request")["status"] != "denied" {
			t.Fatalf("support denies: %s", r)
		}
		if es := s.Audit(t, "action=hwid_reset.&app_id="+a.ID); len(es) != 2 || es[0]["action"] != "hwid_reset.deny" ||
			es[0]["actor"].(map[string]any)["name"] != "sue" {
			t.Fatalf("decision audit entries %v", es)
		}
	})
}

// With reset_auto_approve_days a request is approved at once (decided_by
// "auto", devices cleared, sessions HWID_RESET) unless the key had an
// approved request, automatic or not, within that many days; then it waits
// for the team.
func TestAdminResetRequestsAutoApprove(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Auto")
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"reset_auto_approve_days": 30})
		if st := s.AppSettings(t, a.ID); st["reset_auto_approve_days"] != float64(30) {
			t.Fatalf("settings %v", st)
		}
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		day := 24 * time.Hour

		auto := func(what string, sid string) {
			t.Helper()
			now := license.Timestamp(s.Clock.Now())
			var got map[string]any
			for _, r := range s.ResetRequests(t, s.AdminToken(), a.ID, "approved") {
				if r["created_at"] == now {
					got = r
				}
			}
			if got == nil || got["decided_by"] != "auto" || got["decided_at"] != now {
				t.Fatalf("%s: approved requests %v, want one approved by auto at %s", what, s.ResetRequests(t, s.AdminToken(), a.ID, ""), now)
			}
			if d := a.Devices(t, key); len(d) != 0 {
				t.Fatalf("%s: devices %v, want none", what, d)
			}
			a.Heartbeat(sid, key).Kill(t, "HWID_RESET")
		}
		pending := func(what string, sid string, n int) []map[string]any {
			t.Helper()
			l := s.ResetRequests(t, s.AdminToken(), a.ID, "pending")
			if len(l) != n || l[0]["created_at"] != license.Timestamp(s.Clock.Now()) {
				t.Fatalf("%s: pending %v, want %d, the newest just now", what, l, n)
			}
			if d := a.Devices(t, key); len(d) != 1 {
				t.Fatalf("%s: devices %v, want the one bound", what, d)
			}
			a.BeatOK(t, sid, key)
			return l
		}

		// Day 0: the first request is approved at once.
		sid := a.Login(key, "pc-1")
		a.RequestHWIDReset(t, map[string]any{"license_key": key, "hwid": "pc-2"})
		auto("first request", sid)
		if evs := s.EventsOf(a.ID, "hwid_reset.requested"); len(evs) != 1 || evs[0]["status"] != "approved" {
			t.Fatalf("hwid_reset.requested events %v, want one approved", evs)
		}

		// Day 1: within the window, it waits.
		s.Clock.Advance(day)
		sid = a.Login(key, "pc-2")
		a.RequestHWIDReset(t, map[string]any{"license_key": key, "hwid": "pc-3"})
		pending("second request, day 1", sid, 1)

		// Day 29: still within the window.
		s.Clock.Advance(28 * day)
		sid = a.Login(key, "pc-2")
		a.RequestHWIDReset(t, map[string]any{"license_key": key})
		pending("third request, day 29", sid, 2)

		// Day 30: the window has passed: approved at once again.
		s.Clock.Advance(day)
		sid = a.Login(key, "pc-2")
		a.RequestHWIDReset(t, map[string]any{"license_key": key})
		auto("request on day 30", sid)

		// Day 35: the team approves a waiting request by hand; that restarts
		// the window as well.
		s.Clock.Advance(5 * day)
		sid = a.Login(key, "pc-3")
		a.RequestHWIDReset(t, map[string]any{"license_key": key})
		waiting := pending("request on day 35", sid, 3)
		if r := rrDecide(s, s.AdminToken(), a.ID, waiting[0]["id"], "approve"); r.Status != 200 {
			t.Fatalf("approve by hand: %s", r)
		}
		// Day 62: 32 days after the automatic approval, 27 after the manual one.
		s.Clock.Advance(27 * day)
		sid = a.Login(key, "pc-4")
		a.RequestHWIDReset(t, map[string]any{"license_key": key})
		pending("request 27 days after a manual approval", sid, 3)
		// Day 65: 30 days after the manual one.
		s.Clock.Advance(3 * day)
		sid = a.Login(key, "pc-4")
		a.RequestHWIDReset(t, map[string]any{"license_key": key})
		auto("request 30 days after the manual approval", sid)

		// Another key has its own window.
		other := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		osid := a.Login(other, "pc-x")
		a.RequestHWIDReset(t, map[string]any{"license_key": other})
		if d := a.Devices(t, other); len(d) != 0 {
			t.Fatalf("another key's first request was not approved at once: devices %v", d)
		}
		a.Heartbeat(osid, other).Kill(t, "HWID_RESET")
	})
}

// An app user account's request (by username) is queued with the account's
// name and no key; approving it clears the account's devices and its
// session answers HWID_RESET; auto-approval applies to accounts too.
func TestAdminResetRequestsAccount(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Accounts")
		a.SetSettings(t, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
		session := func(username, hwid string) string {
			t.Helper()
			r := a.Plain("/api/auth/account-login.php", map[string]any{"username": username, "password": rrPassword, "hwid": hwid})
			r.OK(t)
			return r.Str("session_id")
		}
		devices := func(username string) []any {
			t.Helper()
			r := s.MustAdmin("GET", "/api/admin/accounts.php?app_id="+a.ID+"&username="+username, nil)
			d, _ := r.Obj("account")["devices"].([]any)
			return d
		}
		for _, u := range []string{"alice", "bob"} {
			a.Plain("/api/auth/account-register.php", map[string]any{"username": u, "password": rrPassword}).OK(t)
		}
		sid := session("alice", "pc-1")
		if d := devices("alice"); len(d) != 1 {
			t.Fatalf("alice's devices after sign-in: %v", d)
		}

		a.RequestHWIDReset(t, map[string]any{"username": "alice", "hwid": "pc-2", "reason": "new laptop"})
		a.RequestHWIDReset(t, map[string]any{"username": "nobody", "reason": "probe"}) // accepted, not queued
		req := s.OneResetRequest(t, a.ID, "pending")
		if req["username"] != "alice" || req["license_key"] != "" || req["hwid"] != "pc-2" || req["reason"] != "new laptop" {
			t.Fatalf("account request %v", req)
		}
		a.BeatOK(t, sid, "")
		if r := rrDecide(s, s.AdminToken(), a.ID, req["id"], "approve"); r.Status != 200 || r.Obj("request")["status"] != "approved" {
			t.Fatalf("approve: %s", r)
		}
		if d := devices("alice"); len(d) != 0 {
			t.Fatalf("alice's devices after approval: %v", d)
		}
		a.Heartbeat(sid, "").Kill(t, "HWID_RESET")
		if es := s.Audit(t, "action=hwid_reset.approve&app_id="+a.ID); len(es) != 1 || es[0]["target"] != "alice" {
			t.Fatalf("audit of an account approval %v", es)
		}

		// Auto-approval by account.
		a.SetSettings(t, map[string]any{"reset_auto_approve_days": 7})
		bsid := session("bob", "pc-b")
		a.RequestHWIDReset(t, map[string]any{"username": "bob"})
		if d := devices("bob"); len(d) != 0 {
			t.Fatalf("bob's devices after an auto-approved request: %v", d)
		}
		a.Heartbeat(bsid, "").Kill(t, "HWID_RESET")
		// alice was approved by hand just now: hers waits.
		asid := session("alice", "pc-2")
		a.RequestHWIDReset(t, map[string]any{"username": "alice"})
		if l := s.ResetRequests(t, s.AdminToken(), a.ID, "pending"); len(l) != 1 || l[0]["username"] != "alice" {
			t.Fatalf("pending after alice's second request: %v", l)
		}
		a.BeatOK(t, asid, "")
	})
}
