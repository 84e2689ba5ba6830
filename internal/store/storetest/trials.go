package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
)

// Trials: one row per device per app, counted per IP in a window, listed with
// their keys, and outliving a deleted key.
func testTrials(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.TrialStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	k := newKey("app", "TRIAL-AAAAA-BBBBB-CCCCC")
	k.Status, k.ActivatedAt, k.ExpiresAt = license.StatusActive, ptr(t0), ptr(t0.Add(72*time.Hour))
	keys := addKeys(t, db, k, newKey("app", "TRIAL-DDDDD-EEEEE-FFFFF"), newKey("other", "K-OTHER"))

	wantErr(t, "LockApp of an unknown app", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.LockApp(ctx, "nope")
	}), apperr.ErrNotFound)
	wantErr(t, "TrialOf before any trial", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.TrialOf(ctx, "app", "pc-1")
		return err
	}), apperr.ErrNotFound)

	trials := []*trial.Trial{
		{AppID: "app", HWID: "pc-1", KeyID: &keys[0].ID, IP: "198.51.100.1", CreatedAt: t0},
		{AppID: "app", HWID: "pc-2", KeyID: &keys[1].ID, IP: "198.51.100.1", CreatedAt: t0.Add(2 * time.Hour)},
		{AppID: "other", HWID: "pc-1", IP: "198.51.100.1", CreatedAt: t0.Add(2 * time.Hour)},
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.LockApp(ctx, "app"); err != nil {
			return err
		}
		for _, tr := range trials {
			if err := tx.InsertTrial(ctx, tr); err != nil {
				return err
			}
		}
		return nil
	})
	if trials[0].ID == 0 || trials[1].ID <= trials[0].ID {
		t.Fatalf("InsertTrial IDs %d, %d: want increasing, non-zero", trials[0].ID, trials[1].ID)
	}
	// A device has one trial per app.
	wantErr(t, "second trial of pc-1", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertTrial(ctx, &trial.Trial{AppID: "app", HWID: "pc-1", IP: "x", CreatedAt: t0})
	}), apperr.ErrConflict)

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.TrialOf(ctx, "app", "pc-1")
		if err != nil {
			return err
		}
		var d diffs
		d.eq("ID", got.ID, trials[0].ID)
		d.eq("KeyID", got.KeyID, &keys[0].ID)
		d.eq("IP", got.IP, "198.51.100.1")
		d.time("CreatedAt", got.CreatedAt, t0)
		d.report(t, "TrialOf(app, pc-1)")
		// The per-IP count is per app and from `since` on, inclusive.
		for _, c := range []struct {
			app, ip string
			since   time.Time
			want    int
		}{
			{"app", "198.51.100.1", t0, 2},
			{"app", "198.51.100.1", t0.Add(time.Millisecond), 1},
			{"app", "198.51.100.1", t0.Add(2 * time.Hour), 1},
			{"app", "198.51.100.1", t0.Add(3 * time.Hour), 0},
			{"app", "203.0.113.9", t0, 0},
			{"other", "198.51.100.1", t0, 1},
		} {
			n, err := tx.CountTrialsFromIP(ctx, c.app, c.ip, c.since)
			if err != nil {
				return err
			}
			if n != c.want {
				t.Errorf("CountTrialsFromIP(%s, %s, %v) = %d, want %d", c.app, c.ip, c.since, n, c.want)
			}
		}
		// KeyByIDForUpdate reads only the app's own keys.
		if got, err := tx.KeyByIDForUpdate(ctx, "app", keys[0].ID); err != nil || got.LicenseKey != k.LicenseKey {
			t.Errorf("KeyByIDForUpdate = %v, %v", got, err)
		}
		return nil
	})
	wantErr(t, "KeyByIDForUpdate of another app's key", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.KeyByIDForUpdate(ctx, "app", keys[2].ID)
		return err
	}), apperr.ErrNotFound)

	// Listing: newest first, joined with the key; the cursor pages by ID.
	list, err := ls.Trials(ctx, "app", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].HWID != "pc-2" || list[1].HWID != "pc-1" {
		t.Fatalf("Trials = %+v, want pc-2 then pc-1", list)
	}
	var d diffs
	d.eq("LicenseKey", list[1].LicenseKey, k.LicenseKey)
	d.eq("Status", list[1].Status, license.StatusActive)
	d.optTime("ExpiresAt", list[1].ExpiresAt, k.ExpiresAt)
	d.time("CreatedAt", list[1].CreatedAt, t0)
	d.report(t, "Trials()[1]")
	if page, err := ls.Trials(ctx, "app", list[0].ID, 10); err != nil || len(page) != 1 || page[0].HWID != "pc-1" {
		t.Errorf("Trials after the first = %+v, %v", page, err)
	}

	// Deleting the key keeps the trial, without a key.
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, keys[0].ID) })
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.TrialOf(ctx, "app", "pc-1")
		if err != nil || got.KeyID != nil {
			t.Errorf("TrialOf after the key was deleted = %+v, %v; want the trial without a key", got, err)
		}
		return nil
	})
	list, err = ls.Trials(ctx, "app", 0, 10)
	if err != nil || len(list) != 2 || list[1].KeyID != nil || list[1].LicenseKey != "" || list[1].ExpiresAt != nil {
		t.Errorf("Trials after the key was deleted = %+v, %v", list, err)
	}
}
