package opsapi_test

import (
	"net/http"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The probes over real HTTP: healthy and ready, then readiness fails with
// the check named when the jobs stop or the database closes, while the
// liveness probe, which reads nothing, still answers.
func TestProbes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		t.Run("ready", func(t *testing.T) {
			s := kwtest.Start(t, kwtest.Options{Engine: engine})
			if r := s.Do("GET", "/healthz", nil, nil); r.Status != http.StatusOK || r.Str("status") != "ok" {
				t.Fatalf("GET /healthz: %s", r)
			}
			r := s.Do("GET", "/readyz", nil, nil)
			if r.Status != http.StatusOK || r.Str("status") != "ready" {
				t.Fatalf("GET /readyz: %s", r)
			}
			for _, c := range []string{"database", "migrations", "jobs"} {
				if got := r.Obj("checks")[c]; got != "ok" {
					t.Errorf("check %s = %v, want ok", c, got)
				}
			}
			kwtest.ExpectCode(t, s.Do("POST", "/readyz", nil, nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		})
		t.Run("jobs stopped", func(t *testing.T) {
			s := kwtest.Start(t, kwtest.Options{Engine: engine})
			s.Jobs().Stop()
			r := s.Do("GET", "/readyz", nil, nil)
			expectUnready(t, r, "jobs")
			if r.Obj("checks")["database"] != "ok" {
				t.Errorf("database check with jobs stopped: %s", r)
			}
		})
		t.Run("database closed", func(t *testing.T) {
			s := kwtest.Start(t, kwtest.Options{Engine: engine})
			s.DB.Close()
			expectUnready(t, s.Do("GET", "/readyz", nil, nil), "database")
			if r := s.Do("GET", "/healthz", nil, nil); r.Status != http.StatusOK {
				t.Errorf("GET /healthz with the database closed: %s", r)
			}
		})
	})
}

func expectUnready(t *testing.T, r *kwtest.Reply, check string) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable || r.Str("status") != "unready" {
		t.Fatalf("GET /readyz: %s, want 503 unready", r)
	}
	if r.Obj("checks")[check] != "fail" {
		t.Errorf("check %s not failed: %s", check, r)
	}
	failed, _ := r.Body["failed"].([]any)
	found := false
	for _, f := range failed {
		found = found || f == check
	}
	if !found {
		t.Errorf("failed %v does not name %s", failed, check)
	}
}
