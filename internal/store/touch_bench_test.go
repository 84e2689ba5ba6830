package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// benchT0 is the benchmarks' creation time.
var benchT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// benchApp opens a migrated SQLite database holding app "app".
func benchApp(b testing.TB) *store.DB {
	b.Helper()
	ctx := context.Background()
	db := openMigrated(b, store.Options{DataDir: b.TempDir()})
	app := &license.App{ID: "app", Name: "App", Version: "1.0.0", Secret: "secret", Settings: license.DefaultSettings(),
		CreatedAt: benchT0, UpdatedAt: benchT0}
	if err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return tx.InsertApp(ctx, app, "hash") }); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkTouchSessions times one heartbeat flush of 10 000 live sessions,
// each seen later than last time, the sweep's write at 100 000 sessions on a
// 30 s interval after a third of a second's heartbeats.
func BenchmarkTouchSessions(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	ls := benchApp(b).LicenseStore()
	ids := make([]string, n)
	err := ls.InTx(ctx, func(tx license.Tx) error {
		for i := range ids {
			ids[i] = fmt.Sprintf("s-%06d", i)
			s := &license.Session{ID: ids[i], TokenHash: "tok-" + ids[i], AppID: "app", HWID: "hw", CreatedAt: benchT0, LastSeenAt: benchT0}
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	seen := touchesOf(b, ls, benchTokens(ids), benchT0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := benchT0.Add(time.Duration(i+1) * time.Second)
		for j := range seen {
			seen[j].At = t
		}
		if err := ls.TouchSessions(ctx, seen); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTouchSessionsCached times one flush as a fleet of 100 000 live
// sessions makes it with the session cache on: 10 000 sessions spread over
// the whole table (so most pages hold one or two of them), the cache's
// last-seen trigger firing for each row.
func BenchmarkTouchSessionsCached(b *testing.B) {
	const live, touched = 100_000, 10_000
	ctx := context.Background()
	db := benchApp(b)
	if err := db.CacheSessions(ctx, live); err != nil {
		b.Fatal(err)
	}
	ls := db.LicenseStore()
	all := touchesOf(b, ls, benchTokens(benchSessions(b, ls, live)), benchT0)
	seen := make([]license.Touch, 0, touched)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := benchT0.Add(time.Duration(i+1) * time.Second)
		seen = seen[:0]
		// A different tenth of the sessions each time, every tenth one.
		for j := i % 10; j < live; j += 10 {
			s := all[j]
			s.At = t
			seen = append(seen, s)
		}
		if err := ls.TouchSessions(ctx, seen); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTokens is the token hashes of the sessions ids ("tok-" and the id,
// as benchSessions and BenchmarkTouchSessions open them).
func benchTokens(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "tok-" + id
	}
	return out
}

// benchSessions opens n sessions of app "app", last seen at benchT0, and
// returns their ids.
func benchSessions(b *testing.B, ls license.Store, n int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%06d", i)
	}
	for start := 0; start < n; start += 10_000 {
		err := ls.InTx(ctx, func(tx license.Tx) error {
			for _, id := range ids[start:min(n, start+10_000)] {
				s := &license.Session{ID: id, TokenHash: "tok-" + id, AppID: "app", HWID: "hw", CreatedAt: benchT0, LastSeenAt: benchT0}
				if err := tx.InsertSession(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// BenchmarkReapSessions times the session reaper's run over 100 000 live
// sessions of which none is silent: the scan of the live sessions it does
// every 15 s (on a read connection), and its write of nothing.
func BenchmarkReapSessions(b *testing.B) {
	ctx := context.Background()
	ls := benchApp(b).LicenseStore()
	benchSessions(b, ls, 100_000)
	cutoff := benchT0.Add(-time.Minute)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := ls.ReapSessions(ctx, cutoff, benchT0, benchT0.Add(-24*time.Hour)); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
}
