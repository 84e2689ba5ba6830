package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/wire"
)

// observation is what the instrument middleware learns of one request
// beyond the status: the error code its reply carries (plain or inside the
// envelope), noted by the code that writes it.
type observation struct{ code string }

type observationKey struct{}

// noteCode records the error code of the request's reply for the metrics.
func noteCode(ctx context.Context, code string) {
	if f, ok := ctx.Value(flightKey{}).(*flight); ok {
		f.obs.code = code
	} else if o, ok := ctx.Value(observationKey{}).(*observation); ok {
		o.code = code
	}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// ReadFrom keeps the connection's ReadFrom (sendfile for artifact
// downloads from a directory) reachable through the wrapper.
func (s *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if rf, ok := s.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{s.ResponseWriter}, src)
}

// Flush sends what was written so far.
func (s *statusWriter) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (the artifact
// upload lifts its read deadline through it).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// instrument counts every request by route pattern (the mux's, so paths
// carrying ids never make new series), method, status and error code, and
// times it per route. Requests refused before the mux (rate limit) have no
// pattern and are counted as "unmatched".
func (a *API) instrument(next http.Handler) http.Handler {
	if a.metrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The request's flight (requestID) holds the observation and the
		// status writer, so the hot path clones the request once.
		var o *observation
		var sw *statusWriter
		if f, ok := r.Context().Value(flightKey{}).(*flight); ok {
			o, sw = &f.obs, &f.sw
			*sw = statusWriter{ResponseWriter: w}
		} else {
			o, sw = &observation{}, &statusWriter{ResponseWriter: w}
			r = r.WithContext(context.WithValue(r.Context(), observationKey{}, o))
		}
		defer func() {
			route := r.Pattern // set by the mux on this request
			if route == "" {
				route = "unmatched"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			code := o.code
			if code == "" && status == http.StatusMethodNotAllowed {
				code = wire.CodeMethodNotAllowed
			}
			took := time.Since(start)
			a.metrics.Request(route, knownMethod(r.Method), status, code, took)
			// The access log (--log-level debug): the route pattern, never the
			// path's query or a body, so no key or secret reaches it.
			if a.log.Enabled(r.Context(), slog.LevelDebug) {
				a.log.DebugContext(r.Context(), "request", "method", knownMethod(r.Method), "route", route, "status", status,
					"error_code", code, "duration_ms", float64(took.Microseconds())/1000)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// knownMethod bounds the method label to the standard methods.
func knownMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

// serveMetrics answers /metrics for callers with the metrics token (Bearer,
// compared in constant time); without a configured token the route does not
// exist (404, as any unknown path).
func (a *API) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if a.cfg.MetricsToken == "" || a.metrics == nil {
		a.writeError(w, r, errNoEndpoint)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Hashing both sides first makes the comparison's time independent of
	// the lengths too.
	gh, wh := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(a.cfg.MetricsToken))
	if !ok || subtle.ConstantTimeCompare(gh[:], wh[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="keyward metrics"`)
		a.writeError(w, r, errNoMetrics)
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
