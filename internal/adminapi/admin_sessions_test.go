package adminapi_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// admSessions walks every page of the live sessions of app (query adds filters).
func admSessions(t *testing.T, s *kwtest.Server, appID, query string, limit int) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		v, _ := url.ParseQuery(query)
		v.Set("app_id", appID)
		if limit > 0 {
			v.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		r := s.MustAdmin("GET", "/api/admin/sessions.php?"+v.Encode(), nil)
		page := r.List(t, "sessions")
		if limit > 0 && len(page) > limit {
			t.Fatalf("page of %d sessions exceeds limit %d", len(page), limit)
		}
		out = append(out, page...)
		next, _ := r.Body["next_cursor"].(string)
		if next == "" {
			return out
		}
		if next == cursor {
			t.Fatalf("session cursor does not advance")
		}
		cursor = next
	}
	t.Fatal("session pagination does not end")
	return nil
}

// The sessions list shows the app's live sessions (not other apps', not
// logged-out or revoked ones) with key, device, IP and times, filtered by
// key and paginated by cursor.
func TestAdminListSessions(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Sessions")
		other := s.CreateApp("Elsewhere")
		ok := other.GenerateKeys(1, "lifetime", 0, 1)[0]
		other.Login(ok, "other-pc")

		keys := app.GenerateKeys(3, "days", 30, 5)
		tokens := map[string]string{} // hwid → client session token
		for i, k := range keys {
			for j := 0; j < 3; j++ {
				hw := "pc-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
				tokens[hw] = app.Login(k, hw)
			}
		}
		// One logs out: it is no longer live.
		app.Env("/api/auth/logout.php", map[string]any{"session_id": tokens["pc-0-0"]})

		all := admSessions(t, s, app.ID, "", 0)
		if len(all) != 8 {
			t.Fatalf("%d live sessions, want 8: %v", len(all), all)
		}
		seen := map[string]bool{}
		start := license.Timestamp(s.Clock.Now())
		for _, ss := range all {
			hw := ss["hwid"].(string)
			if hw == "pc-0-0" || hw == "other-pc" || seen[hw] {
				t.Fatalf("unexpected session %v", ss)
			}
			seen[hw] = true
			id, _ := ss["id"].(string)
			if !admUUIDRE.MatchString(id) || id == tokens[hw] {
				t.Errorf("session id %q should be a public UUID, not the client's token", id)
			}
			if ss["ip"] != "127.0.0.1" || ss["created_at"] != start || ss["last_seen_at"] != start {
				t.Errorf("session view %v", ss)
			}
			if lk := ss["license_key"].(string); lk != keys[int(hw[3]-'0')] {
				t.Errorf("session %s lists key %s", hw, lk)
			}
		}
		// Paging in threes finds the same eight.
		paged := admSessions(t, s, app.ID, "", 3)
		if len(paged) != 8 {
			t.Fatalf("paged listing: %d sessions", len(paged))
		}
		ids := map[any]bool{}
		for _, ss := range paged {
			if ids[ss["id"]] {
				t.Fatalf("session %v listed twice", ss["id"])
			}
			ids[ss["id"]] = true
		}
		// Filter by key.
		one := admSessions(t, s, app.ID, "license_key="+url.QueryEscape(keys[1]), 0)
		if len(one) != 3 {
			t.Fatalf("sessions of key 1: %v", one)
		}
		for _, ss := range one {
			if ss["license_key"] != keys[1] {
				t.Fatalf("filtered list has %v", ss)
			}
		}
		s.Admin("GET", "/api/admin/sessions.php?app_id="+app.ID+"&license_key=ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", "/api/admin/sessions.php?app_id="+app.ID+"&limit=-1", nil).JSONFail(t, 400, "MISSING_FIELDS")

		// A heartbeat moves last_seen_at once buffered touches are flushed.
		s.Clock.Advance(40 * time.Second)
		if r := app.Heartbeat(tokens["pc-2-2"], keys[2]); r.Body["success"] != true {
			t.Fatalf("heartbeat: %v", r.Body)
		}
		if err := s.License.FlushTouches(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, ss := range admSessions(t, s, app.ID, "license_key="+url.QueryEscape(keys[2]), 0) {
			want := start
			if ss["hwid"] == "pc-2-2" {
				want = license.Timestamp(s.Clock.Now())
			}
			if ss["last_seen_at"] != want {
				t.Errorf("session %v last_seen_at %v, want %s", ss["hwid"], ss["last_seen_at"], want)
			}
		}
	})
}

// Revoking a session by its public id (or by the client's token) makes its
// next heartbeat answer SESSION_REVOKED and drops it from the list; other
// sessions of the key live on. Unknown, already ended or other apps'
// sessions are 404.
func TestAdminRevokeSession(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Revoke")
		other := s.CreateApp("Other")
		key := app.GenerateKeys(1, "days", 30, 3)[0]
		victim := app.Login(key, "pc-victim")
		bystander := app.Login(key, "pc-bystander")
		third := app.Login(key, "pc-third")

		var victimID string
		for _, ss := range admSessions(t, s, app.ID, "", 0) {
			if ss["hwid"] == "pc-victim" {
				victimID = ss["id"].(string)
			}
		}
		if victimID == "" {
			t.Fatal("victim session not listed")
		}
		// The wrong app cannot revoke it.
		s.Admin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": victimID, "app_id": other.ID}).JSONFail(t, 404, "NOT_FOUND")
		if r := app.Heartbeat(victim, key); r.Body["success"] != true {
			t.Fatalf("victim heartbeat before revoke: %v", r.Body)
		}

		r := s.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": victimID, "app_id": app.ID})
		if r.Str("message") == "" {
			t.Errorf("revoke reply without message: %s", r)
		}
		kwtest.ExpectCode(t, app.Heartbeat(victim, key), 200, "SESSION_REVOKED")
		kwtest.ExpectCode(t, app.Heartbeat(victim, key), 200, "SESSION_REVOKED") // stays revoked
		if r := app.Heartbeat(bystander, key); r.Body["success"] != true {
			t.Fatalf("bystander heartbeat: %v", r.Body)
		}
		for _, ss := range admSessions(t, s, app.ID, "", 0) {
			if ss["id"] == victimID {
				t.Fatalf("revoked session still listed")
			}
		}
		// Revoking again, or an unknown id, is 404; a missing id is 400.
		s.Admin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": victimID}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": "00000000-0000-4000-8000-000000000000"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", "/api/admin/sessions.php", map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")

		// The client's own session token also identifies it (app_id optional).
		s.MustAdmin("DELETE", "/api/admin/sessions.php?session_id="+third, nil)
		kwtest.ExpectCode(t, app.Heartbeat(third, key), 200, "SESSION_REVOKED")
		// A logged-out session cannot be revoked.
		app.Env("/api/auth/logout.php", map[string]any{"session_id": bystander})
		s.Admin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": bystander}).JSONFail(t, 404, "NOT_FOUND")
		// The key itself is untouched.
		if k := app.KeyView(t, key); k["status"] != "active" {
			t.Fatalf("key after revocations: %v", k)
		}
		app.Login(key, "pc-victim")
	})
}

// Every admin state change is recorded in the audit log with the acting
// admin (id, name, IP), the action, the app, the target and the time, newest
// first, filterable by app and action and paginated by cursor. Refused
// requests and reads record nothing.
func TestAdminAuditLog(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.TokenTTL = 24 * time.Hour }})
		// The first admin was created by the bootstrap, as the system.
		boot := s.Audit(t, "action=admin.create")
		if len(boot) != 1 || boot[0]["target"] != "admin" || boot[0]["actor"].(map[string]any)["kind"] != "system" {
			t.Fatalf("bootstrap audit: %v", boot)
		}

		type want struct{ action, target, at string }
		var wants []want
		step := func(action, target string) {
			wants = append(wants, want{action, target, license.Timestamp(s.Clock.Now())})
			s.Clock.Advance(time.Minute)
		}
		app := s.CreateApp("Audited")
		step("app.create", app.ID)
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"name": "Audited 2"})
		step("app.update", app.ID)
		fresh := s.MustAdmin("POST", "/api/admin/apps.php?action=regenerate-secret&app_id="+app.ID, nil).Obj("app")["secret"].(string)
		app = s.NewApp(app.ID, fresh)
		step("app.regenerate_secret", app.ID)
		keys := app.GenerateKeys(3, "days", 30, 1)
		step("key.generate", "3 keys")
		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": keys[0], "note": "n"})
		step("key.update", keys[0])
		sid := app.Login(keys[0], "pc-1")
		for _, a := range []struct {
			action string
			extra  map[string]any
		}{{"ban", nil}, {"unban", nil}, {"pause", nil}, {"resume", nil}, {"extend", map[string]any{"days": 2}}, {"reset-hwid", nil}} {
			admAct(t, app, a.action, keys[0], a.extra)
			step("key."+a.action, keys[0])
		}
		rotated := admAct(t, app, "rotate", keys[1], nil)["license_key"].(string)
		step("key.rotate", keys[1])
		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": rotated})
		step("key.delete", rotated)
		sid = app.Login(keys[2], "pc-2")
		var sessID string
		for _, ss := range admSessions(t, s, app.ID, "", 0) {
			sessID = ss["id"].(string)
		}
		s.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": sessID})
		step("session.revoke", sessID)
		kwtest.ExpectCode(t, app.Heartbeat(sid, keys[2]), 200, "SESSION_REVOKED")

		// Refusals and reads add nothing.
		admGenerate(s, map[string]any{"app_id": app.ID, "count": 0, "key_type": "lifetime"})
		app.KeyAction("unban", keys[2], nil)
		s.Admin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"heartbeat_interval": -1})
		if r := s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&action=export", nil); r.Status != 200 {
			t.Fatalf("export: %d", r.Status)
		}

		deletedAt := license.Timestamp(s.Clock.Now())
		s.MustAdmin("DELETE", "/api/admin/apps.php?app_id="+app.ID, nil)
		wants = append(wants, want{"app.delete", app.ID, deletedAt})
		// The deletion is recorded with the app as its target and app_id, so
		// the app's history survives it and ends with it.
		del := s.Audit(t, "action=app.delete")
		if len(del) != 1 || del[0]["target"] != app.ID || del[0]["at"] != deletedAt ||
			del[0]["actor"].(map[string]any)["kind"] != "admin" || del[0]["actor"].(map[string]any)["name"] != "admin" {
			t.Fatalf("app.delete audit: %v", del)
		}

		adminID := boot[0]["target"] // placeholder, replaced below
		entries := s.Audit(t, "app_id="+app.ID+"&limit=1000")
		if len(entries) != len(wants) {
			for _, e := range entries {
				t.Logf("%v %v %v", e["at"], e["action"], e["target"])
			}
			t.Fatalf("%d audit entries for the app, want %d", len(entries), len(wants))
		}
		for i, w := range wants {
			e := entries[len(entries)-1-i] // newest first
			actor, _ := e["actor"].(map[string]any)
			if e["action"] != w.action || e["target"] != w.target || e["at"] != w.at || e["app_id"] != app.ID {
				t.Errorf("entry %d: %v %v %v %v, want %s %s %s", i, e["action"], e["target"], e["at"], e["app_id"], w.action, w.target, w.at)
			}
			if actor["kind"] != "admin" || actor["name"] != "admin" || actor["ip"] != "127.0.0.1" || actor["id"] == "" {
				t.Errorf("entry %d actor %v", i, actor)
			}
			if i == 0 {
				adminID = actor["id"]
			} else if actor["id"] != adminID {
				t.Errorf("entry %d actor id %v differs from %v", i, actor["id"], adminID)
			}
		}
		if e := s.Audit(t, "action=key.generate"); len(e) != 1 || e[0]["details"].(map[string]any)["count"] != 3.0 {
			t.Errorf("key.generate details: %v", e)
		}

		// Pages of two walk the whole log once, newest first.
		all := s.Audit(t, "limit=1000")
		var walked []map[string]any
		cursor := ""
		for range 100 {
			q := "limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := s.MustAdmin("GET", "/api/admin/audit.php?"+q, nil)
			page := r.List(t, "entries")
			walked = append(walked, page...)
			next, _ := r.Body["next_cursor"].(string)
			if next == "" || len(page) == 0 {
				break
			}
			cursor = next
		}
		if len(walked) != len(all) {
			t.Fatalf("walked %d entries, log has %d", len(walked), len(all))
		}
		for i := range all {
			if walked[i]["id"] != all[i]["id"] {
				t.Fatalf("entry %d: walked id %v, want %v", i, walked[i]["id"], all[i]["id"])
			}
			if i > 0 && all[i]["id"].(float64) >= all[i-1]["id"].(float64) {
				t.Fatalf("audit log is not newest first at %d", i)
			}
		}
		// A page that holds the rest of the log has no next page, like the
		// key and session lists.
		for _, q := range []string{"", "?limit=1000", "?limit=" + strconv.Itoa(len(all)+1)} {
			if r := s.MustAdmin("GET", "/api/admin/audit.php"+q, nil); r.Body["next_cursor"] != nil {
				t.Errorf("audit.php%s: the last page has next_cursor %v", q, r.Body["next_cursor"])
			}
		}
		s.Admin("GET", "/api/admin/audit.php?cursor=x", nil).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// A limit above the maximum page size (1000) is served as the default page
// of 100 — and, like any full page, points to the next one, so no session is
// silently dropped from the listing.
func TestAdminListSessionsOversizedLimit(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Crowd")
	key := app.GenerateKeys(1, "lifetime", 0, 200)[0]
	for i := range 101 {
		app.Login(key, "pc-"+strconv.Itoa(i))
	}
	for _, limit := range []int{0, 100, 5000} {
		if got := admSessions(t, s, app.ID, "", limit); len(got) != 101 {
			t.Errorf("limit=%d: walked %d sessions, want 101", limit, len(got))
		}
	}
	r := s.MustAdmin("GET", "/api/admin/sessions.php?limit=5000&app_id="+app.ID, nil)
	if n := len(r.List(t, "sessions")); n != 100 {
		t.Fatalf("limit=5000 page has %d sessions, want the default 100", n)
	}
	if c, _ := r.Body["next_cursor"].(string); c == "" {
		t.Fatalf("a full page of 100 with more behind it has no next_cursor")
	}
}
