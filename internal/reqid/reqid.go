// Package reqid carries a request's id in its context and puts it on every
// log line written with that context (a slog.Handler wrapper), so the lines
// of one request can be found together.
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

type key struct{}

// With returns ctx carrying id. It costs one allocation (every request
// makes one): context.WithValue would also box the string.
func With(ctx context.Context, id string) context.Context { return &idContext{Context: ctx, id: id} }

// Carrier is a value that carries a request id. A context type of another
// package that keeps more per request (the edge's in-flight record) can
// carry the id in the same allocation: its Value answers a key for which
// IsKey is true with a Carrier, and From finds the id there.
type Carrier interface{ RequestID() string }

// IsKey reports whether k is the context key From looks the id up by.
func IsKey(k any) bool { return k == key{} }

// idContext is ctx with a request id; Value answers key{} with the
// idContext itself (a pointer, so no boxing) and asks ctx for anything else.
type idContext struct {
	context.Context
	id string
}

func (c *idContext) Value(k any) any {
	if k == (key{}) {
		return c
	}
	return c.Context.Value(k)
}

func (c *idContext) RequestID() string { return c.id }

func (c *idContext) String() string { return "reqid.With(" + c.id + ")" }

// From returns the id ctx carries, or "".
func From(ctx context.Context) string {
	if c, ok := ctx.Value(key{}).(Carrier); ok {
		return c.RequestID()
	}
	return ""
}

// New returns a fresh id: 16 random bytes in hex.
func New() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Valid reports whether a caller's id may be used as it is: 1 to 128
// characters from [A-Za-z0-9._:-], so it cannot forge log fields or lines.
func Valid(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// Handler adds request_id to every record logged with a context that
// carries one.
type Handler struct{ next slog.Handler }

// NewHandler wraps next (once: a Handler is returned as it is).
func NewHandler(next slog.Handler) slog.Handler {
	if h, ok := next.(Handler); ok {
		return h
	}
	return Handler{next: next}
}

// Enabled reports whether next handles records at level.
func (h Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle adds the context's request id, if any, and passes r on.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns the wrapper of next.WithAttrs.
func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{next: h.next.WithAttrs(attrs)}
}

// WithGroup returns the wrapper of next.WithGroup.
func (h Handler) WithGroup(name string) slog.Handler { return Handler{next: h.next.WithGroup(name)} }
