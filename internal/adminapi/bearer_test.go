package adminapi_test

import (
	"net/http"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The Authorization scheme name is case-insensitive (RFC 9110): text.php
// reads the key and the admin API its token from "bearer" as from "Bearer".
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", nil)
	a := s.CreateApp("Case")
	k := a.GenerateKeys(1, "lifetime", 0, 1)[0]
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": a.ID, "name": "hello", "value": "app"})
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": a.ID, "name": "hello", "value": "key", "license_key": k})
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		r := a.Get("/api/app/text.php", http.Header{"Authorization": {scheme + " " + k}})
		if got := r.Obj("texts")["hello"]; got != "key" {
			t.Errorf("%s: texts.hello = %v, want the key's override", scheme, got)
		}
		if r := s.Do("GET", "/api/admin/apps.php", http.Header{"Authorization": {scheme + " " + s.AdminToken()}}, nil); r.Status != 200 {
			t.Errorf("admin with %q: %s", scheme, r)
		}
	}
}
