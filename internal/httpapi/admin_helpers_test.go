package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// Helpers of the admin API tests. Names start with adm so they do not collide
// with helpers of other test files in this package.

// admBearer returns headers carrying token as a Bearer token.
func admBearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
}

// admJSON marshals v.
func admJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// admExpect fails unless r is a JSON failure with status and error_code.
func admExpect(t testing.TB, r *kwtest.Reply, status int, code string) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, r)
	}
	if _, ok := r.Body["message"].(string); !ok {
		t.Fatalf("error reply has no message: %s", r)
	}
	kwtest.ExpectCode(t, r, status, code)
}

// admApp returns the app as GET apps.php?app_id= shows it.
func admApp(t testing.TB, s *kwtest.Server, id string) map[string]any {
	t.Helper()
	return s.MustAdmin("GET", "/api/admin/apps.php?app_id="+url.QueryEscape(id), nil).Obj("app")
}

// admSettings returns the app's settings object.
func admSettings(t testing.TB, s *kwtest.Server, id string) map[string]any {
	t.Helper()
	st, ok := admApp(t, s, id)["settings"].(map[string]any)
	if !ok {
		t.Fatalf("app %s has no settings object", id)
	}
	return st
}

// admKey returns one key as GET keys.php?app_id=&license_key= shows it.
func admKey(t testing.TB, a *kwtest.App, key string) map[string]any {
	t.Helper()
	return a.S.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")
}

// admAudit returns audit entries (newest first) filtered by query (may be "").
func admAudit(t testing.TB, s *kwtest.Server, query string) []map[string]any {
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

// admList returns a list field of r as objects.
func admList(t testing.TB, r *kwtest.Reply, name string) []map[string]any {
	t.Helper()
	raw, ok := r.Body[name].([]any)
	if !ok {
		t.Fatalf("reply has no %s array: %s", name, r)
	}
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i] = e.(map[string]any)
	}
	return out
}
