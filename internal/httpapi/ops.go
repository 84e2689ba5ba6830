package httpapi

import (
	"context"
	"net/http"
	"time"
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
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
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
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unready", "failed": failed, "checks": checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}
