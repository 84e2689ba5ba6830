package edge

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/keyward/keyward/wire"
)

// observation is what the instrument middleware learns of one request
// beyond the status: the error code its reply carries (plain or inside the
// envelope), noted by the code that writes it.
type observation struct{ code string }

type observationKey struct{}

// NoteCode records the error code of the request's reply for the metrics.
func NoteCode(ctx context.Context, code string) {
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
func (e *Edge) instrument(next http.Handler) http.Handler {
	if e.metrics == nil {
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
			route := "unmatched"
			if f, ok := r.Context().Value(flightKey{}).(*flight); ok {
				if p := f.route.Load(); p != nil {
					route = *p
				}
			} else if r.Pattern != "" { // set by the mux on this request
				route = r.Pattern
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
			e.metrics.Request(route, knownMethod(r.Method), status, code, took)
			// The access log (--log-level debug): the route pattern, never the
			// path's query or a body, so no key or secret reaches it.
			if e.log.Enabled(r.Context(), slog.LevelDebug) {
				e.log.DebugContext(r.Context(), "request", "method", knownMethod(r.Method), "route", route, "status", status,
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
