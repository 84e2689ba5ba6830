package adminapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Adopting an app secret (keyward issue 24, item 1): an app created with a
// given secret, or given one later with action=set-secret, serves the
// clients that already have that secret. Helpers start with as.

// Secrets in the hosted service's form: 64 hex characters. asMixed has
// both cases, to show that the secret is kept byte for byte (the envelope
// keys are derived from its text).
const (
	asMixed = "0123456789ABCDEF0123456789abcdef" + "FEDCBA9876543210fedcba9876543210"
	asOther = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// asSetSecret asks for action=set-secret on app id with body.
func asSetSecret(s *kwtest.Server, token, id string, body any) *kwtest.Reply {
	s.T.Helper()
	return s.AdminAs(token, "POST", "/api/admin/apps.php?app_id="+id+"&action=set-secret", body)
}

// asServes fails unless secret serves app's clients: an envelope login with
// key opens a session, which then heartbeats.
func asServes(t *testing.T, s *kwtest.Server, appID, secret, key, hwid string) string {
	t.Helper()
	c := s.NewApp(appID, secret)
	sid := c.Login(key, hwid)
	if r := c.Heartbeat(sid, key); !r.Sealed || r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("heartbeat with secret %s…: %s", secret[:8], r)
	}
	return sid
}

// asRefused fails unless secret is refused as no app's (401 INVALID_APP) on
// the envelope login and on check-key.
func asRefused(t *testing.T, s *kwtest.Server, appID, secret, key string) {
	t.Helper()
	r := s.NewApp(appID, secret).Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-x"})
	r.JSONFail(t, 401, "INVALID_APP")
	admCheckKey(s, secret, key).JSONFail(t, 401, "INVALID_APP")
}

// asNoSecretIn fails if the audit log or the server log shows secret.
func asNoSecretIn(t *testing.T, s *kwtest.Server, logs *kwtest.LogBuffer, secrets ...string) {
	t.Helper()
	entries, _ := json.Marshal(s.Audit(t, "limit=1000"))
	for _, sec := range secrets {
		if strings.Contains(string(entries), sec) {
			t.Errorf("the audit log shows secret %s…", sec[:8])
		}
		if strings.Contains(logs.String(), sec) {
			t.Errorf("the server log shows secret %s…", sec[:8])
		}
	}
}

// Creating an app with a secret keeps that exact secret (reply, client API,
// sealed at rest), audits the creation without the secret, and the app then
// serves envelope logins and heartbeats with it; the same secret lower-cased
// is another secret and is refused. A second app with the same secret is
// 409 CONFLICT and nothing is created; a secret that is not 64 hex
// characters is 400 MISSING_FIELDS saying so; an empty secret means a fresh
// one. Regenerating afterwards works as for any app.
func TestAdminCreateAppWithSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var logs kwtest.LogBuffer
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		r := s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"name": "Moved", "version": "3.1", "secret": asMixed})
		got := r.Obj("app")
		if got["secret"] != asMixed {
			t.Fatalf("reply secret %v, want exactly the secret given", got["secret"])
		}
		id := got["app_id"].(string)
		app := s.NewApp(id, asMixed)
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		asServes(t, s, id, asMixed, key, "pc-1")
		asRefused(t, s, id, strings.ToLower(asMixed), key)
		if one := s.AppView(t, id); one["secret"] != nil || one["name"] != "Moved" {
			t.Fatalf("single view shows %v", one)
		}
		raw := secRaw(t, s)
		for _, v := range secValues(t, raw, `SELECT secret FROM apps WHERE id = ?`, id) {
			if !strings.HasPrefix(v, "kw1:") || strings.Contains(strings.ToLower(v), strings.ToLower(asMixed)) {
				t.Fatalf("apps.secret stored as %q, want it sealed", v)
			}
		}
		created := s.Audit(t, "app_id="+id+"&action=app.create")
		if len(created) != 1 {
			t.Fatalf("%d app.create entries, want 1", len(created))
		}
		if d, _ := created[0]["details"].(map[string]any); d["secret_adopted"] != true {
			t.Errorf("app.create details %v, want secret_adopted true", created[0]["details"])
		}

		// The same secret again: 409, no second app.
		dup := s.Admin("POST", "/api/admin/apps.php", map[string]any{"name": "Twin", "secret": asMixed})
		dup.JSONFail(t, 409, "CONFLICT")
		if !strings.Contains(dup.Str("message"), "secret") {
			t.Errorf("conflict message %q does not name the secret", dup.Str("message"))
		}
		// Malformed secrets: 400 with a message saying what a secret is.
		for name, bad := range map[string]any{
			"63 characters": asMixed[:63],
			"65 characters": asMixed + "0",
			"not hex":       "g" + asMixed[1:],
			"spaces":        " " + asMixed[1:],
			"a number":      12,
		} {
			r := s.Admin("POST", "/api/admin/apps.php", map[string]any{"name": "Bad " + name, "secret": bad})
			r.JSONFail(t, 400, "MISSING_FIELDS")
			if msg := r.Str("message"); !strings.Contains(msg, "secret") || (name != "a number" && !strings.Contains(msg, "64 hexadecimal")) {
				t.Errorf("%s: message %q does not say what a secret is", name, msg)
			}
		}
		if apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps"); len(apps) != 1 {
			t.Fatalf("refused creations left %d apps, want 1", len(apps))
		}
		// An empty secret is none: a fresh one.
		fresh := s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"name": "Fresh", "secret": ""}).Obj("app")
		if sec, _ := fresh["secret"].(string); !admSecretRE.MatchString(sec) {
			t.Errorf("empty secret gave %q, want a fresh one", sec)
		}

		// Regenerating the adopted secret works as for any app.
		next := s.RegenerateSecretOK(t, id)
		asRefused(t, s, id, asMixed, key)
		asServes(t, s, id, next, key, "pc-1")
		asNoSecretIn(t, s, &logs, asMixed, next)
	})
}

// set-secret gives an existing app the secret given, like regenerate-secret
// in everything else: the old secret is refused at once (the app cache is
// cleared), the new one serves logins and the sessions already open keep
// beating with it, the reply shows it once, it is sealed at rest and audited
// as app.set_secret without the secret. A secret another app has is 409
// CONFLICT and changes nothing; malformed or missing ones are 400; admins
// below owner are 403; an unknown app is 404. Regenerating afterwards works.
func TestAdminSetSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var logs kwtest.LogBuffer
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		jwt := s.AdminToken()
		app := s.CreateApp("Adopting")
		other := s.CreateApp("Other")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		otherKey := other.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := asServes(t, s, app.ID, app.Secret, key, "pc-1") // also warms the app cache

		r := asSetSecret(s, jwt, app.ID, map[string]any{"secret": asMixed})
		if r.Status != 200 || r.Obj("app")["secret"] != asMixed || r.Obj("app")["app_id"] != app.ID {
			t.Fatalf("set-secret: %s", r)
		}
		asRefused(t, s, app.ID, app.Secret, key)
		// The open session goes on under the new secret, as after a regeneration.
		if hb := s.NewApp(app.ID, asMixed).Heartbeat(sid, key); hb.Status != 200 || hb.Body["success"] != true {
			t.Fatalf("heartbeat of the open session with the new secret: %s", hb)
		}
		asServes(t, s, app.ID, asMixed, key, "pc-1")
		if one := s.AppView(t, app.ID); one["secret"] != nil {
			t.Fatalf("single view shows the secret: %v", one)
		}
		for _, v := range secValues(t, secRaw(t, s), `SELECT secret FROM apps WHERE id = ?`, app.ID) {
			if !strings.HasPrefix(v, "kw1:") || strings.Contains(v, asMixed) {
				t.Fatalf("apps.secret stored as %q, want it sealed", v)
			}
		}
		if n := len(s.Audit(t, "app_id="+app.ID+"&action=app.set_secret")); n != 1 {
			t.Fatalf("%d app.set_secret audit entries, want 1", n)
		}

		// Another app's secret: 409, both apps as they were.
		dup := asSetSecret(s, jwt, other.ID, map[string]any{"secret": asMixed})
		dup.JSONFail(t, 409, "CONFLICT")
		asServes(t, s, other.ID, other.Secret, otherKey, "pc-2")
		asServes(t, s, app.ID, asMixed, key, "pc-1")

		// Malformed and missing secrets: 400, nothing changed, nothing audited.
		for name, body := range map[string]any{
			"63 characters": map[string]any{"secret": asOther[:63]},
			"not hex":       map[string]any{"secret": "z" + asOther[1:]},
			"missing":       map[string]any{},
			"empty":         map[string]any{"secret": ""},
			"a number":      map[string]any{"secret": 7},
		} {
			r := asSetSecret(s, jwt, app.ID, body)
			r.JSONFail(t, 400, "MISSING_FIELDS")
			if !strings.Contains(r.Str("message"), "secret") {
				t.Errorf("%s: message %q does not name the secret", name, r.Str("message"))
			}
		}
		asSetSecret(s, jwt, "00000000-0000-4000-8000-000000000000", map[string]any{"secret": asOther}).JSONFail(t, 404, "NOT_FOUND")
		s.AdminAs(jwt, "POST", "/api/admin/apps.php?action=set-secret", map[string]any{"secret": asOther}).JSONFail(t, 400, "MISSING_FIELDS")

		// Admins below owner: 403.
		for _, role := range []string{"admin", "support", "viewer"} {
			tok := s.AddMember(app.ID, "m-"+role, "a long member password", role)
			asSetSecret(s, tok, app.ID, map[string]any{"secret": asOther}).JSONFail(t, 403, "FORBIDDEN")
		}
		if n := len(s.Audit(t, "app_id="+app.ID+"&action=app.set_secret")); n != 1 {
			t.Errorf("%d app.set_secret audit entries after refusals, want still 1", n)
		}
		asServes(t, s, app.ID, asMixed, key, "pc-1")

		// app_id and action in the body work too; then regeneration still works.
		r = s.AdminAs(jwt, "POST", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "action": "set-secret", "secret": asOther})
		if r.Status != 200 || r.Obj("app")["secret"] != asOther {
			t.Fatalf("set-secret with a body action: %s", r)
		}
		asRefused(t, s, app.ID, asMixed, key)
		next := s.RegenerateSecretOK(t, app.ID)
		asRefused(t, s, app.ID, asOther, key)
		asServes(t, s, app.ID, next, key, "pc-1")
		asNoSecretIn(t, s, &logs, asMixed, asOther, next)
	})
}

// set-secret and regenerate-secret draw on one per-app limit
// (SecretRegenLimit an hour): after it, both are 429 RATE_LIMITED and the
// secret stays; a malformed set-secret is refused before it counts.
func TestSetSecretSharesRegenLimit(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", func(c *config.Config) { c.SecretRegenLimit = 2 })
	app := s.CreateApp("Limited")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	jwt := s.AdminToken()
	asSetSecret(s, jwt, app.ID, map[string]any{"secret": "0"}).JSONFail(t, 400, "MISSING_FIELDS")
	if r := asSetSecret(s, jwt, app.ID, map[string]any{"secret": asMixed}); r.Status != 200 {
		t.Fatalf("set-secret: %s", r)
	}
	secret := s.RegenerateSecretOK(t, app.ID)
	asSetSecret(s, jwt, app.ID, map[string]any{"secret": asOther}).RateLimited(t)
	s.RegenerateSecret(app.ID).RateLimited(t)
	s.SecretWorks(t, app.ID, secret, key)
	s.SecretDead(t, app.ID, asOther, key)
}

// A personal access token may create an app with a secret (a new app's
// client credential, see credential.go) but not replace an existing app's
// secret; TestTokenRefusedCredentialChanges covers the refusal.
func TestTokenCreatesAppWithSecret(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	pat := s.MintToken(t, s.AdminToken(), "migration script")["token"].(string)
	r := s.AdminAs(pat, "POST", "/api/admin/apps.php", map[string]any{"name": "Scripted", "secret": asOther})
	if r.Status != http.StatusOK || r.Obj("app")["secret"] != asOther {
		t.Fatalf("create with a secret through a token: %s", r)
	}
	id := r.Obj("app")["app_id"].(string)
	key := s.NewApp(id, asOther).GenerateKeys(1, "lifetime", 0, 1)[0]
	asServes(t, s, id, asOther, key, "pc")
	asSetSecret(s, pat, id, map[string]any{"secret": asMixed}).JSONFail(t, 403, "TOKEN_NOT_ALLOWED")
}
