package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/wire"
)

// Check is one readiness check of /readyz: Run returns nil when its part of
// keyward is ready to serve.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
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
	if a.cfg.MetricsToken == "" || a.metrics == nil {
		a.Error(w, r, edge.ErrNoEndpoint)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Hashing both sides first makes the comparison's time independent of
	// the lengths too.
	gh, wh := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(a.cfg.MetricsToken))
	if !ok || subtle.ConstantTimeCompare(gh[:], wh[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="keyward metrics"`)
		a.Error(w, r, errNoMetrics)
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
