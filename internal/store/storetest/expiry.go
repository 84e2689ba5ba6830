package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// ---- expiry sweeps ----

// expiringKeys inserts active keys of app expiring at the given offsets
// from t0 (nil: no expiry) and returns them.
func expiringKeys(t *testing.T, db *store.DB, app, tag string, offsets ...*time.Duration) []license.Key {
	t.Helper()
	var keys []license.Key
	for i, off := range offsets {
		k := newKey(app, fmt.Sprintf("%s-%s-%d", app, tag, i))
		k.Status, k.ActivatedAt = license.StatusActive, ptr(t0)
		if off != nil {
			k.ExpiresAt = ptr(t0.Add(*off))
		}
		keys = append(keys, k)
	}
	return addKeys(t, db, keys...)
}

// ExpireDue expires active keys at or past their expiry in (expiry, id)
// order from a cursor, within the limit, returns them, and ends their live
// sessions; a key it expired is never returned again.
func testExpiryDue(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	h := time.Hour
	ks := expiringKeys(t, db, "a", "K", ptr(-2*h), ptr(-h), ptr(time.Duration(0)), ptr(h), nil)
	paused := expiringKeys(t, db, "a", "P", ptr(-3*h))[0]
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		paused.Status = license.StatusPaused
		return tx.UpdateKey(ctx, &paused)
	})
	addSessions(t, db, newSession("s1", "a", ks[0].ID, t0), newSession("s2", "a", ks[3].ID, t0))
	due := func(now, afterExp time.Time, afterID int64, limit int) []license.DueKey {
		t.Helper()
		var got []license.DueKey
		inTx(t, db, func(ctx context.Context, tx storeTx) error {
			var err error
			got, err = tx.ExpireDue(ctx, now, afterExp, afterID, limit, license.CodeExpired)
			return err
		})
		return got
	}
	dueIDs := func(keys []license.DueKey) []int64 {
		out := []int64{}
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}

	got := due(t0, time.Time{}, 0, 2)
	if ids, want := dueIDs(got), keyIDs(ks[:2]); fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("ExpireDue(limit 2) = %v, want %v (oldest expiry first, paused keys left out)", ids, want)
	}
	if k := got[0]; k.AppID != "a" || k.LicenseKey != ks[0].LicenseKey || !k.ExpiresAt.Equal(stored(*ks[0].ExpiresAt)) {
		t.Errorf("ExpireDue returned %+v, want key %s of app a expiring %s", k, ks[0].LicenseKey, *ks[0].ExpiresAt)
	}
	if next := due(t0, *ks[2].ExpiresAt, ks[2].ID, 100); len(next) != 0 {
		t.Errorf("ExpireDue after a cursor past every due key = %v, want none", dueIDs(next))
	}
	if next, want := dueIDs(due(t0, got[1].ExpiresAt, got[1].ID, 100)), keyIDs(ks[2:3]); fmt.Sprint(next) != fmt.Sprint(want) {
		t.Errorf("ExpireDue after the cursor = %v, want %v (expiry at now included)", next, want)
	}
	if again := due(t0, time.Time{}, 0, 100); len(again) != 0 {
		t.Errorf("ExpireDue from the start again = %v, want none (each key once)", dueIDs(again))
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i, k := range append(ks, paused) {
			cur, err := tx.KeyByIDForUpdate(ctx, "a", k.ID)
			if err != nil {
				return err
			}
			want := k.Status
			if i < 3 {
				want = license.StatusExpired
			}
			if cur.Status != want {
				t.Errorf("key %d status %s, want %s", i, cur.Status, want)
			}
		}
		s1, err := tx.SessionByID(ctx, "s1")
		if err != nil {
			return err
		}
		if s1.EndedAt == nil || !s1.EndedAt.Equal(stored(t0)) || s1.EndReason != license.CodeExpired {
			t.Errorf("session of an expired key: ended %v reason %q, want %s %s", s1.EndedAt, s1.EndReason, t0, license.CodeExpired)
		}
		s2, err := tx.SessionByID(ctx, "s2")
		if err != nil {
			return err
		}
		if s2.EndedAt != nil {
			t.Errorf("session of a live key ended")
		}
		return nil
	})
	if later, want := dueIDs(due(t0.Add(2*h), time.Time{}, 0, 100)), keyIDs(ks[3:4]); fmt.Sprint(later) != fmt.Sprint(want) {
		t.Errorf("two hours later ExpireDue = %v, want only the later key %v", later, want)
	}
}

// KeysExpiringBy walks active keys expiring in (now, until] by (expiry, id)
// after a cursor, leaving out those already told of a small enough window
// for their current expiry; SetExpiryNotice records a notice.
func testExpiryExpiring(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	h := time.Hour
	ks := expiringKeys(t, db, "a", "K", ptr(-h), ptr(h), ptr(2*h), ptr(2*h), ptr(30*h), ptr(100*h), nil)
	list := func(afterExp time.Time, afterID int64, minWindow int64, limit int) []license.ExpiringKey {
		var out []license.ExpiringKey
		inTx(t, db, func(ctx context.Context, tx storeTx) error {
			var err error
			out, err = tx.KeysExpiringBy(ctx, t0, t0.Add(48*h), afterExp, afterID, minWindow, limit)
			return err
		})
		return out
	}
	ids := func(eks []license.ExpiringKey) string {
		var out []int64
		for _, k := range eks {
			out = append(out, k.ID)
		}
		return fmt.Sprint(out)
	}
	day := int64(24 * 3600)
	if got, want := ids(list(time.Time{}, 0, day, 100)), fmt.Sprint(keyIDs(ks[1:5])); got != want {
		t.Fatalf("KeysExpiringBy = %s, want %s (inside (now, now+48h], by expiry then id)", got, want)
	}
	first := list(time.Time{}, 0, day, 2)
	if got, want := ids(list(first[1].ExpiresAt, first[1].ID, day, 100)), fmt.Sprint(keyIDs(ks[3:5])); got != want {
		t.Fatalf("after the cursor: %s, want %s", got, want)
	}
	if k := first[0]; k.LicenseKey != ks[1].LicenseKey || k.AppID != "a" || !k.ExpiresAt.Equal(stored(*ks[1].ExpiresAt)) ||
		k.NoticeFor != nil || k.Notice != 0 {
		t.Fatalf("expiring key read back as %+v", k)
	}

	// Told of the 1-day window: out of the walk; told of the 7-day window
	// only: still in (a smaller window may come); told for another expiry:
	// in again.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.SetExpiryNotice(ctx, ks[1].ID, *ks[1].ExpiresAt, day); err != nil {
			return err
		}
		if err := tx.SetExpiryNotice(ctx, ks[2].ID, *ks[2].ExpiresAt, 7*day); err != nil {
			return err
		}
		return tx.SetExpiryNotice(ctx, ks[3].ID, ks[3].ExpiresAt.Add(-h), day)
	})
	got := list(time.Time{}, 0, day, 100)
	if g, want := ids(got), fmt.Sprint(keyIDs(ks[2:5])); g != want {
		t.Fatalf("after notices: %s, want %s", g, want)
	}
	if got[0].NoticeFor == nil || !got[0].NoticeFor.Equal(stored(*ks[2].ExpiresAt)) || got[0].Notice != 7*day {
		t.Fatalf("notice read back as %+v", got[0])
	}
	if err := txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.SetExpiryNotice(ctx, 999999, t0, day)
	}); err == nil {
		t.Fatal("SetExpiryNotice of a missing key succeeded")
	}
}

// AddEvents writes several events in one statement, in order.
func testExpiryAddEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	evs := []event.Event{
		{AppID: "a", Type: event.KeyExpired, CreatedAt: t0, Data: map[string]any{"license_key": "K1"}},
		{Type: event.AppRevoked, CreatedAt: t0, Data: map[string]any{"app_id": "x"}},
		{AppID: "a", Type: event.KeyExpiring, CreatedAt: t0.Add(time.Second), Data: map[string]any{"days_left": float64(7)}},
		{AppID: "a", Type: event.KeyExpired, CreatedAt: t0, Encoded: []byte(`{"license_key":"K2"}`),
			Data: map[string]any{"license_key": "not written"}},
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.AddEvents(ctx, nil); err != nil {
			return err
		}
		return tx.AddEvents(ctx, evs)
	})
	out, err := db.Events(ctx, 0, 10)
	if err != nil || len(out) != len(evs) {
		t.Fatalf("Events = %d, %v", len(out), err)
	}
	evs[3].Data = map[string]any{"license_key": "K2"} // Encoded was written
	for i, e := range out {
		if e.Type != evs[i].Type || e.AppID != evs[i].AppID || fmt.Sprint(e.Data) != fmt.Sprint(evs[i].Data) ||
			!e.CreatedAt.Equal(stored(evs[i].CreatedAt)) {
			t.Errorf("event %d = %+v, want %+v", i, e, evs[i])
		}
	}
}
