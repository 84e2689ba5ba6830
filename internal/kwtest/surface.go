package kwtest

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/httpapi"
)

// Requests and views the black-box tests of every surface share: routes of
// the client API, the admin API's views of apps, keys, sessions and the
// audit log, and the few admin and client actions tests of other surfaces
// set their stage with.

// Routes of the route table the helpers call, for their callers too.
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
	return s.MustAdmin("GET", path, nil).List(t, "entries")
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

// More routes of the route table, for the helpers below and their callers.
const (
	PathAdminPricing = "/api/admin/pricing.php"
	PathAdminResets  = "/api/admin/hwid-resets.php"
	PathAdminUpdates = "/api/admin/updates.php"
)

// ClientBodyLimit is clientBodyLimit of edge/fields.go.
const ClientBodyLimit = 64 << 10

// StoreApp makes an app selling a 30-day, 2-device plan with a feature and
// returns the app, the plan id and the app's fulfilment secret.
func (s *Server) StoreApp(t *testing.T) (*App, any, string) {
	t.Helper()
	a := s.CreateApp("Store")
	p := s.MustAdmin("POST", PathAdminPricing, map[string]any{"app_id": a.ID, "type": "plan", "name": "Month", "price": 4.99, "currency": "USD",
		"key_type": "days", "duration": 30, "max_devices": 2, "features": map[string]any{"pro": true}}).Obj("plan")
	secret := s.MustAdmin("POST", "/api/admin/orders.php?action=fulfillment-secret", map[string]any{"app_id": a.ID}).Str("fulfillment_secret")
	if len(secret) != 64 {
		t.Fatalf("fulfillment_secret = %q", secret)
	}
	return a, p["id"], secret
}

// Order orders StoreApp's plan for buyer@example.com and fails unless the
// order is pending at 4.99 USD; it returns the order id.
func (s *Server) Order(t *testing.T, a *App, planID any) string {
	t.Helper()
	r := s.Do("POST", "/api/app/pricing.php", nil, JSON(t, map[string]any{"app_id": a.ID, "plan_id": planID, "email": "buyer@example.com"}))
	r.OK(t)
	if r.Str("status") != "pending" || r.Body["amount_cents"] != float64(499) || r.Str("currency") != "USD" {
		t.Fatalf("new order: %s", r)
	}
	return r.Str("order_id")
}

// SubscriptionOrder orders planID for sub@example.com and returns the order
// id.
func (s *Server) SubscriptionOrder(t *testing.T, a *App, planID any) string {
	t.Helper()
	r := s.Do("POST", "/api/app/pricing.php", nil, JSON(t, map[string]any{"app_id": a.ID, "plan_id": planID, "email": "sub@example.com"}))
	r.OK(t)
	return r.Str("order_id")
}

// Fulfil posts the payment callback of order id with the fulfilment secret.
func (s *Server) Fulfil(id, secret string) *Reply {
	return s.Do("POST", "/api/app/fulfill.php", nil, JSON(s.T, map[string]any{"order_id": id, "secret": secret, "payment_ref": "pay_123"}))
}

// RequestHWIDReset queues a request through the client API and fails unless
// it is accepted.
func (a *App) RequestHWIDReset(t testing.TB, body map[string]any) {
	t.Helper()
	a.Plain(PathRequestHWID, body).OK(t)
}

// ResetRequests returns the app's HWID reset requests in status ("" = all)
// as token sees them.
func (s *Server) ResetRequests(t testing.TB, token, appID, status string) []map[string]any {
	t.Helper()
	path := PathAdminResets + "?app_id=" + appID
	if status != "" {
		path += "&status=" + status
	}
	r := s.AdminAs(token, "GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("list reset requests: %s", r)
	}
	return r.List(t, "requests")
}

// OneResetRequest fails unless the app has exactly one request in status and
// returns it.
func (s *Server) OneResetRequest(t testing.TB, appID, status string) map[string]any {
	t.Helper()
	l := s.ResetRequests(t, s.AdminToken(), appID, status)
	if len(l) != 1 {
		t.Fatalf("%d %s requests, want 1: %v", len(l), status, l)
	}
	return l[0]
}

// resellerProducts is what the test resellers may sell.
var resellerProducts = []map[string]any{
	{"id": "month", "name": "One month", "key_type": "days", "duration_value": 30, "max_devices": 2, "price": 4},
	{"id": "life", "name": "Lifetime", "key_type": "lifetime", "price": 10},
}

// CreateReseller makes a reseller of the app selling resellerProducts and
// returns its id and token.
func (a *App) CreateReseller(t *testing.T, name string) (string, string) {
	t.Helper()
	r := a.S.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": a.ID, "name": name,
		"email": strings.ToLower(name) + "@example.com", "products": resellerProducts})
	tok := r.Str("token")
	if !strings.HasPrefix(tok, "kwr_") || len(tok) != 4+43 {
		t.Fatalf("token %q is not kwr_ and 43 characters", tok)
	}
	v := r.Obj("reseller")
	if v["balance"] != 0.0 || v["status"] != "active" || v["token_hint"] != tok[:9] {
		t.Fatalf("new reseller: %s", r)
	}
	if strings.Contains(string(r.Raw), "token_hash") {
		t.Fatalf("the reply shows the token hash: %s", r)
	}
	return v["id"].(string), tok
}

// RegenerateSecret regenerates the app's secret through the admin API.
func (s *Server) RegenerateSecret(id string) *Reply {
	s.T.Helper()
	return s.Admin("POST", "/api/admin/apps.php?app_id="+id+"&action=regenerate-secret", nil)
}

// RegenerateSecretOK regenerates and returns the new secret.
func (s *Server) RegenerateSecretOK(t testing.TB, id string) string {
	t.Helper()
	r := s.RegenerateSecret(id)
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("regenerate secret of %s: %s", id, r)
	}
	secret, _ := r.Obj("app")["secret"].(string)
	if len(secret) != 64 {
		t.Fatalf("regenerated secret %q", secret)
	}
	return secret
}

// SecretWorks fails unless secret is the app's current secret.
func (s *Server) SecretWorks(t testing.TB, id, secret, key string) {
	t.Helper()
	r := s.NewApp(id, secret).Plain(PathCheckKey, map[string]any{"license_key": key})
	if r.Status != 200 || r.Body["valid"] != true {
		t.Fatalf("secret %s… of app %s does not work: %s", secret[:8], id, r)
	}
}

// SecretDead fails unless secret no longer works.
func (s *Server) SecretDead(t testing.TB, id, secret, key string) {
	t.Helper()
	r := s.NewApp(id, secret).Plain(PathCheckKey, map[string]any{"license_key": key})
	r.PlainFail(t, 401, "INVALID_APP")
}
