package kwtest

import (
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/httpapi"
)

// Requests and views the black-box tests of every surface share: routes of
// the client API, the admin API's views of apps, keys, sessions and the
// audit log, and the few admin and client actions tests of other surfaces
// set their stage with.

// Client routes of the route table.
const (
	PathLogin        = "/api/auth/login.php"
	PathHeartbeat    = "/api/auth/heartbeat.php"
	PathLogout       = "/api/auth/logout.php"
	PathCheckKey     = "/api/auth/check-key.php"
	PathValidate     = "/api/update/validate.php"
	PathRequestHWID  = "/api/auth/request-hwid-reset.php"
	PathSelfReset    = "/api/customer/reset-hwid.php"
	PathRegister     = "/api/auth/account-register.php"
	PathUpdateCheck  = "/api/update/check.php"
	PathAdminTokens  = "/api/admin/tokens.php"
	PathAdminKeysCSV = "/api/admin/keys-import.php"
)

// Boot boots a server for black-box tests. Background reaping is pushed out
// of the way so that only the test decides when sessions are reaped, and the
// admin token outlives the clock jumps of the tests.
func Boot(t *testing.T, engine string, configure func(*config.Config)) *Server {
	t.Helper()
	return Start(t, Options{Engine: engine, ReapEvery: time.Hour, Configure: func(c *config.Config) {
		c.TokenTTL = 10 * 365 * 24 * time.Hour
		if configure != nil {
			configure(c)
		}
	}})
}

// Routes is the route table of a real API. Handler registers the routes
// without calling the services, so none are needed to list them.
func Routes(t *testing.T) []httpapi.Route {
	t.Helper()
	api := httpapi.New(httpapi.Services{}, nil, slog.New(slog.DiscardHandler), time.Now, httpapi.Config{})
	api.Handler()
	routes := api.Routes()
	if len(routes) == 0 {
		t.Fatal("API.Routes is empty after Handler")
	}
	return routes
}

// On returns a view of s whose helpers report to t, for subtests sharing
// one server.
func (s *Server) On(t testing.TB) *Server {
	c := *s
	c.T = t
	return &c
}

// On returns a view of a whose helpers report to t.
func (a *App) On(t testing.TB) *App {
	c := *a
	c.S = a.S.On(t)
	return &c
}

// AppView returns the app as GET apps.php?app_id= shows it.
func (s *Server) AppView(t testing.TB, id string) map[string]any {
	t.Helper()
	return s.MustAdmin("GET", "/api/admin/apps.php?app_id="+url.QueryEscape(id), nil).Obj("app")
}

// AppSettings returns the app's settings object.
func (s *Server) AppSettings(t testing.TB, id string) map[string]any {
	t.Helper()
	st, ok := s.AppView(t, id)["settings"].(map[string]any)
	if !ok {
		t.Fatalf("app %s has no settings object", id)
	}
	return st
}

// Audit returns audit entries (newest first) filtered by query (may be "").
func (s *Server) Audit(t testing.TB, query string) []map[string]any {
	t.Helper()
	path := "/api/admin/audit.php"
	if query != "" {
		path += "?" + query
	}
	r := s.MustAdmin("GET", path, nil)
	raw, ok := r.Body["entries"].([]any)
	if !ok {
		t.Fatalf("audit reply has no entries array: %s", r)
	}
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i] = e.(map[string]any)
	}
	return out
}

// MintToken mints a personal access token called name with the admin
// credential token and returns the token object of the reply.
func (s *Server) MintToken(t testing.TB, token, name string) map[string]any {
	t.Helper()
	r := s.AdminAs(token, "POST", PathAdminTokens, map[string]any{"name": name})
	if r.Status != 200 || r.Body["success"] != true || r.Obj("token") == nil {
		t.Fatalf("mint token %q: %s", name, r)
	}
	return r.Obj("token")
}

// ExportCSV returns the app's keys as CSV, exported as the test admin (or
// as token).
func (s *Server) ExportCSV(t *testing.T, appID string, token ...string) []byte {
	t.Helper()
	tok := s.AdminToken()
	if len(token) > 0 {
		tok = token[0]
	}
	r := s.AdminAs(tok, "GET", "/api/admin/keys.php?action=export&app_id="+appID, nil)
	if r.Status != 200 {
		t.Fatalf("export: %s", r)
	}
	return r.Raw
}

// ImportCSV posts body to keys-import.php as the test admin (or as token).
func (s *Server) ImportCSV(appID, query string, body []byte, token ...string) *Reply {
	s.T.Helper()
	tok := s.AdminToken()
	if len(token) > 0 {
		tok = token[0]
	}
	h := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"text/csv; charset=utf-8"}}
	return s.Do("POST", PathAdminKeysCSV+"?app_id="+appID+query, h, body)
}

// KeyView returns the key as the admin API shows it (with devices and
// sessions).
func (a *App) KeyView(t testing.TB, key string) map[string]any {
	t.Helper()
	return a.S.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")
}

// Devices returns the HWIDs bound to key.
func (a *App) Devices(t testing.TB, key string) []string {
	t.Helper()
	var out []string
	for _, d := range a.KeyView(t, key)["devices"].([]any) {
		out = append(out, d.(map[string]any)["hwid"].(string))
	}
	return out
}

// Sessions returns the live sessions of the app, or of one key when key is
// not empty.
func (a *App) Sessions(t testing.TB, key string) []map[string]any {
	t.Helper()
	path := "/api/admin/sessions.php?app_id=" + a.ID
	if key != "" {
		path += "&license_key=" + url.QueryEscape(key)
	}
	var out []map[string]any
	for _, s := range a.S.MustAdmin("GET", path, nil).Body["sessions"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

// SetSettings changes app settings through the admin API.
func (a *App) SetSettings(t testing.TB, settings map[string]any) {
	t.Helper()
	a.S.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": settings})
}

// MustKeyAction applies an admin key action and fails unless it succeeds.
func (a *App) MustKeyAction(t testing.TB, action, key string, extra map[string]any) {
	t.Helper()
	if r := a.KeyAction(action, key, extra); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("key action %s: %s", action, r)
	}
}

// LoginReply sends a sealed login and returns the opened reply.
func (a *App) LoginReply(key, hwid string) *Reply {
	a.S.T.Helper()
	return a.Env(PathLogin, map[string]any{"license_key": key, "hwid": hwid})
}

// BeatOK fails unless the session's heartbeat succeeds.
func (a *App) BeatOK(t testing.TB, sid, key string) {
	t.Helper()
	r := a.Heartbeat(sid, key)
	if !r.Sealed {
		t.Fatalf("heartbeat reply not enveloped: %s", r)
	}
	r.OK(t)
}

// AccountsApp creates an app with app user accounts enabled and settings.
func (s *Server) AccountsApp(t testing.TB, name string, settings map[string]any) *App {
	t.Helper()
	a := s.CreateApp(name)
	st := map[string]any{"accounts_enabled": true}
	for k, v := range settings {
		st[k] = v
	}
	a.SetSettings(t, st)
	return a
}

// SignUp registers an app user account (with key when not empty), fails
// unless it succeeds and returns the reply's user object.
func (a *App) SignUp(t testing.TB, username, password, key string) map[string]any {
	t.Helper()
	body := map[string]any{"username": username, "password": password}
	if key != "" {
		body["license_key"] = key
	}
	r := a.Plain(PathRegister, body)
	r.OK(t)
	u := r.Obj("user")
	if u == nil {
		t.Fatalf("register reply has no user object: %s", r)
	}
	return u
}

// UpdateCheck sends an enveloped update check and fails unless the reply is
// an envelope.
func (a *App) UpdateCheck(t testing.TB, inner map[string]any) *Reply {
	t.Helper()
	r := a.Env(PathUpdateCheck, inner)
	if !r.Sealed {
		t.Fatalf("check %v: reply not enveloped: %s", inner, r)
	}
	return r
}
