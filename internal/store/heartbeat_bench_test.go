package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// BenchmarkHeartbeatView measures the read every heartbeat makes, on
// SQLite: a live session of a key with an expiry (its id above 255, so
// boxing it allocates, as in a real installation). Its allocs/op is the
// session read's share of a heartbeat's allocations (docs/performance.md).
func BenchmarkHeartbeatView(b *testing.B) {
	ctx := context.Background()
	ls := benchApp(b).LicenseStore()
	t0 := benchT0
	exp := t0.Add(1000 * time.Hour)
	err := ls.InTx(ctx, func(tx license.Tx) error {
		keys := make([]license.Key, 300)
		for i := range keys {
			keys[i] = license.Key{AppID: "app", LicenseKey: fmt.Sprintf("KEY-AAAA-BBBB-%04d", i), Status: license.StatusActive,
				Type: license.TypeLifetime, MaxDevices: 1, ExpiresAt: &exp, CreatedAt: t0, UpdatedAt: t0}
		}
		if err := tx.InsertKeys(ctx, keys); err != nil {
			return err
		}
		s := &license.Session{ID: "0123456789abcdef0123456789abcdef", TokenHash: "tok", AppID: "app", KeyID: &keys[299].ID,
			HWID: "hw", CreatedAt: t0, LastSeenAt: t0}
		return tx.InsertSession(ctx, s)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if v, err := ls.HeartbeatView(ctx, "tok"); err != nil || v.KeyExpiry == nil {
			b.Fatalf("HeartbeatView: %+v, %v", v, err)
		}
	}
}
