package loadtest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// The benchmarks run the load tool's requests through b.RunParallel against a
// real server on 127.0.0.1 (real HTTP, real envelopes, real SQLite). Compare
// BenchmarkHeartbeat with BenchmarkEcho: the difference is what the license
// logic and the database cost per heartbeat. See docs/performance.md.

const benchSessions = 10000

func provision(b *testing.B, mode loadtest.Mode) (*kwtest.Server, *loadtest.Target) {
	b.Helper()
	srv := kwtest.Start(b, kwtest.Options{})
	sessions := benchSessions
	if mode != loadtest.Heartbeat {
		sessions = 0
	}
	t, err := loadtest.Provision(context.Background(), loadtest.Options{URL: srv.URL, AdminUsername: "admin",
		AdminPassword: kwtest.AdminPassword, Mode: mode, Sessions: sessions, Keys: max(sessions, 1000),
		Conns: 16, Now: srv.Clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Close(context.Background(), true) })
	return srv, t
}

func run(b *testing.B, do func(ctx context.Context, i int) error) {
	var next atomic.Int64
	b.SetParallelism(16) // 16 × GOMAXPROCS concurrent clients, like the load tool's 32 connections on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := do(ctx, int(next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHeartbeat measures enveloped heartbeats of 10 000 live sessions.
func BenchmarkHeartbeat(b *testing.B) {
	_, t := provision(b, loadtest.Heartbeat)
	run(b, func(ctx context.Context, i int) error { return t.Do(ctx, loadtest.Heartbeat, i) })
}

// BenchmarkEcho measures the baseline: the same requests answered by a
// handler that only opens and seals the envelope.
func BenchmarkEcho(b *testing.B) {
	srv, t := provision(b, loadtest.Heartbeat)
	stop, url, err := loadtest.StartEcho(srv.Clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	run(b, func(ctx context.Context, i int) error { return t.Echo(ctx, url, i) })
}

// BenchmarkCheckKey measures enveloped check-keys.
func BenchmarkCheckKey(b *testing.B) {
	_, t := provision(b, loadtest.CheckKey)
	run(b, func(ctx context.Context, i int) error { return t.Do(ctx, loadtest.CheckKey, i) })
}

// BenchmarkLogin measures enveloped logins (each a write transaction).
func BenchmarkLogin(b *testing.B) {
	_, t := provision(b, loadtest.Login)
	run(b, func(ctx context.Context, i int) error { return t.Do(ctx, loadtest.Login, i) })
}
