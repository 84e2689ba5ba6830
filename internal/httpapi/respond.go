package httpapi

import (
	"encoding/json"
	"errors"

	"net/http"
	"strconv"

	"github.com/keyward/keyward/internal/apperr"
)

// status is the one mapping from error Kind to HTTP status.
func status(k apperr.Kind) int {
	switch k {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.Unauthenticated:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of an error: success false, error_code, message and
// any extra fields. Internal errors get a generic message only.
func errorBody(e *apperr.Error) map[string]any {
	if e.Kind == apperr.Internal {
		return map[string]any{"success": false, "error_code": "INTERNAL", "message": "Internal server error."}
	}
	body := map[string]any{"success": false, "message": e.Message}
	if e.Code != "" {
		body["error_code"] = e.Code
	}
	for k, v := range e.Fields {
		body[k] = v
	}
	if e.RetryAfter > 0 {
		body["retry_after"] = e.RetryAfter
	}
	return body
}

// marshal encodes v as compact JSON without HTML escaping (clients compare
// strings byte for byte; '<' stays '<').
func marshal(v any) []byte {
	var buf jsonBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"success":false,"error_code":"INTERNAL","message":"Internal server error."}`)
	}
	return buf.b[:len(buf.b)-1] // drop Encode's newline
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

// Constant header values, shared by every reply instead of a new slice per
// Header.Set. Nothing changes a value in place (Header.Add appends, which
// copies a full slice), and net/http only reads them.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
	headerNosniff = []string{"nosniff"}
	headerDeny    = []string{"DENY"}
	headerNoRef   = []string{"no-referrer"}
)

// writeRaw sends a JSON body with the given status. API replies are never
// compressed or cached.
func writeRaw(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	w.Write(body)
}

func writeJSON(w http.ResponseWriter, code int, v any) { writeRaw(w, code, marshal(v)) }

// writeError sends err as plain JSON with its mapped status, logging
// internal errors in full.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := apperr.From(err)
	if e.Kind == apperr.Internal {
		a.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	noteCode(r.Context(), wireCode(e))
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, status(e.Kind), errorBody(e))
}

// wireCode is the error_code errorBody gives e.
func wireCode(e *apperr.Error) string {
	if e.Kind == apperr.Internal {
		return "INTERNAL"
	}
	return e.Code
}

func isInternal(err error) bool {
	var e *apperr.Error
	return !errors.As(err, &e) || e.Kind == apperr.Internal
}
