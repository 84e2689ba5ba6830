package server

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/store"
)

// Heartbeat times are flushed four times a second on SQLite with the
// session cache, once a second without it and on PostgreSQL.
func TestFlushInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		engine store.Engine
		cache  int
		want   time.Duration
	}{
		{store.SQLite, 1_000_000, 250 * time.Millisecond},
		{store.SQLite, 0, time.Second},
		{store.Postgres, 1_000_000, time.Second},
	} {
		if got := flushInterval(c.engine, c.cache); got != c.want {
			t.Errorf("flushInterval(%v, %d) = %s, want %s", c.engine, c.cache, got, c.want)
		}
	}
}
