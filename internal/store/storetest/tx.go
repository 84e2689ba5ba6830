package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

var errBoom = errors.New("boom")

// writeEverything writes one row of every kind the license Tx writes.
func writeEverything(ctx context.Context, tx license.Tx, suffix string) error {
	id := "app-" + suffix
	if err := tx.InsertApp(ctx, newApp(id, t0), "hash-"+id); err != nil {
		return err
	}
	keys := []license.Key{newKey(id, "K")}
	if err := tx.InsertKeys(ctx, keys); err != nil {
		return err
	}
	// Reads inside the transaction see its writes.
	k, err := tx.KeyForUpdate(ctx, id, "K")
	if err != nil {
		return fmt.Errorf("KeyForUpdate of a key inserted in the same tx: %w", err)
	}
	if err := tx.UpsertDevice(ctx, k.ID, "hw", t0); err != nil {
		return err
	}
	if err := tx.InsertSession(ctx, newSession("s-"+suffix, id, k.ID, t0)); err != nil {
		return err
	}
	if err := tx.InsertResetRequest(ctx, &license.ResetRequest{AppID: id, KeyID: k.ID, LicenseKey: "K", CreatedAt: t0}); err != nil {
		return err
	}
	if err := tx.AddEvent(ctx, event.Event{AppID: id, Type: event.KeyCreated, Data: map[string]any{"n": 1}, CreatedAt: t0}); err != nil {
		return err
	}
	return tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "key.generate", AppID: id, Target: "K"})
}

func testInTxRollsBack(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "base")
	base := addKeys(t, db, newKey("base", "K"))[0]

	err := ls.InTx(ctx, func(tx license.Tx) error {
		if err := writeEverything(ctx, tx, "err"); err != nil {
			return err
		}
		k := base
		k.Note = "changed in a failed tx"
		if err := tx.UpdateKey(ctx, &k); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != errBoom {
				t.Errorf("InTx recovered %v, want the panic to propagate", p)
			}
		}()
		ls.InTx(ctx, func(tx license.Tx) error {
			if err := writeEverything(ctx, tx, "panic"); err != nil {
				t.Errorf("writeEverything: %v", err)
			}
			panic(errBoom)
		})
	}()

	for _, suffix := range []string{"err", "panic"} {
		_, err := ls.App(ctx, "app-"+suffix)
		wantErr(t, "app of a rolled-back tx", err, apperr.ErrNotFound)
		_, err = ls.Key(ctx, "app-"+suffix, "K")
		wantErr(t, "key of a rolled-back tx", err, apperr.ErrNotFound)
		_, err = ls.HeartbeatView(ctx, "tok-s-"+suffix)
		wantErr(t, "session of a rolled-back tx", err, apperr.ErrNotFound)
	}
	if k, err := ls.Key(ctx, "base", "K"); err != nil || k.Note != "" {
		t.Errorf("key updated in a rolled-back tx: note %q, %v", k.Note, err)
	}
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 0 {
		t.Errorf("events of rolled-back txs = %v, %v; want none", evs, err)
	}
	if es, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(es) != 0 {
		t.Errorf("audit entries of rolled-back txs = %v, %v; want none", es, err)
	}
	// The store is usable afterwards (the writer was released).
	addApp(t, db, "after")
}

func testInTxCommits(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return writeEverything(ctx, tx, "ok") })
	if _, err := ls.App(ctx, "app-ok"); err != nil {
		t.Errorf("app: %v", err)
	}
	k, err := ls.Key(ctx, "app-ok", "K")
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	if ds, err := ls.Devices(ctx, k.ID); err != nil || len(ds) != 1 {
		t.Errorf("devices = %v, %v; want 1", ds, err)
	}
	if _, err := ls.HeartbeatView(ctx, "tok-s-ok"); err != nil {
		t.Errorf("session: %v", err)
	}
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 1 {
		t.Errorf("events = %v, %v; want 1", evs, err)
	}
	if es, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(es) != 1 {
		t.Errorf("audit = %v, %v; want 1", es, err)
	}
}

// ---- journal ----

func testEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	in := []event.Event{
		{AppID: "app", Type: event.KeyCreated, CreatedAt: t0,
			Data: map[string]any{"count": float64(2), "license_keys": []any{"A", "B"}, "nested": map[string]any{"ok": true}}},
		{Type: event.AppRevoked, CreatedAt: t0.Add(time.Second), Data: map[string]any{"app_id": "gone"}},
		{AppID: "app", Type: event.KeyBanned, CreatedAt: t0.Add(2 * time.Second), Data: map[string]any{"reason": "résumé"}},
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, e := range in {
			if err := tx.AddEvent(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	out, err := db.Events(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("Events = %d rows, want %d", len(out), len(in))
	}
	for i := range in {
		var d diffs
		d.eq("AppID", out[i].AppID, in[i].AppID)
		d.eq("Type", out[i].Type, in[i].Type)
		d.eq("Data", out[i].Data, in[i].Data)
		d.time("CreatedAt", out[i].CreatedAt, in[i].CreatedAt)
		if i > 0 && out[i].ID <= out[i-1].ID {
			d = append(d, fmt.Sprintf("ID %d not after %d", out[i].ID, out[i-1].ID))
		}
		d.report(t, fmt.Sprintf("event %d", i))
	}
	if got, err := db.Events(ctx, out[0].ID, 1); err != nil || len(got) != 1 || got[0].ID != out[1].ID {
		t.Errorf("Events(after first, limit 1) = %v, %v; want the second", got, err)
	}
	if got, err := db.Events(ctx, out[2].ID, 100); err != nil || len(got) != 0 {
		t.Errorf("Events(after last) = %v, %v; want none", got, err)
	}
}
