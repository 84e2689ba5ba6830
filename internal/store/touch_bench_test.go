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
	seen := make(map[string]time.Time, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := benchT0.Add(time.Duration(i+1) * time.Second)
		for _, id := range ids {
			seen[id] = t
		}
		if err := ls.TouchSessions(ctx, seen); err != nil {
			b.Fatal(err)
		}
	}
}
