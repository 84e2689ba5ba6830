package adminapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// tokenRefused is, for every admin route, the requests that create or
// change a credential and must be refused to personal access tokens. A new
// admin route fails TestTokenRefusalCoversRouteTable until it is listed
// here, so someone decides whether it changes credentials.
var tokenRefused = map[string][]string{
	"/api/admin/login.php":         nil, // password sign-in itself, no bearer
	"/api/admin/totp.php":          nil,
	"/api/admin/logout.php":        nil, // the admin service refuses it to tokens (nothing to sign out)
	"/api/admin/profile.php":       {"PUT"},
	"/api/admin/signing.php":       nil,
	"/api/admin/2fa.php":           {"POST"},
	"/api/admin/tokens.php":        {"POST"}, // revoking (DELETE) only removes access
	"/api/admin/members.php":       {"POST with password", "PUT with password"},
	"/api/admin/apps.php":          {"POST action=regenerate-secret", "POST action=set-secret", "PUT with upstream_token"}, // creating with a secret is allowed (credential.go)
	"/api/admin/keys.php":          nil,
	"/api/admin/keys-bulk.php":     nil,
	"/api/admin/keys-import.php":   nil,
	"/api/admin/sessions.php":      nil,
	"/api/admin/hwid-resets.php":   nil,
	"/api/admin/audit.php":         nil,
	"/api/admin/trials.php":        nil,
	"/api/admin/subscriptions.php": nil,
	"/api/admin/orders.php":        {"POST action=fulfillment-secret"},
	"/api/admin/pricing.php":       nil,
	"/api/admin/feature-flags.php": nil,
	"/api/admin/texts.php":         nil,
	"/api/admin/slides.php":        nil,
	"/api/admin/social-links.php":  nil,
	"/api/admin/changelog.php":     nil,
	"/api/admin/updates.php":       nil,
	"/api/admin/webhooks.php":      {"POST action=rotate_secret"},
	"/api/admin/analytics.php":     nil,
	"/api/admin/detections.php":    nil,
	"/api/admin/accounts.php":      {"POST action=reset-password"},
	"/api/admin/resellers.php":     {"POST action=create", "POST action=rotate_token", "POST without action"},
}

// The route table declares exactly the credential-changing requests listed
// above, and every admin route is listed.
func TestTokenRefusalCoversRouteTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, rt := range kwtest.Routes(t) {
		if !strings.HasPrefix(rt.Path, "/api/admin/") {
			if len(rt.TokenRefused) > 0 {
				t.Errorf("%s is not an admin route but declares token refusals %v", rt.Path, rt.TokenRefused)
			}
			continue
		}
		seen[rt.Path] = true
		want, listed := tokenRefused[rt.Path]
		if !listed {
			t.Errorf("admin route %s is not in tokenRefused: decide which of its requests change credentials", rt.Path)
			continue
		}
		if len(want) == 0 && len(rt.TokenRefused) == 0 {
			continue
		}
		if !reflect.DeepEqual(rt.TokenRefused, want) {
			t.Errorf("%s refuses tokens for %v, want %v", rt.Path, rt.TokenRefused, want)
		}
	}
	for p := range tokenRefused {
		if !seen[p] {
			t.Errorf("tokenRefused lists %s, which is not in the route table", p)
		}
	}
}

// Every declared credential-changing request answers a personal access
// token — even its owner-role, operator admin's — 403 TOKEN_NOT_ALLOWED and
// changes nothing (no audit entry, no new admin, token or secret); the same
// routes' other requests still work with the token. This is the issue's
// case: an owner's token could create a new owner with a password who signs
// in without two-factor and outlives the token.
func TestTokenRefusedCredentialChanges(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Creds")
		jwt := s.AdminToken()
		pat := s.MintToken(t, jwt, "script")["token"].(string)
		q := "?app_id=" + app.ID

		cases := map[string][]struct {
			path string
			body map[string]any
		}{
			"/api/admin/profile.php PUT": {{"/api/admin/profile.php", map[string]any{"current_password": kwtest.AdminPassword, "new_password": "a brand new password"}},
				{"/api/admin/profile.php", map[string]any{"password": kwtest.AdminPassword, "email": "x@example.com"}}},
			"/api/admin/2fa.php POST":    {{"/api/admin/2fa.php", map[string]any{"action": "enrol"}}},
			"/api/admin/tokens.php POST": {{"/api/admin/tokens.php", map[string]any{"name": "second"}}},
			"/api/admin/members.php POST with password": {{"/api/admin/members.php" + q,
				map[string]any{"username": "mallory", "role": "owner", "password": "mallory's long password"}}},
			"/api/admin/members.php PUT with password": {{"/api/admin/members.php" + q,
				map[string]any{"username": "mallory", "role": "owner", "password": "mallory's long password"}}},
			"/api/admin/apps.php POST action=regenerate-secret": {{"/api/admin/apps.php" + q + "&action=regenerate-secret", nil},
				{"/api/admin/apps.php" + q, map[string]any{"action": "regenerate-secret"}},
				{"/api/admin/apps.php" + q + "&action=Regenerate_Secret", nil}},
			"/api/admin/apps.php POST action=set-secret": {{"/api/admin/apps.php" + q + "&action=set-secret", map[string]any{"secret": strings.Repeat("ab", 32)}},
				{"/api/admin/apps.php" + q, map[string]any{"action": "set-secret", "secret": strings.Repeat("ab", 32)}},
				{"/api/admin/apps.php" + q + "&action=Set_Secret", map[string]any{"secret": strings.Repeat("ab", 32)}}},
			"/api/admin/apps.php PUT with upstream_token": {{"/api/admin/apps.php" + q, map[string]any{"upstream_token": "tok_elsewhere"}},
				{"/api/admin/apps.php" + q, map[string]any{"settings": map[string]any{"upstream_token": "tok_elsewhere"}}}},
			"/api/admin/orders.php POST action=fulfillment-secret": {{"/api/admin/orders.php" + q + "&action=fulfillment-secret", nil}},
			"/api/admin/webhooks.php POST action=rotate_secret": {{"/api/admin/webhooks.php" + q + "&action=rotate_secret", map[string]any{"id": 1}},
				{"/api/admin/webhooks.php" + q, map[string]any{"action": "rotate-secret", "id": 1}}},
			"/api/admin/accounts.php POST action=reset-password": {{"/api/admin/accounts.php" + q + "&action=reset-password", map[string]any{"username": "bob"}}},
			"/api/admin/resellers.php POST action=create":        {{"/api/admin/resellers.php" + q + "&action=create", map[string]any{"name": "Shop"}}},
			"/api/admin/resellers.php POST without action":       {{"/api/admin/resellers.php" + q, map[string]any{"name": "Shop"}}},
			"/api/admin/resellers.php POST action=rotate_token":  {{"/api/admin/resellers.php" + q, map[string]any{"action": "rotate_token", "id": "x"}}},
		}
		secretBefore := s.AppView(t, app.ID)["secret"]
		raw := secRaw(t, s)
		auditBefore := azAuditCount(t, raw, "")
		for path, refusals := range tokenRefused {
			for _, d := range refusals {
				method, _, _ := strings.Cut(d, " ")
				reqs := cases[path+" "+d]
				if len(reqs) == 0 {
					t.Errorf("no request tries %s %s", path, d)
				}
				for _, c := range reqs {
					var body any
					if c.body != nil {
						body = c.body
					}
					r := s.AdminAs(pat, method, c.path, body)
					if r.Status != http.StatusForbidden || r.Str("error_code") != "TOKEN_NOT_ALLOWED" {
						t.Errorf("%s %s %v through a token: %s, want 403 TOKEN_NOT_ALLOWED", method, c.path, c.body, r)
					}
				}
			}
		}
		if after := azAuditCount(t, raw, ""); after != auditBefore {
			t.Errorf("refused requests wrote %d audit entries", after-auditBefore)
		}
		if got := s.AppView(t, app.ID)["secret"]; got != secretBefore {
			t.Errorf("app secret changed through a token: %v → %v", secretBefore, got)
		}
		if r := s.Do("POST", "/api/admin/login.php", nil, []byte(`{"username":"mallory","password":"mallory's long password"}`)); r.Status == 200 {
			t.Errorf("the owner a token tried to create can sign in: %s", r)
		}
		if l := tkList(t, s, jwt); len(l) != 1 {
			t.Errorf("tokens after refused mints: %d, want 1", len(l))
		}
		// What is not a credential change still works with the token.
		s.AddMember(app.ID, "helen", tkPassword, "viewer")
		for _, c := range []struct{ method, path string }{
			{"PUT", "/api/admin/members.php" + q}, // an existing admin, a role: no password
			{"POST", "/api/admin/webhooks.php" + q},
			{"GET", "/api/admin/profile.php"},
		} {
			var body any
			switch c.method + c.path {
			case "PUT/api/admin/members.php" + q:
				body = map[string]any{"username": "helen", "role": "support"}
			case "POST/api/admin/webhooks.php" + q:
				body = map[string]any{"url": "http://127.0.0.1:9/hook"}
			}
			if r := s.AdminAs(pat, c.method, c.path, body); r.Status != 200 {
				t.Errorf("%s %s through a token: %s, want 200", c.method, c.path, r)
			}
		}
		// And the refused requests work with a password sign-in.
		if r := s.AdminAs(jwt, "PUT", "/api/admin/members.php"+q,
			map[string]any{"username": "mallory", "role": "viewer", "password": "mallory's long password"}); r.Status != 200 {
			t.Errorf("members PUT with a password through a JWT: %s", r)
		}
	})
}
