// Package storetest is the storage conformance suite: every behaviour the
// domain packages (license, admin), the HTTP layer's replay store and the
// journal readers rely on, run against one engine. store_test runs it on
// SQLite and, when KEYWARD_TEST_DATABASE_URL is set, on PostgreSQL.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// Exercise runs the suite as parallel subtests. open must return a fresh,
// migrated, empty database and close it when its test ends; every subtest
// calls it once.
func Exercise(t *testing.T, open func(t *testing.T) *store.DB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db *store.DB)
	}{
		{"Apps", testApps},
		{"AppConflicts", testAppConflicts},
		{"DeleteAppCascades", testDeleteAppCascades},
		{"KeyRoundTrip", testKeyRoundTrip},
		{"KeyConflictsAndMissing", testKeyConflictsAndMissing},
		{"InsertKeysBatches", testInsertKeysBatches},
		{"KeyListing", testKeyListing},
		{"Devices", testDevices},
		{"Sessions", testSessions},
		{"SessionListing", testSessionListing},
		{"HeartbeatView", testHeartbeatView},
		{"TouchSessions", testTouchSessions},
		{"ReapSessions", testReapSessions},
		{"InTxRollsBack", testInTxRollsBack},
		{"InTxCommits", testInTxCommits},
		{"Events", testEvents},
		{"Audit", testAudit},
		{"ResetRequests", testResetRequests},
		{"Admins", testAdmins},
		{"ServerSecret", testServerSecret},
		{"Replay", testReplay},
		{"ReplayErrors", testReplayErrors},
		{"ReplayExpiry", testReplayExpiry},
		{"ReplayConcurrentClaims", testReplayConcurrentClaims},
		{"ConcurrentKeyUpdates", testConcurrentKeyUpdates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// t0 has sub-millisecond digits and a non-UTC zone: the store keeps
// milliseconds and answers in UTC, and every comparison allows for exactly that.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 123_456_789, time.FixedZone("CET", 3600))

// stored is what a time reads back as.
func stored(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

func ptr[T any](v T) *T { return &v }

func inTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx license.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("InTx: %v", err)
	}
}

// txErr runs fn in its own transaction and returns its error (PostgreSQL
// aborts a transaction after a failed statement, so each expected failure
// gets its own).
func txErr(db *store.DB, fn func(ctx context.Context, tx license.Tx) error) error {
	ctx := context.Background()
	return db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return fn(ctx, tx) })
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got error %v, want %v", what, err, sentinel)
	}
}

func newApp(id string, created time.Time) *license.App {
	s := license.DefaultSettings()
	return &license.App{ID: id, Name: "App " + id, Version: "1.0.0", Secret: "secret-" + id, Settings: s,
		CreatedAt: created, UpdatedAt: created}
}

func addApp(t *testing.T, db *store.DB, id string) *license.App {
	t.Helper()
	a := newApp(id, t0)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.InsertApp(ctx, a, "hash-"+id) })
	return a
}

func newKey(appID, lk string) license.Key {
	return license.Key{AppID: appID, LicenseKey: lk, Status: license.StatusUnused, Type: license.TypeDays, Duration: 30,
		MaxDevices: 1, CreatedAt: t0, UpdatedAt: t0}
}

func addKeys(t *testing.T, db *store.DB, keys ...license.Key) []license.Key {
	t.Helper()
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.InsertKeys(ctx, keys) })
	for _, k := range keys {
		if k.ID == 0 {
			t.Fatalf("InsertKeys left key %s without an ID", k.LicenseKey)
		}
	}
	return keys
}

func newSession(id string, appID string, keyID int64, created time.Time) *license.Session {
	return &license.Session{ID: id, TokenHash: "tok-" + id, AppID: appID, KeyID: ptr(keyID), HWID: "hw-" + id, IP: "203.0.113.7",
		CreatedAt: created, LastSeenAt: created}
}

func addSessions(t *testing.T, db *store.DB, ss ...*license.Session) {
	t.Helper()
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		for _, s := range ss {
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- comparisons ----

type diffs []string

func (d *diffs) time(name string, got, want time.Time) {
	if !got.Equal(stored(want)) {
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", name, got, stored(want)))
	}
}

func (d *diffs) optTime(name string, got, want *time.Time) {
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", name, got, want))
	default:
		d.time(name, *got, *want)
	}
}

func (d *diffs) eq(name string, got, want any) {
	if !reflect.DeepEqual(got, want) {
		*d = append(*d, fmt.Sprintf("%s = %#v, want %#v", name, got, want))
	}
}

func (d diffs) report(t *testing.T, what string) {
	t.Helper()
	if len(d) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(d, "\n  "))
	}
}

func checkApp(t *testing.T, what string, got *license.App, want *license.App) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("Name", got.Name, want.Name)
	d.eq("Version", got.Version, want.Version)
	d.eq("Secret", got.Secret, want.Secret)
	d.eq("Settings", got.Settings, want.Settings)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkKey(t *testing.T, what string, got *license.Key, want license.Key) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("LicenseKey", got.LicenseKey, want.LicenseKey)
	d.eq("Status", got.Status, want.Status)
	d.eq("Type", got.Type, want.Type)
	d.eq("Duration", got.Duration, want.Duration)
	d.eq("MaxDevices", got.MaxDevices, want.MaxDevices)
	d.eq("Note", got.Note, want.Note)
	d.eq("Features", string(got.Features), string(want.FeaturesJSON()))
	d.optTime("ActivatedAt", got.ActivatedAt, want.ActivatedAt)
	d.optTime("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	d.optTime("LastSelfResetAt", got.LastSelfResetAt, want.LastSelfResetAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkSession(t *testing.T, what string, got *license.Session, want *license.Session) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("TokenHash", got.TokenHash, want.TokenHash)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("KeyID", got.KeyID, want.KeyID)
	d.eq("HWID", got.HWID, want.HWID)
	d.eq("IP", got.IP, want.IP)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("LastSeenAt", got.LastSeenAt, want.LastSeenAt)
	d.optTime("EndedAt", got.EndedAt, want.EndedAt)
	d.eq("EndReason", got.EndReason, want.EndReason)
	d.report(t, what)
}

func keyIDs(keys []license.Key) []int64 {
	out := []int64{}
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

func sessionIDs(ss []license.Session) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// ---- apps ----

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
		KeyPrefix: "KW"}
	a2 := newApp("app-2", t0.Add(-time.Hour))
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
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
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.UpdateApp(ctx, &up, "hash-1b") })
	got, err = ls.AppBySecretHash(ctx, "hash-1b")
	if err != nil {
		t.Fatal(err)
	}
	checkApp(t, "app after UpdateApp", got, &up)
	_, err = ls.AppBySecretHash(ctx, "hash-1")
	wantErr(t, "AppBySecretHash(old hash)", err, apperr.ErrNotFound)

	missing := newApp("missing", t0)
	wantErr(t, "UpdateApp(missing)", txErr(db, func(ctx context.Context, tx license.Tx) error {
		return tx.UpdateApp(ctx, missing, "hash-x")
	}), apperr.ErrNotFound)

	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.DeleteApp(ctx, "app-1") })
	_, err = ls.App(ctx, "app-1")
	wantErr(t, "App after DeleteApp", err, apperr.ErrNotFound)
	wantErr(t, "DeleteApp twice", txErr(db, func(ctx context.Context, tx license.Tx) error {
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
	wantErr(t, "InsertApp with a taken ID", txErr(db, func(ctx context.Context, tx license.Tx) error {
		return tx.InsertApp(ctx, newApp("a", t0), "hash-new")
	}), apperr.ErrConflict)
	wantErr(t, "InsertApp with a taken secret hash", txErr(db, func(ctx context.Context, tx license.Tx) error {
		return tx.InsertApp(ctx, newApp("c", t0), "hash-a")
	}), apperr.ErrConflict)
	wantErr(t, "UpdateApp to a taken secret hash", txErr(db, func(ctx context.Context, tx license.Tx) error {
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
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.UpsertDevice(ctx, k.ID, "hw", t0) })
	addSessions(t, db, newSession("s-gone", "gone", k.ID, t0), newSession("s-kept", "kept", kept.ID, t0))

	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.DeleteApp(ctx, "gone") })
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

func testKeyRoundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	unused := newKey("app", "KW-UNUSED")
	unused.Note = "für Zoë — 100%"
	unused.Features = json.RawMessage(`{"tier":"pro","seats":3,"beta":true}`)
	lifetime := newKey("app", "KW-LIFETIME")
	lifetime.Type, lifetime.Duration, lifetime.MaxDevices = license.TypeLifetime, 0, 5
	// A key inserted already active (an import, a trial) keeps its times.
	active := newKey("app", "KW-ACTIVE")
	active.Status = license.StatusActive
	active.ActivatedAt = ptr(t0.Add(-24 * time.Hour))
	active.ExpiresAt = ptr(t0.Add(29 * 24 * time.Hour))
	active.LastSelfResetAt = ptr(t0.Add(-time.Hour))
	keys := addKeys(t, db, unused, lifetime, active)
	if keys[0].ID == keys[1].ID || keys[1].ID == keys[2].ID || keys[0].ID == keys[2].ID {
		t.Fatalf("InsertKeys IDs %v are not distinct", keyIDs(keys))
	}
	for _, want := range keys {
		got, err := ls.Key(ctx, "app", want.LicenseKey)
		if err != nil {
			t.Fatalf("Key(%s): %v", want.LicenseKey, err)
		}
		checkKey(t, "Key("+want.LicenseKey+") after InsertKeys", got, want)
	}
	if got, _ := ls.Key(ctx, "app", "KW-LIFETIME"); got != nil && string(got.Features) != "{}" {
		t.Errorf("features of a key inserted without any = %s, want {}", got.Features)
	}

	// KeyForUpdate reads the same row; UpdateKey writes every mutable field.
	want := keys[0]
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		k, err := tx.KeyForUpdate(ctx, "app", "KW-UNUSED")
		if err != nil {
			return err
		}
		checkKey(t, "KeyForUpdate", k, want)
		k.LicenseKey = "KW-ROTATED"
		k.Status = license.StatusActive
		k.Duration, k.MaxDevices = 90, 3
		k.Note = "rotated"
		k.Features = json.RawMessage(`{"tier":"enterprise"}`)
		k.ActivatedAt = ptr(t0.Add(time.Second + 999*time.Microsecond))
		k.ExpiresAt = ptr(t0.Add(90 * 24 * time.Hour))
		k.LastSelfResetAt = ptr(t0.Add(2 * time.Second))
		k.UpdatedAt = t0.Add(3 * time.Second)
		want = *k
		return tx.UpdateKey(ctx, k)
	})
	got, err := ls.Key(ctx, "app", "KW-ROTATED")
	if err != nil {
		t.Fatal(err)
	}
	checkKey(t, "key after UpdateKey", got, want)
	_, err = ls.Key(ctx, "app", "KW-UNUSED")
	wantErr(t, "Key(old string) after rotation", err, apperr.ErrNotFound)

	// Clearing optional times stores NULL, not zero.
	want.ExpiresAt, want.LastSelfResetAt, want.Features = nil, nil, nil
	want.UpdatedAt = t0.Add(4 * time.Second)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { k := want; return tx.UpdateKey(ctx, &k) })
	got, err = ls.Key(ctx, "app", "KW-ROTATED")
	if err != nil {
		t.Fatal(err)
	}
	checkKey(t, "key after clearing its expiry", got, want)
	if got.DaysRemaining(t0) != nil {
		t.Errorf("DaysRemaining of a key without expiry = %v, want nil", *got.DaysRemaining(t0))
	}
}

func testKeyConflictsAndMissing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	keys := addKeys(t, db, newKey("a", "K-1"), newKey("a", "K-2"))
	// The same string in another app is a different key.
	addKeys(t, db, newKey("b", "K-1"))

	wantErr(t, "InsertKeys with a taken string", txErr(db, func(ctx context.Context, tx license.Tx) error {
		return tx.InsertKeys(ctx, []license.Key{newKey("a", "K-3"), newKey("a", "K-1")})
	}), apperr.ErrConflict)
	_, err := ls.Key(ctx, "a", "K-3")
	wantErr(t, "K-3 of a refused batch", err, apperr.ErrNotFound)
	wantErr(t, "UpdateKey rotating onto a taken string", txErr(db, func(ctx context.Context, tx license.Tx) error {
		k := keys[1]
		k.LicenseKey = "K-1"
		return tx.UpdateKey(ctx, &k)
	}), apperr.ErrConflict)

	_, err = ls.Key(ctx, "a", "nope")
	wantErr(t, "Key(missing)", err, apperr.ErrNotFound)
	_, err = ls.Key(ctx, "missing-app", "K-1")
	wantErr(t, "Key(other app)", err, apperr.ErrNotFound)
	wantErr(t, "KeyForUpdate(missing)", txErr(db, func(ctx context.Context, tx license.Tx) error {
		_, err := tx.KeyForUpdate(ctx, "a", "nope")
		return err
	}), apperr.ErrNotFound)
	wantErr(t, "UpdateKey(missing)", txErr(db, func(ctx context.Context, tx license.Tx) error {
		k := keys[0]
		k.ID = 1 << 40
		return tx.UpdateKey(ctx, &k)
	}), apperr.ErrNotFound)

	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.DeleteKey(ctx, keys[0].ID) })
	_, err = ls.Key(ctx, "a", "K-1")
	wantErr(t, "Key after DeleteKey", err, apperr.ErrNotFound)
	wantErr(t, "DeleteKey twice", txErr(db, func(ctx context.Context, tx license.Tx) error {
		return tx.DeleteKey(ctx, keys[0].ID)
	}), apperr.ErrNotFound)
	if _, err := ls.Key(ctx, "b", "K-1"); err != nil {
		t.Errorf("app b's K-1 after deleting app a's: %v", err)
	}
}

func testInsertKeysBatches(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	keys := make([]license.Key, 450) // more than one multi-row statement
	for i := range keys {
		keys[i] = newKey("app", fmt.Sprintf("K-%04d", i))
	}
	addKeys(t, db, keys...)
	seen := map[int64]bool{}
	for _, k := range keys {
		if seen[k.ID] {
			t.Fatalf("ID %d given to two keys", k.ID)
		}
		seen[k.ID] = true
	}
	for _, i := range []int{0, 199, 200, 449} {
		got, err := db.LicenseStore().Key(ctx, "app", keys[i].LicenseKey)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != keys[i].ID {
			t.Errorf("key %s: stored ID %d, InsertKeys reported %d", keys[i].LicenseKey, got.ID, keys[i].ID)
		}
	}
	all, err := db.LicenseStore().Keys(ctx, license.KeyFilter{AppID: "app", Limit: 1000, Now: t0})
	if err != nil || len(all) != len(keys) {
		t.Errorf("Keys lists %d keys (%v), want %d", len(all), err, len(keys))
	}
}

func testKeyListing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	now := t0
	addApp(t, db, "app")
	addApp(t, db, "other")
	mk := func(lk string, st license.Status, expires *time.Time, note string) license.Key {
		k := newKey("app", lk)
		k.Status, k.ExpiresAt, k.Note = st, expires, note
		if st != license.StatusUnused {
			k.ActivatedAt = ptr(now.Add(-time.Hour))
		}
		return k
	}
	keys := addKeys(t, db,
		mk("AAAA-0001", license.StatusUnused, nil, "Alpha customer"),
		mk("AAAA-0002", license.StatusActive, nil, "100% off"),                             // lifetime
		mk("AAAA-0003", license.StatusActive, ptr(now.Add(time.Hour)), "under_score"),      // active
		mk("AAAA-0004", license.StatusActive, ptr(now.Add(-time.Millisecond)), ""),         // past expiry
		mk("AAAA-0005", license.StatusActive, ptr(now), ""),                                // expires exactly now
		mk("AAAA-0006", license.StatusPaused, ptr(now.Add(-time.Hour)), "paused, expired"), // paused stays paused
		mk("BBBB-0007", license.StatusBanned, nil, ""),
		mk("BBBB-0008", license.StatusExpired, ptr(now.Add(-time.Hour)), "ALPHA"),
	)
	o := newKey("other", "AAAA-0001")
	o.Note = "Alpha customer"
	addKeys(t, db, o)
	id := func(i ...int) []int64 {
		out := []int64{}
		for _, n := range i {
			out = append(out, keys[n-1].ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    license.KeyFilter
		want []int64
	}{
		{"all", license.KeyFilter{}, id(1, 2, 3, 4, 5, 6, 7, 8)},
		{"unused", license.KeyFilter{Status: license.StatusUnused}, id(1)},
		{"active at now", license.KeyFilter{Status: license.StatusActive}, id(2, 3)},
		{"expired at now", license.KeyFilter{Status: license.StatusExpired}, id(4, 5, 8)},
		{"paused", license.KeyFilter{Status: license.StatusPaused}, id(6)},
		{"banned", license.KeyFilter{Status: license.StatusBanned}, id(7)},
		{"active an hour earlier", license.KeyFilter{Status: license.StatusActive, Now: now.Add(-time.Hour)}, id(2, 3, 4, 5)},
		{"expired two hours later", license.KeyFilter{Status: license.StatusExpired, Now: now.Add(2 * time.Hour)}, id(3, 4, 5, 8)},
		{"query note, any case", license.KeyFilter{Query: "alpha"}, id(1, 8)},
		{"query key", license.KeyFilter{Query: "bbbb-000"}, id(7, 8)},
		{"query literal %", license.KeyFilter{Query: "%"}, id(2)},
		{"query literal _", license.KeyFilter{Query: "_"}, id(3)},
		{"query no match", license.KeyFilter{Query: "zzz"}, id()},
		{"status and query", license.KeyFilter{Status: license.StatusExpired, Query: "alpha"}, id(8)},
		{"cursor", license.KeyFilter{After: keys[2].ID, Limit: 2}, id(4, 5)},
		{"cursor past the end", license.KeyFilter{After: keys[7].ID}, id()},
		{"cursor with status", license.KeyFilter{Status: license.StatusExpired, After: keys[3].ID}, id(5, 8)},
	}
	for _, c := range cases {
		f := c.f
		f.AppID = "app"
		if f.Limit == 0 {
			f.Limit = 100
		}
		if f.Now.IsZero() {
			f.Now = now
		}
		got, err := ls.Keys(ctx, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(keyIDs(got), c.want) {
			t.Errorf("%s: Keys = %v, want %v", c.name, keyIDs(got), c.want)
		}
		for i := range got {
			if got[i].AppID != "app" {
				t.Errorf("%s: key %d of app %s listed", c.name, got[i].ID, got[i].AppID)
			}
		}
	}
	// The filter's effective status agrees with StatusAt for every key.
	for _, k := range keys {
		got, err := ls.Keys(ctx, license.KeyFilter{AppID: "app", Status: k.StatusAt(now), Now: now, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if !contains(keyIDs(got), k.ID) {
			t.Errorf("key %s (effective %s) is not listed under that status", k.LicenseKey, k.StatusAt(now))
		}
	}
	// Paging with a cursor visits every key once, in ID order.
	var paged []int64
	after := int64(0)
	for range 10 {
		page, err := ls.Keys(ctx, license.KeyFilter{AppID: "app", After: after, Limit: 3, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d keys, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, keyIDs(page)...)
		after = page[len(page)-1].ID
	}
	if !reflect.DeepEqual(paged, id(1, 2, 3, 4, 5, 6, 7, 8)) {
		t.Errorf("paging visited %v, want %v", paged, id(1, 2, 3, 4, 5, 6, 7, 8))
	}
	// Listed keys carry every field.
	got, err := ls.Keys(ctx, license.KeyFilter{AppID: "app", Query: "0003", Limit: 1, Now: now})
	if err != nil || len(got) != 1 {
		t.Fatalf("Keys(0003) = %v, %v", got, err)
	}
	checkKey(t, "listed key", &got[0], keys[2])
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ---- devices ----

func testDevices(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	k, other := keys[0].ID, keys[1].ID
	t1, t2, t3 := t0, t0.Add(time.Minute), t0.Add(2*time.Minute)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		for _, d := range []struct {
			hwid string
			at   time.Time
		}{{"hw-b", t1}, {"hw-b", t2}, {"hw-a", t3}} {
			if err := tx.UpsertDevice(ctx, k, d.hwid, d.at); err != nil {
				return err
			}
		}
		// The transaction sees its own writes.
		ds, err := tx.Devices(ctx, k)
		if err != nil {
			return err
		}
		if len(ds) != 2 {
			t.Errorf("tx.Devices = %v, want 2 devices", ds)
		}
		return tx.UpsertDevice(ctx, other, "hw-b", t1)
	})
	// Upserting twice keeps one row, its first-seen time and the newest last-seen time.
	ds, err := ls.Devices(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("Devices = %v, want hw-b and hw-a", ds)
	}
	var d diffs
	d.eq("[0].HWID", ds[0].HWID, "hw-b")
	d.eq("[0].KeyID", ds[0].KeyID, k)
	d.time("[0].CreatedAt", ds[0].CreatedAt, t1)
	d.time("[0].LastSeenAt", ds[0].LastSeenAt, t2)
	d.eq("[1].HWID", ds[1].HWID, "hw-a")
	d.time("[1].CreatedAt", ds[1].CreatedAt, t3)
	d.time("[1].LastSeenAt", ds[1].LastSeenAt, t3)
	d.report(t, "Devices (oldest first)")

	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		n, err := tx.DeleteDevices(ctx, k)
		if n != 2 {
			t.Errorf("DeleteDevices = %d, want 2", n)
		}
		if err != nil {
			return err
		}
		n, err = tx.DeleteDevices(ctx, k)
		if n != 0 {
			t.Errorf("DeleteDevices again = %d, want 0", n)
		}
		return err
	})
	if ds, err := ls.Devices(ctx, k); err != nil || len(ds) != 0 {
		t.Errorf("Devices after DeleteDevices = %v, %v; want none", ds, err)
	}
	if ds, err := ls.Devices(ctx, other); err != nil || len(ds) != 1 {
		t.Errorf("other key's devices = %v, %v; want its one device", ds, err)
	}
	// Deleting a key deletes its devices.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.DeleteKey(ctx, other) })
	if ds, err := ls.Devices(ctx, other); err != nil || len(ds) != 0 {
		t.Errorf("devices of a deleted key = %v, %v; want none", ds, err)
	}
}

// ---- sessions ----

func testSessions(t *testing.T, db *store.DB) {
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	k, k2 := keys[0].ID, keys[1].ID
	// IDs sort differently from creation times: oldest first means by time.
	s1 := newSession("s-b", "app", k, t0)
	s2 := newSession("s-c", "app", k, t0.Add(time.Second))
	s3 := newSession("s-a", "app", k, t0.Add(-time.Second))
	sOther := newSession("s-other", "app", k2, t0)
	addSessions(t, db, s1, s2, s3, sOther)

	wantErr(t, "InsertSession with a taken ID", txErr(db, func(ctx context.Context, tx license.Tx) error {
		s := newSession("s-b", "app", k, t0)
		s.TokenHash = "fresh"
		return tx.InsertSession(ctx, s)
	}), apperr.ErrConflict)
	wantErr(t, "InsertSession with a taken token hash", txErr(db, func(ctx context.Context, tx license.Tx) error {
		s := newSession("s-new", "app", k, t0)
		s.TokenHash = s1.TokenHash
		return tx.InsertSession(ctx, s)
	}), apperr.ErrConflict)

	end := t0.Add(time.Minute)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if err != nil {
			return err
		}
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-a", "s-b", "s-c"}) {
			t.Errorf("LiveSessionsOfKey = %v, want s-a, s-b, s-c (oldest first)", got)
		}
		if len(live) == 3 {
			checkSession(t, "LiveSessionsOfKey[1]", &live[1], s1)
		}
		got, err := tx.SessionByTokenHash(ctx, s1.TokenHash)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByTokenHash(live)", got, s1)
		got, err = tx.SessionByID(ctx, s2.ID)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByID(live)", got, s2)
		_, err = tx.SessionByTokenHash(ctx, "missing")
		wantErr(t, "SessionByTokenHash(missing)", err, apperr.ErrNotFound)
		_, err = tx.SessionByID(ctx, "missing")
		wantErr(t, "SessionByID(missing)", err, apperr.ErrNotFound)
		return tx.EndSession(ctx, s1.ID, license.CodeBanned, end)
	})

	// Ending an ended session changes nothing.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		if err := tx.EndSession(ctx, s1.ID, license.CodeSessionRevoked, end.Add(time.Hour)); err != nil {
			return err
		}
		return tx.EndSession(ctx, "missing", license.CodeSessionRevoked, end)
	})
	ended := *s1
	ended.EndedAt, ended.EndReason = &end, license.CodeBanned
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		got, err := tx.SessionByTokenHash(ctx, s1.TokenHash)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByTokenHash(ended)", got, &ended)
		got, err = tx.SessionByID(ctx, s1.ID)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByID(ended)", got, &ended)
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-a", "s-c"}) {
			t.Errorf("LiveSessionsOfKey after EndSession = %v, want s-a, s-c", got)
		}
		return err
	})

	reset := t0.Add(2 * time.Minute)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		n, err := tx.EndKeySessions(ctx, k, license.CodeHWIDReset, reset)
		if err != nil {
			return err
		}
		if n != 2 {
			t.Errorf("EndKeySessions = %d, want 2 (the ended one is not counted)", n)
		}
		n, err = tx.EndKeySessions(ctx, k, license.CodeHWIDReset, reset)
		if n != 0 {
			t.Errorf("EndKeySessions again = %d, want 0", n)
		}
		return err
	})
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if err != nil {
			return err
		}
		if len(live) != 0 {
			t.Errorf("LiveSessionsOfKey after EndKeySessions = %v, want none", sessionIDs(live))
		}
		for _, s := range []*license.Session{s2, s3} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			want := *s
			want.EndedAt, want.EndReason = &reset, license.CodeHWIDReset
			checkSession(t, "session after EndKeySessions", got, &want)
		}
		got, err := tx.SessionByID(ctx, s1.ID)
		if err != nil {
			return err
		}
		checkSession(t, "earlier ended session after EndKeySessions", got, &ended)
		live, err = tx.LiveSessionsOfKey(ctx, k2)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-other"}) {
			t.Errorf("other key's live sessions = %v, want s-other", got)
		}
		return err
	})
}

func testSessionListing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	ko := addKeys(t, db, newKey("other", "K-1"))[0]
	addSessions(t, db,
		newSession("s-1", "app", keys[0].ID, t0),
		newSession("s-2", "app", keys[1].ID, t0),
		newSession("s-3", "app", keys[0].ID, t0),
		newSession("s-4", "app", keys[0].ID, t0),
		newSession("s-5", "app", keys[1].ID, t0),
		newSession("s-o", "other", ko.ID, t0),
	)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		if err := tx.EndSession(ctx, "s-3", license.CodeSessionRevoked, t0); err != nil {
			return err
		}
		return tx.DeleteKey(ctx, keys[1].ID) // s-2, s-5 stay live without a key
	})
	cases := []struct {
		name string
		f    license.SessionFilter
		want []string
	}{
		{"live sessions of the app", license.SessionFilter{}, []string{"s-1", "s-2", "s-4", "s-5"}},
		{"of one key", license.SessionFilter{KeyID: keys[0].ID}, []string{"s-1", "s-4"}},
		{"cursor and limit", license.SessionFilter{After: "s-1", Limit: 2}, []string{"s-2", "s-4"}},
		{"cursor at the end", license.SessionFilter{After: "s-5"}, []string{}},
	}
	for _, c := range cases {
		f := c.f
		f.AppID = "app"
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := ls.Sessions(ctx, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(sessionIDs(got), c.want) {
			t.Errorf("%s: Sessions = %v, want %v", c.name, sessionIDs(got), c.want)
		}
	}
	got, err := ls.Sessions(ctx, license.SessionFilter{AppID: "app", Limit: 100})
	if err != nil || len(got) != 4 {
		t.Fatalf("Sessions = %v, %v", got, err)
	}
	want := newSession("s-1", "app", keys[0].ID, t0)
	checkSession(t, "listed session", &got[0], want)
	if got[0].LicenseKey != "K-1" {
		t.Errorf("listed session's LicenseKey = %q, want K-1 (joined)", got[0].LicenseKey)
	}
	if got[1].KeyID != nil || got[1].LicenseKey != "" {
		t.Errorf("session of a deleted key: KeyID %v, LicenseKey %q; want nil and empty", got[1].KeyID, got[1].LicenseKey)
	}
}

func testHeartbeatView(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	active := newKey("app", "K-ACTIVE")
	active.Status, active.ActivatedAt, active.ExpiresAt = license.StatusActive, ptr(t0), ptr(t0.Add(48*time.Hour))
	lifetime := newKey("app", "K-LIFE")
	lifetime.Status, lifetime.Type, lifetime.ActivatedAt = license.StatusActive, license.TypeLifetime, ptr(t0)
	keys := addKeys(t, db, active, lifetime)
	s1 := newSession("s-1", "app", keys[0].ID, t0)
	s2 := newSession("s-2", "app", keys[1].ID, t0)
	addSessions(t, db, s1, s2)

	view := func(hash string) *license.HeartbeatView {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, hash)
		if err != nil {
			t.Fatalf("HeartbeatView(%s): %v", hash, err)
		}
		return v
	}
	v := view(s1.TokenHash)
	// The view carries only the session fields the heartbeat decides on.
	var d diffs
	d.eq("Session.ID", v.Session.ID, s1.ID)
	d.eq("Session.TokenHash", v.Session.TokenHash, s1.TokenHash)
	d.eq("Session.AppID", v.Session.AppID, s1.AppID)
	d.eq("Session.KeyID", v.Session.KeyID, s1.KeyID)
	d.time("Session.LastSeenAt", v.Session.LastSeenAt, s1.LastSeenAt)
	d.optTime("Session.EndedAt", v.Session.EndedAt, s1.EndedAt)
	d.eq("Session.EndReason", v.Session.EndReason, s1.EndReason)
	d.eq("KeyExists", v.KeyExists, true)
	d.eq("KeyStatus", v.KeyStatus, license.StatusActive)
	d.optTime("KeyExpiry", v.KeyExpiry, active.ExpiresAt)
	d.eq("KeyString", v.KeyString, "K-ACTIVE")
	d.report(t, "HeartbeatView of a live session")
	if v := view(s2.TokenHash); v.KeyExpiry != nil || v.KeyStatus != license.StatusActive || v.KeyString != "K-LIFE" {
		t.Errorf("HeartbeatView of a lifetime key = %+v, want active, no expiry", v)
	}

	// The key's state is read fresh: a ban shows at once.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		k, err := tx.KeyForUpdate(ctx, "app", "K-ACTIVE")
		if err != nil {
			return err
		}
		k.Status = license.StatusBanned
		return tx.UpdateKey(ctx, k)
	})
	if v := view(s1.TokenHash); v.KeyStatus != license.StatusBanned || v.Session.EndedAt != nil {
		t.Errorf("HeartbeatView after a ban: status %s, ended %v; want banned, live", v.KeyStatus, v.Session.EndedAt)
	}

	// An ended session is still found, with its reason.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		return tx.EndSession(ctx, s1.ID, license.CodeBanned, t0.Add(time.Second))
	})
	if v := view(s1.TokenHash); v.Session.EndedAt == nil || v.Session.EndReason != license.CodeBanned {
		t.Errorf("HeartbeatView of an ended session: ended %v, reason %q; want ended, BANNED", v.Session.EndedAt, v.Session.EndReason)
	}

	// A deleted key leaves the session without key state.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return tx.DeleteKey(ctx, keys[1].ID) })
	v = view(s2.TokenHash)
	if v.KeyExists || v.KeyStatus != "" || v.KeyExpiry != nil || v.KeyString != "" || v.Session.KeyID != nil {
		t.Errorf("HeartbeatView after the key was deleted = %+v, want no key state and a nil KeyID", v)
	}
	if v.Session.EndedAt != nil {
		t.Errorf("deleting a key ended its session in the store (ended_at %v)", v.Session.EndedAt)
	}

	_, err := ls.HeartbeatView(ctx, "missing")
	wantErr(t, "HeartbeatView(missing)", err, apperr.ErrNotFound)
}

func testTouchSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0].ID
	s1 := newSession("s-1", "app", k, t0)
	s2 := newSession("s-2", "app", k, t0)
	s3 := newSession("s-3", "app", k, t0)
	addSessions(t, db, s1, s2, s3)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		return tx.EndSession(ctx, s3.ID, license.CodeSessionRevoked, t0)
	})
	seen := func(s *license.Session) time.Time {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, s.TokenHash)
		if err != nil {
			t.Fatal(err)
		}
		return v.Session.LastSeenAt
	}

	if err := ls.TouchSessions(ctx, map[string]time.Time{}); err != nil {
		t.Fatalf("TouchSessions(empty): %v", err)
	}
	later := t0.Add(10 * time.Second)
	err := ls.TouchSessions(ctx, map[string]time.Time{s1.ID: later, s2.ID: t0.Add(5 * time.Second), s3.ID: later, "missing": later})
	if err != nil {
		t.Fatal(err)
	}
	var d diffs
	d.time("s-1", seen(s1), later)
	d.time("s-2", seen(s2), t0.Add(5*time.Second))
	d.time("s-3 (ended)", seen(s3), t0)
	d.report(t, "last seen after TouchSessions")

	// A time never moves backwards.
	if err := ls.TouchSessions(ctx, map[string]time.Time{s1.ID: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := seen(s1); !got.Equal(stored(later)) {
		t.Errorf("an older touch moved last seen back to %v (was %v)", got, stored(later))
	}
}

func testReapSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	now := t0
	cutoff, purge := now.Add(-180*time.Second), now.Add(-24*time.Hour)
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0].ID
	stale := newSession("stale", "app", k, now.Add(-time.Hour))
	stale.LastSeenAt = cutoff.Add(-time.Millisecond)
	boundary := newSession("boundary", "app", k, now.Add(-time.Hour))
	boundary.LastSeenAt = cutoff
	fresh := newSession("fresh", "app", k, now.Add(-100*time.Second))
	oldTomb := newSession("old-tomb", "app", k, now.Add(-48*time.Hour))
	newTomb := newSession("new-tomb", "app", k, now.Add(-48*time.Hour))
	addSessions(t, db, stale, boundary, fresh, oldTomb, newTomb)
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		if err := tx.EndSession(ctx, oldTomb.ID, license.CodeBanned, purge.Add(-time.Millisecond)); err != nil {
			return err
		}
		return tx.EndSession(ctx, newTomb.ID, license.CodeBanned, purge.Add(time.Hour))
	})

	n, err := ls.ReapSessions(ctx, cutoff, now, purge)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("ReapSessions = %d, want 1 (only the stale session)", n)
	}
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		got, err := tx.SessionByID(ctx, stale.ID)
		if err != nil {
			return err
		}
		want := *stale
		want.EndedAt, want.EndReason = &now, license.CodeSessionExpired
		checkSession(t, "reaped session", got, &want)
		for _, s := range []*license.Session{boundary, fresh} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			if got.EndedAt != nil {
				t.Errorf("session %s (last seen %v, cutoff %v) was reaped", s.ID, s.LastSeenAt, cutoff)
			}
		}
		_, err = tx.SessionByID(ctx, oldTomb.ID)
		wantErr(t, "tombstone older than purgeBefore", err, apperr.ErrNotFound)
		if _, err := tx.SessionByID(ctx, newTomb.ID); err != nil {
			t.Errorf("recent tombstone was purged: %v", err)
		}
		return nil
	})
	if n, err := ls.ReapSessions(ctx, cutoff, now, purge); err != nil || n != 0 {
		t.Errorf("second ReapSessions = %d, %v; want 0", n, err)
	}
}

// ---- transactions ----

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
	inTx(t, db, func(ctx context.Context, tx license.Tx) error { return writeEverything(ctx, tx, "ok") })
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
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
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

func testAudit(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	admin := audit.Actor{Kind: "admin", ID: "u-1", Name: "root", IP: "198.51.100.1"}
	in := []audit.Entry{
		{At: t0, Actor: admin, Action: "key.ban", AppID: "a", Target: "K-1", Details: map[string]any{"reason": "chargeback"}},
		{At: t0.Add(time.Second), Actor: audit.System, Action: "key.ban", AppID: "b", Target: "K-2"},
		{At: t0.Add(2 * time.Second), Actor: admin, Action: "app.update", AppID: "a", Target: "a"},
		{At: t0.Add(3 * time.Second), Actor: admin, Action: "admin.create", Target: "u-2"},
	}
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		for _, e := range in {
			if err := tx.AddAudit(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	all, err := db.Audit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("Audit = %d entries, want 4", len(all))
	}
	for i, got := range all { // newest first
		want := in[len(in)-1-i]
		var d diffs
		d.time("At", got.At, want.At)
		d.eq("Actor", got.Actor, want.Actor)
		d.eq("Action", got.Action, want.Action)
		d.eq("AppID", got.AppID, want.AppID)
		d.eq("Target", got.Target, want.Target)
		if len(want.Details) == 0 {
			d.eq("len(Details)", len(got.Details), 0)
		} else {
			d.eq("Details", got.Details, want.Details)
		}
		if i > 0 && got.ID >= all[i-1].ID {
			d = append(d, fmt.Sprintf("ID %d not before %d", got.ID, all[i-1].ID))
		}
		d.report(t, fmt.Sprintf("audit entry %d (newest first)", i))
	}
	targets := func(es []audit.Entry) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Target)
		}
		return out
	}
	cases := []struct {
		name string
		f    store.AuditFilter
		want []string
	}{
		{"app", store.AuditFilter{AppID: "a"}, []string{"a", "K-1"}},
		{"action", store.AuditFilter{Action: "key.ban"}, []string{"K-2", "K-1"}},
		{"app and action", store.AuditFilter{AppID: "b", Action: "key.ban"}, []string{"K-2"}},
		{"cursor", store.AuditFilter{Before: all[1].ID}, []string{"K-2", "K-1"}},
		{"limit", store.AuditFilter{Limit: 1}, []string{"u-2"}},
		{"cursor and limit", store.AuditFilter{Before: all[0].ID, Limit: 2}, []string{"a", "K-2"}},
		{"no match", store.AuditFilter{Action: "nope"}, []string{}},
	}
	for _, c := range cases {
		got, err := db.Audit(ctx, c.f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(targets(got), c.want) {
			t.Errorf("%s: Audit = %v, want %v", c.name, targets(got), c.want)
		}
	}
	// Without a limit, a page holds 100 entries.
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		for i := range 100 {
			if err := tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "bulk", Target: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if got, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(got) != 100 || got[0].Target != "99" {
		t.Errorf("Audit without a limit = %d entries (%v), want the newest 100", len(got), err)
	}
}

func testResetRequests(t *testing.T, db *store.DB) {
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0]
	r1 := &license.ResetRequest{AppID: "app", KeyID: k.ID, LicenseKey: "K", Username: "zoë", HWID: "hw", Reason: "new pc", CreatedAt: t0}
	r2 := &license.ResetRequest{AppID: "app", KeyID: k.ID, LicenseKey: "K", CreatedAt: t0}
	inTx(t, db, func(ctx context.Context, tx license.Tx) error {
		if err := tx.InsertResetRequest(ctx, r1); err != nil {
			return err
		}
		return tx.InsertResetRequest(ctx, r2)
	})
	if r1.ID <= 0 || r2.ID <= r1.ID {
		t.Errorf("InsertResetRequest IDs %d, %d; want positive and increasing", r1.ID, r2.ID)
	}
}

// ---- admin store ----

func testAdmins(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	if n, err := as.CountAdmins(ctx); err != nil || n != 0 {
		t.Fatalf("CountAdmins on an empty database = %d, %v", n, err)
	}
	u := &admin.User{ID: "u-1", Username: "root", PasswordHash: "$2a$04$hash", CreatedAt: t0}
	e := audit.Entry{At: t0, Actor: audit.System, Action: "admin.create", Target: "u-1"}
	if err := as.InsertAdmin(ctx, u, e); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *admin.User, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var d diffs
		d.eq("ID", got.ID, u.ID)
		d.eq("Username", got.Username, u.Username)
		d.eq("PasswordHash", got.PasswordHash, u.PasswordHash)
		d.time("CreatedAt", got.CreatedAt, u.CreatedAt)
		d.report(t, what)
	}
	got, err := as.AdminByUsername(ctx, "root")
	check("AdminByUsername", got, err)
	got, err = as.AdminByID(ctx, "u-1")
	check("AdminByID", got, err)
	_, err = as.AdminByUsername(ctx, "nobody")
	wantErr(t, "AdminByUsername(missing)", err, apperr.ErrNotFound)
	_, err = as.AdminByID(ctx, "missing")
	wantErr(t, "AdminByID(missing)", err, apperr.ErrNotFound)

	dup := &admin.User{ID: "u-2", Username: "root", PasswordHash: "x", CreatedAt: t0}
	err = as.InsertAdmin(ctx, dup, audit.Entry{At: t0, Actor: audit.System, Action: "admin.create", Target: "u-2"})
	wantErr(t, "InsertAdmin with a taken username", err, apperr.ErrConflict)
	if n, err := as.CountAdmins(ctx); err != nil || n != 1 {
		t.Errorf("CountAdmins = %d, %v; want 1", n, err)
	}
	// The admin and its audit entry are one transaction: the refused one left no entry.
	es, err := db.Audit(ctx, store.AuditFilter{Action: "admin.create"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Target != "u-1" {
		t.Errorf("admin.create audit entries = %v, want only u-1's", es)
	}
}

func testServerSecret(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	v, err := as.ServerSecret(ctx, "jwt_key", func() (string, error) { return "first", nil })
	if err != nil || v != "first" {
		t.Fatalf("ServerSecret (new) = %q, %v; want the generated value", v, err)
	}
	v, err = as.ServerSecret(ctx, "jwt_key", func() (string, error) {
		t.Error("generate called for an existing secret")
		return "second", nil
	})
	if err != nil || v != "first" {
		t.Errorf("ServerSecret (existing) = %q, %v; want first", v, err)
	}
	_, err = as.ServerSecret(ctx, "other", func() (string, error) { return "", errBoom })
	if !errors.Is(err, errBoom) {
		t.Errorf("ServerSecret with a failing generator: %v, want its error", err)
	}
	// Concurrent first uses agree on one value.
	const n = 4
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = as.ServerSecret(ctx, "race", func() (string, error) { return fmt.Sprint("gen-", i), nil })
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Errorf("concurrent ServerSecret %d = %q, %v; want every caller to get %q", i, got[i], errs[i], got[0])
		}
	}
}

// ---- replay store ----

func testReplay(t *testing.T, db *store.DB) {
	ctx := context.Background()
	exp := t0.Add(5 * time.Minute)
	claim := func(app, mac string) (bool, []byte) {
		t.Helper()
		ok, reply, err := db.ClaimReplay(ctx, app, mac, exp)
		if err != nil {
			t.Fatalf("ClaimReplay(%s, %s): %v", app, mac, err)
		}
		return ok, reply
	}
	replyOf := func(app, mac string) []byte {
		t.Helper()
		r, err := db.ReplayReply(ctx, app, mac)
		if err != nil {
			t.Fatalf("ReplayReply(%s, %s): %v", app, mac, err)
		}
		return r
	}
	if r := replyOf("app", "m1"); r != nil {
		t.Errorf("ReplayReply of an unknown MAC = %q, want nil", r)
	}
	if ok, r := claim("app", "m1"); !ok || r != nil {
		t.Fatalf("first claim = %v, %q; want claimed", ok, r)
	}
	if ok, r := claim("app", "m1"); ok || r != nil {
		t.Errorf("second claim while pending = %v, %q; want not claimed, no reply", ok, r)
	}
	if r := replyOf("app", "m1"); r != nil {
		t.Errorf("ReplayReply while pending = %q, want nil", r)
	}
	// The same MAC under another app is another envelope.
	if ok, _ := claim("other", "m1"); !ok {
		t.Errorf("claim of the same MAC for another app was refused")
	}

	reply := []byte(`{"success":true,"session_id":"abc","message":"Grüße ✓"}`)
	if err := db.CompleteReplay(ctx, "app", "m1", reply); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m1"); ok || string(r) != string(reply) {
		t.Errorf("claim after completion = %v, %q; want not claimed with the first reply", ok, r)
	}
	if r := replyOf("app", "m1"); string(r) != string(reply) {
		t.Errorf("ReplayReply after completion = %q, want the first reply", r)
	}
	// Releasing a completed entry does nothing: its reply stays.
	if err := db.ReleaseReplay(ctx, "app", "m1"); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m1"); ok || string(r) != string(reply) {
		t.Errorf("claim after releasing a completed entry = %v, %q; want the first reply", ok, r)
	}

	// A released pending claim can be claimed again.
	claim("app", "m2")
	if err := db.ReleaseReplay(ctx, "app", "m2"); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m2"); !ok || r != nil {
		t.Errorf("claim after release = %v, %q; want claimed afresh", ok, r)
	}
	if err := db.ReleaseReplay(ctx, "app", "never-claimed"); err != nil {
		t.Errorf("ReleaseReplay of an unknown MAC: %v", err)
	}
}

// Database failures are reported, not mistaken for "no reply yet".
func testReplayErrors(t *testing.T, db *store.DB) {
	ctx := context.Background()
	if _, _, err := db.ClaimReplay(ctx, "app", "m", t0); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if r, err := db.ReplayReply(ctx, "app", "m"); err == nil {
		t.Errorf("ReplayReply on a closed database = %q, nil; want an error", r)
	}
	if _, _, err := db.ClaimReplay(ctx, "app", "m2", t0); err == nil {
		t.Errorf("ClaimReplay on a closed database returned no error")
	}
	if err := db.CompleteReplay(ctx, "app", "m", []byte("{}")); err == nil {
		t.Errorf("CompleteReplay on a closed database returned no error")
	}
	if err := db.ReleaseReplay(ctx, "app", "m"); err == nil {
		t.Errorf("ReleaseReplay on a closed database returned no error")
	}
}

// Entries are kept until ReapSessions deletes those whose envelope left the
// time window; until then a repeat is not claimable (its envelope could not
// verify anyway).
func testReplayExpiry(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := t0
	for _, c := range []struct {
		mac string
		exp time.Time
	}{{"expired", now.Add(-time.Second)}, {"live", now.Add(time.Minute)}, {"at-now", now}} {
		if ok, _, err := db.ClaimReplay(ctx, "app", c.mac, c.exp); err != nil || !ok {
			t.Fatalf("claim %s = %v, %v", c.mac, ok, err)
		}
	}
	if ok, _, err := db.ClaimReplay(ctx, "app", "expired", now.Add(5*time.Minute)); err != nil || ok {
		t.Errorf("claim of an expired, unreaped entry = %v, %v; want not claimed", ok, err)
	}
	if _, err := db.LicenseStore().ReapSessions(ctx, now.Add(-time.Hour), now, now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mac       string
		claimable bool
	}{{"expired", true}, {"live", false}, {"at-now", false}} {
		ok, _, err := db.ClaimReplay(ctx, "app", c.mac, now.Add(5*time.Minute))
		if err != nil || ok != c.claimable {
			t.Errorf("claim of %s after reaping = %v, %v; want claimed=%v", c.mac, ok, err, c.claimable)
		}
	}
}

func testReplayConcurrentClaims(t *testing.T, db *store.DB) {
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	claimed := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { claimed[i], _, errs[i] = db.ClaimReplay(ctx, "app", "mac", t0.Add(time.Minute)) })
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("claim %d: %v", i, errs[i])
		}
		if claimed[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d concurrent claims of one MAC succeeded, want exactly 1", winners, n)
	}
}

// ---- concurrency ----

// Two writers read-modify-write one key in transactions: with the row lock
// (PostgreSQL) or the single writer (SQLite) no update is lost.
func testConcurrentKeyUpdates(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	addKeys(t, db, newKey("app", "K"))
	const workers, iterations = 2, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range iterations {
				err := ls.InTx(ctx, func(tx license.Tx) error {
					k, err := tx.KeyForUpdate(ctx, "app", "K")
					if err != nil {
						return err
					}
					k.MaxDevices++
					return tx.UpdateKey(ctx, k)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("increment: %v", err)
	}
	k, err := ls.Key(ctx, "app", "K")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + workers*iterations; k.MaxDevices != want {
		t.Errorf("after %d concurrent increments max_devices = %d, want %d (updates lost)", workers*iterations, k.MaxDevices, want)
	}
}
