package opsapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

const metricsToken = "metrics-test-token"

// scrape fetches /metrics from base with the given Authorization header.
func scrape(t *testing.T, base, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The metrics over real HTTP: the token is required (401 without it or with
// a wrong one), the names are exposed, and a client call moves the request
// counter of its route.
func TestMetrics(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.MetricsToken = metricsToken }})
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + metricsToken + "x", metricsToken} {
			if status, body := scrape(t, s.URL, auth); status != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHORIZED") {
				t.Errorf("Authorization %q: %d %s, want 401 UNAUTHORIZED", auth, status, body)
			}
		}
		app := s.CreateApp("Metrics")
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		sid := app.Login(key, "hwid-1")
		app.KeyAction("ban", key, nil)
		if r := app.Heartbeat(sid, key); r.Str("error_code") != "BANNED" {
			t.Fatalf("heartbeat after a ban: %s", r)
		}
		app.Env("/api/auth/login.php", map[string]any{"license_key": "KW-NOPE-NOPE-NOPE", "hwid": "hwid-1"})
		s.Do("GET", "/healthz", nil, nil)
		s.Do("DELETE", "/healthz", nil, nil)

		status, body := scrape(t, s.URL, "Bearer "+metricsToken)
		if status != http.StatusOK {
			t.Fatalf("GET /metrics with the token: %d %s", status, body)
		}
		for _, want := range []string{
			`keyward_http_requests_total{error_code="",method="GET",route="/healthz",status="200"} 1`,
			`keyward_http_requests_total{error_code="METHOD_NOT_ALLOWED",method="DELETE",route="/healthz",status="405"} 1`,
			`keyward_http_requests_total{error_code="UNAUTHORIZED",method="GET",route="/metrics",status="401"} 4`,
			`keyward_http_request_duration_seconds_bucket{route="/api/auth/login.php",le="+Inf"} 2`,
			`keyward_logins_total{outcome="ok"} 1`,
			`keyward_logins_total{outcome="INVALID_KEY"} 1`,
			`keyward_http_requests_total{error_code="INVALID_KEY",method="POST",route="/api/auth/login.php",status="200"} 1`,
			"keyward_sessions_live 0",
			`keyward_killswitch_total{code="BANNED"} 1`,
			"keyward_webhook_deliveries_pending 0",
			"keyward_webhook_destinations_paused 0",
			"keyward_go_sql_open_connections",
			"go_goroutines",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		if t.Failed() {
			t.Logf("metrics:\n%s", body)
		}
	})
}

// Without a token /metrics does not exist on the main listener; the
// --metrics-addr listener serves it without one.
func TestMetricsWithoutToken(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.MetricsAddr = "127.0.0.1:0" }})
	if status, body := scrape(t, s.URL, "Bearer anything"); status != http.StatusNotFound || !strings.Contains(body, "NOT_FOUND") {
		t.Errorf("GET /metrics without a configured token: %d %s, want 404", status, body)
	}
	status, body := scrape(t, "http://"+s.MetricsAddr(), "")
	if status != http.StatusOK || !strings.Contains(body, "keyward_http_requests_total") {
		t.Errorf("GET /metrics on --metrics-addr: %d %.200s", status, body)
	}
}
