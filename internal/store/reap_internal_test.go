package store

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/seal"
)

// TestReapSparesASessionSeenAfterTheScan: the reaper finds silent sessions
// on a read connection and ends them in a later write. A heartbeat written
// in between (here, by the flush) keeps its session live.
func TestReapSparesASessionSeenAfterTheScan(t *testing.T) {
	ctx := context.Background()
	keys, err := seal.New([]byte("keyward test secret key 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, Options{DataDir: t.TempDir(), Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ls := db.LicenseStore()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	now, cutoff := t0.Add(time.Hour), t0.Add(time.Hour-3*time.Minute)
	err = ls.InTx(ctx, func(tx license.Tx) error {
		app := &license.App{ID: "app", Name: "App", Version: "1.0.0", Secret: "secret", Settings: license.DefaultSettings(),
			CreatedAt: t0, UpdatedAt: t0}
		if err := tx.InsertApp(ctx, app, "hash"); err != nil {
			return err
		}
		for _, id := range []string{"silent", "seen-late"} {
			s := &license.Session{ID: id, TokenHash: "tok-" + id, AppID: "app", HWID: "hw", CreatedAt: t0, LastSeenAt: t0}
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := ls.HeartbeatView(ctx, "tok-seen-late")
	if err != nil {
		t.Fatal(err)
	}
	scanned := false
	afterReapScan = func() {
		scanned = true
		if err := ls.TouchSessions(ctx, []license.Touch{{SeenKey: v.SeenKey, TokenHash: "tok-seen-late", At: now}}); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterReapScan = nil }()
	n, err := ls.ReapSessions(ctx, cutoff, now, t0.Add(-24*time.Hour))
	if err != nil || n != 1 || !scanned {
		t.Fatalf("ReapSessions = %d, %v (scanned: %v); want 1, the silent session only", n, err, scanned)
	}
	err = ls.InTx(ctx, func(tx license.Tx) error {
		for id, wantEnded := range map[string]bool{"silent": true, "seen-late": false} {
			s, err := tx.SessionByID(ctx, id)
			if err != nil {
				return err
			}
			if ended := s.EndedAt != nil; ended != wantEnded {
				t.Errorf("session %s ended: %v, want %v", id, ended, wantEnded)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
