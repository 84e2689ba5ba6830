package adminapi_test

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Teams: app members and their roles, what each role may do, which apps an
// admin sees, the caller's profile, and the audit log each admin may read.
// Helpers start with tm so they do not collide with other test files.

const (
	tmMembers  = "/api/admin/members.php"
	tmApps     = "/api/admin/apps.php"
	tmAudit    = "/api/admin/audit.php"
	tmPassword = "team-tests-pass-1"
)

// tmMemberList returns username → role of the app's team, as token sees it.
func tmMemberList(t testing.TB, s *kwtest.Server, token, appID string) map[string]string {
	t.Helper()
	r := s.AdminAs(token, "GET", tmMembers+"?app_id="+url.QueryEscape(appID), nil)
	if r.Status != 200 {
		t.Fatalf("list members of %s: %s", appID, r)
	}
	out := map[string]string{}
	for _, m := range r.List(t, "members") {
		out[m["username"].(string)] = m["role"].(string)
	}
	return out
}

// tmRoles returns app_id → role of GET apps.php as token sees it.
func tmRoles(t testing.TB, s *kwtest.Server, token string) map[string]string {
	t.Helper()
	r := s.AdminAs(token, "GET", tmApps, nil)
	if r.Status != 200 {
		t.Fatalf("list apps: %s", r)
	}
	out := map[string]string{}
	for _, a := range r.List(t, "apps") {
		role, _ := a["role"].(string)
		out[a["app_id"].(string)] = role
	}
	return out
}

// tmEqual fails unless got and want hold the same pairs.
func tmEqual(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// tmAuditAs returns the audit entries token may read with query, and the
// reply's next_cursor.
func tmAuditAs(t testing.TB, s *kwtest.Server, token, query string) ([]map[string]any, string) {
	t.Helper()
	r := s.AdminAs(token, "GET", tmAudit+"?"+query, nil)
	if r.Status != 200 {
		t.Fatalf("audit %s: %s", query, r)
	}
	next, _ := r.Body["next_cursor"].(string)
	return r.List(t, "entries"), next
}

// Owners add members (creating an admin for an unknown username given a
// password; an existing admin's password is left alone), change their roles
// and remove them; nobody may remove or demote the last owner.
func TestAdminTeamMembers(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Team")
		owner := s.AdminToken()
		tmEqual(t, "team of a new app", tmMemberList(t, s, owner, app.ID), map[string]string{"admin": "owner"})

		r := s.MustAdmin("POST", tmMembers, map[string]any{"app_id": app.ID, "username": "sue", "password": tmPassword, "role": "support"})
		if m := r.Obj("member"); m["username"] != "sue" || m["role"] != "support" || m["email"] != "" ||
			m["created_at"] != license.Timestamp(s.Clock.Now()) {
			t.Fatalf("new member view %v", m)
		}
		sue := s.LoginAdmin("sue", tmPassword)
		if p := s.AdminAs(sue, "GET", "/api/admin/profile.php", nil).Obj("profile"); p["operator"] != false {
			t.Fatalf("admin created by a team owner is an operator: %v", p)
		}
		s.Admin("POST", tmMembers, map[string]any{"app_id": app.ID, "username": "ghost", "role": "viewer"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("POST", tmMembers, map[string]any{"app_id": app.ID, "username": "vic", "password": tmPassword, "role": "boss"}).JSONFail(t,
			400, "MISSING_FIELDS")

		s.Admin("POST", tmMembers, map[string]any{"app_id": app.ID, "username": "vic", "password": "short", "role": "viewer"}).JSONFail(t,
			400, "MISSING_FIELDS")

		s.Admin("POST", tmMembers, map[string]any{"app_id": app.ID, "role": "viewer"}).JSONFail(t, 400, "MISSING_FIELDS")
		if _, ok := tmMemberList(t, s, owner, app.ID)["ghost"]; ok {
			t.Fatal("refused member listed")
		}

		// An existing admin joins another app; its password is not touched.
		other := s.CreateApp("Other")
		s.MustAdmin("POST", tmMembers, map[string]any{"app_id": other.ID, "username": "sue", "password": "ignored-password", "role": "viewer"})
		s.LoginAdmin("sue", tmPassword)
		s.AdminLoginReply("sue", "ignored-password").JSONFail(t, 401, "INVALID_CREDENTIALS")

		// PUT changes a role.
		s.MustAdmin("PUT", tmMembers, map[string]any{"app_id": app.ID, "username": "sue", "role": "admin"})
		tmEqual(t, "team after the role change", tmMemberList(t, s, owner, app.ID), map[string]string{"admin": "owner", "sue": "admin"})
		tmEqual(t, "other team", tmMemberList(t, s, owner, other.ID), map[string]string{"admin": "owner", "sue": "viewer"})

		// The last owner stays.
		s.Admin("DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "admin"}).JSONFail(t, 409, "LAST_OWNER")
		s.Admin("PUT", tmMembers, map[string]any{"app_id": app.ID, "username": "admin", "role": "admin"}).JSONFail(t, 409, "LAST_OWNER")
		tmEqual(t, "team after refused changes", tmMemberList(t, s, owner, app.ID), map[string]string{"admin": "owner", "sue": "admin"})
		// With a second owner the first may step down.
		s.MustAdmin("PUT", tmMembers, map[string]any{"app_id": app.ID, "username": "sue", "role": "owner"})
		s.MustAdmin("PUT", tmMembers, map[string]any{"app_id": app.ID, "username": "admin", "role": "viewer"})
		s.AdminAs(sue, "DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "sue"}).JSONFail(t, 409, "LAST_OWNER")
		s.Admin("POST", tmMembers, map[string]any{"app_id": app.ID, "username": "zed", "password": tmPassword, "role": "viewer"}).JSONFail(t,
			403, "FORBIDDEN")

		// Removal.
		if r := s.AdminAs(sue, "DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "admin"}); r.Status != 200 {
			t.Fatalf("remove a member: %s", r)
		}
		tmEqual(t, "team after the removal", tmMemberList(t, s, sue, app.ID), map[string]string{"sue": "owner"})
		s.Admin("GET", tmMembers+"?app_id="+app.ID, nil).JSONFail(t, 403, "FORBIDDEN")
		s.AdminAs(sue, "DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "admin"}).JSONFail(t, 404, "NOT_FOUND")
		s.AdminAs(sue, "DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "nobody-at-all"}).JSONFail(t, 404, "NOT_FOUND")

		var sets []string
		for _, e := range s.Audit(t, "action=member.&app_id="+app.ID) {
			sets = append(sets, e["action"].(string)+" "+e["target"].(string))
		}
		want := "member.remove admin,member.set admin,member.set sue,member.set sue,member.set sue"
		if strings.Join(sets, ",") != want {
			t.Errorf("member audit entries %v, want %s", sets, want)
		}
	})
}

// Each role may do what it names: viewers read, support acts on existing
// keys, admins generate keys and edit the app, owners manage the team; a non-member is refused
// (403) on every app route, and an app that does not exist is 404.
func TestAdminTeamRoles(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Roles")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		tok := map[string]string{
			"owner":   s.AddMember(app.ID, "olive", tmPassword, "owner"),
			"admin":   s.AddMember(app.ID, "adam", tmPassword, "admin"),
			"support": s.AddMember(app.ID, "sue", tmPassword, "support"),
			"viewer":  s.AddMember(app.ID, "vic", tmPassword, "viewer"),
		}
		elsewhere := s.CreateApp("Elsewhere")
		tok["none"] = s.AddMember(elsewhere.ID, "nora", tmPassword, "owner")

		q := "?app_id=" + app.ID
		gen := map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1}
		type call struct {
			what, method, path string
			body               any
		}
		calls := []call{
			{"read the app", "GET", tmApps + q, nil},
			{"list members", "GET", tmMembers + q, nil},
			{"list keys", "GET", "/api/admin/keys.php" + q, nil},
			{"generate keys", "POST", "/api/admin/keys.php", gen},
			{"edit the app", "PUT", tmApps + q, map[string]any{"version": "2.0.0"}},
			{"add a member", "POST", tmMembers, map[string]any{"app_id": app.ID, "username": "newbie", "role": "viewer", "password": tmPassword}},
			{"change a role", "PUT", tmMembers, map[string]any{"app_id": app.ID, "username": "newbie", "role": "support"}},
			{"remove a member", "DELETE", tmMembers, map[string]any{"app_id": app.ID, "username": "newbie"}},
		}
		// The least role each call needs.
		needs := map[string]string{"read the app": "viewer", "list members": "viewer", "list keys": "viewer", "generate keys": "admin",
			"edit the app": "admin", "add a member": "owner", "change a role": "owner", "remove a member": "owner"}
		rank := map[string]int{"none": 0, "viewer": 1, "support": 2, "admin": 3, "owner": 4}
		for _, role := range []string{"none", "viewer", "support", "admin", "owner"} {
			for _, c := range calls {
				r := s.AdminAs(tok[role], c.method, c.path, c.body)
				if rank[role] >= rank[needs[c.what]] {
					if r.Status != 200 || r.Body["success"] != true {
						t.Errorf("%s may %s: got %s", role, c.what, r)
					}
				} else if r.Status != 403 || r.Body["error_code"] != "FORBIDDEN" {
					t.Errorf("%s may not %s: got %s, want 403 FORBIDDEN", role, c.what, r)
				}
			}
		}
		// Support acts on keys, a viewer does not.
		if r := s.AdminAs(tok["support"], "POST", "/api/admin/keys.php?action=ban", map[string]any{"app_id": app.ID, "license_key": key}); r.Status != 200 {
			t.Errorf("support bans a key: %s", r)
		}
		s.AdminAs(tok["viewer"], "POST", "/api/admin/keys.php?action=unban", map[string]any{"app_id": app.ID, "license_key": key}).JSONFail(t,
			403, "FORBIDDEN")

		// Deleting the app is the owner's.
		s.AdminAs(tok["admin"], "DELETE", tmApps+q, nil).JSONFail(t, 403, "FORBIDDEN")

		// An app that does not exist is 404 to everyone.
		for _, role := range []string{"none", "owner"} {
			s.AdminAs(tok[role], "GET", tmApps+"?app_id=no-such-app", nil).JSONFail(t, 404, "NOT_FOUND")
			s.AdminAs(tok[role], "GET", tmMembers+"?app_id=no-such-app", nil).JSONFail(t, 404, "NOT_FOUND")
		}
		s.Admin("POST", tmMembers, map[string]any{"username": "x", "role": "viewer"}).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// GET apps.php lists only the apps the caller is a member of, each with its
// role; creating an app makes its creator the owner, and the apps of other
// owners are 403, also to an operator who is not on their team.
func TestAdminTeamAppsList(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Shared")
		b := s.CreateApp("Admin only")
		bob := s.AddMember(a.ID, "bob", tmPassword, "viewer")

		r := s.AdminAs(bob, "POST", tmApps, map[string]any{"name": "Bob's", "version": "1.0.0"})
		if r.Status != 200 || r.Obj("app")["secret"] == "" {
			t.Fatalf("bob creates an app: %s", r)
		}
		mine := r.Obj("app")["app_id"].(string)

		tmEqual(t, "bob's apps", tmRoles(t, s, bob), map[string]string{a.ID: "viewer", mine: "owner"})
		tmEqual(t, "the operator's apps", tmRoles(t, s, s.AdminToken()), map[string]string{a.ID: "owner", b.ID: "owner"})
		tmEqual(t, "bob's team", tmMemberList(t, s, bob, mine), map[string]string{"bob": "owner"})

		if v := s.AdminAs(bob, "GET", tmApps+"?app_id="+a.ID, nil).Obj("app"); v["role"] != "viewer" || v["app_id"] != a.ID {
			t.Errorf("one app as bob sees it: %v", v)
		}
		s.AdminAs(bob, "GET", tmApps+"?app_id="+b.ID, nil).JSONFail(t, 403, "FORBIDDEN")
		s.Admin("GET", tmApps+"?app_id="+mine, nil).JSONFail(t, 403, "FORBIDDEN")
		s.Admin("GET", "/api/admin/keys.php?app_id="+mine, nil).JSONFail(t, 403, "FORBIDDEN")
		s.AdminAs(bob, "GET", tmApps+"?app_id=no-such-app", nil).JSONFail(t, 404, "NOT_FOUND")

		// Removed from a team, the app leaves the list.
		s.MustAdmin("DELETE", tmMembers, map[string]any{"app_id": a.ID, "username": "bob"})
		tmEqual(t, "bob's apps after leaving", tmRoles(t, s, bob), map[string]string{mine: "owner"})
		s.AdminAs(bob, "GET", tmApps+"?app_id="+a.ID, nil).JSONFail(t, 403, "FORBIDDEN")
	})
}

// The profile shows the caller's account and its role on each app; the
// e-mail address changes with the password and must be an address.
func TestAdminTeamProfile(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Profiled")
		b := s.CreateApp("Also")
		s.Clock.Advance(time.Minute)
		joined := license.Timestamp(s.Clock.Now())
		pam := s.AddMember(a.ID, "pam", tmPassword, "support")
		s.MustAdmin("POST", tmMembers, map[string]any{"app_id": b.ID, "username": "pam", "role": "viewer"})

		p := s.AdminAs(pam, "GET", "/api/admin/profile.php", nil).Obj("profile")
		if id, _ := p["id"].(string); !tkUUIDRE.MatchString(id) || p["username"] != "pam" || p["email"] != "" || p["operator"] != false ||
			p["two_factor"] != false || p["created_at"] != joined {
			t.Fatalf("profile %v", p)
		}
		apps, _ := p["apps"].(map[string]any)
		if len(apps) != 2 || apps[a.ID] != "support" || apps[b.ID] != "viewer" {
			t.Fatalf("profile apps %v, want %s: support, %s: viewer", p["apps"], a.ID, b.ID)
		}
		if op := s.MustAdmin("GET", "/api/admin/profile.php", nil).Obj("profile"); op["operator"] != true || op["username"] != "admin" {
			t.Errorf("bootstrap admin's profile %v, want an operator", op)
		}

		put := func(body map[string]any) *kwtest.Reply {
			return s.AdminAs(pam, "PUT", "/api/admin/profile.php", body)
		}
		put(map[string]any{"password": tmPassword, "email": "not an address"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"password": tmPassword, "email": "Pam <pam@example.com>"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"password": "wrong-password", "email": "pam@example.com"}).JSONFail(t, 401, "INVALID_CREDENTIALS")
		if r := put(map[string]any{"password": tmPassword, "email": "pam@example.com"}); r.Status != 200 || r.Body["email"] != "pam@example.com" {
			t.Fatalf("change e-mail: %s", r)
		}
		if p := s.AdminAs(pam, "GET", "/api/admin/profile.php", nil).Obj("profile"); p["email"] != "pam@example.com" {
			t.Errorf("profile e-mail %v", p["email"])
		}
		r := s.MustAdmin("GET", tmMembers+"?app_id="+a.ID, nil)
		for _, m := range r.List(t, "members") {
			if m["username"] == "pam" && m["email"] != "pam@example.com" {
				t.Errorf("member view %v, want the new e-mail", m)
			}
		}
		// The e-mail change keeps the sign-in.
		if r := s.AdminAs(pam, "GET", "/api/admin/profile.php", nil); r.Status != 200 {
			t.Errorf("JWT after an e-mail change: %s", r)
		}
		if r := put(map[string]any{"password": tmPassword, "email": ""}); r.Status != 200 || r.Body["email"] != "" {
			t.Fatalf("clear e-mail: %s", r)
		}
	})
}

// The audit log filters by app, action (exact, or a prefix ending in "."),
// actor, target and time, pages by cursor; an operator reads every entry, a
// non-operator its own actions, or an app's it is a member of.
func TestAdminTeamAudit(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		op := s.AdminToken()
		t0 := s.Clock.Now()
		a := s.CreateApp("Audited") // app.create by admin
		c := s.CreateApp("Private") // app.create by admin
		bob := s.AddMember(a.ID, "bob", tmPassword, "support")
		bobID := s.AdminAs(bob, "GET", "/api/admin/profile.php", nil).Obj("profile")["id"].(string)

		s.Clock.Advance(time.Minute)
		t1 := s.Clock.Now()
		keys := a.GenerateKeys(2, "lifetime", 0, 1) // key.generate by admin
		a.MustKeyAction(t, "ban", keys[0], nil)     // key.ban by admin
		s.Clock.Advance(time.Minute)
		t2 := s.Clock.Now()
		if r := s.AdminAs(bob, "POST", "/api/admin/keys.php?action=ban", map[string]any{"app_id": a.ID, "license_key": keys[1]}); r.Status != 200 {
			t.Fatalf("bob bans a key: %s", r)
		}
		if r := s.AdminAs(bob, "POST", "/api/admin/keys.php?action=unban", map[string]any{"app_id": a.ID, "license_key": keys[0]}); r.Status != 200 {
			t.Fatalf("bob unbans a key: %s", r)
		}
		r := s.AdminAs(bob, "POST", tmApps, map[string]any{"name": "Bob's", "version": "1.0.0"}) // app.create by bob
		bobApp := r.Obj("app")["app_id"].(string)

		actions := func(es []map[string]any) []string {
			out := []string{}
			for _, e := range es {
				out = append(out, e["action"].(string))
			}
			return out
		}
		check := func(what, token, query string, want ...string) []map[string]any {
			t.Helper()
			es, _ := tmAuditAs(t, s, token, query)
			if got := actions(es); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s (%s): actions %v, want %v", what, query, got, want)
			}
			return es
		}

		// Filters, as the operator.
		check("exact action", op, "action=key.ban", "key.ban", "key.ban")
		check("action prefix", op, "action=key.", "key.unban", "key.ban", "key.ban", "key.generate")
		check("action prefix without the dot is exact", op, "action=key")
		es := check("target", op, "target="+url.QueryEscape(keys[0]), "key.unban", "key.ban")
		if es[0]["actor"].(map[string]any)["id"] != bobID || es[0]["app_id"] != a.ID {
			t.Errorf("entry %v, want bob's on %s", es[0], a.ID)
		}
		check("actor", op, "actor_id="+bobID, "app.create", "key.unban", "key.ban")
		check("app", op, "app_id="+a.ID+"&action=app.", "app.create")
		check("app and actor", op, "app_id="+a.ID+"&actor_id="+bobID, "key.unban", "key.ban")
		check("since", op, "action=key.&since="+url.QueryEscape(t2.Format(time.RFC3339)), "key.unban", "key.ban")
		check("until", op, "action=key.&until="+url.QueryEscape(t2.Format(time.RFC3339)), "key.ban", "key.generate")
		check("since and until", op, "since="+url.QueryEscape(t1.Format(time.RFC3339))+"&until="+url.QueryEscape(t2.Format(time.RFC3339)),
			"key.ban", "key.generate")
		check("before everything", op, "until="+url.QueryEscape(t0.Add(-time.Second).Format(time.RFC3339)))
		s.Admin("GET", tmAudit+"?since=yesterday", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", tmAudit+"?cursor=abc", nil).JSONFail(t, 400, "MISSING_FIELDS")

		// Pages of two hold every entry once, newest first.
		all, _ := tmAuditAs(t, s, op, "limit=1000")
		var paged []map[string]any
		cursor := ""
		for range 100 {
			page, next := tmAuditAs(t, s, op, "limit=2&cursor="+cursor)
			if len(page) > 2 {
				t.Fatalf("page of %d entries, limit 2", len(page))
			}
			paged = append(paged, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(paged) != len(all) || len(all) < 8 {
			t.Fatalf("paged %d entries, unpaged %d", len(paged), len(all))
		}
		for i := range all {
			if paged[i]["id"] != all[i]["id"] {
				t.Fatalf("page entry %d is %v, want %v", i, paged[i]["id"], all[i]["id"])
			}
			if i > 0 && all[i]["id"].(float64) >= all[i-1]["id"].(float64) {
				t.Fatalf("entries not newest first: %v then %v", all[i-1]["id"], all[i]["id"])
			}
		}

		// Scope: bob alone sees his own actions, whatever actor he asks for.
		own := check("bob without app_id", bob, "", "app.create", "key.unban", "key.ban")
		for _, e := range own {
			if e["actor"].(map[string]any)["id"] != bobID {
				t.Errorf("bob reads another's entry %v", e)
			}
		}
		check("bob asking for the operator's actions", bob, "actor_id="+url.QueryEscape(s.MustAdmin("GET", "/api/admin/profile.php", nil).Obj("profile")["id"].(string)),
			"app.create", "key.unban", "key.ban")
		// With an app of his: everyone's entries on it.
		check("bob on his team's app", bob, "app_id="+a.ID+"&action=key.", "key.unban", "key.ban", "key.ban", "key.generate")
		check("bob on his own app", bob, "app_id="+bobApp, "app.create")
		s.AdminAs(bob, "GET", tmAudit+"?app_id="+c.ID, nil).JSONFail(t, 403, "FORBIDDEN")
		s.AdminAs(bob, "GET", tmAudit+"?app_id=no-such-app", nil).JSONFail(t, 404, "NOT_FOUND")
		// The operator reads bob's app though it is not on its team.
		check("operator on bob's app", op, "app_id="+bobApp, "app.create")
	})
}

// The audit log is append-only in the database itself: UPDATE and DELETE
// on audit_log fail on both engines and change nothing, while new entries
// are still written.
func TestAdminTeamAuditAppendOnly(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Append only")
		app.GenerateKeys(1, "lifetime", 0, 1)
		db := s.RawDB(t)
		ctx := context.Background()

		snapshot := func() []string {
			t.Helper()
			rows, err := db.QueryContext(ctx, `SELECT id, action, target FROM audit_log ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var id int64
				var action, target string
				if err := rows.Scan(&id, &action, &target); err != nil {
					t.Fatal(err)
				}
				out = append(out, action+" "+target)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := snapshot()
		if len(before) < 3 {
			t.Fatalf("audit_log has %d rows, want the bootstrap, app and key entries", len(before))
		}
		for _, q := range []string{
			`UPDATE audit_log SET action = 'tampered'`,
			`UPDATE audit_log SET target = 'x' WHERE action = 'app.create'`,
			`DELETE FROM audit_log`,
			`DELETE FROM audit_log WHERE action = 'key.generate'`,
		} {
			if _, err := db.ExecContext(ctx, q); err == nil {
				t.Errorf("%s succeeded on %s, want it refused", q, engine)
			} else if !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want the append-only refusal", q, err)
			}
		}
		after := snapshot()
		sort.Strings(before)
		sorted := append([]string(nil), after...)
		sort.Strings(sorted)
		if strings.Join(sorted, "|") != strings.Join(before, "|") {
			t.Fatalf("audit_log changed: %v, was %v", after, before)
		}
		app.GenerateKeys(1, "lifetime", 0, 1)
		if n := len(snapshot()); n != len(before)+1 {
			t.Fatalf("audit_log has %d rows after another action, want %d", n, len(before)+1)
		}
	})
}
