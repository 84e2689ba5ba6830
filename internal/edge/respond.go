package edge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// Status is the one mapping from error Kind to HTTP status.
func Status(k apperr.Kind) int {
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
	case apperr.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of an error: success false, error_code, message and
// any extra fields. Internal errors get a generic message only.
func errorBody(e *apperr.Error) map[string]any {
	if e.Kind == apperr.Internal {
		return map[string]any{"success": false, "error_code": wire.CodeInternal, "message": "Internal server error."}
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

// Marshal encodes v as compact JSON without HTML escaping (clients compare
// strings byte for byte; '<' stays '<').
func Marshal(v any) []byte {
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

// contentLengths are the decimal forms of 0 to len-1, one array the
// Content-Length header values of small replies are sliced from (cap 1, so
// a Header.Add copies): no strconv string and no []string per reply.
var contentLengths = func() (t [4096]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// setContentLength sets h's Content-Length to n.
func setContentLength(h http.Header, n int) {
	if n >= 0 && n < len(contentLengths) {
		h["Content-Length"] = contentLengths[n : n+1 : n+1]
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(n)}
}

// WriteRaw sends a JSON body with the given status. API replies are never
// compressed or cached.
func WriteRaw(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	setContentLength(h, len(body))
	w.WriteHeader(code)
	w.Write(body)
}

// WriteJSON sends v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, code int, v any) { WriteRaw(w, code, Marshal(v)) }

// Error is the one writer of error replies: every refusal that is not
// sealed into an envelope — a handler's, a middleware's (query check, rate
// limit, reply signing, body size), an unknown path, a wrong method, a
// recovered panic — is sent here, with the status status() maps its Kind to
// and the body errorBody builds. Internal errors are logged in full.
func (e *Edge) Error(w http.ResponseWriter, r *http.Request, err error) {
	ae := apperr.From(err)
	if ae.Kind == apperr.Internal {
		e.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	WriteRaw(w, Status(ae.Kind), ErrorReply(r.Context(), ae))
}

// ErrorReply notes e's wire code (metrics, access log) and returns its JSON:
// the body Error sends, and the inner reply of a refusal that travels
// sealed in an envelope with HTTP 200.
func ErrorReply(ctx context.Context, e *apperr.Error) []byte {
	NoteCode(ctx, wireCode(e))
	return Marshal(errorBody(e))
}

// Refusals of the HTTP layer itself.
var (
	ErrNoEndpoint = apperr.New(apperr.NotFound, wire.CodeNotFound, "No such endpoint.")
)

// NoEndpoint is the refusal of a path no route answers: ErrNoEndpoint
// (404 NOT_FOUND, as shipped clients have always seen), with a hint in the
// message when the path starts /api/api/ — what a client configured with a
// base URL ending in /api sends (every route path begins with /api/ itself).
func NoEndpoint(r *http.Request) *apperr.Error {
	if p := r.URL.Path; p == "/api/api" || strings.HasPrefix(p, "/api/api/") {
		return apperr.New(apperr.NotFound, wire.CodeNotFound,
			"No such endpoint. The base URL should not end in /api: give the server's root (https://host or https://host/prefix), and the client adds /api/… itself.")
	}
	return ErrNoEndpoint
}

// MethodNotAllowed refuses a method the route does not answer, naming the
// ones it does in Allow.
func (e *Edge) MethodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	e.Error(w, r, apperr.New(apperr.MethodNotAllowed, wire.CodeMethodNotAllowed, "Method not allowed; use "+allow+"."))
}

// wireCode is the error_code errorBody gives e.
func wireCode(e *apperr.Error) string {
	if e.Kind == apperr.Internal {
		return wire.CodeInternal
	}
	return e.Code
}

// IsInternal reports whether err is an internal failure (not an apperr, or
// of Kind Internal): never answered inside an envelope.
func IsInternal(err error) bool {
	var e *apperr.Error
	return !errors.As(err, &e) || e.Kind == apperr.Internal
}
