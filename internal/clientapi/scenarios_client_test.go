package clientapi_test

import (
	"net/http"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The client API (what shipped apps call) as a scenario table: request,
// status, error_code, fields. Rows run in order against one fixture, both
// engines. The per-route suites (client_*_test.go) go deeper; this table is
// the surface at a glance.
func TestClientScenarios(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		f := kwtest.NewFixture(t, engine)
		login := "/api/auth/login.php"
		f.Run(t, []kwtest.Scenario{
			{Name: "login without the app secret", Method: "POST", Path: login, Body: map[string]any{}, Envelope: true,
				Status: 401, Code: "INVALID_APP", Sealed: kwtest.No},
			{Name: "login with a wrong app secret", Method: "POST", Path: login, Header: http.Header{"X-App-Secret": {"nope"}},
				Body: map[string]any{}, Envelope: true, Status: 401, Code: "INVALID_APP", Sealed: kwtest.No},
			{Name: "login that is not an envelope", Method: "POST", Path: login, As: kwtest.AsApp,
				Body: map[string]any{"license_key": "{key}", "hwid": "pc"}, Status: 400, Code: "CRYPTO_ERROR", Sealed: kwtest.No},
			{Name: "login with GET", Method: "GET", Path: login, As: kwtest.AsApp, Status: 405, Code: "METHOD_NOT_ALLOWED"},
			{Name: "login with an unknown key is a sealed refusal", Method: "POST", Path: login, As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"license_key": "NOPE-NOPE-NOPE", "hwid": "pc"}, Status: 200, Code: "INVALID_KEY", Sealed: kwtest.Yes},
			{Name: "login without hwid", Method: "POST", Path: login, As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"license_key": "{key}"}, Status: 200, Code: "MISSING_FIELDS", Sealed: kwtest.Yes},
			{Name: "login on the bound device", Method: "POST", Path: login, As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"license_key": "{key}", "hwid": "scenario-pc"}, Status: 200, Sealed: kwtest.Yes,
				Fields: map[string]any{"session_id": kwtest.Present, "heartbeat_interval": 30.0, "user": kwtest.Present}},
			{Name: "heartbeat of the fixture's session", Method: "POST", Path: "/api/auth/heartbeat.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"session_id": "{session}", "license_key": "{key}"}, Status: 200, Sealed: kwtest.Yes,
				Fields: map[string]any{"message": "Heartbeat OK"}},
			{Name: "heartbeat of an unknown session", Method: "POST", Path: "/api/auth/heartbeat.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"session_id": "no-such-session", "license_key": "{key}"}, Status: 200, Code: "SESSION_EXPIRED", Sealed: kwtest.Yes},
			{Name: "heartbeat with another key than the session's", Method: "POST", Path: "/api/auth/heartbeat.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"session_id": "{session}", "license_key": "{key2}"}, Status: 200, Code: "SESSION_MISMATCH", Sealed: kwtest.Yes},
			{Name: "check-key in plain JSON answers plain", Method: "POST", Path: "/api/auth/check-key.php", As: kwtest.AsApp,
				Body: map[string]any{"license_key": "{key}"}, Status: 200, Sealed: kwtest.No, Fields: map[string]any{"valid": true, "key": kwtest.Present}},
			{Name: "check-key in an envelope answers sealed", Method: "POST", Path: "/api/auth/check-key.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"license_key": "{key2}"}, Status: 200, Sealed: kwtest.Yes, Fields: map[string]any{"valid": true}},
			{Name: "trial on an app without trials", Method: "POST", Path: "/api/auth/trial.php", As: kwtest.AsApp,
				Body: map[string]any{"hwid": "pc-t"}, Status: 403, Code: "TRIAL_DISABLED"},
			{Name: "account login on an app without accounts", Method: "POST", Path: "/api/auth/account-login.php", As: kwtest.AsApp,
				Body: map[string]any{"username": "u", "password": "p", "hwid": "pc"}, Status: 403, Code: "ACCOUNTS_DISABLED"},
			{Name: "app info", Method: "GET", Path: "/api/app/info.php", As: kwtest.AsApp, Status: 200, Fields: map[string]any{"app": kwtest.Present}},
			{Name: "a query string with a control character", Method: "GET", Path: "/api/app/text.php?name=a%01b", As: kwtest.AsApp,
				Status: 400, Code: "MISSING_FIELDS"},
			{Name: "update check without a version", Method: "POST", Path: "/api/update/check.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{}, Status: 200, Code: "MISSING_FIELDS", Sealed: kwtest.Yes},
			{Name: "logout ends the session", Method: "POST", Path: "/api/auth/logout.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"session_id": "{session}"}, Status: 200, Sealed: kwtest.Yes},
			{Name: "heartbeat after logout", Method: "POST", Path: "/api/auth/heartbeat.php", As: kwtest.AsApp, Envelope: true,
				Body: map[string]any{"session_id": "{session}", "license_key": "{key}"}, Status: 200, Code: "SESSION_EXPIRED", Sealed: kwtest.Yes},
			{Name: "an unknown client path", Method: "POST", Path: "/api/auth/nope.php", As: kwtest.AsApp, Status: 404, Code: "NOT_FOUND"},
		})
	})
}
