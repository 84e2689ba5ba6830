package adminapi_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Bearer credentials of admins: personal access tokens (minted, listed,
// revoked, refused credential management, audited as "token"), and the
// JWTs a password change and a sign-out end. Helpers start with tk so they
// do not collide with other test files.

const (
	tkTokens   = "/api/admin/tokens.php"
	tkProfile  = "/api/admin/profile.php"
	tkPassword = "token-tests-pass-1"
)

var (
	tkPATRE  = regexp.MustCompile(`^kwp_[A-Za-z0-9_-]{43}$`)
	tkUUIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// tkList returns the tokens listed for token's admin.
func tkList(t testing.TB, s *kwtest.Server, token string) []map[string]any {
	t.Helper()
	r := s.AdminAs(token, "GET", tkTokens, nil)
	if r.Status != 200 {
		t.Fatalf("list tokens: %s", r)
	}
	return r.List(t, "tokens")
}

// tkListed returns the listed token with id.
func tkListed(t testing.TB, s *kwtest.Server, token, id string) map[string]any {
	t.Helper()
	for _, v := range tkList(t, s, token) {
		if v["id"] == id {
			return v
		}
	}
	t.Fatalf("token %s not listed", id)
	return nil
}

// A minted token is shown once (kwp_ and 43 characters) with its id, name,
// hint and times; the list shows it without the secret. It works on admin
// endpoints until revoked, then answers 403 TOKEN_REVOKED; a made-up token
// is 401; another admin can neither see nor revoke it.
func TestAdminTokensMintListRevoke(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Tokens")
		jwt := s.AdminToken()
		start := license.Timestamp(s.Clock.Now())

		v := s.MintToken(t, jwt, "ci deploy")
		pat, _ := v["token"].(string)
		id, _ := v["id"].(string)
		if !tkPATRE.MatchString(pat) || !tkUUIDRE.MatchString(id) {
			t.Fatalf("minted token %v: want kwp_ and 43 base64url characters and a UUID id", v)
		}
		hint, _ := v["hint"].(string)
		if len(hint) <= len("kwp_") || len(hint) > 12 || !strings.HasPrefix(pat, hint) {
			t.Errorf("hint %q: want the first few characters of the token", hint)
		}
		if v["name"] != "ci deploy" || v["created_at"] != start || v["last_used_at"] != nil || v["revoked_at"] != nil {
			t.Errorf("minted token view %v", v)
		}
		second := s.MintToken(t, jwt, "second")
		if second["token"] == pat || second["id"] == id {
			t.Fatalf("two mints gave the same token: %v, %v", v, second)
		}
		s.AdminAs(jwt, "POST", tkTokens, map[string]any{"name": "  "}).JSONFail(t, 400, "MISSING_FIELDS")

		list := tkList(t, s, jwt)
		if len(list) != 2 {
			t.Fatalf("%d tokens listed, want 2: %v", len(list), list)
		}
		for _, l := range list {
			if _, shown := l["token"]; shown {
				t.Fatalf("list shows a token's secret: %v", l)
			}
		}
		if l := tkListed(t, s, jwt, id); l["name"] != "ci deploy" || l["hint"] != hint || l["created_at"] != start {
			t.Errorf("listed token %v", l)
		}

		// The token works on admin endpoints.
		r := s.AdminAs(pat, "GET", "/api/admin/apps.php", nil)
		if r.Status != 200 || len(r.List(t, "apps")) != 1 || r.List(t, "apps")[0]["app_id"] != app.ID {
			t.Fatalf("apps through the token: %s", r)
		}
		r = s.AdminAs(pat, "POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 2, "key_type": "lifetime", "max_devices": 1})
		if r.Status != 200 || len(r.Body["keys"].([]any)) != 2 {
			t.Fatalf("generate keys through the token: %s", r)
		}

		// Made-up tokens are 401.
		for _, bad := range []string{"kwp_" + "A123456789012345678901234567890123456789012", "kwp_", "kwp_x", pat + "x"} {
			s.AdminAs(bad, "GET", "/api/admin/apps.php", nil).JSONFail(t, 401, "UNAUTHORIZED")
		}

		// Another admin neither lists nor revokes it.
		other := s.AddMember(app.ID, "otto", tkPassword, "admin")
		if l := tkList(t, s, other); len(l) != 0 {
			t.Fatalf("otto lists another admin's tokens: %v", l)
		}
		s.AdminAs(other, "DELETE", tkTokens, map[string]any{"id": id}).JSONFail(t, 404, "NOT_FOUND")
		if r := s.AdminAs(pat, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("token after another admin's revocation attempt: %s", r)
		}
		s.AdminAs(jwt, "DELETE", tkTokens, map[string]any{"id": "00000000-0000-0000-0000-000000000000"}).JSONFail(t, 404, "NOT_FOUND")
		s.AdminAs(jwt, "DELETE", tkTokens, map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")

		// Revoked: 403 TOKEN_REVOKED at once, listed with its time.
		s.Clock.Advance(time.Minute)
		if r := s.AdminAs(jwt, "DELETE", tkTokens, map[string]any{"id": id}); r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("revoke: %s", r)
		}
		s.AdminAs(pat, "GET", "/api/admin/apps.php", nil).JSONFail(t, 403, "TOKEN_REVOKED")
		s.AdminAs(pat, "POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1}).JSONFail(t,
			403, "TOKEN_REVOKED")

		if l := tkListed(t, s, jwt, id); l["revoked_at"] != license.Timestamp(s.Clock.Now()) {
			t.Errorf("revoked token listed as %v", l)
		}
		// The other token is unaffected.
		if r := s.AdminAs(second["token"].(string), "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("second token after revoking the first: %s", r)
		}
	})
}

// A personal access token cannot manage credentials: minting tokens, the
// password, the e-mail address and every two-factor action answer 403
// TOKEN_NOT_ALLOWED, and nothing changes.
func TestAdminTokensCannotManageCredentials(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Creds")
		jwt := s.AddMember(app.ID, "cora", tkPassword, "owner")
		pat := s.MintToken(t, jwt, "script")["token"].(string)

		refused := []struct {
			what, method, path string
			body               map[string]any
		}{
			{"mint a token", "POST", tkTokens, map[string]any{"name": "another"}},
			{"change the password", "PUT", tkProfile, map[string]any{"current_password": tkPassword, "new_password": "a-brand-new-pass"}},
			{"change the e-mail", "PUT", tkProfile, map[string]any{"password": tkPassword, "email": "cora@example.com"}},
			{"enrol two-factor", "POST", "/api/admin/2fa.php", map[string]any{"action": "enrol"}},
			{"confirm two-factor", "POST", "/api/admin/2fa.php", map[string]any{"action": "confirm", "code": "123456"}},
			{"new recovery codes", "POST", "/api/admin/2fa.php", map[string]any{"action": "recovery_codes", "code": "123456"}},
			{"disable two-factor", "POST", "/api/admin/2fa.php", map[string]any{"action": "disable", "password": tkPassword, "code": "123456"}},
		}
		for _, c := range refused {
			r := s.AdminAs(pat, c.method, c.path, c.body)
			if r.Status != 403 || r.Body["error_code"] != "TOKEN_NOT_ALLOWED" {
				t.Errorf("%s through a token: %s, want 403 TOKEN_NOT_ALLOWED", c.what, r)
			}
		}
		if l := tkList(t, s, jwt); len(l) != 1 {
			t.Errorf("tokens after the refused mint: %v", l)
		}
		p := s.AdminAs(jwt, "GET", tkProfile, nil).Obj("profile")
		if p["email"] != "" || p["two_factor"] != false {
			t.Errorf("profile after refused changes: %v", p)
		}
		s.LoginAdmin("cora", tkPassword) // the password is unchanged
		if r := s.AdminAs(jwt, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Errorf("JWT after refused changes: %s", r)
		}
	})
}

// last_used_at is set when a token is used and rewritten at most once a
// minute; JWT requests and listing do not touch it.
func TestAdminTokensLastUsed(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		s.CreateApp("LastUsed")
		jwt := s.AdminToken()
		v := s.MintToken(t, jwt, "poller")
		pat, id := v["token"].(string), v["id"].(string)
		use := func() {
			t.Helper()
			if r := s.AdminAs(pat, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
				t.Fatalf("token use: %s", r)
			}
		}
		lastUsed := func() any { t.Helper(); return tkListed(t, s, jwt, id)["last_used_at"] }

		s.Clock.Advance(5 * time.Second)
		if got := lastUsed(); got != nil {
			t.Fatalf("last_used_at before any use = %v", got)
		}
		use()
		first := license.Timestamp(s.Clock.Now())
		if got := lastUsed(); got != first {
			t.Fatalf("last_used_at after the first use = %v, want %s", got, first)
		}
		s.Clock.Advance(59 * time.Second)
		use()
		if got := lastUsed(); got != first {
			t.Fatalf("last_used_at rewritten 59 s after the last write: %v, want %s", got, first)
		}
		s.Clock.Advance(2 * time.Second)
		use()
		second := license.Timestamp(s.Clock.Now())
		if got := lastUsed(); got != second {
			t.Fatalf("last_used_at 61 s after the last write = %v, want %s", got, second)
		}
		s.Clock.Advance(10 * time.Minute)
		if r := s.AdminAs(jwt, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("JWT request: %s", r)
		}
		if got := lastUsed(); got != second {
			t.Fatalf("last_used_at = %v after only JWT requests, want %s", got, second)
		}
	})
}

// Audit entries of actions taken through a token have actor kind "token"
// with the admin's id and name and actor.token "<id> <name>"; through a
// JWT, kind "admin" without a token. Minting and revoking are audited.
func TestAdminTokensAuditActor(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Audited")
		jwt := s.AdminToken()
		adminID := s.MustAdmin("GET", tkProfile, nil).Obj("profile")["id"]
		v := s.MintToken(t, jwt, "nightly export")
		pat, id := v["token"].(string), v["id"].(string)

		s.AdminAs(pat, "POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1})
		s.Clock.Advance(time.Second)
		app.GenerateKeys(1, "lifetime", 0, 1) // through the JWT

		es := s.Audit(t, "action=key.generate&app_id="+app.ID)
		if len(es) != 2 {
			t.Fatalf("%d key.generate entries, want 2: %v", len(es), es)
		}
		viaJWT, viaPAT := es[0]["actor"].(map[string]any), es[1]["actor"].(map[string]any)
		if viaPAT["kind"] != "token" || viaPAT["id"] != adminID || viaPAT["name"] != "admin" || viaPAT["token"] != id+" nightly export" {
			t.Errorf("actor through the token = %v, want kind token, the admin, token %q", viaPAT, id+" nightly export")
		}
		if _, has := viaJWT["token"]; viaJWT["kind"] != "admin" || viaJWT["id"] != adminID || has {
			t.Errorf("actor through the JWT = %v, want kind admin without a token", viaJWT)
		}

		s.MustAdmin("DELETE", tkTokens, map[string]any{"id": id})
		for _, action := range []string{"token.create", "token.revoke"} {
			es := s.Audit(t, "action="+action+"&target="+id)
			if len(es) != 1 || es[0]["actor"].(map[string]any)["id"] != adminID {
				t.Errorf("%s entries for the token: %v", action, es)
			}
		}
	})
}

// Changing the password needs the current one and a valid new one; it
// answers a fresh JWT, ends every older JWT of the admin, and only the new
// password signs in.
func TestAdminTokensPasswordChangeEndsSignIns(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Passwords")
		j1 := s.AddMember(app.ID, "pia", tkPassword, "owner")
		j2 := s.LoginAdmin("pia", tkPassword)
		other := s.AddMember(app.ID, "pete", tkPassword, "viewer")

		s.AdminAs(j1, "PUT", tkProfile, map[string]any{"current_password": "wrong-current", "new_password": "a-brand-new-pass"}).JSONFail(t,
			401, "INVALID_CREDENTIALS")

		s.AdminAs(j1, "PUT", tkProfile, map[string]any{"current_password": tkPassword, "new_password": "short"}).JSONFail(t,
			400, "MISSING_FIELDS")

		s.AdminAs(j1, "PUT", tkProfile, map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")
		if r := s.AdminAs(j2, "GET", tkProfile, nil); r.Status != 200 {
			t.Fatalf("refused changes ended a sign-in: %s", r)
		}

		r := s.AdminAs(j1, "PUT", tkProfile, map[string]any{"current_password": tkPassword, "new_password": "a-brand-new-pass"})
		if r.Status != 200 || r.Body["success"] != true || r.Str("token") == "" {
			t.Fatalf("password change: %s", r)
		}
		j3 := r.Str("token")
		for name, old := range map[string]string{"the JWT that changed it": j1, "another JWT": j2} {
			if r := s.AdminAs(old, "GET", tkProfile, nil); r.Status != 401 || r.Body["error_code"] != "UNAUTHORIZED" {
				t.Errorf("%s after the password change: %s, want 401 UNAUTHORIZED", name, r)
			}
		}
		if r := s.AdminAs(j3, "GET", tkProfile, nil); r.Status != 200 || r.Obj("profile")["username"] != "pia" {
			t.Fatalf("fresh JWT: %s", r)
		}
		if r := s.AdminAs(other, "GET", tkProfile, nil); r.Status != 200 {
			t.Errorf("another admin's JWT after pia's password change: %s", r)
		}
		s.AdminLoginReply("pia", tkPassword).JSONFail(t, 401, "INVALID_CREDENTIALS")
		s.LoginAdmin("pia", "a-brand-new-pass")
		if es := s.Audit(t, "action=admin.password&target=pia"); len(es) != 1 {
			t.Errorf("admin.password entries: %v", es)
		}
	})
}

// Signing out ends the JWT it was sent with; the admin's other JWTs keep
// working.
func TestAdminTokensLogout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		app := s.CreateApp("Logout")
		j1 := s.AddMember(app.ID, "lena", tkPassword, "owner")
		j2 := s.LoginAdmin("lena", tkPassword)

		if r := s.AdminAs(j1, "POST", "/api/admin/logout.php", nil); r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("logout: %s", r)
		}
		s.AdminAs(j1, "GET", tkProfile, nil).JSONFail(t, 401, "UNAUTHORIZED")
		s.AdminAs(j1, "POST", "/api/admin/logout.php", nil).JSONFail(t, 401, "UNAUTHORIZED")
		if r := s.AdminAs(j2, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("other JWT after logout: %s", r)
		}
		// A fresh sign-in works too.
		if r := s.AdminAs(s.LoginAdmin("lena", tkPassword), "GET", tkProfile, nil); r.Status != 200 {
			t.Fatalf("new sign-in after logout: %s", r)
		}
		s.AdminAs("", "POST", "/api/admin/logout.php", nil).JSONFail(t, 401, "UNAUTHORIZED")
	})
}
