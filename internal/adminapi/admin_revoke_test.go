package adminapi_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Revoking an app: its owner switches all its clients off (and on again
// with restore). Helpers start with rv so they do not collide with other
// test files.

const rvPassword = "revoke-tests-pass-1"

// rvAction posts apps.php {app_id, action} with token.
func rvAction(s *kwtest.Server, token, appID, action string) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs(token, "POST", "/api/admin/apps.php", map[string]any{"app_id": appID, "action": action})
}

// rvListed returns the app as GET apps.php (the list) shows it.
func rvListed(t testing.TB, s *kwtest.Server, appID string) map[string]any {
	t.Helper()
	for _, a := range s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps") {
		if a["app_id"] == appID {
			return a
		}
	}
	t.Fatalf("app %s not listed", appID)
	return nil
}

// A revoked app's live session answers SESSION_REVOKED at its next
// heartbeat; login, trial, check-key and the other client calls with its
// secret are refused 403 APP_REVOKED (plain JSON); app.revoked is recorded
// with reason "revoked"; the list shows it revoked. Other apps go on.
// Restoring lets clients in again.
func TestAdminAppRevoke(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Revoked")
		a.SetSettings(t, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		sid := a.Login(keys[0], "pc-1")
		other := s.CreateApp("Unaffected")
		okey := other.GenerateKeys(1, "lifetime", 0, 1)[0]
		osid := other.Login(okey, "pc-o")

		s.Clock.Advance(time.Minute)
		r := rvAction(s, s.AdminToken(), a.ID, "revoke")
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("revoke: %s", r)
		}
		at := license.Timestamp(s.Clock.Now())
		if v := r.Obj("app"); v["revoked"] != true || v["revoked_at"] != at {
			t.Fatalf("revoked app view %v", v)
		}
		if v := rvListed(t, s, a.ID); v["revoked"] != true || v["revoked_at"] != at {
			t.Fatalf("listed app %v, want revoked", v)
		}
		if v := rvListed(t, s, other.ID); v["revoked"] != false || v["revoked_at"] != nil {
			t.Fatalf("other app listed as %v", v)
		}

		a.Heartbeat(sid, keys[0]).Kill(t, "SESSION_REVOKED")
		a.LoginReply(keys[1], "pc-2").PlainFail(t, 403, "APP_REVOKED")
		a.LoginReply(keys[0], "pc-1").PlainFail(t, 403, "APP_REVOKED")
		for _, c := range []struct {
			path string
			body map[string]any
		}{
			{"/api/auth/trial.php", map[string]any{"hwid": "pc-trial"}},
			{kwtest.PathCheckKey, map[string]any{"license_key": keys[1]}},
			{kwtest.PathValidate, map[string]any{"license_key": keys[1]}},
			{kwtest.PathRequestHWID, map[string]any{"license_key": keys[0]}},
			{kwtest.PathSelfReset, map[string]any{"license_key": keys[0]}},
			{"/api/auth/account-register.php", map[string]any{"username": "newbie", "password": rvPassword}},
			{"/api/auth/account-login.php", map[string]any{"username": "newbie", "password": rvPassword, "hwid": "pc-a"}},
		} {
			r := a.Plain(c.path, c.body)
			if r.Status != 403 || r.Body["error_code"] != "APP_REVOKED" {
				t.Errorf("%s for a revoked app: %s, want 403 APP_REVOKED", c.path, r)
				continue
			}
			r.PlainFail(t, 403, "APP_REVOKED")
		}
		other.BeatOK(t, osid, okey)
		other.Login(okey, "pc-o")

		evs := s.EventsOf(a.ID, "app.revoked")
		if len(evs) != 1 || evs[0]["reason"] != "revoked" || evs[0]["app_id"] != a.ID || evs[0]["name"] != "Revoked" {
			t.Fatalf("app.revoked events %v, want one with reason revoked", evs)
		}
		if evs := s.EventsOf(other.ID, "app.revoked"); len(evs) != 0 {
			t.Fatalf("other app's app.revoked events %v", evs)
		}
		// The admin API still manages the revoked app.
		if k := a.KeyView(t, keys[1]); k["license_key"] != keys[1] {
			t.Fatalf("key of a revoked app: %v", k)
		}

		// Restore.
		s.Clock.Advance(time.Minute)
		r = rvAction(s, s.AdminToken(), a.ID, "restore")
		if r.Status != 200 || r.Obj("app")["revoked"] != false || r.Obj("app")["revoked_at"] != nil {
			t.Fatalf("restore: %s", r)
		}
		if v := rvListed(t, s, a.ID); v["revoked"] != false {
			t.Fatalf("listed after restore: %v", v)
		}
		nsid := a.Login(keys[1], "pc-2")
		a.BeatOK(t, nsid, keys[1])
		a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": keys[1]}).OK(t)
		if evs := s.EventsOf(a.ID, "app.revoked"); len(evs) != 1 {
			t.Fatalf("app.revoked events after restore: %v", evs)
		}
		var actions []string
		for _, e := range s.Audit(t, "app_id="+a.ID+"&action=app.") {
			actions = append(actions, e["action"].(string))
		}
		if len(actions) < 3 || actions[0] != "app.restore" || actions[1] != "app.revoke" {
			t.Fatalf("app audit entries %v, want app.revoke then app.restore", actions)
		}
	})
}

// Only owners revoke or restore: an admin-role member, support and viewers
// are refused 403 and the app stays as it was; a non-member is refused; an
// app that does not exist is 404; an owner who is not an operator may.
func TestAdminAppRevokeOwnersOnly(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Guarded")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		tokens := map[string]string{
			"admin":   s.AddMember(a.ID, "adam", rvPassword, "admin"),
			"support": s.AddMember(a.ID, "sue", rvPassword, "support"),
			"viewer":  s.AddMember(a.ID, "vic", rvPassword, "viewer"),
		}
		elsewhere := s.CreateApp("Elsewhere")
		tokens["non-member"] = s.AddMember(elsewhere.ID, "nora", rvPassword, "owner")
		owner := s.AddMember(a.ID, "olive", rvPassword, "owner")

		for who, tok := range tokens {
			for _, action := range []string{"revoke", "restore"} {
				r := rvAction(s, tok, a.ID, action)
				if r.Status != 403 || r.Body["error_code"] != "FORBIDDEN" {
					t.Errorf("%s %ss the app: %s, want 403 FORBIDDEN", who, action, r)
				}
			}
		}
		if v := s.AppView(t, a.ID); v["revoked"] != false {
			t.Fatalf("app after refused revocations: %v", v)
		}
		a.Login(key, "pc-1")
		if evs := s.EventsOf(a.ID, "app.revoked"); len(evs) != 0 {
			t.Fatalf("refused revocations recorded %v", evs)
		}
		rvAction(s, owner, "no-such-app", "revoke").JSONFail(t, 404, "NOT_FOUND")
		rvAction(s, owner, a.ID, "obliterate").JSONFail(t, 400, "MISSING_FIELDS")
		s.AdminAs(owner, "POST", "/api/admin/apps.php", map[string]any{"action": "revoke"}).JSONFail(t, 400, "MISSING_FIELDS")

		if r := rvAction(s, owner, a.ID, "revoke"); r.Status != 200 || r.Obj("app")["revoked"] != true {
			t.Fatalf("owner revokes: %s", r)
		}
		a.LoginReply(key, "pc-1").PlainFail(t, 403, "APP_REVOKED")
		// The admin-role member still may not restore it.
		rvAction(s, tokens["admin"], a.ID, "restore").JSONFail(t, 403, "FORBIDDEN")
		if r := rvAction(s, owner, a.ID, "restore"); r.Status != 200 || r.Obj("app")["revoked"] != false {
			t.Fatalf("owner restores: %s", r)
		}
		a.Login(key, "pc-1")
	})
}
