package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

func testApps(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	if apps, err := ls.Apps(ctx); err != nil || len(apps) != 0 {
		t.Fatalf("Apps on an empty database = %v, %v; want none", apps, err)
	}
	// a2 is inserted second but created first: Apps lists by creation time.
	a1 := newApp("app-1", t0)
	a1.Settings = license.AppSettings{HeartbeatInterval: 45, Maintenance: true, MaintenanceMessage: "back soon ✓",
		LoginMessage: "hello", DownloadURL: "https://example.com/dl", SelfResetEnabled: false, SelfResetCooldownHours: 3,
		KeyPrefix: "KW", TrialEnabled: true, TrialDuration: 12, TrialDurationUnit: "hours", TrialMaxDevices: 2,
		TrialFeatures: json.RawMessage(`{"pro":true}`), TrialIPLimit: 5, TrialIPWindowHours: 6}
	a2 := newApp("app-2", t0.Add(-time.Hour))
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.InsertApp(ctx, a1, "hash-1"); err != nil {
			return err
		}
		return tx.InsertApp(ctx, a2, "hash-2")
	})

	got, err := ls.App(ctx, "app-1")
	if err != nil {
		t.Fatal(err)
	}
	checkApp(t, "App(app-1)", got, a1)
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
	}
	got, err = ls.AppBySecretHash(ctx, "hash-2")
	if err != nil {
		t.Fatal(err)
	}
	checkApp(t, "AppBySecretHash(hash-2)", got, a2)
	apps, err := ls.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 || apps[0].ID != "app-2" || apps[1].ID != "app-1" {
		t.Fatalf("Apps = %v, want app-2 then app-1 (creation order)", apps)
	}
	checkApp(t, "Apps()[1]", &apps[1], a1)

	_, err = ls.App(ctx, "missing")
	wantErr(t, "App(missing)", err, apperr.ErrNotFound)
	_, err = ls.AppBySecretHash(ctx, "missing")
	wantErr(t, "AppBySecretHash(missing)", err, apperr.ErrNotFound)

	// Update every mutable field, including the secret and its hash.
	up := *a1
	up.Name, up.Version, up.Secret = "Renamed", "2.0.0", "new-secret"
	up.Settings = license.DefaultSettings()
	up.Settings.LoginMessage = "changed"
	up.UpdatedAt = t0.Add(time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.UpdateApp(ctx, &up, "hash-1b") })
	got, err = ls.AppBySecretHash(ctx, "hash-1b")
	if err != nil {
		t.Fatal(err)
	}
	checkApp(t, "app after UpdateApp", got, &up)
	_, err = ls.AppBySecretHash(ctx, "hash-1")
	wantErr(t, "AppBySecretHash(old hash)", err, apperr.ErrNotFound)

	missing := newApp("missing", t0)
	wantErr(t, "UpdateApp(missing)", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.UpdateApp(ctx, missing, "hash-x")
	}), apperr.ErrNotFound)

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "app-1") })
	_, err = ls.App(ctx, "app-1")
	wantErr(t, "App after DeleteApp", err, apperr.ErrNotFound)
	wantErr(t, "DeleteApp twice", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.DeleteApp(ctx, "app-1")
	}), apperr.ErrNotFound)
	if apps, err := ls.Apps(ctx); err != nil || len(apps) != 1 || apps[0].ID != "app-2" {
		t.Errorf("Apps after delete = %v, %v; want only app-2", apps, err)
	}
}

func testAppConflicts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	wantErr(t, "InsertApp with a taken ID", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertApp(ctx, newApp("a", t0), "hash-new")
	}), apperr.ErrConflict)
	wantErr(t, "InsertApp with a taken secret hash", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertApp(ctx, newApp("c", t0), "hash-a")
	}), apperr.ErrConflict)
	wantErr(t, "UpdateApp to a taken secret hash", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.UpdateApp(ctx, newApp("b", t0), "hash-a")
	}), apperr.ErrConflict)
	if _, err := db.LicenseStore().App(ctx, "c"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("app c after a refused insert: %v, want not found", err)
	}
	if a, err := db.LicenseStore().AppBySecretHash(ctx, "hash-b"); err != nil || a.ID != "b" {
		t.Errorf("app b after a refused update: %v, %v; want it unchanged", a, err)
	}
}

func testDeleteAppCascades(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "gone")
	addApp(t, db, "kept")
	k := addKeys(t, db, newKey("gone", "K-1"))[0]
	kept := addKeys(t, db, newKey("kept", "K-1"))[0]
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.UpsertDevice(ctx, k.ID, "hw", t0) })
	addSessions(t, db, newSession("s-gone", "gone", k.ID, t0), newSession("s-kept", "kept", kept.ID, t0))

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "gone") })
	_, err := ls.Key(ctx, "gone", "K-1")
	wantErr(t, "key of a deleted app", err, apperr.ErrNotFound)
	if ds, err := ls.Devices(ctx, k.ID); err != nil || len(ds) != 0 {
		t.Errorf("devices of a deleted app's key = %v, %v; want none", ds, err)
	}
	_, err = ls.HeartbeatView(ctx, "tok-s-gone")
	wantErr(t, "session of a deleted app", err, apperr.ErrNotFound)
	if _, err := ls.Key(ctx, "kept", "K-1"); err != nil {
		t.Errorf("the other app's key with the same string: %v", err)
	}
	if _, err := ls.HeartbeatView(ctx, "tok-s-kept"); err != nil {
		t.Errorf("the other app's session: %v", err)
	}
}

// ---- keys ----
