package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

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
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
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
	inTx(t, db, func(ctx context.Context, tx storeTx) error { k := want; return tx.UpdateKey(ctx, &k) })
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

	wantErr(t, "InsertKeys with a taken string", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertKeys(ctx, []license.Key{newKey("a", "K-3"), newKey("a", "K-1")})
	}), apperr.ErrConflict)
	_, err := ls.Key(ctx, "a", "K-3")
	wantErr(t, "K-3 of a refused batch", err, apperr.ErrNotFound)
	wantErr(t, "UpdateKey rotating onto a taken string", txErr(db, func(ctx context.Context, tx storeTx) error {
		k := keys[1]
		k.LicenseKey = "K-1"
		return tx.UpdateKey(ctx, &k)
	}), apperr.ErrConflict)

	_, err = ls.Key(ctx, "a", "nope")
	wantErr(t, "Key(missing)", err, apperr.ErrNotFound)
	_, err = ls.Key(ctx, "missing-app", "K-1")
	wantErr(t, "Key(other app)", err, apperr.ErrNotFound)
	wantErr(t, "KeyForUpdate(missing)", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.KeyForUpdate(ctx, "a", "nope")
		return err
	}), apperr.ErrNotFound)
	wantErr(t, "UpdateKey(missing)", txErr(db, func(ctx context.Context, tx storeTx) error {
		k := keys[0]
		k.ID = 1 << 40
		return tx.UpdateKey(ctx, &k)
	}), apperr.ErrNotFound)

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, keys[0].ID) })
	_, err = ls.Key(ctx, "a", "K-1")
	wantErr(t, "Key after DeleteKey", err, apperr.ErrNotFound)
	wantErr(t, "DeleteKey twice", txErr(db, func(ctx context.Context, tx storeTx) error {
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
	other := addKeys(t, db, o)
	keys[1].Type = license.TypeLifetime
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.UpdateKey(ctx, &keys[1]); err != nil {
			return err
		}
		for _, d := range []struct {
			key  int64
			hwid string
		}{{keys[2].ID, "PC-shared"}, {keys[5].ID, "PC-shared"}, {keys[6].ID, "PC-7"}, {other[0].ID, "PC-other"}} {
			if err := tx.UpsertDevice(ctx, d.key, d.hwid, now); err != nil {
				return err
			}
		}
		return nil
	})
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
		{"lifetime keys", license.KeyFilter{Type: license.TypeLifetime}, id(2)},
		{"days keys with a query", license.KeyFilter{Type: license.TypeDays, Query: "alpha"}, id(1, 8)},
		{"device", license.KeyFilter{HWID: "PC-shared"}, id(3, 6)},
		{"device, case matters", license.KeyFilter{HWID: "pc-shared"}, id()},
		{"device and status", license.KeyFilter{HWID: "PC-shared", Status: license.StatusPaused}, id(6)},
		{"device of another app's key", license.KeyFilter{HWID: "PC-other"}, id()},
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

func testDevices(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	k, other := keys[0].ID, keys[1].ID
	t1, t2, t3 := t0, t0.Add(time.Minute), t0.Add(2*time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
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

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
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
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, other) })
	if ds, err := ls.Devices(ctx, other); err != nil || len(ds) != 0 {
		t.Errorf("devices of a deleted key = %v, %v; want none", ds, err)
	}
}

// ---- sessions ----

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

// testTakenKeyStrings: the app's key strings and rotated keys' aliases are
// taken, another app's are not; more strings than one statement holds.
func testTakenKeyStrings(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	keys := addKeys(t, db, newKey("a", "K-1"), newKey("a", "K-2"))
	addKeys(t, db, newKey("b", "K-3"))
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertKeyAlias(ctx, "a", "OLD-1", "pc", keys[0].ID, t0)
	})
	strs := []string{"K-3", "K-2", "OLD-1", "NEW"}
	for i := range 1200 {
		strs = append(strs, fmt.Sprintf("X-%d", i))
	}
	strs = append(strs, "K-1")
	check := func(name string, got []string, err error) {
		t.Helper()
		sort.Strings(got)
		if err != nil || strings.Join(got, ",") != "K-1,K-2,OLD-1" {
			t.Errorf("%s = %v, %v; want K-1, K-2, OLD-1", name, got, err)
		}
	}
	got, err := db.LicenseStore().TakenKeyStrings(ctx, "a", strs)
	check("TakenKeyStrings", got, err)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.TakenKeyStrings(ctx, "a", strs)
		check("Tx.TakenKeyStrings", got, err)
		return nil
	})
}
