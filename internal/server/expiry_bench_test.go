package server_test

import (
	"context"
	"database/sql"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// sweepHeartbeats is the offered heartbeat rate during the benchmarked
// sweep: 500/s is a fleet of 30 000 live sessions at one heartbeat a
// minute, a small share of what one process answers on 2 cores, so what
// the percentiles show is the sweep's doing.
var sweepHeartbeats = flag.Float64("sweep-heartbeats", 500,
	"heartbeats per second sent over HTTP while BenchmarkExpireMillionKeys sweeps (0: none)")

// BenchmarkExpireMillionKeys seeds 1 000 000 active keys past their expiry
// and times one ExpireKeys sweep over them (a batch of keys per
// transaction: each key expired, its sessions ended, key_expired
// recorded), while enveloped heartbeats of 1 000 live sessions on other
// keys of the same server arrive over HTTP at a fixed rate
// (-sweep-heartbeats, through the load tool's client). It reports the
// sweep's seconds, the process's CPU seconds, SQLite's commits, and the
// heartbeats' p99 before the sweep and p50/p99 during it; it fails if a
// heartbeat fails or the key_expired events are not exactly one per key.
// Run with -benchtime=1x; both engines when
// KEYWARD_TEST_DATABASE_URL is set. See docs/performance.md.
func BenchmarkExpireMillionKeys(b *testing.B) {
	for _, engine := range kwtest.Engines() {
		b.Run(engine, func(b *testing.B) {
			const n = 1_000_000
			for range b.N {
				b.StopTimer()
				s := kwtest.Start(b, kwtest.Options{Engine: engine})
				a := s.CreateApp("Sweep")
				// The server's own expire-keys job must not share the work.
				if ok, err := s.DB.TryLease(b.Context(), "expire-keys", "benchmark", s.Clock.Now(), s.Clock.Now().Add(24*time.Hour)); !ok || err != nil {
					b.Fatalf("hold the expire-keys lease: %v, %v", ok, err)
				}
				var hb *loadtest.Target
				if *sweepHeartbeats > 0 {
					var err error
					hb, err = loadtest.Provision(b.Context(), loadtest.Options{URL: s.URL, AdminUsername: "admin",
						AdminPassword: kwtest.AdminPassword, Mode: loadtest.Heartbeat, Sessions: 1000, Keys: 1000,
						Conns: 16, Now: s.Clock.Now})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { hb.Close(context.Background(), true) })
				}
				seedPastExpiry(b, s, engine, a.ID, n)

				beat := func(_ context.Context, i int) error {
					// Not the phase's context: a heartbeat in flight when
					// the sweep ends finishes and counts.
					return hb.Do(context.Background(), loadtest.Heartbeat, i)
				}
				var idle loadtest.Result
				during := make(chan loadtest.Result, 1)
				stop := func() {}
				if hb != nil {
					idle = loadtest.MeasureAt(b.Context(), "idle", 16, 500*time.Millisecond, 3*time.Second, *sweepHeartbeats, beat)
					ctx, cancel := context.WithCancel(b.Context())
					stop = cancel
					go func() { during <- loadtest.MeasureAt(ctx, "sweep", 16, 0, time.Hour, *sweepHeartbeats, beat) }()
				}
				commits, _ := s.DB.WriteBatches()
				cpu := kwtest.CPUTime()
				b.StartTimer()
				start := time.Now()
				got, err := s.License.ExpireKeys(b.Context())
				took := time.Since(start)
				b.StopTimer()
				cpu = kwtest.CPUTime() - cpu
				after, _ := s.DB.WriteBatches()
				stop()
				if err != nil || got != n {
					b.Fatalf("ExpireKeys = %d, %v; want %d", got, err, n)
				}
				var events int
				if err := s.RawDB(b).QueryRow(`SELECT COUNT(*) FROM events WHERE type = 'key_expired'`).Scan(&events); err != nil || events != n {
					b.Fatalf("key_expired events = %d, %v; want %d", events, err, n)
				}
				b.ReportMetric(took.Seconds(), "s/sweep")
				b.ReportMetric(float64(took.Nanoseconds())/n, "ns/key")
				// The process's CPU time (heartbeats included when sent):
				// on a shared machine it varies less than the wall time.
				b.ReportMetric(cpu.Seconds(), "cpu-s/sweep")
				if after > commits { // SQLite: the writer's commits, the touch flushes' among them
					b.ReportMetric(float64(after-commits), "commits")
				}
				b.Logf("%s: %d keys expired in %s (%s CPU, %d commits)", engine, n, took.Round(time.Millisecond),
					cpu.Round(time.Millisecond), after-commits)
				if hb == nil {
					continue
				}
				r := <-during
				if idle.Errors > 0 || r.Errors > 0 {
					b.Errorf("heartbeats failed: %d idle, %d during the sweep; first: %s%s", idle.Errors, r.Errors, idle.FirstError, r.FirstError)
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
				b.ReportMetric(ms(idle.P99), "idle-hb-p99-ms")
				b.ReportMetric(ms(r.P50), "hb-p50-ms")
				b.ReportMetric(ms(r.P99), "hb-p99-ms")
				b.ReportMetric(r.RPS(), "hb/s")
				b.Logf("heartbeats at %.0f/s: idle p50 %s p99 %s; during the sweep %d, p50 %s p99 %s", *sweepHeartbeats,
					idle.P50, idle.P99, r.Requests, r.P50, r.P99)
			}
		})
	}
}

// seedPastExpiry inserts n active keys of app that expired an hour ago,
// behind the server's back (one statement).
func seedPastExpiry(b *testing.B, s *kwtest.Server, engine, app string, n int) {
	b.Helper()
	past := s.Clock.Now().Add(-time.Hour).UnixMilli()
	var raw *sql.DB
	var err error
	var q string
	if engine == "postgres" {
		raw, err = sql.Open("pgx", s.DatabaseURL)
		q = `INSERT INTO license_keys (app_id, license_key, status, key_type, duration, max_devices, note, features,
			activated_at, expires_at, created_at, updated_at)
			SELECT $1, 'K-' || i, 'active', 'days', 30, 1, '', '{}', $2, $2, $2, $2 FROM generate_series(1, $3) AS i`
	} else {
		raw, err = sql.Open("sqlite", "file:"+filepath.Join(s.DataDir, "keyward.db")+"?_pragma=busy_timeout(60000)")
		q = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $3)
			INSERT INTO license_keys (app_id, license_key, status, key_type, duration, max_devices, note, features,
			activated_at, expires_at, created_at, updated_at)
			SELECT $1, 'K-' || i, 'active', 'days', 30, 1, '', '{}', $2, $2, $2, $2 FROM n`
	}
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(q, app, past, n); err != nil {
		b.Fatalf("seed: %v", err)
	}
}
