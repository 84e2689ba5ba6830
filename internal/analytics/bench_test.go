package analytics_test

import (
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// Benchmark data: one app with a million keys, ten million counted events
// over 90 days, 100 000 live sessions, 90 days of five-minute session
// samples and 50 000 devices' update checks.
const (
	benchKeys     = 1_000_000
	benchEvents   = 10_000_000
	benchLive     = 100_000
	benchChecks   = 50_000
	benchDays     = 90
	benchSamples  = benchDays * 24 * 12
	benchApp      = "bench"
	sampleEveryMS = 5 * 60 * 1000
)

var benchNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// eventMix is what the ten million events are: mostly logins and logouts,
// some refusals spread over their usual codes, a few activations and trials.
var eventMix = []struct {
	metric, code string
	weight       int // per thousand
}{
	{analytics.Login, "", 450},
	{analytics.Logout, "", 300},
	{analytics.LoginFailed, license.CodeInvalidKey, 50},
	{analytics.LoginFailed, license.CodeExpired, 20},
	{analytics.LoginFailed, license.CodeHWIDMismatch, 15},
	{analytics.LoginFailed, license.CodeBanned, 5},
	{analytics.LoginFailed, license.CodeDeviceLimit, 5},
	{analytics.LoginFailed, license.CodePaused, 3},
	{analytics.LoginFailed, license.CodeMaintenance, 2},
	{analytics.HeartbeatRefused, license.CodeSessionExpired, 70},
	{analytics.HeartbeatRefused, license.CodeExpired, 10},
	{analytics.HeartbeatRefused, license.CodeBanned, 8},
	{analytics.HeartbeatRefused, license.CodeHWIDReset, 5},
	{analytics.HeartbeatRefused, license.CodeSessionRevoked, 5},
	{analytics.HeartbeatRefused, license.CodePaused, 2},
	{analytics.Activation, "", 30},
	{analytics.Trial, "", 20},
}

// BenchmarkAnalyticsReport times Service.Report for one app over 30 days
// by hour and 90 days by day, on SQLite and (with KEYWARD_TEST_DATABASE_URL)
// PostgreSQL, and each store read on its own. Seeding takes a while (set-based
// SQL for keys, sessions, samples and checks; the events through
// Recorder.Add and one Flush). It runs only with -bench. See
// docs/performance.md.
func BenchmarkAnalyticsReport(b *testing.B) {
	for _, engine := range kwtest.Engines() {
		b.Run(engine, func(b *testing.B) {
			db := seedAnalytics(b, engine)
			as := db.AnalyticsStore()
			svc := analytics.NewService(as)
			ctx := b.Context()
			for _, rc := range []struct {
				name string
				days int
				step time.Duration
			}{{"30d-hourly", 30, analytics.Hourly}, {"90d-daily", 90, analytics.Daily}} {
				from := benchNow.Add(-time.Duration(rc.days) * analytics.Daily)
				b.Run(rc.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := svc.Report(ctx, benchApp, from, benchNow, rc.step); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			// The parts of the 90-day report.
			from, to := benchNow.Add(-benchDays*analytics.Daily), benchNow
			parts := []struct {
				name string
				fn   func() error
			}{
				{"LiveSessions", func() error { _, err := as.LiveSessions(ctx, benchApp); return err }},
				{"SessionSeries", func() error { _, err := as.SessionSeries(ctx, benchApp, from, to, analytics.Daily); return err }},
				{"UsageSeries", func() error {
					_, err := as.UsageSeries(ctx, benchApp, []string{analytics.Login, analytics.Activation, analytics.Trial, analytics.Logout},
						from, to, analytics.Daily)
					return err
				}},
				{"UsageByCode", func() error {
					_, err := as.UsageByCode(ctx, benchApp, []string{analytics.LoginFailed, analytics.HeartbeatRefused}, from, to)
					return err
				}},
				{"KeysByStatus", func() error { _, err := as.KeysByStatus(ctx, benchApp); return err }},
				{"Versions", func() error { _, err := as.Versions(ctx, benchApp, from, to); return err }},
			}
			for _, p := range parts {
				b.Run("part-"+p.name, func(b *testing.B) {
					for b.Loop() {
						if err := p.fn(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// seedAnalytics returns a migrated database on engine holding the benchmark
// data, and checks that a report adds up to it.
func seedAnalytics(b *testing.B, engine string) *store.DB {
	b.Helper()
	ctx := b.Context()
	var o store.Options
	if engine == "postgres" {
		o.URL = kwtest.PostgresURL(b)
	} else {
		o.DataDir = b.TempDir()
	}
	o.Keys = kwtest.SecretKeys
	db, err := store.Open(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	app := &license.App{ID: benchApp, Name: "Bench", Version: "1.0.0", Secret: "bench-secret", Settings: license.DefaultSettings(),
		CreatedAt: benchNow, UpdatedAt: benchNow}
	if err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return tx.InsertApp(ctx, app, "bench-hash") }); err != nil {
		b.Fatal(err)
	}

	var raw *sql.DB
	var series string // a CTE or function yielding i = 1 … $1
	if engine == "postgres" {
		raw, err = sql.Open("pgx", o.URL)
		series = `generate_series(1, $1) AS i`
	} else {
		raw, err = sql.Open("sqlite", "file:"+filepath.Join(o.DataDir, "keyward.db")+"?_pragma=busy_timeout(60000)")
		series = `n`
	}
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	with := func(q string) string {
		if engine == "postgres" {
			return q
		}
		return `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) ` + q
	}
	now := benchNow.UnixMilli()
	dayMS := int64(24 * time.Hour / time.Millisecond)
	start := time.Now()
	exec := func(what, q string, args ...any) {
		b.Helper()
		t := time.Now()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("seed %s: %v", what, err)
		}
		b.Logf("%s: seeded %s in %s", engine, what, time.Since(t).Round(time.Millisecond))
	}
	// Keys: 60 % active, 15 % unused, 15 % expired, 5 % banned, 5 % paused.
	exec("1 000 000 keys", with(`INSERT INTO license_keys (app_id, license_key, status, key_type, duration, max_devices, note, features,
		activated_at, expires_at, created_at, updated_at)
		SELECT $2, 'K-' || i, CASE WHEN i % 20 < 12 THEN 'active' WHEN i % 20 < 15 THEN 'unused' WHEN i % 20 < 18 THEN 'expired'
			WHEN i % 20 = 18 THEN 'banned' ELSE 'paused' END,
			'days', 30, 1, '', '{}', NULL, NULL, $3, $3 FROM `+series), benchKeys, benchApp, now)
	// Live sessions on the first keys, plus as many ended ones (tombstones).
	exec("200 000 sessions", with(`INSERT INTO sessions (id, token_hash, app_id, key_id, hwid, ip, created_at, last_seen_at, ended_at, end_reason)
		SELECT 's-' || i, 't-' || i, $2, (SELECT MIN(id) FROM license_keys) + i - 1, 'hw-' || i, '203.0.113.7', $3, $3,
			CASE WHEN i % 2 = 0 THEN CAST($3 AS BIGINT) END, CASE WHEN i % 2 = 0 THEN 'logout' END FROM `+series), 2*benchLive, benchApp, now)
	// 90 days of five-minute samples following a daily curve.
	exec("25 920 session samples", with(`INSERT INTO session_samples (app_id, at, live)
		SELECT $2, CAST($3 AS BIGINT) - i * CAST($4 AS BIGINT), 60000 + (i % 288) * 139 FROM `+series), benchSamples, benchApp, now, sampleEveryMS)
	// 50 000 devices' latest checks over the 90 days, on five versions.
	exec("50 000 update checks", with(`INSERT INTO update_checks (app_id, device, current, channel, os, arch, offered, checked_at)
		SELECT $2, 'dev-' || i, CASE WHEN i % 20 < 2 THEN '1.0.0' WHEN i % 20 < 6 THEN '1.1.0' WHEN i % 20 < 14 THEN '1.2.0'
			WHEN i % 20 < 19 THEN '1.2.1' ELSE '2.0.0-beta.1' END, 'stable', 'windows', 'amd64', '', CAST($3 AS BIGINT) - 1 - (i * CAST($4 AS BIGINT) / $1) FROM `+series),
		benchChecks, benchApp, now, benchDays*dayMS)

	// Ten million events through the Recorder, spread evenly over 90 days.
	rec := analytics.NewRecorder(db.AnalyticsStore())
	rng := rand.New(rand.NewPCG(1, 2))
	span := int64(benchDays * analytics.Daily)
	last30 := benchNow.Add(-30 * analytics.Daily)
	var in30 int64
	t := time.Now()
	for range benchEvents {
		w := rng.IntN(1000)
		m := eventMix[0]
		for _, e := range eventMix {
			if w < e.weight {
				m = e
				break
			}
			w -= e.weight
		}
		at := benchNow.Add(-time.Duration(1 + rng.Int64N(span-1)))
		if !at.Before(last30) {
			in30++
		}
		rec.Add(benchApp, m.metric, m.code, at)
	}
	b.Logf("%s: recorded 10 000 000 events in %s (%d rollups)", engine, time.Since(t).Round(time.Millisecond), rec.Pending())
	t = time.Now()
	if err := rec.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: flushed them in one transaction in %s", engine, time.Since(t).Round(time.Millisecond))
	if engine == "postgres" {
		// What autovacuum does in production: statistics, and the
		// visibility map that index-only scans need.
		exec("VACUUM ANALYZE", `VACUUM ANALYZE`)
	}
	b.Logf("%s: seeding took %s", engine, time.Since(start).Round(time.Millisecond))

	// The reports add up to what was seeded.
	svc := analytics.NewService(db.AnalyticsStore())
	for _, c := range []struct {
		days   int
		step   time.Duration
		want   int64
		points int
	}{
		{90, analytics.Daily, benchEvents, 91}, // benchNow is noon: the range widens to 91 whole days
		{30, analytics.Hourly, in30, 30 * 24},
	} {
		r, err := svc.Report(ctx, benchApp, benchNow.Add(-time.Duration(c.days)*analytics.Daily), benchNow, c.step)
		if err != nil {
			b.Fatal(err)
		}
		checkReport(b, r, c.days, c.step, c.want, c.points)
	}
	return db
}

func checkReport(b *testing.B, r *analytics.Report, days int, step time.Duration, want int64, points int) {
	b.Helper()
	var events, keys, devices, maxActive int64
	for _, s := range [][]analytics.Point{r.Logins, r.Logouts, r.Activations, r.Trials} {
		for _, p := range s {
			events += p.N
		}
	}
	for _, m := range []map[string]int64{r.LoginFailures, r.HeartbeatRefusals} {
		for _, n := range m {
			events += n
		}
	}
	for _, n := range r.KeysByStatus {
		keys += n
	}
	for _, v := range r.Versions {
		devices += v.Devices
	}
	for _, p := range r.Active {
		maxActive = max(maxActive, p.N)
	}
	if events != want || keys != benchKeys || r.ActiveNow != benchLive || len(r.Logins) != points ||
		r.KeysByStatus["active"] != benchKeys*12/20 || len(r.Versions) != 5 || maxActive != 60000+287*139 ||
		len(r.LoginFailures) != 7 || len(r.HeartbeatRefusals) != 6 {
		b.Fatalf("%d days by %v: %d events, %d keys %v, %d live, %d points, %d devices on %v, max active %d, failures %v / %v; "+
			"want %d events, %d keys, %d live, %d points", days, step, events, keys, r.KeysByStatus, r.ActiveNow, len(r.Logins),
			devices, r.Versions, maxActive, r.LoginFailures, r.HeartbeatRefusals, want, benchKeys, benchLive, points)
	}
	if days == benchDays && devices != benchChecks {
		b.Fatalf("90 days: %d devices in the version distribution, want %d", devices, benchChecks)
	}
}
