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

type otherKey struct{}

// TestWithIsAContextValue checks that the context With returns behaves as
// context.WithValue would: From finds the innermost id, other values and
// cancellation come from the parent, and a context without an id has "".
// It also holds With to one allocation (every request makes one).
func TestWithIsAContextValue(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "other"))
	ctx := With(parent, "outer")
	if From(ctx) != "outer" || From(With(ctx, "inner")) != "inner" || From(parent) != "" {
		t.Errorf("From: %q, %q, %q", From(ctx), From(With(ctx, "inner")), From(parent))
	}
	if ctx.Value(otherKey{}) != "other" {
		t.Errorf("a parent's value is lost: %v", ctx.Value(otherKey{}))
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-ctx.Done()
	<-child.Done()
	if ctx.Err() != context.Canceled || From(child) != "outer" {
		t.Errorf("after cancel: Err %v, From(child) %q", ctx.Err(), From(child))
	}
	bg := context.Background()
	if n := testing.AllocsPerRun(100, func() { ctx = With(bg, "abc") }); n != 1 {
		t.Errorf("With allocates %v times, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = From(ctx) }); n != 0 {
		t.Errorf("From allocates %v times, want 0", n)
	}
}

// flightCtx is how another package carries the id in a context type of its
// own (the edge's in-flight record).
type flightCtx struct {
	context.Context
	id string
}

func (c *flightCtx) Value(k any) any {
	if IsKey(k) {
		return c
	}
	return c.Context.Value(k)
}

func (c *flightCtx) RequestID() string { return c.id }

// TestCarrier checks that From finds an id carried by another package's
// context type, that an inner With still wins, and that IsKey names only
// reqid's key.
func TestCarrier(t *testing.T) {
	ctx := context.Context(&flightCtx{Context: context.Background(), id: "f-1"})
	if From(ctx) != "f-1" || From(With(ctx, "inner")) != "inner" {
		t.Errorf("From: %q, %q", From(ctx), From(With(ctx, "inner")))
	}
	if IsKey(otherKey{}) || !IsKey(key{}) {
		t.Error("IsKey answers for the wrong key")
	}
	var buf bytes.Buffer
	slog.New(NewHandler(slog.NewTextHandler(&buf, nil))).InfoContext(ctx, "hello")
	if !strings.Contains(buf.String(), "request_id=f-1") {
		t.Errorf("log line: %s", buf.String())
	}
}
