package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/webhook"
)

// ---- webhooks ----

// whTx runs fn in a webhook write transaction, failing the test on error.
func whTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx webhook.Tx) error) {
	t.Helper()
	if err := whTxErr(db, fn); err != nil {
		t.Fatalf("webhook InTx: %v", err)
	}
}

// whTxErr runs fn in its own webhook transaction and returns its error.
func whTxErr(db *store.DB, fn func(ctx context.Context, tx webhook.Tx) error) error {
	ctx := context.Background()
	return db.WebhookStore().InTx(ctx, func(tx webhook.Tx) error { return fn(ctx, tx) })
}

func whDest(appID, url string) *webhook.Destination {
	return &webhook.Destination{AppID: appID, URL: url, Secret: "whsec_" + strings.ReplaceAll(url, "/", "_"), Enabled: true,
		CreatedAt: t0, UpdatedAt: t0}
}

func addDests(t *testing.T, db *store.DB, ds ...*webhook.Destination) {
	t.Helper()
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for _, d := range ds {
			if err := tx.InsertDestination(ctx, d); err != nil {
				return err
			}
			if d.ID == 0 {
				return fmt.Errorf("InsertDestination left %s without an ID", d.URL)
			}
		}
		return nil
	})
}

// whDelivery is a pending delivery of event eventID to dest, due at created.
func whDelivery(id string, dest *webhook.Destination, eventID int64, appID string, created time.Time) *webhook.Delivery {
	return &webhook.Delivery{ID: id, DestinationID: dest.ID, EventID: eventID, AppID: appID, Event: event.KeyCreated,
		Body:   []byte(`{"event":"key.created","timestamp":"2026-11-01T11:00:00Z","data":{"id":"` + id + `","note":"résumé ✓"}}`),
		Status: webhook.Pending, NextAttemptAt: created, CreatedAt: created, UpdatedAt: created}
}

func addDeliveries(t *testing.T, db *store.DB, ds ...*webhook.Delivery) {
	t.Helper()
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for _, d := range ds {
			if err := tx.InsertDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

func readDelivery(t *testing.T, db *store.DB, id string) *webhook.Delivery {
	t.Helper()
	d, err := db.WebhookStore().Delivery(context.Background(), id)
	if err != nil {
		t.Fatalf("Delivery(%s): %v", id, err)
	}
	return d
}

func readDest(t *testing.T, db *store.DB, id int64) *webhook.Destination {
	t.Helper()
	d, err := db.WebhookStore().Destination(context.Background(), id)
	if err != nil {
		t.Fatalf("Destination(%d): %v", id, err)
	}
	return d
}

func checkDest(t *testing.T, what string, got, want *webhook.Destination) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("URL", got.URL, want.URL)
	d.eq("Secret", got.Secret, want.Secret)
	if len(got.Events) != 0 || len(want.Events) != 0 {
		d.eq("Events", got.Events, want.Events)
	}
	d.eq("Description", got.Description, want.Description)
	d.eq("Enabled", got.Enabled, want.Enabled)
	d.eq("Failures", got.Failures, want.Failures)
	d.optTime("PausedAt", got.PausedAt, want.PausedAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkDelivery(t *testing.T, what string, got, want *webhook.Delivery) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("DestinationID", got.DestinationID, want.DestinationID)
	d.eq("EventID", got.EventID, want.EventID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Event", got.Event, want.Event)
	d.eq("Body", string(got.Body), string(want.Body))
	d.eq("Status", got.Status, want.Status)
	d.eq("Attempts", got.Attempts, want.Attempts)
	d.time("NextAttemptAt", got.NextAttemptAt, want.NextAttemptAt)
	if want.LockedUntil.IsZero() {
		if !got.LockedUntil.IsZero() {
			d = append(d, fmt.Sprintf("LockedUntil = %v, want zero", got.LockedUntil))
		}
	} else {
		d.time("LockedUntil", got.LockedUntil, want.LockedUntil)
	}
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.eq("Subject", got.Subject, want.Subject)
	d.eq("Sequence", got.Sequence, want.Sequence)
	d.report(t, what)
}

func destIDs(ds []webhook.Destination) []int64 {
	out := []int64{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func deliveryIDs(ds []webhook.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// Destinations of an app and for every app round-trip every field; lists
// are by id, an app's including those for every app.
func testWebhookDestinations(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	d1 := whDest("a", "https://a.example/hook")
	d1.Events, d1.Description = []string{"key.banned", "subscription.*", "key_expired"}, "résumé ✓ — the CRM"
	d2 := whDest("", "https://all.example/hook") // every app, switched off
	d2.Enabled = false
	d3 := whDest("b", "http://b.example:8080/x?y=1&z=2")
	d3.Events = []string{"test"}
	d4 := whDest("", "https://paused.example/") // every app, paused after failures
	d4.Failures, d4.PausedAt, d4.UpdatedAt = webhook.PauseAfter, ptr(t0.Add(time.Hour)), t0.Add(time.Hour)
	addDests(t, db, d1, d2, d3, d4)
	if !(d1.ID < d2.ID && d2.ID < d3.ID && d3.ID < d4.ID) {
		t.Errorf("destination ids %d, %d, %d, %d: want increasing", d1.ID, d2.ID, d3.ID, d4.ID)
	}

	for _, want := range []*webhook.Destination{d1, d2, d3, d4} {
		checkDest(t, fmt.Sprintf("Destination(%d)", want.ID), readDest(t, db, want.ID), want)
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		got, err := tx.DestinationForUpdate(ctx, d4.ID)
		if err != nil {
			return err
		}
		checkDest(t, "DestinationForUpdate", got, d4)
		return nil
	})

	for _, c := range []struct {
		app  string
		want []int64
	}{
		{"a", []int64{d1.ID, d2.ID, d4.ID}},
		{"b", []int64{d2.ID, d3.ID, d4.ID}},
		{"", []int64{d1.ID, d2.ID, d3.ID, d4.ID}},
		{"unknown", []int64{d2.ID, d4.ID}},
	} {
		got, err := ws.Destinations(ctx, c.app)
		if err != nil {
			t.Fatalf("Destinations(%q): %v", c.app, err)
		}
		if ids := destIDs(got); !slices.Equal(ids, c.want) {
			t.Errorf("Destinations(%q) = %v, want %v", c.app, ids, c.want)
		}
	}
	all, _ := ws.Destinations(ctx, "")
	for i, want := range []*webhook.Destination{d1, d2, d3, d4} {
		if i < len(all) {
			checkDest(t, fmt.Sprintf("Destinations(\"\")[%d]", i), &all[i], want)
		}
	}

	// EnabledDestinations: switched on, paused or not.
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		got, err := tx.EnabledDestinations(ctx)
		if err != nil {
			return err
		}
		if ids := destIDs(got); !slices.Equal(ids, []int64{d1.ID, d3.ID, d4.ID}) {
			t.Errorf("EnabledDestinations = %v, want %v", ids, []int64{d1.ID, d3.ID, d4.ID})
		}
		for i := range got {
			if got[i].ID == d1.ID {
				checkDest(t, "EnabledDestinations d1", &got[i], d1)
			}
		}
		return nil
	})
}

// UpdateDestination changes every mutable field (never the app or the
// creation time); DeleteDestination removes the destination with its
// deliveries and their attempts, and deleting the app does as much.
func testWebhookUpdateDeleteDestination(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	addApp(t, db, "gone")
	d := whDest("a", "https://a.example/old")
	kept := whDest("", "https://all.example/")
	doomed := whDest("gone", "https://gone.example/")
	addDests(t, db, d, kept, doomed)

	upd := *d
	upd.URL, upd.Secret, upd.Events, upd.Description = "https://a.example/new", "whsec_rotated", []string{"test", "key.*"}, "new"
	upd.Enabled, upd.Failures, upd.PausedAt, upd.UpdatedAt = false, 7, ptr(t0.Add(time.Minute)), t0.Add(2*time.Minute)
	upd.AppID, upd.CreatedAt = "b", t0.Add(time.Hour) // not updatable
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.UpdateDestination(ctx, &upd) })
	want := upd
	want.AppID, want.CreatedAt = "a", t0
	checkDest(t, "after UpdateDestination", readDest(t, db, d.ID), &want)

	// Clearing the pause and the filter.
	upd.PausedAt, upd.Events, upd.Enabled, upd.Failures = nil, nil, true, 0
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.UpdateDestination(ctx, &upd) })
	want.PausedAt, want.Events, want.Enabled, want.Failures = nil, nil, true, 0
	got := readDest(t, db, d.ID)
	checkDest(t, "after clearing the pause and the filter", got, &want)
	if len(got.Events) != 0 {
		t.Errorf("Events after clearing = %q, want none", got.Events)
	}
	checkDest(t, "the other destination", readDest(t, db, kept.ID), kept)

	// Deliveries and attempts go with their destination.
	x1, x2 := whDelivery("whd_x1", d, 1, "a", t0), whDelivery("whd_x2", d, 2, "a", t0)
	k1 := whDelivery("whd_k1", kept, 1, "a", t0)
	g1 := whDelivery("whd_g1", doomed, 3, "gone", t0)
	addDeliveries(t, db, x1, x2, k1, g1)
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for _, id := range []string{"whd_x1", "whd_x2", "whd_k1", "whd_g1"} {
			if err := tx.AddAttempt(ctx, id, webhook.Attempt{Attempt: 1, At: t0, StatusCode: 500, Duration: time.Second}); err != nil {
				return err
			}
		}
		return nil
	})
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.DeleteDestination(ctx, d.ID) })
	_, err := ws.Destination(ctx, d.ID)
	wantErr(t, "Destination after DeleteDestination", err, apperr.ErrNotFound)
	for _, id := range []string{"whd_x1", "whd_x2"} {
		_, err := ws.Delivery(ctx, id)
		wantErr(t, "delivery "+id+" of a deleted destination", err, apperr.ErrNotFound)
		if as, err := ws.Attempts(ctx, id); err != nil || len(as) != 0 {
			t.Errorf("attempts of %s after its destination was deleted = %v, %v; want none", id, as, err)
		}
	}
	if ds, err := ws.Deliveries(ctx, webhook.DeliveryFilter{Limit: 100}); err != nil || !slices.Equal(sortedStrings(deliveryIDs(ds)), []string{"whd_g1", "whd_k1"}) {
		t.Errorf("Deliveries after DeleteDestination = %v, %v; want whd_g1, whd_k1", deliveryIDs(ds), err)
	}
	if as, err := ws.Attempts(ctx, "whd_k1"); err != nil || len(as) != 1 {
		t.Errorf("attempts of the other destination's delivery = %v, %v; want 1", as, err)
	}

	// Deleting an app deletes its destinations and their log, not those for every app.
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "gone") })
	_, err = ws.Destination(ctx, doomed.ID)
	wantErr(t, "destination of a deleted app", err, apperr.ErrNotFound)
	_, err = ws.Delivery(ctx, "whd_g1")
	wantErr(t, "delivery of a deleted app's destination", err, apperr.ErrNotFound)
	if as, err := ws.Attempts(ctx, "whd_g1"); err != nil || len(as) != 0 {
		t.Errorf("attempts of a deleted app's delivery = %v, %v; want none", as, err)
	}
	if _, err := ws.Destination(ctx, kept.ID); err != nil {
		t.Errorf("destination for every app after an app was deleted: %v", err)
	}
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// Every lookup and write of a missing row is ErrNotFound; lists of nothing
// are empty, not nil.
func testWebhookMissing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	_, err := ws.Destination(ctx, 12345)
	wantErr(t, "Destination(missing)", err, apperr.ErrNotFound)
	_, err = ws.Delivery(ctx, "whd_missing")
	wantErr(t, "Delivery(missing)", err, apperr.ErrNotFound)
	if as, err := ws.Attempts(ctx, "whd_missing"); err != nil || as == nil || len(as) != 0 {
		t.Errorf("Attempts(missing) = %#v, %v; want an empty list", as, err)
	}
	if ds, err := ws.Deliveries(ctx, webhook.DeliveryFilter{Limit: 10}); err != nil || ds == nil || len(ds) != 0 {
		t.Errorf("Deliveries of an empty database = %#v, %v; want an empty list", ds, err)
	}
	if ds, err := ws.Destinations(ctx, ""); err != nil || ds == nil || len(ds) != 0 {
		t.Errorf("Destinations of an empty database = %#v, %v; want an empty list", ds, err)
	}
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		_, err := tx.DestinationForUpdate(ctx, 12345)
		return err
	})
	wantErr(t, "DestinationForUpdate(missing)", err, apperr.ErrNotFound)
	missing := whDest("", "https://nowhere.example/")
	missing.ID = 12345
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error { return tx.UpdateDestination(ctx, missing) })
	wantErr(t, "UpdateDestination(missing)", err, apperr.ErrNotFound)
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error { return tx.DeleteDestination(ctx, 12345) })
	wantErr(t, "DeleteDestination(missing)", err, apperr.ErrNotFound)
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		_, err := tx.DeliveryForUpdate(ctx, "whd_missing")
		return err
	})
	wantErr(t, "DeliveryForUpdate(missing)", err, apperr.ErrNotFound)
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		return tx.UpdateDelivery(ctx, whDelivery("whd_missing", missing, 1, "", t0))
	})
	wantErr(t, "UpdateDelivery(missing)", err, apperr.ErrNotFound)
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		if due, err := tx.DueDeliveries(ctx, t0, 10); err != nil || len(due) != 0 {
			t.Errorf("DueDeliveries of an empty database = %v, %v; want none", due, err)
		}
		if n, err := tx.RequeueFailed(ctx, "", 0, t0, t0); err != nil || n != 0 {
			t.Errorf("RequeueFailed of an empty database = %d, %v; want 0", n, err)
		}
		if n, err := tx.RequeueFailed(ctx, "", 12345, t0, t0); err != nil || n != 0 {
			t.Errorf("RequeueFailed(missing destination) = %d, %v; want 0", n, err)
		}
		return nil
	})
}

// The outbox: events written by any store's transaction are undispatched
// until MarkDispatched, returned oldest first up to the limit.
func testWebhookUndispatchedEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	// Whatever setting up wrote is out of the way first.
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		evs, err := tx.UndispatchedEvents(ctx, 1000)
		if err != nil {
			return err
		}
		var ids []int64
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return tx.MarkDispatched(ctx, ids, t0)
	})

	in := []event.Event{
		{AppID: "a", Type: event.KeyCreated, CreatedAt: t0, Data: map[string]any{"count": float64(2), "keys": []any{"A", "B"}},
			Subject: event.OrderSubject("ord_1")},
		{Type: event.AppRevoked, CreatedAt: t0.Add(time.Second), Data: map[string]any{"app_id": "gone"}},
		{AppID: "a", Type: event.KeyBanned, CreatedAt: t0.Add(2 * time.Second), Data: map[string]any{"reason": "résumé ✓"},
			Subject: event.KeySubject(42)},
		{AppID: "a", Type: event.Test, CreatedAt: t0.Add(3 * time.Second), Data: map[string]any{}, Subject: "account:7"},
	}
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.AddEvent(ctx, in[0]); err != nil {
			return err
		}
		return tx.AddEvent(ctx, in[1])
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.AddEvent(ctx, in[2]) })
	var lastID int64
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		var err error
		lastID, err = tx.AddEventID(ctx, in[3])
		return err
	})

	var got []event.Event
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		var err error
		got, err = tx.UndispatchedEvents(ctx, 100)
		return err
	})
	if len(got) != len(in) {
		t.Fatalf("UndispatchedEvents = %d events, want %d", len(got), len(in))
	}
	for i := range in {
		var d diffs
		d.eq("AppID", got[i].AppID, in[i].AppID)
		d.eq("Type", got[i].Type, in[i].Type)
		d.eq("Data", got[i].Data, in[i].Data)
		d.eq("Subject", got[i].Subject, in[i].Subject)
		d.time("CreatedAt", got[i].CreatedAt, in[i].CreatedAt)
		if i > 0 && got[i].ID <= got[i-1].ID {
			d = append(d, fmt.Sprintf("ID %d not after %d", got[i].ID, got[i-1].ID))
		}
		d.report(t, fmt.Sprintf("undispatched event %d", i))
	}
	if got[3].ID != lastID {
		t.Errorf("last undispatched event id = %d, want the id AddEvent returned (%d)", got[3].ID, lastID)
	}

	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		first, err := tx.UndispatchedEvents(ctx, 2)
		if err != nil {
			return err
		}
		if len(first) != 2 || first[0].ID != got[0].ID || first[1].ID != got[1].ID {
			t.Errorf("UndispatchedEvents(limit 2) = %v, want the two oldest", first)
		}
		if err := tx.MarkDispatched(ctx, nil, t0); err != nil {
			t.Errorf("MarkDispatched(no ids): %v", err)
		}
		return tx.MarkDispatched(ctx, []int64{got[0].ID, got[2].ID}, t0.Add(time.Minute))
	})
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		rest, err := tx.UndispatchedEvents(ctx, 100)
		if err != nil {
			return err
		}
		if len(rest) != 2 || rest[0].ID != got[1].ID || rest[1].ID != got[3].ID {
			t.Errorf("UndispatchedEvents after marking the 1st and 3rd = %v, want the 2nd and 4th", rest)
		}
		return tx.MarkDispatched(ctx, []int64{got[1].ID, got[3].ID}, t0.Add(time.Minute))
	})
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		if rest, err := tx.UndispatchedEvents(ctx, 100); err != nil || len(rest) != 0 {
			t.Errorf("UndispatchedEvents after marking all = %v, %v; want none", rest, err)
		}
		return nil
	})
	// Dispatched events stay in the journal.
	if all, err := db.Events(ctx, got[0].ID-1, 100); err != nil || len(all) != 4 {
		t.Errorf("Events after dispatching = %d, %v; want all 4 still there", len(all), err)
	}
	// An event written after, in a rolled-back transaction, never shows.
	err := whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		if _, err := tx.AddEventID(ctx, event.Event{AppID: "a", Type: event.KeyDeleted, CreatedAt: t0}); err != nil {
			return err
		}
		return errBoom
	})
	wantErr(t, "rolled-back transaction", err, errBoom)
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		if rest, err := tx.UndispatchedEvents(ctx, 100); err != nil || len(rest) != 0 {
			t.Errorf("UndispatchedEvents after a rolled-back AddEvent = %v, %v; want none", rest, err)
		}
		return nil
	})
}

// AddEvent returns increasing ids, within one transaction and across them.
func testWebhookAddEvent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	var ids []int64
	for round := range 3 {
		whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
			for i := range 3 {
				app := "a"
				if i == 1 {
					app = ""
				}
				id, err := tx.AddEventID(ctx, event.Event{AppID: app, Type: event.Test, CreatedAt: t0,
					Data: map[string]any{"round": float64(round), "i": float64(i)}})
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		})
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("AddEvent ids %v: want strictly increasing", ids)
		}
	}
	evs, err := db.Events(ctx, ids[0]-1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(ids) {
		t.Fatalf("Events = %d, want %d", len(evs), len(ids))
	}
	for i, e := range evs {
		wantApp := "a"
		if i%3 == 1 {
			wantApp = ""
		}
		if e.ID != ids[i] || e.AppID != wantApp || e.Data["round"] != float64(i/3) || e.Data["i"] != float64(i%3) {
			t.Errorf("event %d = %+v, want id %d app %q round %d i %d", i, e, ids[i], wantApp, i/3, i%3)
		}
	}
}

// InsertDelivery keeps one delivery per event and destination: a second
// insert of the same pair is ignored without error, the first stays.
func testWebhookInsertDelivery(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	d1, d2 := whDest("a", "https://one.example/"), whDest("", "https://two.example/")
	addDests(t, db, d1, d2)
	var evID int64
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		var err error
		evID, err = tx.AddEventID(ctx, event.Event{AppID: "a", Type: event.KeyCreated, CreatedAt: t0})
		return err
	})

	first := whDelivery("whd_first", d1, evID, "a", t0)
	addDeliveries(t, db, first)
	checkDelivery(t, "Delivery after InsertDelivery", readDelivery(t, db, "whd_first"), first)

	dup := whDelivery("whd_dup", d1, evID, "a", t0.Add(time.Minute))
	dup.Body = []byte(`{"other":true}`)
	addDeliveries(t, db, dup) // no error
	addDeliveries(t, db, dup) // still none
	_, err := ws.Delivery(ctx, "whd_dup")
	wantErr(t, "the ignored duplicate", err, apperr.ErrNotFound)
	checkDelivery(t, "the first delivery after a duplicate insert", readDelivery(t, db, "whd_first"), first)

	// The same event to another destination, and an installation-wide event.
	other := whDelivery("whd_other", d2, evID, "a", t0)
	wide := whDelivery("whd_wide", d2, evID+1000, "", t0)
	wide.Body = []byte{}
	other.Subject, other.Sequence = event.KeySubject(9), 7
	addDeliveries(t, db, other, wide)
	checkDelivery(t, "same event, other destination", readDelivery(t, db, "whd_other"), other)
	checkDelivery(t, "installation-wide delivery", readDelivery(t, db, "whd_wide"), wide)
	ds, err := ws.Deliveries(ctx, webhook.DeliveryFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if ids := sortedStrings(deliveryIDs(ds)); !slices.Equal(ids, []string{"whd_first", "whd_other", "whd_wide"}) {
		t.Errorf("Deliveries = %v, want whd_first, whd_other, whd_wide", ids)
	}

	// A delivery id used twice (for another pair) is a conflict, not silence.
	err = whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		return tx.InsertDelivery(ctx, whDelivery("whd_first", d2, evID+1, "a", t0))
	})
	wantErr(t, "InsertDelivery with a used id", err, apperr.ErrConflict)

	// Several inserts of one pair inside one transaction keep the first too.
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for i := range 3 {
			if err := tx.InsertDelivery(ctx, whDelivery(fmt.Sprintf("whd_same_%d", i), d1, evID+2, "a", t0)); err != nil {
				return err
			}
		}
		return nil
	})
	ds, _ = ws.Deliveries(ctx, webhook.DeliveryFilter{DestinationID: d1.ID, Limit: 100})
	if ids := sortedStrings(deliveryIDs(ds)); !slices.Equal(ids, []string{"whd_first", "whd_same_0"}) {
		t.Errorf("deliveries of d1 = %v, want whd_first, whd_same_0", ids)
	}
}

// DueDeliveries: pending, due at now, lease free, destination enabled and
// not paused; soonest first, at most limit, with the destination's URL and
// secret.
func testWebhookDueDeliveries(t *testing.T, db *store.DB) {
	now := t0.Add(time.Hour)
	addApp(t, db, "a")
	on := whDest("a", "https://on.example/")
	off := whDest("a", "https://off.example/")
	off.Enabled = false
	paused := whDest("a", "https://paused.example/")
	paused.PausedAt, paused.Failures = ptr(t0), webhook.PauseAfter
	all := whDest("", "https://all.example/")
	addDests(t, db, on, off, paused, all)

	mk := func(id string, dest *webhook.Destination, ev int64, status string, next, locked time.Time) *webhook.Delivery {
		d := whDelivery(id, dest, ev, "a", t0)
		d.Status, d.NextAttemptAt, d.LockedUntil, d.Attempts = status, next, locked, 2
		return d
	}
	var zero time.Time
	due1 := mk("whd_due", on, 1, webhook.Pending, now.Add(-10*time.Minute), zero)
	later := mk("whd_later", on, 2, webhook.Pending, now.Add(time.Millisecond), zero)
	leased := mk("whd_leased", on, 3, webhook.Pending, now.Add(-5*time.Minute), now.Add(time.Minute))
	expired := mk("whd_expired", on, 4, webhook.Pending, now.Add(-time.Minute), now.Add(-time.Second))
	done := mk("whd_done", on, 5, webhook.Succeeded, now.Add(-20*time.Minute), zero)
	failed := mk("whd_failed", on, 6, webhook.Failed, now.Add(-20*time.Minute), zero)
	offDue := mk("whd_off", off, 7, webhook.Pending, now.Add(-20*time.Minute), zero)
	pausedDue := mk("whd_paused", paused, 8, webhook.Pending, now.Add(-20*time.Minute), zero)
	edge := mk("whd_edge", all, 9, webhook.Pending, now, now) // due and free exactly at now
	addDeliveries(t, db, due1, later, leased, expired, done, failed, offDue, pausedDue, edge)

	var got []webhook.Delivery
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		var err error
		got, err = tx.DueDeliveries(ctx, now, 100)
		return err
	})
	if ids := deliveryIDs(got); !slices.Equal(ids, []string{"whd_due", "whd_expired", "whd_edge"}) {
		t.Fatalf("DueDeliveries = %v, want whd_due, whd_expired, whd_edge (soonest first)", ids)
	}
	for i, want := range []struct {
		d    *webhook.Delivery
		dest *webhook.Destination
	}{{due1, on}, {expired, on}, {edge, all}} {
		checkDelivery(t, "DueDeliveries "+want.d.ID, &got[i], want.d)
		if got[i].URL != want.dest.URL || got[i].Secret != want.dest.Secret {
			t.Errorf("DueDeliveries %s: URL %q secret %q, want %q %q", want.d.ID, got[i].URL, got[i].Secret, want.dest.URL, want.dest.Secret)
		}
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		first, err := tx.DueDeliveries(ctx, now, 2)
		if ids := deliveryIDs(first); err != nil || !slices.Equal(ids, []string{"whd_due", "whd_expired"}) {
			t.Errorf("DueDeliveries(limit 2) = %v, %v; want whd_due, whd_expired", ids, err)
		}
		return nil
	})
	// Switching the destinations back on brings their deliveries in.
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		off.Enabled = true
		if err := tx.UpdateDestination(ctx, off); err != nil {
			return err
		}
		paused.PausedAt = nil
		return tx.UpdateDestination(ctx, paused)
	})
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		got, err := tx.DueDeliveries(ctx, now.Add(time.Minute), 100)
		if err != nil {
			return err
		}
		want := []string{"whd_off", "whd_paused", "whd_due", "whd_leased", "whd_expired", "whd_edge", "whd_later"}
		if ids := deliveryIDs(got); !slices.Equal(sortedStrings(ids), sortedStrings(want)) {
			t.Errorf("DueDeliveries a minute later, all destinations on = %v, want %v", ids, want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].NextAttemptAt.Before(got[i-1].NextAttemptAt) {
				t.Errorf("DueDeliveries not soonest first: %v", deliveryIDs(got))
				break
			}
		}
		return nil
	})
}

// DeliveryForUpdate and UpdateDelivery: status, attempts, schedule, lease
// and update time change; the body, event and creation never do.
func testWebhookUpdateDelivery(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	dest := whDest("a", "https://a.example/")
	addDests(t, db, dest)
	orig := whDelivery("whd_u", dest, 42, "a", t0)
	addDeliveries(t, db, orig)

	want := *orig
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		d, err := tx.DeliveryForUpdate(ctx, "whd_u")
		if err != nil {
			return err
		}
		checkDelivery(t, "DeliveryForUpdate", d, orig)
		d.Attempts, d.LockedUntil, d.UpdatedAt = 1, t0.Add(time.Minute), t0.Add(time.Second)
		d.Body, d.Event, d.CreatedAt, d.EventID = []byte("changed"), "changed", t0.Add(time.Hour), 99 // not updatable
		want.Attempts, want.LockedUntil, want.UpdatedAt = 1, t0.Add(time.Minute), t0.Add(time.Second)
		return tx.UpdateDelivery(ctx, d)
	})
	checkDelivery(t, "after claiming", readDelivery(t, db, "whd_u"), &want)

	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		d, err := tx.DeliveryForUpdate(ctx, "whd_u")
		if err != nil {
			return err
		}
		d.Status, d.NextAttemptAt, d.LockedUntil, d.UpdatedAt = webhook.Pending, t0.Add(5*time.Minute), time.Time{}, t0.Add(2*time.Second)
		want.Status, want.NextAttemptAt, want.LockedUntil, want.UpdatedAt = webhook.Pending, t0.Add(5*time.Minute), time.Time{}, t0.Add(2*time.Second)
		return tx.UpdateDelivery(ctx, d)
	})
	got := readDelivery(t, db, "whd_u")
	checkDelivery(t, "after scheduling a retry", got, &want)
	if !got.LockedUntil.IsZero() {
		t.Errorf("LockedUntil after release = %v, want zero", got.LockedUntil)
	}

	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		d, err := tx.DeliveryForUpdate(ctx, "whd_u")
		if err != nil {
			return err
		}
		d.Status, d.Attempts, d.UpdatedAt = webhook.Succeeded, 2, t0.Add(6*time.Minute)
		want.Status, want.Attempts, want.UpdatedAt = webhook.Succeeded, 2, t0.Add(6*time.Minute)
		return tx.UpdateDelivery(ctx, d)
	})
	checkDelivery(t, "after success", readDelivery(t, db, "whd_u"), &want)
}

// Attempts are listed in the order they were made, every field kept (the
// duration to the millisecond); an answer that is not valid UTF-8 or holds
// NUL bytes is stored all the same.
func testWebhookAttempts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	dest := whDest("a", "https://a.example/")
	addDests(t, db, dest)
	addDeliveries(t, db, whDelivery("whd_a", dest, 1, "a", t0), whDelivery("whd_b", dest, 2, "a", t0))

	in := []webhook.Attempt{
		{Attempt: 1, At: t0, StatusCode: 500, Duration: 1234567 * time.Microsecond, Response: `{"error":"boom"}`},
		{Attempt: 2, At: t0.Add(time.Minute), Duration: 5 * time.Second,
			Error: `Post "https://a.example/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{Attempt: 3, At: t0.Add(6 * time.Minute), StatusCode: 302, Duration: 0, Response: strings.Repeat("é", 1024)},
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for _, a := range in {
			if err := tx.AddAttempt(ctx, "whd_a", a); err != nil {
				return err
			}
		}
		return tx.AddAttempt(ctx, "whd_b", webhook.Attempt{Attempt: 1, At: t0, StatusCode: 200})
	})
	got, err := ws.Attempts(ctx, "whd_a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("Attempts = %d, want %d", len(got), len(in))
	}
	for i, want := range in {
		var d diffs
		d.eq("Attempt", got[i].Attempt, want.Attempt)
		d.time("At", got[i].At, want.At)
		d.eq("StatusCode", got[i].StatusCode, want.StatusCode)
		d.eq("Duration", got[i].Duration, want.Duration.Truncate(time.Millisecond))
		d.eq("Response", got[i].Response, want.Response)
		d.eq("Error", got[i].Error, want.Error)
		d.report(t, fmt.Sprintf("attempt %d", i+1))
	}
	if b, err := ws.Attempts(ctx, "whd_b"); err != nil || len(b) != 1 || b[0].StatusCode != 200 {
		t.Errorf("Attempts of the other delivery = %v, %v; want its one", b, err)
	}

	// Receivers answer anything: raw binary, NUL bytes, a 2 KB cut through
	// the middle of a UTF-8 sequence.
	for i, resp := range []string{
		"ok\x00tail",
		"\xff\xfe\xfd binary \x80",
		strings.Repeat("é", 1024)[:2047],
		"\x00\x00\x00",
		"mixed \xc3\x28 \x00 ✓",
	} {
		id := fmt.Sprintf("whd_raw%d", i)
		addDeliveries(t, db, whDelivery(id, dest, int64(100+i), "a", t0))
		if err := whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
			return tx.AddAttempt(ctx, id, webhook.Attempt{Attempt: 1, At: t0, StatusCode: 200, Response: resp})
		}); err != nil {
			t.Errorf("AddAttempt with response %q: %v; want it stored", resp, err)
			continue
		}
		as, err := ws.Attempts(ctx, id)
		if err != nil || len(as) != 1 {
			t.Errorf("Attempts after storing %q = %v, %v", resp, as, err)
			continue
		}
		r := as[0].Response
		if !utf8.ValidString(r) || strings.ContainsRune(r, 0) {
			t.Errorf("stored response of %q = %q: want valid UTF-8 without NUL", resp, r)
		}
		// What was valid text survives.
		for _, part := range []string{"ok", "tail", "binary", "mixed", "✓"} {
			if strings.Contains(resp, part) && !strings.Contains(r, part) {
				t.Errorf("stored response of %q = %q: lost %q", resp, r, part)
			}
		}
	}
}

// RequeueFailed makes failed deliveries created since a time due now: of
// one destination, of an app's destinations, or all of them.
func testWebhookRequeueFailed(t *testing.T, db *store.DB) {
	now := t0.Add(time.Hour)
	since := t0.Add(-time.Hour)
	addApp(t, db, "a")
	addApp(t, db, "b")
	a1, a2, all, b1 := whDest("a", "https://a1.example/"), whDest("a", "https://a2.example/"), whDest("", "https://all.example/"),
		whDest("b", "https://b1.example/")
	addDests(t, db, a1, a2, all, b1)
	mk := func(id string, dest *webhook.Destination, ev int64, app, status string, created time.Time) *webhook.Delivery {
		d := whDelivery(id, dest, ev, app, created)
		d.Status, d.Attempts, d.NextAttemptAt = status, 6, created.Add(6*time.Hour)
		return d
	}
	f1 := mk("whd_f1", a1, 1, "a", webhook.Failed, t0)
	f1.LockedUntil = t0.Add(5 * time.Minute) // a stale lease does not survive the requeue
	old := mk("whd_old", a1, 2, "a", webhook.Failed, t0.Add(-2*time.Hour))
	f2 := mk("whd_f2", a2, 3, "a", webhook.Failed, t0)
	fAllA := mk("whd_all_a", all, 4, "a", webhook.Failed, since) // exactly at since: included
	fAllB := mk("whd_all_b", all, 5, "b", webhook.Failed, t0)
	fB := mk("whd_b", b1, 6, "b", webhook.Failed, t0)
	pend := mk("whd_pending", a1, 7, "a", webhook.Pending, t0)
	ok := mk("whd_ok", a1, 8, "a", webhook.Succeeded, t0)
	addDeliveries(t, db, f1, old, f2, fAllA, fAllB, fB, pend, ok)

	requeue := func(app string, dest int64, since time.Time) int {
		t.Helper()
		var n int
		whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
			var err error
			n, err = tx.RequeueFailed(ctx, app, dest, since, now)
			return err
		})
		return n
	}
	requeued := func(d *webhook.Delivery) *webhook.Delivery {
		w := *d
		w.Status, w.NextAttemptAt, w.LockedUntil, w.UpdatedAt = webhook.Pending, now, time.Time{}, now
		return &w
	}
	check := func(what string, requeuedOnes ...*webhook.Delivery) {
		t.Helper()
		for _, d := range []*webhook.Delivery{f1, old, f2, fAllA, fAllB, fB, pend, ok} {
			want := d
			if slices.Contains(requeuedOnes, d) {
				want = requeued(d)
			}
			checkDelivery(t, what+": "+d.ID, readDelivery(t, db, d.ID), want)
		}
	}

	if n := requeue("", a1.ID, since); n != 1 {
		t.Errorf("RequeueFailed(destination a1, since) = %d, want 1", n)
	}
	check("after requeueing a1", f1)
	if n := requeue("a", 0, since); n != 2 {
		t.Errorf("RequeueFailed(app a, since) = %d, want 2 (a2's and app a's on the all-apps destination)", n)
	}
	check("after requeueing app a", f1, f2, fAllA)
	if n := requeue("", 0, since); n != 2 {
		t.Errorf("RequeueFailed(everything, since) = %d, want 2", n)
	}
	check("after requeueing everything since", f1, f2, fAllA, fAllB, fB)
	if n := requeue("", a1.ID, t0.Add(time.Hour)); n != 0 {
		t.Errorf("RequeueFailed(a1, since a later time) = %d, want 0", n)
	}
	if n := requeue("", a1.ID, t0.Add(-3*time.Hour)); n != 1 {
		t.Errorf("RequeueFailed(a1, since an earlier time) = %d, want 1 (the old one)", n)
	}
	check("after requeueing the old one", f1, f2, fAllA, fAllB, fB, old)
	if n := requeue("", 0, t0.Add(-3*time.Hour)); n != 0 {
		t.Errorf("RequeueFailed with nothing failed left = %d, want 0", n)
	}
}

// Deliveries lists the log newest first, by app (its destinations', and
// its events on destinations for every app), destination, status and limit.
func testWebhookDeliveries(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	da, db2, dall := whDest("a", "https://a.example/"), whDest("b", "https://b.example/"), whDest("", "https://all.example/")
	addDests(t, db, da, db2, dall)
	mk := func(id string, dest *webhook.Destination, ev int64, app, status string, minute int) *webhook.Delivery {
		d := whDelivery(id, dest, ev, app, t0.Add(time.Duration(minute)*time.Minute))
		d.Status = status
		return d
	}
	x := []*webhook.Delivery{
		mk("whd_x1", da, 1, "a", webhook.Pending, 1),
		mk("whd_x2", da, 2, "a", webhook.Succeeded, 2),
		mk("whd_x3", db2, 3, "b", webhook.Failed, 3),
		mk("whd_x4", dall, 2, "a", webhook.Succeeded, 4),
		mk("whd_x5", dall, 3, "b", webhook.Pending, 5),
		mk("whd_x6", dall, 6, "", webhook.Failed, 6),
		mk("whd_x7", da, 7, "a", webhook.Failed, 6), // same time as x6: the id breaks the tie
	}
	addDeliveries(t, db, x...)

	for _, c := range []struct {
		f    webhook.DeliveryFilter
		want []string
	}{
		{webhook.DeliveryFilter{Limit: 100}, []string{"whd_x7", "whd_x6", "whd_x5", "whd_x4", "whd_x3", "whd_x2", "whd_x1"}},
		{webhook.DeliveryFilter{AppID: "a", Limit: 100}, []string{"whd_x7", "whd_x4", "whd_x2", "whd_x1"}},
		{webhook.DeliveryFilter{AppID: "b", Limit: 100}, []string{"whd_x5", "whd_x3"}},
		{webhook.DeliveryFilter{AppID: "nobody", Limit: 100}, []string{}},
		{webhook.DeliveryFilter{DestinationID: dall.ID, Limit: 100}, []string{"whd_x6", "whd_x5", "whd_x4"}},
		{webhook.DeliveryFilter{DestinationID: da.ID, AppID: "b", Limit: 100}, []string{"whd_x7", "whd_x2", "whd_x1"}},
		{webhook.DeliveryFilter{Status: webhook.Failed, Limit: 100}, []string{"whd_x7", "whd_x6", "whd_x3"}},
		{webhook.DeliveryFilter{Status: webhook.Failed, AppID: "a", Limit: 100}, []string{"whd_x7"}},
		{webhook.DeliveryFilter{Status: webhook.Pending, DestinationID: dall.ID, Limit: 100}, []string{"whd_x5"}},
		{webhook.DeliveryFilter{Status: "nonsense", Limit: 100}, []string{}},
		{webhook.DeliveryFilter{Limit: 2}, []string{"whd_x7", "whd_x6"}},
		{webhook.DeliveryFilter{AppID: "a", Limit: 3}, []string{"whd_x7", "whd_x4", "whd_x2"}},
		{webhook.DeliveryFilter{DestinationID: 12345, Limit: 100}, []string{}},
	} {
		got, err := ws.Deliveries(ctx, c.f)
		if err != nil {
			t.Errorf("Deliveries(%+v): %v", c.f, err)
			continue
		}
		if got == nil {
			t.Errorf("Deliveries(%+v) = nil, want a non-nil list", c.f)
		}
		if ids := deliveryIDs(got); !slices.Equal(ids, c.want) {
			t.Errorf("Deliveries(%+v) = %v, want %v", c.f, ids, c.want)
		}
	}
	got, _ := ws.Deliveries(ctx, webhook.DeliveryFilter{DestinationID: da.ID, Limit: 100})
	for i, want := range []*webhook.Delivery{x[6], x[1], x[0]} {
		if i < len(got) {
			checkDelivery(t, "Deliveries "+want.ID, &got[i], want)
		}
	}
}

// Several dispatchers claiming at once (goroutines here, processes in
// production) never get the same event or delivery twice, and between them
// get all of them.
func testWebhookConcurrentClaims(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	dest := whDest("a", "https://a.example/")
	addDests(t, db, dest)
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		evs, err := tx.UndispatchedEvents(ctx, 1000)
		if err != nil {
			return err
		}
		var ids []int64
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return tx.MarkDispatched(ctx, ids, t0)
	})
	const n = 60
	now := t0.Add(time.Hour)
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		for i := range n {
			if _, err := tx.AddEventID(ctx, event.Event{AppID: "a", Type: event.KeyCreated, CreatedAt: t0,
				Data: map[string]any{"i": float64(i)}}); err != nil {
				return err
			}
			if err := tx.InsertDelivery(ctx, whDelivery(fmt.Sprintf("whd_c%03d", i), dest, int64(10000+i), "a", t0)); err != nil {
				return err
			}
		}
		return nil
	})

	var mu sync.Mutex
	events := map[int64]int{}
	deliveries := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Go(func() {
			for {
				var got int
				err := whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
					evs, err := tx.UndispatchedEvents(ctx, 4)
					if err != nil {
						return err
					}
					var ids []int64
					for _, e := range evs {
						ids = append(ids, e.ID)
					}
					if err := tx.MarkDispatched(ctx, ids, now); err != nil {
						return err
					}
					due, err := tx.DueDeliveries(ctx, now, 3)
					if err != nil {
						return err
					}
					for i := range due {
						due[i].Attempts++
						due[i].LockedUntil, due[i].UpdatedAt = now.Add(time.Minute), now
						if err := tx.UpdateDelivery(ctx, &due[i]); err != nil {
							return err
						}
					}
					got = len(evs) + len(due)
					mu.Lock()
					defer mu.Unlock()
					for _, id := range ids {
						events[id]++
					}
					for _, d := range due {
						deliveries[d.ID]++
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				if got == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claiming: %v", err)
	}
	if len(events) != n || len(deliveries) != n {
		t.Errorf("claimed %d distinct events and %d distinct deliveries, want %d of each", len(events), len(deliveries), n)
	}
	for id, c := range events {
		if c != 1 {
			t.Errorf("event %d claimed %d times", id, c)
		}
	}
	for id, c := range deliveries {
		if c != 1 {
			t.Errorf("delivery %s claimed %d times", id, c)
		}
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		if evs, err := tx.UndispatchedEvents(ctx, 100); err != nil || len(evs) != 0 {
			t.Errorf("UndispatchedEvents after the claims = %d, %v; want none", len(evs), err)
		}
		if due, err := tx.DueDeliveries(ctx, now, 100); err != nil || len(due) != 0 {
			t.Errorf("DueDeliveries after the claims = %d, %v; want none (all leased)", len(due), err)
		}
		return nil
	})
	for i := range n {
		if d := readDelivery(t, db, fmt.Sprintf("whd_c%03d", i)); d.Attempts != 1 {
			t.Errorf("%s attempts = %d, want 1", d.ID, d.Attempts)
		}
	}
}
