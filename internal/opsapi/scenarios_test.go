package opsapi_test

import (
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The operator's routes as a scenario table.
func TestOpsScenarios(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		f := kwtest.NewFixture(t, engine)
		f.Run(t, []kwtest.Scenario{
			{Name: "liveness", Method: "GET", Path: "/healthz", Status: 200, Bare: true, Fields: map[string]any{"status": "ok"}},
			{Name: "readiness", Method: "GET", Path: "/readyz", Status: 200, Bare: true, Fields: map[string]any{"status": "ready", "checks": kwtest.Present}},
			{Name: "POST to a probe", Method: "POST", Path: "/healthz", Status: 405, Code: "METHOD_NOT_ALLOWED"},
			{Name: "metrics without a configured token do not exist", Method: "GET", Path: "/metrics", Status: 404, Code: "NOT_FOUND"},
			{Name: "the OpenAPI description", Method: "GET", Path: "/api/openapi.yaml", Status: 200, Bare: true, ContentType: "application/yaml"},
			{Name: "an unknown path", Method: "GET", Path: "/nope", Status: 404, Code: "NOT_FOUND"},
		})
	})
}
