package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
)

// The one error → HTTP mapping: each kind has its status.
func TestStatusOfEachKind(t *testing.T) {
	t.Parallel()
	for kind, want := range map[apperr.Kind]int{
		apperr.Internal:         500,
		apperr.Invalid:          400,
		apperr.Unauthenticated:  401,
		apperr.Forbidden:        403,
		apperr.NotFound:         404,
		apperr.Conflict:         409,
		apperr.RateLimited:      429,
		apperr.MethodNotAllowed: 405,
		apperr.Kind(99):         500,
	} {
		if got := Status(kind); got != want {
			t.Errorf("status(%d) = %d, want %d", kind, got, want)
		}
	}
}

func decodeRecorded(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want JSON", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", rec.Body, err)
	}
	return m
}

// An internal error is logged in full and answered with a generic 500 that
// names nothing from inside.
func TestInternalErrorsTellTheClientNothing(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ed := &Edge{log: slog.New(slog.NewTextHandler(&logs, nil))}
	rec := httptest.NewRecorder()
	cause := errors.New(`pq: relation "license_keys" does not exist at /srv/keyward`)
	ed.Error(rec, httptest.NewRequest("POST", "/api/auth/login.php", nil), apperr.Wrap(cause, "find key"))
	if rec.Code != 500 {
		t.Fatalf("status %d, want 500", rec.Code)
	}
	m := decodeRecorded(t, rec)
	if m["success"] != false || m["error_code"] != "INTERNAL" || m["message"] != "Internal server error." {
		t.Errorf("body %v, want the generic internal error", m)
	}
	if strings.Contains(rec.Body.String(), "license_keys") || strings.Contains(rec.Body.String(), "find key") {
		t.Errorf("body leaks the cause: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "license_keys") {
		t.Errorf("log lacks the cause: %s", logs.String())
	}
}

// A client error carries its code, message, extra fields and Retry-After.
func TestClientErrorsCarryCodeFieldsAndRetryAfter(t *testing.T) {
	t.Parallel()
	ed := &Edge{log: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	e := apperr.New(apperr.Forbidden, "DEVICE_LIMIT", "Device limit reached.").With("devices_used", 2).With("max_devices", 2)
	e.RetryAfter = 30
	ed.Error(rec, httptest.NewRequest("POST", "/", nil), e)
	if rec.Code != 403 || rec.Header().Get("Retry-After") != "30" {
		t.Fatalf("status %d, Retry-After %q; want 403, 30", rec.Code, rec.Header().Get("Retry-After"))
	}
	m := decodeRecorded(t, rec)
	if m["error_code"] != "DEVICE_LIMIT" || m["devices_used"] != 2.0 || m["max_devices"] != 2.0 || m["retry_after"] != 30.0 ||
		m["message"] != "Device limit reached." || m["success"] != false {
		t.Errorf("body %v", m)
	}
}

// A panic in a handler becomes the generic JSON 500; the panic value is
// logged, not sent.
func TestPanicsBecomeAGenericJSON500(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ed := &Edge{log: slog.New(slog.NewTextHandler(&logs, nil))}
	h := ed.Recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("index out of range in secret-handling code")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/auth/heartbeat.php", nil))
	if rec.Code != 500 {
		t.Fatalf("status %d, want 500", rec.Code)
	}
	if m := decodeRecorded(t, rec); m["error_code"] != "INTERNAL" || m["message"] != "Internal server error." {
		t.Errorf("body %v, want the generic internal error", m)
	}
	if strings.Contains(rec.Body.String(), "secret-handling") {
		t.Errorf("body leaks the panic: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "secret-handling") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
}

// JSON replies keep '<' and '&' as they are: clients compare strings byte for
// byte.
func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	got := string(Marshal(map[string]any{"message": "<b>Tom & Jerry</b>"}))
	if got != `{"message":"<b>Tom & Jerry</b>"}` {
		t.Errorf("marshal = %s", got)
	}
}
