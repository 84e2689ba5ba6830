package reqid

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestHandlerAddsTheID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	log.InfoContext(With(context.Background(), "abc-123"), "hello")
	log.InfoContext(context.Background(), "no id")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "request_id=abc-123") || strings.Contains(lines[1], "request_id") {
		t.Errorf("log lines:\n%s", buf.String())
	}
	if h := NewHandler(NewHandler(slog.DiscardHandler)); h.(Handler).next != slog.DiscardHandler {
		t.Error("NewHandler wraps a Handler twice")
	}
}

func TestValid(t *testing.T) {
	for id, want := range map[string]bool{
		"abc-123": true, New(): true, "req_1.2:3": true, strings.Repeat("a", 128): true,
		"": false, strings.Repeat("a", 129): false, "a b": false, "a\nlevel=ERROR": false, `a"b`: false, "é": false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
	if id := New(); len(id) != 32 {
		t.Errorf("New() = %q, want 32 hex characters", id)
	}
}
