package kwtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// Reply is a decoded HTTP answer.
type Reply struct {
	Status int
	Header http.Header
	Raw    []byte         // the body as sent (the envelope, for enveloped replies)
	Body   map[string]any // decoded JSON; for envelopes, the decrypted inner object
	Sealed bool           // the reply was an envelope
}

// Str returns a top-level string field ("" when absent or not a string).
func (r *Reply) Str(name string) string { s, _ := r.Body[name].(string); return s }

// Obj returns a top-level object field.
func (r *Reply) Obj(name string) map[string]any { m, _ := r.Body[name].(map[string]any); return m }

// HTTP is the client all helpers use; it never follows redirects. Its
// timeout only stops a hung request: a test never fails because the machine
// was slow (the biggest requests, importing thousands of keys under the race
// detector on two busy cores, took over 30 s).
var HTTP = &http.Client{Timeout: 5 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

// Do sends a request with the given headers and raw body and decodes the JSON
// answer (without opening envelopes).
func (s *Server) Do(method, path string, header http.Header, body []byte) *Reply {
	s.T.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		s.T.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return s.Send(req)
}

// Send sends req and decodes a JSON answer (by its Content-Type).
func (s *Server) Send(req *http.Request) *Reply {
	s.T.Helper()
	method, path := req.Method, req.URL.Path
	resp, err := HTTP.Do(req)
	if err != nil {
		s.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.T.Fatal(err)
	}
	r := &Reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			s.T.Fatalf("%s %s: reply is not a JSON object: %v: %s", method, path, err, raw)
		}
	}
	return r
}

// App is a client of one app, holding its secret.
type App struct {
	S      *Server
	ID     string
	Secret string
	Keys   envelope.Keys
}

// NewApp returns a client for an existing app.
func (s *Server) NewApp(id, secret string) *App {
	return &App{S: s, ID: id, Secret: secret, Keys: envelope.Derive(secret)}
}

func (a *App) header() http.Header {
	return http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
}

// Plain POSTs body (marshalled unless it is []byte or string) as plain JSON.
func (a *App) Plain(path string, body any) *Reply {
	a.S.T.Helper()
	return a.S.Do("POST", path, a.header(), toBytes(a.S.T, body))
}

// Seal envelopes inner with the server clock's time.
func (a *App) Seal(inner any) envelope.Envelope {
	a.S.T.Helper()
	env, err := a.Keys.Seal(toBytes(a.S.T, inner), a.S.Clock.Now())
	if err != nil {
		a.S.T.Fatal(err)
	}
	return env
}

// Env POSTs inner inside a fresh envelope and opens an enveloped answer.
func (a *App) Env(path string, inner any) *Reply {
	a.S.T.Helper()
	return a.PostEnvelope(path, a.Seal(inner).Marshal())
}

// PostEnvelope POSTs raw envelope bytes and opens an enveloped answer,
// verifying its MAC and timestamp against the server clock.
func (a *App) PostEnvelope(path string, raw []byte) *Reply {
	a.S.T.Helper()
	r := a.S.Do("POST", path, a.header(), raw)
	a.open(r)
	return r
}

// Get sends a GET with the app secret and extra headers, opening an envelope answer.
func (a *App) Get(path string, extra http.Header) *Reply {
	a.S.T.Helper()
	h := a.header()
	for k, v := range extra {
		h[k] = v
	}
	r := a.S.Do("GET", path, h, nil)
	a.open(r)
	return r
}

func (a *App) open(r *Reply) {
	a.S.T.Helper()
	if r.Body == nil || !envelope.IsEnvelope(r.Raw) {
		return
	}
	env, err := envelope.Parse(r.Raw)
	if err != nil {
		a.S.T.Fatalf("reply envelope: %v", err)
	}
	plain, _, err := a.Keys.Verify(env, a.S.Clock.Now())
	if err != nil {
		a.S.T.Fatalf("reply envelope does not verify: %v", err)
	}
	r.Body = nil
	if err := json.Unmarshal(plain, &r.Body); err != nil {
		a.S.T.Fatalf("inner reply is not a JSON object: %v: %s", err, plain)
	}
	r.Sealed = true
}

func toBytes(t testing.TB, v any) []byte {
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	case nil:
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AdminToken signs in as the test admin (once) and returns the bearer token.
func (s *Server) AdminToken() string {
	s.T.Helper()
	if s.token == "" {
		r := s.Do("POST", "/api/admin/login.php", nil, toBytes(s.T, map[string]string{"username": "admin", "password": AdminPassword}))
		if r.Status != 200 || r.Str("token") == "" {
			s.T.Fatalf("admin login: %d %s", r.Status, r.Raw)
		}
		s.token = r.Str("token")
	}
	return s.token
}

// Admin calls the admin API with the test admin's token.
func (s *Server) Admin(method, path string, body any) *Reply {
	s.T.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {"application/json"}}
	return s.Do(method, path, h, toBytes(s.T, body))
}

// AdminAs calls the admin API with another bearer token (a team member's
// JWT, a personal access token); token "" sends none.
func (s *Server) AdminAs(token, method, path string, body any) *Reply {
	s.T.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return s.Do(method, path, h, toBytes(s.T, body))
}

// LoginAdmin signs username in with password and returns its JWT (the test
// fails unless the password alone suffices).
func (s *Server) LoginAdmin(username, password string) string {
	s.T.Helper()
	r := s.Do("POST", "/api/admin/login.php", nil, toBytes(s.T, map[string]string{"username": username, "password": password}))
	if r.Status != 200 || r.Str("token") == "" {
		s.T.Fatalf("admin login %s: %d %s", username, r.Status, r.Raw)
	}
	return r.Str("token")
}

// AddMember makes username (created with password when new) a member of
// appID with role, through the bootstrap admin, and returns its JWT.
func (s *Server) AddMember(appID, username, password, role string) string {
	s.T.Helper()
	s.MustAdmin("POST", "/api/admin/members.php", map[string]any{"app_id": appID, "username": username, "password": password, "role": role})
	return s.LoginAdmin(username, password)
}

// MustAdmin is Admin that fails the test unless the answer is 200 success.
func (s *Server) MustAdmin(method, path string, body any) *Reply {
	s.T.Helper()
	r := s.Admin(method, path, body)
	if r.Status != 200 || r.Body["success"] != true {
		s.T.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
	}
	return r
}

// CreateApp creates an app through the admin API and returns its client.
func (s *Server) CreateApp(name string) *App {
	s.T.Helper()
	r := s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"name": name, "version": "1.0.0"})
	app := r.Obj("app")
	return s.NewApp(app["app_id"].(string), app["secret"].(string))
}

// Keys generates n keys for the app and returns their strings.
func (a *App) GenerateKeys(n int, keyType string, days, maxDevices int) []string {
	a.S.T.Helper()
	body := map[string]any{"app_id": a.ID, "count": n, "key_type": keyType, "max_devices": maxDevices}
	if keyType == "days" {
		body["duration_value"] = days
	}
	r := a.S.MustAdmin("POST", "/api/admin/keys.php", body)
	var out []string
	for _, k := range r.Body["keys"].([]any) {
		out = append(out, k.(map[string]any)["license_key"].(string))
	}
	return out
}

// KeyAction applies an admin action (ban, pause, …) to a key.
func (a *App) KeyAction(action, key string, extra map[string]any) *Reply {
	a.S.T.Helper()
	body := map[string]any{"app_id": a.ID, "license_key": key}
	for k, v := range extra {
		body[k] = v
	}
	return a.S.Admin("POST", "/api/admin/keys.php?action="+action, body)
}

// Login opens a session and returns its session_id, failing the test otherwise.
func (a *App) Login(key, hwid string) string {
	a.S.T.Helper()
	r := a.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": hwid})
	if !r.Sealed || r.Body["success"] != true {
		a.S.T.Fatalf("login %s/%s: %d %v", key, hwid, r.Status, r.Body)
	}
	return r.Str("session_id")
}

// Heartbeat sends one heartbeat and returns the opened reply.
func (a *App) Heartbeat(sessionID, key string) *Reply {
	a.S.T.Helper()
	return a.Env("/api/auth/heartbeat.php", map[string]any{"session_id": sessionID, "license_key": key})
}

// ExpectCode fails the test unless r is a failure with the given error_code.
func ExpectCode(t testing.TB, r *Reply, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["success"] != false || r.Body["error_code"] != code {
		t.Fatalf("got %d %v (sealed=%v), want %d success:false error_code %s", r.Status, r.Body, r.Sealed, status, code)
	}
}

// String formats a reply for failure messages.
func (r *Reply) String() string { return fmt.Sprintf("%d %s", r.Status, r.Raw) }

// EventsOf returns the data of the app's recorded events of type typ, oldest
// first.
func (s *Server) EventsOf(appID, typ string) []map[string]any {
	s.T.Helper()
	evs, err := s.DB.Events(context.Background(), 0, 100000)
	if err != nil {
		s.T.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Type == typ && e.AppID == appID {
			out = append(out, e.Data)
		}
	}
	return out
}
