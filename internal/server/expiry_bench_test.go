package server_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// BenchmarkExpireMillionKeys seeds 1 000 000 active keys past their expiry
// and times one ExpireKeys sweep over them: 500 keys per transaction (each
// expired, its sessions ended, key_expired recorded), so no lock is held for
// long. Run with -benchtime=1x; engine by -engine flag of the benchmark name.
// See docs/performance.md.
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
				if _, err := raw.Exec(q, a.ID, past, n); err != nil {
					b.Fatalf("seed: %v", err)
				}
				raw.Close()
				b.StartTimer()
				start := time.Now()
				got, err := s.License.ExpireKeys(b.Context())
				took := time.Since(start)
				if err != nil || got != n {
					b.Fatalf("ExpireKeys = %d, %v; want %d", got, err, n)
				}
				b.ReportMetric(float64(took.Nanoseconds())/n, "ns/key")
				b.ReportMetric(float64(took.Milliseconds())/(n/500), "ms/tx")
				b.Logf("%s: %d keys expired in %s", engine, n, took.Round(time.Millisecond))
			}
		})
	}
}
