package httpapi_test

import (
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// A client whose base URL ends in /api sends /api/api/…: the reply is the
// usual 404 NOT_FOUND (shipped clients see nothing new), with a message
// saying what is wrong; other unknown paths keep the plain message.
func TestBaseURLEndingInAPIHint(t *testing.T) {
	t.Parallel()
	const hint = "No such endpoint. The base URL should not end in /api: give the server's root (https://host or https://host/prefix), and the client adds /api/… itself."
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		f := kwtest.NewFixture(t, engine)
		f.Run(t, []kwtest.Scenario{
			{Name: "login under /api/api", Method: "POST", Path: "/api/api/auth/login.php", As: kwtest.AsApp, Status: 404, Code: "NOT_FOUND",
				Fields: map[string]any{"message": hint}},
			{Name: "check-key under /api/api", Method: "GET", Path: "/api/api/app/check-key.php", Status: 404, Code: "NOT_FOUND",
				Fields: map[string]any{"message": hint}},
			{Name: "admin login under /api/api", Method: "POST", Path: "/api/api/admin/login.php", Body: map[string]any{"username": "a", "password": "b"},
				Status: 404, Code: "NOT_FOUND", Fields: map[string]any{"message": hint}},
			{Name: "/api/api itself", Method: "GET", Path: "/api/api", Status: 404, Code: "NOT_FOUND", Fields: map[string]any{"message": hint}},
			{Name: "another unknown path", Method: "GET", Path: "/api/nope.php", Status: 404, Code: "NOT_FOUND",
				Fields: map[string]any{"message": "No such endpoint."}},
			{Name: "a path merely starting /api/apis", Method: "GET", Path: "/api/apis/x", Status: 404, Code: "NOT_FOUND",
				Fields: map[string]any{"message": "No such endpoint."}},
		})
	})
}
