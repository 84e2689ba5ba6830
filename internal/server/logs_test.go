package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/webhook"
)

// No secret, key string or password is ever logged: a full scenario runs
// against a server logging JSON at debug level, and the log holds none of
// the credentials it used.
func TestLogsCarryNoSecrets(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var buf kwtest.LogBuffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Log: log, ReapEvery: 20 * time.Millisecond})
		secrets := map[string]string{"admin password": kwtest.AdminPassword}
		ok := func(what string, r *kwtest.Reply) *kwtest.Reply {
			t.Helper()
			if r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("%s: %v", what, r)
			}
			return r
		}

		secrets["admin JWT"] = s.AdminToken()
		app := s.CreateApp("Logged")
		secrets["app secret"] = app.Secret
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{
			"trial_enabled": true, "trial_ip_limit": 0, "accounts_enabled": true}})
		keys := app.GenerateKeys(4, "days", 30, 2)
		for i, k := range keys {
			secrets["key "+strconv.Itoa(i)] = k
		}

		// Client: login, heartbeat, logout; a failed login with a wrong key.
		sid := app.Login(keys[0], "pc-1")
		secrets["session id"] = sid
		ok("heartbeat", app.Heartbeat(sid, keys[0]))
		ok("logout", app.Env("/api/auth/logout.php", map[string]any{"session_id": sid, "license_key": keys[0]}))
		wrong := "WRONG-" + keys[1][6:]
		secrets["wrong key"] = wrong
		if r := app.Env("/api/auth/login.php", map[string]any{"license_key": wrong, "hwid": "pc-1"}); r.Body["success"] != false {
			t.Fatalf("login with a wrong key: %v", r)
		}

		// An account: register with a key, sign in with the password, and a
		// failed sign-in with a wrong one.
		const accountPassword = "account-pass-Zq7w3"
		secrets["account password"] = accountPassword
		secrets["wrong account password"] = "wrong-pass-Zq7w3"
		ok("register", app.Plain("/api/auth/account-register.php", map[string]any{"username": "alice", "password": accountPassword,
			"license_key": keys[1]}))
		ok("account login", app.Plain("/api/auth/account-login.php", map[string]any{"username": "alice", "password": accountPassword, "hwid": "pc-2"}))
		if r := app.Plain("/api/auth/account-login.php", map[string]any{"username": "alice", "password": "wrong-pass-Zq7w3", "hwid": "pc-2"}); r.Body["success"] != false {
			t.Fatalf("account login with a wrong password: %v", r)
		}

		// A trial.
		tr := ok("trial", app.Plain("/api/auth/trial.php", map[string]any{"hwid": "pc-trial"}))
		secrets["trial key"] = tr.Str("trial_key")

		// A personal access token, minted and used.
		pat := s.MustAdmin("POST", "/api/admin/tokens.php", map[string]any{"name": "ci"}).Obj("token")["token"].(string)
		secrets["personal access token"] = pat
		ok("call with the PAT", s.AdminAs(pat, "GET", "/api/admin/apps.php", nil))

		// A webhook (its secret), delivered once.
		rcv := newHookReceiver(t, s.Clock.Now, 0)
		_, hookSecret := createWebhook(s, app.ID, rcv.URL)
		secrets["webhook secret"] = hookSecret
		app.GenerateKeys(1, "lifetime", 0, 1)
		s.Dispatcher.Run(t.Context())

		// A reseller token, used.
		rs := s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": "Shop"})
		rtok := rs.Str("token")
		secrets["reseller token"] = rtok
		ok("reseller me", s.AdminAs(rtok, "GET", "/api/reseller/me.php", nil))

		// The customer portal: a key sign-in and a failed one.
		cr := ok("customer login", s.Do("POST", "/api/customer/login.php", http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"app_id":"`+app.ID+`","license_key":"`+keys[2]+`"}`)))
		secrets["customer token"] = cr.Str("token")
		s.Do("POST", "/api/customer/login.php", http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"app_id":"`+app.ID+`","license_key":"`+wrong+`"}`))

		// A failed admin sign-in with a near miss of the password.
		s.Do("POST", "/api/admin/login.php", nil, []byte(`{"username":"admin","password":"`+kwtest.AdminPassword+`!"}`))

		// A warning: a destination failing 20 times in a row is paused (their
		// bodies carry the new keys, which must not be logged either).
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down", http.StatusInternalServerError)
		}))
		t.Cleanup(failing.Close)
		s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": failing.URL, "events": []string{"key.created"}})
		for i := range webhook.PauseAfter { // an event each
			secrets["delivered key "+strconv.Itoa(i)] = app.GenerateKeys(1, "days", 30, 1)[0]
		}
		for try := 0; try < 10 && !strings.Contains(buf.String(), "paused after failures"); try++ {
			if err := s.Dispatcher.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
		}

		// A job line: a session left open is reaped once silent.
		app.Login(keys[3], "pc-3")
		s.Clock.Advance(10 * time.Minute)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(buf.String(), "reaped silent sessions") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}

		// Shutdown's final job runs log too.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}

		// At debug level every request has an access line (route pattern,
		// status, error code, request id); besides, the scenario makes a
		// warning (a paused webhook destination) and a job line (reaped
		// sessions), so the log is not vacuously clean.
		logs := buf.String()
		for _, want := range []string{`"level":"WARN"`, "paused after failures", "reaped silent sessions",
			`"msg":"request"`, `"route":"/api/auth/login.php"`, `"route":"/api/admin/tokens.php"`, `"error_code":"INVALID_KEY"`, `"request_id":"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("the log has no %q; it is:\n%s", want, logs)
			}
		}
		for what, secret := range secrets {
			if secret == "" {
				t.Errorf("the scenario did not get its %s", what)
				continue
			}
			if strings.Contains(logs, secret) {
				t.Errorf("the log holds the %s %q:\n%s", what, secret, logs)
			}
		}
		if t.Failed() {
			return
		}
		t.Logf("%d log lines, none with a secret:\n%s", strings.Count(logs, "\n"), logs)
	})
}
