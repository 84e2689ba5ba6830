package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// Every reply carries X-Request-Id (the caller's when well-formed, else a
// fresh one), and the request's log lines carry it as request_id.
func TestRequestID(t *testing.T) {
	t.Parallel()
	var logs kwtest.LogBuffer
	s := kwtest.Start(t, kwtest.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	s.Jobs().Stop() // so /readyz logs its failed check

	r := s.Do("GET", "/readyz", http.Header{"X-Request-Id": {"probe-42"}}, nil)
	if got := r.Header.Get("X-Request-Id"); got != "probe-42" {
		t.Errorf("X-Request-Id %q, want the caller's probe-42", got)
	}
	if !strings.Contains(logs.String(), "request_id=probe-42") {
		t.Errorf("the request's log lines lack request_id=probe-42:\n%s", logs.String())
	}
	for _, h := range []http.Header{nil, {"X-Request-Id": {`bad id" level=ERROR`}}, {"X-Request-Id": {strings.Repeat("a", 129)}}} {
		r := s.Do("GET", "/healthz", h, nil)
		if got := r.Header.Get("X-Request-Id"); len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Errorf("X-Request-Id %q for request header %q, want 32 fresh hex characters", got, h.Get("X-Request-Id"))
		}
	}
	a, b := s.Do("GET", "/healthz", nil, nil), s.Do("GET", "/healthz", nil, nil)
	if a.Header.Get("X-Request-Id") == b.Header.Get("X-Request-Id") {
		t.Error("two requests got the same id")
	}
}
