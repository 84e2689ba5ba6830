package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/metrics"
)

// BenchmarkRequest times the HTTP layer's record of one answered request:
// the heartbeat's route, method, status and (empty) error code.
func BenchmarkRequest(b *testing.B) {
	m := metrics.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request("/api/client/auth/heartbeat.php", "POST", 200, "", 150*time.Microsecond)
		}
	})
}

// scrape returns the registry's text exposition.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// TestRequestCountsEachSeries checks that Request counts each route,
// method, status and error code under its own series, however often one
// repeats, and observes each request's duration under its route.
func TestRequestCountsEachSeries(t *testing.T) {
	m := metrics.New()
	for range 3 {
		m.Request("/a", "POST", 200, "", time.Millisecond)
	}
	m.Request("/a", "POST", 400, "MISSING_FIELDS", 2*time.Millisecond)
	m.Request("/b", "GET", 200, "", 3*time.Millisecond)
	out := scrape(t, m)
	for _, want := range []string{
		`keyward_http_requests_total{error_code="",method="POST",route="/a",status="200"} 3`,
		`keyward_http_requests_total{error_code="MISSING_FIELDS",method="POST",route="/a",status="400"} 1`,
		`keyward_http_requests_total{error_code="",method="GET",route="/b",status="200"} 1`,
		`keyward_http_request_duration_seconds_count{route="/a"} 4`,
		`keyward_http_request_duration_seconds_sum{route="/a"} 0.005`,
		`keyward_http_request_duration_seconds_count{route="/b"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	var nilM *metrics.Metrics
	nilM.Request("/a", "POST", 200, "", time.Millisecond) // records nothing, does not panic
}
