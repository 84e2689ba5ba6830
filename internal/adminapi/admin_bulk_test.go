package adminapi_test

import (
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

const bulkPath = "/api/admin/keys-bulk.php"

// bulkNote gives keys a note through the admin API.
func bulkNote(t *testing.T, a *kwtest.App, keys []string, note string) {
	t.Helper()
	for _, k := range keys {
		a.S.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": k, "note": note})
	}
}

func bulkDry(t *testing.T, a *kwtest.App, body map[string]any) int {
	t.Helper()
	body["app_id"] = a.ID
	r := a.S.MustAdmin("POST", bulkPath, body)
	if r.Body["dry_run"] != true {
		t.Fatalf("dry run answered %s", r)
	}
	return int(r.Body["count"].(float64))
}

func TestAdminBulkKeys(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Bulk")
		batchA := a.GenerateKeys(5, "days", 30, 1)
		batchB := a.GenerateKeys(3, "lifetime", 0, 1)
		bulkNote(t, a, batchA, "reseller batch A")
		bulkNote(t, a, batchB, "reseller batch B")
		sid := a.Login(batchA[0], "pc-1")
		bystander := a.Login(batchB[0], "pc-2")

		// The dry run counts and changes nothing.
		if n := bulkDry(t, a, map[string]any{"op": "ban", "q": "batch a"}); n != 5 {
			t.Fatalf("dry run counted %d keys, want 5", n)
		}
		if st := a.KeyView(t, batchA[1])["status"]; st != "unused" {
			t.Fatalf("dry run changed a key: %v", st)
		}
		// An expectation that no longer holds changes nothing.
		r := s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "ban", "q": "batch a", "dry_run": false, "expect": 4})
		r.JSONFail(t, 409, "COUNT_CHANGED")
		if r.Body["count"] != 5.0 {
			t.Fatalf("COUNT_CHANGED carries count %v, want 5", r.Body["count"])
		}
		if len(s.EventsOf(a.ID, "key.banned")) != 0 {
			t.Fatalf("a refused bulk ban recorded events")
		}
		// The real run bans all five in one audit entry; their sessions end.
		r = s.MustAdmin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "ban", "q": "batch a", "dry_run": false, "expect": 5})
		if r.Body["affected"] != 5.0 || r.Body["matched"] != 5.0 || r.Body["skipped"] != 0.0 {
			t.Fatalf("bulk ban: %s", r)
		}
		for _, k := range batchA {
			if st := a.KeyView(t, k)["status"]; st != "banned" {
				t.Fatalf("key %s is %v after the bulk ban", k, st)
			}
		}
		kwtest.ExpectCode(t, a.Heartbeat(sid, batchA[0]), 200, "BANNED")
		if r := a.Heartbeat(bystander, batchB[0]); r.Body["success"] != true {
			t.Fatalf("a key outside the filter lost its session: %s", r)
		}
		if n := len(s.EventsOf(a.ID, "key.banned")); n != 5 {
			t.Fatalf("%d key.banned events, want 5", n)
		}
		entries := s.Audit(t, "app_id="+a.ID+"&action=key.bulk_ban")
		if len(entries) != 1 {
			t.Fatalf("%d key.bulk_ban audit entries, want 1", len(entries))
		}
		if d := entries[0]["details"].(map[string]any); d["affected"] != 5.0 || d["filter"].(map[string]any)["q"] != "batch a" {
			t.Fatalf("bulk audit details: %v", d)
		}

		// Extending days keys and lifetime keys: the lifetime ones are skipped.
		all := bulkDry(t, a, map[string]any{"op": "extend", "days": 10, "q": "reseller"})
		r = s.MustAdmin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "extend", "days": 10, "q": "reseller", "dry_run": false, "expect": all})
		if r.Body["affected"] != 5.0 || r.Body["skipped"] != 3.0 {
			t.Fatalf("bulk extend: %s", r)
		}
		if d := a.KeyView(t, batchA[1])["duration"]; d != 40.0 {
			t.Fatalf("extended unused key has duration %v, want 40", d)
		}

		// Pause by status and type; delete by filter.
		n := bulkDry(t, a, map[string]any{"op": "pause", "key_type": "lifetime", "status": "unused"})
		if n != 2 { // batchB[0] is active (logged in)
			t.Fatalf("unused lifetime keys: %d, want 2", n)
		}
		s.MustAdmin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "pause", "key_type": "lifetime", "status": "unused", "dry_run": false, "expect": 2})
		if st := a.KeyView(t, batchB[1])["status"]; st != "paused" {
			t.Fatalf("bulk pause left %v", st)
		}
		n = bulkDry(t, a, map[string]any{"op": "delete", "q": "batch b"})
		s.MustAdmin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "delete", "q": "batch b", "dry_run": false, "expect": n})
		kwtest.ExpectCode(t, a.Heartbeat(bystander, batchB[0]), 200, "SESSION_REVOKED")
		s.Admin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+batchB[2], nil).JSONFail(t, 404, "NOT_FOUND")

		// Bad input changes nothing.
		s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "explode"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "extend"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "ban", "created_after": "yesterday"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "ban", "status": "zombie"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("POST", bulkPath, map[string]any{"app_id": a.ID, "op": "ban", "dry_run": false}).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// The sessions list shows each session's device, address, the app version
// its login sent, start and last heartbeat; revoking all of a key's sessions
// ends every one of them.
func TestAdminSessionsListAndRevokeKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Sessions")
		k := a.GenerateKeys(1, "lifetime", 0, 3)[0]
		r := a.Env("/api/auth/login.php", map[string]any{"license_key": k, "hwid": "pc-1", "version": "2.4.1"})
		if r.Body["success"] != true {
			t.Fatalf("login: %s", r)
		}
		s1 := r.Str("session_id")
		s2 := a.Login(k, "pc-2")
		list := admSessions(t, s, a.ID, "&license_key="+k, 0)
		if len(list) != 2 {
			t.Fatalf("%d sessions listed, want 2", len(list))
		}
		byHWID := map[string]map[string]any{}
		for _, ss := range list {
			byHWID[ss["hwid"].(string)] = ss
		}
		if v := byHWID["pc-1"]["app_version"]; v != "2.4.1" {
			t.Fatalf("pc-1 app_version %v, want 2.4.1", v)
		}
		if v := byHWID["pc-2"]["app_version"]; v != "" {
			t.Fatalf("pc-2 app_version %v, want empty", v)
		}
		for _, f := range []string{"ip", "created_at", "last_seen_at", "id"} {
			if byHWID["pc-1"][f] == nil || byHWID["pc-1"][f] == "" {
				t.Fatalf("session has no %s: %v", f, byHWID["pc-1"])
			}
		}
		r = s.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"app_id": a.ID, "license_key": k})
		if r.Body["count"] != 2.0 {
			t.Fatalf("revoked %v sessions, want 2", r.Body["count"])
		}
		kwtest.ExpectCode(t, a.Heartbeat(s1, k), 200, "SESSION_REVOKED")
		kwtest.ExpectCode(t, a.Heartbeat(s2, k), 200, "SESSION_REVOKED")
		if e := s.Audit(t, "app_id="+a.ID+"&action=session.revoke_key"); len(e) != 1 || e[0]["details"].(map[string]any)["count"] != 2.0 {
			t.Fatalf("session.revoke_key audit: %v", e)
		}
	})
}
