// Package opsapi is keyward's operator surface: the liveness and readiness
// probes, the Prometheus metrics and the API's OpenAPI description.
package opsapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/wire"
)

// Check is one readiness check of /readyz: Run returns nil when its part of
// keyward is ready to serve.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// API serves the operator routes.
type API struct {
	edge    *edge.Edge
	log     *slog.Logger
	checks  []Check
	metrics *metrics.Metrics
	token   string
}

// New returns the operator routes over e: checks are what /readyz asks (in
// order), m the registry /metrics serves (nil: none) to callers with
// metricsToken (empty: /metrics answers 404).
func New(e *edge.Edge, log *slog.Logger, checks []Check, m *metrics.Metrics, metricsToken string) *API {
	return &API{edge: e, log: log, checks: checks, metrics: m, token: metricsToken}
}

// Routes is the operator route table.
func (a *API) Routes() []edge.Route {
	return []edge.Route{
		// The API's own OpenAPI description (docs/openapi.yaml).
		{Pattern: "GET /api/openapi.yaml", Auth: edge.Public, Handler: http.HandlerFunc(openAPI)},
		// Liveness and readiness probes, public and cheap.
		{Pattern: "GET /healthz", Auth: edge.Public, Handler: http.HandlerFunc(a.healthz)},
		{Pattern: "GET /readyz", Auth: edge.Public, Handler: http.HandlerFunc(a.readyz)},
		// Public route, its own bearer token (compared in constant time).
		{Pattern: "GET /metrics", Auth: edge.Public, Handler: http.HandlerFunc(a.serveMetrics)},
	}
}

// checkTimeout bounds each readiness check, so a stuck database answers 503
// rather than holding the probe.
const checkTimeout = 2 * time.Second

// healthz answers 200 while the process serves HTTP; it reads nothing.
func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// readyz runs every readiness check and answers 200 when all pass, else 503
// naming the failed ones. Failures are logged in full; the reply only says
// "fail", since the route is public.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{}
	var failed []string
	for _, c := range a.checks {
		ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
		err := c.Run(ctx)
		cancel()
		if err != nil {
			a.log.WarnContext(r.Context(), "readiness check failed", "check", c.Name, "err", err)
			checks[c.Name] = "fail"
			failed = append(failed, c.Name)
			continue
		}
		checks[c.Name] = "ok"
	}
	if len(failed) > 0 {
		edge.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unready", "failed": failed, "checks": checks})
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

// serveMetrics answers /metrics for callers with the metrics token (Bearer,
// compared in constant time); without a configured token the route does not
// exist (404, as any unknown path).
func (a *API) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if a.token == "" || a.metrics == nil {
		a.edge.Error(w, r, edge.ErrNoEndpoint)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Hashing both sides first makes the comparison's time independent of
	// the lengths too.
	gh, wh := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(a.token))
	if !ok || subtle.ConstantTimeCompare(gh[:], wh[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="keyward metrics"`)
		a.edge.Error(w, r, errNoMetrics)
		return
	}
	a.metrics.Handler().ServeHTTP(w, r)
}

// MetricsHandler serves the metrics without a token, for a separate
// listener (--metrics-addr) that only the monitoring network reaches.
func (a *API) MetricsHandler() http.Handler {
	if a.metrics == nil {
		return http.NotFoundHandler()
	}
	return a.metrics.Handler()
}

var errNoMetrics = apperr.New(apperr.Unauthenticated, wire.CodeUnauthorized, "A valid metrics token is required.")
