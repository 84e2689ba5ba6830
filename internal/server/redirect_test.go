package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The plain listener's redirect keeps the host the client asked for, puts
// the TLS listener's port on it unless that is 443, and keeps IPv6 literals
// bracketed.
func TestRedirectTarget(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, tc := range []struct{ host, port, path, want string }{
		{"licenses.example.com", "443", "/api/admin/apps.php?x=1", "https://licenses.example.com/api/admin/apps.php?x=1"},
		{"licenses.example.com:80", "443", "/", "https://licenses.example.com/"},
		{"licenses.example.com:8080", "8443", "/dashboard/", "https://licenses.example.com:8443/dashboard/"},
		{"[2001:db8::1]:80", "443", "/", "https://[2001:db8::1]/"},
		{"[2001:db8::1]", "8443", "/", "https://[2001:db8::1]:8443/"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tc.path, nil)
		req.Host = tc.host
		redirectHandler(api, tc.port).ServeHTTP(rec, req)
		if rec.Code != http.StatusPermanentRedirect || rec.Header().Get("Location") != tc.want {
			t.Errorf("Host %s, TLS port %s: %d %q, want 308 %q", tc.host, tc.port, rec.Code, rec.Header().Get("Location"), tc.want)
		}
	}
	// The client API is served in place, whatever the port.
	rec := httptest.NewRecorder()
	redirectHandler(api, "8443").ServeHTTP(rec, httptest.NewRequest("POST", "/api/auth/heartbeat.php", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("client API on the plain listener: %d, want it served", rec.Code)
	}
}
