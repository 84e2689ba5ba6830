package adminapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The authorization matrix: every app-scoped admin endpoint and method, called
// by a viewer, a support agent, an admin and an owner of app A, on app A and
// on app B (which none of them belongs to). Each row names the least role it
// needs; a role below it gets 403 FORBIDDEN and changes nothing (the app's
// audit log does not grow), a role at or above it gets the row's answer
// (200 unless stated) — and a change that succeeded is in the audit log.

var azRoles = []string{"viewer", "support", "admin", "owner"}

func azRank(role string) int {
	for i, r := range azRoles {
		if r == role {
			return i
		}
	}
	panic("unknown role " + role)
}

// azCase is one request of a row, prepared against one app.
type azCase struct {
	app   string // the app whose audit log the call may change
	query string // appended to the path (with app_id)
	body  map[string]any
	csv   []byte // sent as text/csv instead of body
}

type azRow struct {
	method, path string
	least        string // the least role allowed
	want         int    // the allowed answer; 0 = 200
	// prep sets up what the call acts on, in app (as the bootstrap admin).
	prep func(t *testing.T, app *kwtest.App) azCase
}

// azFixture holds the apps and the members' tokens.
type azFixture struct {
	s      *kwtest.Server
	a, b   *kwtest.App
	tokens map[string]string
	n      atomic.Int64
}

func (f *azFixture) seq() string { return fmt.Sprint(f.n.Add(1)) }

func (f *azFixture) key(t *testing.T, app *kwtest.App) string {
	return app.GenerateKeys(1, "lifetime", 0, 1)[0]
}

func (f *azFixture) id(t *testing.T, r *kwtest.Reply, obj string) int64 {
	t.Helper()
	o := r.Obj(obj)
	v, ok := o["id"].(float64)
	if !ok {
		t.Fatalf("%s has no id: %s", obj, r)
	}
	return int64(v)
}

// on is a case with app_id in the body.
func on(app *kwtest.App, body map[string]any) azCase {
	if body == nil {
		body = map[string]any{}
	}
	body["app_id"] = app.ID
	return azCase{app: app.ID, body: body}
}

// onQuery is a case with app_id and extra in the query string.
func onQuery(app *kwtest.App, extra string) azCase {
	return azCase{app: app.ID, query: "?app_id=" + url.QueryEscape(app.ID) + extra}
}

func azRows(f *azFixture) []azRow {
	s := f.s
	get := func(path string, least string) azRow {
		return azRow{method: "GET", path: path, least: least,
			prep: func(t *testing.T, app *kwtest.App) azCase { return onQuery(app, "") }}
	}
	body := func(method, path, least string, mk func(t *testing.T, app *kwtest.App) map[string]any) azRow {
		return azRow{method: method, path: path, least: least,
			prep: func(t *testing.T, app *kwtest.App) azCase { return on(app, mk(t, app)) }}
	}
	slide := func(t *testing.T, app *kwtest.App) int64 {
		return f.id(t, s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "T" + f.seq()}), "slide")
	}
	link := func(t *testing.T, app *kwtest.App) int64 {
		return f.id(t, s.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": app.ID, "platform": "discord",
			"url": "https://discord.gg/" + f.seq()}), "social_link")
	}
	entry := func(t *testing.T, app *kwtest.App) int64 {
		return f.id(t, s.MustAdmin("POST", "/api/admin/changelog.php", map[string]any{"app_id": app.ID, "version": "1.0." + f.seq(),
			"title": "T", "body": "B", "category": "fixed", "published": false}), "entry")
	}
	plan := func(t *testing.T, app *kwtest.App) int64 {
		return f.id(t, s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": "P" + f.seq(),
			"price": 5, "currency": "USD", "key_type": "lifetime"}), "plan")
	}
	webhook := func(t *testing.T, app *kwtest.App) int64 {
		return f.id(t, s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID,
			"url": "https://hooks.example.com/" + f.seq()}), "webhook")
	}
	release := func(t *testing.T, app *kwtest.App) int64 { return app.CreateRelease("2.0."+f.seq(), nil) }
	account := func(t *testing.T, app *kwtest.App) string {
		name := "user" + f.seq()
		app.SignUp(t, name, "password1", "")
		return name
	}
	resetRequest := func(t *testing.T, app *kwtest.App) int64 {
		k := f.key(t, app)
		app.Plain("/api/auth/request-hwid-reset.php", map[string]any{"license_key": k, "reason": "new pc"}).OK(t)
		r := s.MustAdmin("GET", "/api/admin/hwid-resets.php?status=pending&app_id="+app.ID, nil)
		list, _ := r.Body["requests"].([]any)
		if len(list) == 0 {
			t.Fatalf("no pending request: %s", r)
		}
		return int64(list[0].(map[string]any)["id"].(float64))
	}
	seller := func(t *testing.T, app *kwtest.App) string {
		r := s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": "Shop " + f.seq(),
			"products": []map[string]any{{"id": "life", "name": "Lifetime", "key_type": "lifetime", "price": 2}}})
		return r.Obj("reseller")["id"].(string)
	}
	sellerAction := func(action string, extra map[string]any) func(t *testing.T, app *kwtest.App) map[string]any {
		return func(t *testing.T, app *kwtest.App) map[string]any {
			id := seller(t, app)
			if action == "adjust" {
				s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "action": "topup", "id": id, "amount": 10})
			}
			b := map[string]any{"action": action, "id": id}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
	}
	member := func(t *testing.T, app *kwtest.App) string {
		name := "member" + f.seq()
		s.MustAdmin("POST", "/api/admin/members.php", map[string]any{"app_id": app.ID, "username": name, "password": "password-" + name, "role": "viewer"})
		return name
	}

	return []azRow{
		get("/api/admin/apps.php", "viewer"),
		{method: "POST", path: "/api/admin/apps.php", least: "admin",
			prep: func(t *testing.T, app *kwtest.App) azCase { return onQuery(app, "&action=regenerate-secret") }},
		body("PUT", "/api/admin/apps.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"name": "Renamed " + f.seq()}
		}),
		body("POST", "/api/admin/apps.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"action": "revoke"}
		}),
		body("POST", "/api/admin/apps.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"action": "restore"}
		}),

		get("/api/admin/keys.php", "viewer"),
		body("POST", "/api/admin/keys.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"count": 1, "key_type": "lifetime"}
		}),
		{method: "POST", path: "/api/admin/keys.php", least: "support", prep: func(t *testing.T, app *kwtest.App) azCase {
			c := on(app, map[string]any{"license_key": f.key(t, app)})
			c.query = "?action=ban"
			return c
		}},
		body("PUT", "/api/admin/keys.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"license_key": f.key(t, app), "note": "vip"}
		}),
		body("DELETE", "/api/admin/keys.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"license_key": f.key(t, app)}
		}),

		body("POST", "/api/admin/keys-bulk.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			note := "bulk " + f.seq()
			k := f.key(t, app)
			s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": k, "note": note})
			return map[string]any{"op": "pause", "q": note, "dry_run": false, "expect": 1}
		}),
		{method: "POST", path: "/api/admin/keys-import.php", least: "admin", prep: func(t *testing.T, app *kwtest.App) azCase {
			c := onQuery(app, "&dry_run=false")
			c.csv = []byte("license_key,status,key_type,duration,max_devices,activated_at,expires_at,note,features,hwids,created_at\n" +
				"IMPORTED-" + f.seq() + ",unused,lifetime,0,1,,,,{},,\n")
			return c
		}},
		get("/api/admin/sessions.php", "viewer"),
		body("DELETE", "/api/admin/sessions.php", "support", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"session_id": app.Login(f.key(t, app), "pc-"+f.seq())}
		}),

		get("/api/admin/hwid-resets.php", "viewer"),
		body("POST", "/api/admin/hwid-resets.php", "support", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": resetRequest(t, app), "action": "deny"}
		}),

		get("/api/admin/audit.php", "viewer"),
		get("/api/admin/trials.php", "viewer"),
		get("/api/admin/detections.php", "viewer"),
		get("/api/admin/analytics.php", "viewer"),

		get("/api/admin/subscriptions.php", "viewer"),
		{method: "POST", path: "/api/admin/subscriptions.php", least: "admin", want: 404, prep: func(t *testing.T, app *kwtest.App) azCase {
			c := on(app, map[string]any{"id": 999999})
			c.query = "?action=cancel"
			return c
		}},
		get("/api/admin/orders.php", "viewer"),
		{method: "POST", path: "/api/admin/orders.php", least: "admin", prep: func(t *testing.T, app *kwtest.App) azCase {
			c := on(app, nil)
			c.query = "?action=fulfillment-secret"
			return c
		}},

		get("/api/admin/pricing.php", "viewer"),
		body("POST", "/api/admin/pricing.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"type": "plan", "name": "N" + f.seq(), "price": 3, "currency": "USD", "key_type": "lifetime"}
		}),
		body("PUT", "/api/admin/pricing.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": plan(t, app), "price": 7.5}
		}),
		body("DELETE", "/api/admin/pricing.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": plan(t, app)}
		}),

		get("/api/admin/feature-flags.php", "viewer"),
		body("PUT", "/api/admin/feature-flags.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"name": "flag" + f.seq(), "type": "bool"}
		}),
		body("DELETE", "/api/admin/feature-flags.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			name := "flag" + f.seq()
			s.MustAdmin("PUT", "/api/admin/feature-flags.php", map[string]any{"app_id": app.ID, "name": name, "type": "bool"})
			return map[string]any{"name": name}
		}),

		get("/api/admin/texts.php", "viewer"),
		body("PUT", "/api/admin/texts.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"name": "t" + f.seq(), "value": "v"}
		}),
		body("DELETE", "/api/admin/texts.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			name := "t" + f.seq()
			s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": name, "value": "v"})
			return map[string]any{"name": name}
		}),

		get("/api/admin/slides.php", "viewer"),
		body("POST", "/api/admin/slides.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"title": "New " + f.seq()}
		}),
		body("PUT", "/api/admin/slides.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": slide(t, app), "active": false}
		}),
		body("DELETE", "/api/admin/slides.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": slide(t, app)}
		}),

		get("/api/admin/social-links.php", "viewer"),
		body("POST", "/api/admin/social-links.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"platform": "discord", "url": "https://discord.gg/n" + f.seq()}
		}),
		body("PUT", "/api/admin/social-links.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": link(t, app), "url": "https://discord.gg/m" + f.seq()}
		}),
		body("DELETE", "/api/admin/social-links.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": link(t, app)}
		}),

		get("/api/admin/changelog.php", "viewer"),
		body("POST", "/api/admin/changelog.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"version": "3.0." + f.seq(), "title": "T", "body": "B", "category": "fixed"}
		}),
		body("PUT", "/api/admin/changelog.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": entry(t, app), "published": true}
		}),
		body("DELETE", "/api/admin/changelog.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": entry(t, app)}
		}),

		get("/api/admin/updates.php", "viewer"),
		body("POST", "/api/admin/updates.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"version": "4.0." + f.seq()}
		}),
		body("PUT", "/api/admin/updates.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": release(t, app), "changelog": "Notes"}
		}),
		body("DELETE", "/api/admin/updates.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": release(t, app)}
		}),

		get("/api/admin/webhooks.php", "viewer"),
		body("POST", "/api/admin/webhooks.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"url": "https://hooks.example.com/n" + f.seq()}
		}),
		body("PUT", "/api/admin/webhooks.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": webhook(t, app), "description": "d"}
		}),
		body("DELETE", "/api/admin/webhooks.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": webhook(t, app)}
		}),

		get("/api/admin/accounts.php", "viewer"),
		body("POST", "/api/admin/accounts.php", "support", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"username": account(t, app), "action": "ban"}
		}),
		body("DELETE", "/api/admin/accounts.php", "admin", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"username": account(t, app)}
		}),

		get("/api/admin/resellers.php", "admin"),
		{method: "GET", path: "/api/admin/resellers.php", least: "admin", prep: func(t *testing.T, app *kwtest.App) azCase {
			return onQuery(app, "&id="+url.QueryEscape(seller(t, app)))
		}},
		body("POST", "/api/admin/resellers.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"name": "New shop " + f.seq(), "email": "shop@example.com"}
		}),
		body("POST", "/api/admin/resellers.php", "owner", sellerAction("topup", map[string]any{"amount": 100})),
		body("POST", "/api/admin/resellers.php", "owner", sellerAction("adjust", map[string]any{"amount": -5, "reason": "refund"})),
		body("POST", "/api/admin/resellers.php", "owner", sellerAction("rotate_token", nil)),
		body("POST", "/api/admin/resellers.php", "owner", sellerAction("disable", nil)),
		body("POST", "/api/admin/resellers.php", "owner", sellerAction("enable", nil)),
		body("PUT", "/api/admin/resellers.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": seller(t, app), "name": "Renamed shop",
				"products": []map[string]any{{"id": "m", "name": "Month", "key_type": "days", "duration_value": 30, "price": 3}}}
		}),
		body("DELETE", "/api/admin/resellers.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"id": seller(t, app)}
		}),

		get("/api/admin/members.php", "viewer"),
		body("POST", "/api/admin/members.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			n := "fresh" + f.seq()
			return map[string]any{"username": n, "password": "password-" + n, "role": "support"}
		}),
		body("PUT", "/api/admin/members.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"username": member(t, app), "role": "admin"}
		}),
		body("DELETE", "/api/admin/members.php", "owner", func(t *testing.T, app *kwtest.App) map[string]any {
			return map[string]any{"username": member(t, app)}
		}),

		// Last: deleting an app takes a fresh one each time (with the same team).
		{method: "DELETE", path: "/api/admin/apps.php", least: "owner", prep: func(t *testing.T, app *kwtest.App) azCase {
			if app.ID == f.a.ID {
				app = s.CreateApp("Doomed " + f.seq())
				for _, role := range azRoles {
					s.MustAdmin("POST", "/api/admin/members.php", map[string]any{"app_id": app.ID, "username": "az-" + role, "role": role})
				}
			}
			return onQuery(app, "")
		}},
	}
}

// azAuditCount is the number of entries in the audit log of appID (of every
// app when appID is ""): the rows the audit API lists for the operator,
// counted in the database (raw, see secRaw). Listing the log through the
// API, page by page, before and after each request of the matrix made the
// matrix quadratic in its own audit log.
func azAuditCount(t *testing.T, raw secDB, appID string) int {
	t.Helper()
	q, args := `SELECT COUNT(*) FROM audit_log`, []any{}
	if appID != "" {
		q, args = q+` WHERE app_id = ?`, append(args, appID)
	}
	var n int
	if err := raw.QueryRow(raw.q(q), args...).Scan(&n); err != nil {
		t.Fatalf("count audit entries: %v", err)
	}
	return n
}

// azAuditListed is the number of entries the audit API lists for appID,
// page by page.
func azAuditListed(t *testing.T, s *kwtest.Server, appID string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		r := s.MustAdmin("GET", "/api/admin/audit.php?limit=1000&app_id="+url.QueryEscape(appID)+cursor, nil)
		list, _ := r.Body["entries"].([]any)
		n += len(list)
		next, _ := r.Body["next_cursor"].(string)
		if next == "" {
			return n
		}
		cursor = "&cursor=" + next
	}
}

func TestAdminAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		f := &azFixture{s: s, tokens: map[string]string{}}
		raw := secRaw(t, s)
		f.a = s.AccountsApp(t, "Mine", nil)
		f.b = s.AccountsApp(t, "Theirs", nil)
		for _, role := range azRoles {
			f.tokens[role] = s.AddMember(f.a.ID, "az-"+role, "password-az-"+role, role)
		}
		routes := map[string]bool{}
		for _, row := range azRows(f) {
			routes[row.method+" "+row.path] = true
			for _, role := range azRoles {
				for _, foreign := range []bool{false, true} {
					app := f.a
					if foreign {
						app = f.b
					}
					c := row.prep(t, app)
					before := azAuditCount(t, raw, c.app)
					var body any
					if c.body != nil {
						body = c.body
					}
					var r *kwtest.Reply
					if c.csv == nil {
						r = s.AdminAs(f.tokens[role], row.method, row.path+c.query, body)
					} else {
						r = s.Do(row.method, row.path+c.query, http.Header{"Authorization": {"Bearer " + f.tokens[role]},
							"Content-Type": {"text/csv"}}, c.csv)
					}
					name := fmt.Sprintf("%s %s%s as %s (foreign=%v)", row.method, row.path, c.query, role, foreign)
					allowed := !foreign && azRank(role) >= azRank(row.least)
					if !allowed {
						if r.Status != 403 || r.Body["error_code"] != "FORBIDDEN" {
							t.Errorf("%s: %s, want 403 FORBIDDEN", name, r)
						}
						if after := azAuditCount(t, raw, c.app); after != before {
							t.Errorf("%s: refused, yet the audit log went from %d to %d entries", name, before, after)
						}
						continue
					}
					want := row.want
					if want == 0 {
						want = 200
					}
					if r.Status != want {
						t.Errorf("%s: %s, want %d", name, r, want)
						continue
					}
					if secret, _ := r.Obj("app")["secret"].(string); secret != "" { // regenerated
						*app = *s.NewApp(app.ID, secret)
					}
					if row.method != "GET" && want == 200 {
						if after := azAuditCount(t, raw, c.app); after <= before {
							t.Errorf("%s: succeeded without an audit entry", name)
						}
					}
				}
			}
		}
		// The count the matrix compared is what the audit API lists.
		for _, app := range []*kwtest.App{f.a, f.b} {
			if listed, counted := azAuditListed(t, s, app.ID), azAuditCount(t, raw, app.ID); listed != counted || counted == 0 {
				t.Errorf("app %s: the audit API lists %d entries, the database holds %d", app.ID, listed, counted)
			}
		}
		// The matrix covers every method of every app-scoped admin route.
		for _, rt := range s.API().Routes() {
			if !strings.HasPrefix(rt.Path, "/api/admin/") || azSelfRoutes[rt.Path] {
				continue
			}
			for _, m := range rt.Methods {
				if !routes[m+" "+rt.Path] {
					t.Errorf("the authorization matrix has no row for %s %s", m, rt.Path)
				}
			}
		}
	})
}

// azSelfRoutes are admin routes about the caller, not an app (covered by the
// profile, two-factor and token tests).
var azSelfRoutes = map[string]bool{
	"/api/admin/login.php": true, "/api/admin/totp.php": true, "/api/admin/logout.php": true,
	"/api/admin/profile.php": true, "/api/admin/2fa.php": true, "/api/admin/tokens.php": true, "/api/admin/signing.php": true,
}
