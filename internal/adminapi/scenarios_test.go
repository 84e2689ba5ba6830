package adminapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The admin API as a scenario table (the per-route suites in admin_*_test.go
// go deeper). Rows run in order against one fixture, both engines.
func TestAdminScenarios(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		f := kwtest.NewFixture(t, engine)
		keys := "/api/admin/keys.php"
		f.Run(t, []kwtest.Scenario{
			{Name: "no bearer token", Method: "GET", Path: keys + "?app_id={app}", Status: 401, Code: "UNAUTHORIZED"},
			{Name: "a made-up bearer token", Method: "GET", Path: keys + "?app_id={app}", Header: http.Header{"Authorization": {"Bearer nope"}},
				Status: 401, Code: "UNAUTHORIZED"},
			{Name: "sign-in with a wrong password", Method: "POST", Path: "/api/admin/login.php",
				Body: map[string]any{"username": "admin", "password": "wrong"}, Status: 401, Code: "INVALID_CREDENTIALS", Absent: []string{"token"}},
			{Name: "list the app's keys", Method: "GET", Path: keys + "?app_id={app}", As: kwtest.AsAdmin, Status: 200,
				Fields: map[string]any{"keys": kwtest.Present, "next_cursor": nil}},
			{Name: "generate zero keys", Method: "POST", Path: keys, As: kwtest.AsAdmin,
				Body: map[string]any{"app_id": "{app}", "count": 0, "key_type": "days", "duration_value": 30}, Status: 400, Code: "MISSING_FIELDS"},
			{Name: "generate a days key without a duration", Method: "POST", Path: keys, As: kwtest.AsAdmin,
				Body: map[string]any{"app_id": "{app}", "count": 1, "key_type": "days"}, Status: 400, Code: "MISSING_FIELDS"},
			{Name: "a body that is not JSON", Method: "POST", Path: keys, As: kwtest.AsAdmin, Body: "{not json", Status: 400, Code: "MISSING_FIELDS"},
			{Name: "an unknown key", Method: "GET", Path: keys + "?app_id={app}&license_key=NOPE", As: kwtest.AsAdmin, Status: 404, Code: "NOT_FOUND"},
			{Name: "PATCH is not a method of keys.php", Method: "PATCH", Path: keys + "?app_id={app}", As: kwtest.AsAdmin,
				Status: 405, Code: "METHOD_NOT_ALLOWED"},
			{Name: "ban the second key", Method: "POST", Path: keys + "?action=ban", As: kwtest.AsAdmin,
				Body: map[string]any{"app_id": "{app}", "license_key": "{key2}", "reason": "scenario"}, Status: 200},
			{Name: "the banned key reads as banned", Method: "GET", Path: keys + "?app_id={app}&license_key={key2}", As: kwtest.AsAdmin, Status: 200,
				Fields: map[string]any{"key": kwtest.Present}},
			{Name: "the app's live sessions", Method: "GET", Path: "/api/admin/sessions.php?app_id={app}", As: kwtest.AsAdmin, Status: 200,
				Fields: map[string]any{"sessions": kwtest.Present}},
			{Name: "the audit log names the ban", Method: "GET", Path: "/api/admin/audit.php?app_id={app}&action=key.ban", As: kwtest.AsAdmin,
				Status: 200, Fields: map[string]any{"entries": kwtest.Present}},
			{Name: "an app that does not exist", Method: "GET", Path: keys + "?app_id=no-such-app", As: kwtest.AsAdmin, Status: 404, Code: "NOT_FOUND"},
			{Name: "the apps list never shows a secret", Method: "GET", Path: "/api/admin/apps.php", As: kwtest.AsAdmin, Status: 200,
				Fields: map[string]any{"apps": kwtest.Present}, Absent: []string{"secret"}},
			{Name: "set-secret with 63 hex characters", Method: "POST", Path: "/api/admin/apps.php?app_id={app}&action=set-secret", As: kwtest.AsAdmin,
				Body: map[string]any{"secret": strings.Repeat("a", 63)}, Status: 400, Code: "MISSING_FIELDS", Absent: []string{"app"}},
			{Name: "create an app with a secret that is not hex", Method: "POST", Path: "/api/admin/apps.php", As: kwtest.AsAdmin,
				Body: map[string]any{"name": "Moved", "secret": strings.Repeat("g", 64)}, Status: 400, Code: "MISSING_FIELDS", Absent: []string{"app"}},
		})
	})
}
