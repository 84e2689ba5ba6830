package server_test

import (
	"net/http"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

func trustProxy(on bool) func(*config.Config) {
	return func(c *config.Config) { c.TrustProxy = on }
}

// proxiedLogin logs key in through a "proxy": the envelope is sent with the
// given X-Forwarded-For header.
func proxiedLogin(t *testing.T, app *kwtest.App, key, hwid, xff string) {
	t.Helper()
	h := http.Header{"X-App-Secret": {app.Secret}, "Content-Type": {"application/json"}, "X-Forwarded-For": {xff}}
	r := app.S.Do("POST", "/api/auth/login.php", h, app.Seal(map[string]any{"license_key": key, "hwid": hwid}).Marshal())
	if r.Status != 200 {
		t.Fatalf("login via proxy: %s", r)
	}
}

// sessionIPs returns hwid → recorded IP of the app's live sessions.
func sessionIPs(t *testing.T, s *kwtest.Server, appID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ss := range s.MustAdmin("GET", "/api/admin/sessions.php?app_id="+appID, nil).Body["sessions"].([]any) {
		m := ss.(map[string]any)
		out[m["hwid"].(string)] = m["ip"].(string)
	}
	return out
}

// lastAuditIP returns the actor IP of the newest audit entry with action.
func lastAuditIP(t *testing.T, s *kwtest.Server, action string) string {
	t.Helper()
	e := s.MustAdmin("GET", "/api/admin/audit.php?action="+action, nil).Body["entries"].([]any)
	if len(e) == 0 {
		t.Fatalf("no %s audit entry", action)
	}
	return e[0].(map[string]any)["actor"].(map[string]any)["ip"].(string)
}

// With --trust-proxy the client address is the last X-Forwarded-For entry
// (the one the trusted proxy appended) when it is an IP; it is what sessions
// and audit entries record. Without it the header is ignored.
func TestTrustProxyForwardedFor(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		for _, on := range []bool{true, false} {
			s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: trustProxy(on)})
			app := s.CreateApp("Proxied")
			key := app.GenerateKeys(1, "lifetime", 0, 10)[0]
			proxiedLogin(t, app, key, "pc-chain", "198.51.100.1, 203.0.113.7")
			proxiedLogin(t, app, key, "pc-v6", "2001:db8::1")
			proxiedLogin(t, app, key, "pc-junk", "not-an-ip")
			proxiedLogin(t, app, key, "pc-spoof", "203.0.113.50, 10.0.0.1, bogus")
			app.Login(key, "pc-direct")

			want := map[string]string{"pc-chain": "203.0.113.7", "pc-v6": "2001:db8::1", "pc-junk": "127.0.0.1",
				"pc-spoof": "127.0.0.1", "pc-direct": "127.0.0.1"}
			if !on {
				want = map[string]string{"pc-chain": "127.0.0.1", "pc-v6": "127.0.0.1", "pc-junk": "127.0.0.1",
					"pc-spoof": "127.0.0.1", "pc-direct": "127.0.0.1"}
			}
			got := sessionIPs(t, s, app.ID)
			for hw, ip := range want {
				if got[hw] != ip {
					t.Errorf("trust-proxy=%v: session %s recorded IP %q, want %q", on, hw, got[hw], ip)
				}
			}

			// Admin requests: the audit actor IP follows the same rule.
			h := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {"application/json"},
				"X-Forwarded-For": {"192.0.2.44"}}
			if r := s.Do("POST", "/api/admin/keys.php?action=ban", h, []byte(`{"app_id":"`+app.ID+`","license_key":"`+key+`"}`)); r.Status != 200 {
				t.Fatalf("ban via proxy: %s", r)
			}
			wantIP := "192.0.2.44"
			if !on {
				wantIP = "127.0.0.1"
			}
			if ip := lastAuditIP(t, s, "key.ban"); ip != wantIP {
				t.Errorf("trust-proxy=%v: audit actor IP %q, want %q", on, ip, wantIP)
			}
		}
	})
}

// With --trust-proxy, X-Forwarded-Proto (its last entry, the one the trusted
// proxy set) tells whether the caller used HTTPS: such replies carry HSTS.
// A forwarded "http" is served as it is — no redirect, which would lock the
// owner out behind a plain-HTTP proxy. Without --trust-proxy the header means
// nothing.
func TestTrustProxyForwardedProto(t *testing.T) {
	for _, on := range []bool{true, false} {
		s := kwtest.Start(t, kwtest.Options{Configure: trustProxy(on)})
		app := s.CreateApp("Proto")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		for proto, https := range map[string]bool{"https": true, "HTTPS": true, "http, https": true,
			"http": false, "": false, "https, http": false, "nonsense": false} {
			h := http.Header{"Authorization": {"Bearer " + s.AdminToken()}}
			if proto != "" {
				h.Set("X-Forwarded-Proto", proto)
			}
			r := s.Do("GET", "/api/admin/apps.php", h, nil)
			if r.Status != 200 {
				t.Errorf("trust-proxy=%v X-Forwarded-Proto %q: %s", on, proto, r)
			}
			hsts := r.Header.Get("Strict-Transport-Security")
			if want := on && https; (hsts != "") != want || (want && hsts != "max-age=31536000") {
				t.Errorf("trust-proxy=%v X-Forwarded-Proto %q: Strict-Transport-Security %q, want it %v", on, proto, hsts, want)
			}
		}
		// The client API is answered whatever the scheme.
		h := http.Header{"X-App-Secret": {app.Secret}, "Content-Type": {"application/json"}, "X-Forwarded-Proto": {"http"}}
		if r := s.Do("POST", "/api/auth/check-key.php", h, []byte(`{"license_key":"`+key+`"}`)); r.Status != 200 || r.Body["valid"] != true {
			t.Errorf("trust-proxy=%v: check-key forwarded over http: %s", on, r)
		}
		r := s.Do("POST", "/api/auth/login.php", h, app.Seal(map[string]any{"license_key": key, "hwid": "pc"}).Marshal())
		if r.Status != 200 {
			t.Errorf("trust-proxy=%v: login forwarded over http: %s", on, r)
		}
	}
}
