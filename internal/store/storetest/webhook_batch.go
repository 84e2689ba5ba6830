package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/webhook"
)

// The batch methods the dispatcher uses (InsertDeliveries, LeaseDeliveries,
// DeliveriesForUpdate, UpdateDeliveries, AddAttempts, DestinationsForUpdate)
// do what the one-row methods do to each row, also past the rows one
// statement takes (600 > 500), and touch no other row.
func testWebhookBatches(t *testing.T, db *store.DB) {
	const n = 600
	ctx := context.Background()
	ws := db.WebhookStore()
	addApp(t, db, "a")
	d1, d2 := whDest("a", "https://one.example/"), whDest("", "https://two.example/")
	addDests(t, db, d1, d2)

	// InsertDeliveries: every field of every row; a pair already there is
	// skipped, in the same call or an earlier one.
	addDeliveries(t, db, whDelivery("whd_before", d1, 5, "a", t0))
	var in []*webhook.Delivery
	for i := range n {
		dest := d1
		if i%2 == 1 {
			dest = d2
		}
		d := whDelivery(fmt.Sprintf("whd_%03d", i), dest, int64(1000+i), "a", t0.Add(time.Duration(i)*time.Millisecond))
		d.Subject, d.Sequence = event.KeySubject(int64(i%7)), int64(i+1)
		if i == 3 {
			d.AppID, d.Subject = "", ""
		}
		in = append(in, d)
	}
	dupInBatch := whDelivery("whd_dup_batch", d1, 1000, "a", t0) // the pair of whd_000
	dupEarlier := whDelivery("whd_dup_earlier", d1, 5, "a", t0)  // the pair of whd_before
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		return tx.InsertDeliveries(ctx, append(slices.Clone(in), dupInBatch, dupEarlier))
	})
	for _, id := range []string{"whd_dup_batch", "whd_dup_earlier"} {
		_, err := ws.Delivery(ctx, id)
		wantErr(t, "a duplicate pair of InsertDeliveries", err, apperr.ErrNotFound)
	}
	for _, i := range []int{0, 1, 3, 499, 500, n - 1} {
		checkDelivery(t, "after InsertDeliveries", readDelivery(t, db, in[i].ID), in[i])
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.InsertDeliveries(ctx, nil) })

	// LeaseDeliveries counts an attempt and sets the lease of the named
	// rows only.
	until, now := t0.Add(time.Hour), t0.Add(time.Minute)
	var leased []string
	for i := range n - 1 { // all but the last
		leased = append(leased, in[i].ID)
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.LeaseDeliveries(ctx, leased, until, now) })
	for _, i := range []int{0, 499, 500, n - 2} {
		want := *in[i]
		want.Attempts, want.LockedUntil, want.UpdatedAt = 1, until, now
		checkDelivery(t, "after LeaseDeliveries", readDelivery(t, db, in[i].ID), &want)
	}
	checkDelivery(t, "a delivery LeaseDeliveries did not name", readDelivery(t, db, in[n-1].ID), in[n-1])

	// DeliveriesForUpdate: the existing ones, by id, whatever the order asked.
	ask := []string{in[n-1].ID, "whd_missing", in[2].ID, in[0].ID}
	for i := 10; i < 520; i++ {
		ask = append(ask, in[i].ID)
	}
	var got []webhook.Delivery
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		var err error
		got, err = tx.DeliveriesForUpdate(ctx, ask)
		return err
	})
	wantIDs := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(ask), func(id string) bool { return id == "whd_missing" })))
	if ids := deliveryIDs(got); !slices.Equal(ids, wantIDs) {
		t.Fatalf("DeliveriesForUpdate = %d ids %v…, want %d ids %v…", len(ids), ids[:min(3, len(ids))], len(wantIDs), wantIDs[:3])
	}
	checkDelivery(t, "DeliveriesForUpdate", &got[len(got)-1], in[n-1])

	// UpdateDeliveries writes each row's own values, and no other column.
	var changed []*webhook.Delivery
	wants := map[string]webhook.Delivery{}
	for i := range got {
		d := &got[i]
		d.Body, d.Event, d.EventID = []byte("changed"), "changed", 99 // not updatable
		switch i % 3 {
		case 0:
			d.Status = webhook.Succeeded
		case 1:
			d.Status, d.NextAttemptAt = webhook.Pending, t0.Add(time.Duration(i)*time.Second)
		default:
			d.Status, d.Attempts = webhook.Failed, 6
		}
		d.LockedUntil, d.UpdatedAt = time.Time{}, t0.Add(2*time.Minute+time.Duration(i)*time.Millisecond)
		changed = append(changed, d)
		var orig *webhook.Delivery
		for _, o := range in {
			if o.ID == d.ID {
				orig = o
			}
		}
		want := *orig
		want.Status, want.Attempts, want.NextAttemptAt, want.LockedUntil, want.UpdatedAt = d.Status, d.Attempts, d.NextAttemptAt, time.Time{}, d.UpdatedAt
		wants[d.ID] = want
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.UpdateDeliveries(ctx, changed) })
	for _, i := range []int{0, 1, 2, 300, 499, 500, 501, len(changed) - 1} {
		want := wants[changed[i].ID]
		checkDelivery(t, fmt.Sprintf("after UpdateDeliveries (row %d)", i), readDelivery(t, db, want.ID), &want)
	}
	other := *in[1]
	other.Attempts, other.LockedUntil, other.UpdatedAt = 1, until, now
	checkDelivery(t, "a delivery UpdateDeliveries did not name", readDelivery(t, db, in[1].ID), &other)
	err := whTxErr(db, func(ctx context.Context, tx webhook.Tx) error {
		return tx.UpdateDeliveries(ctx, []*webhook.Delivery{changed[0], {ID: "whd_missing", Status: webhook.Failed, UpdatedAt: t0}})
	})
	wantErr(t, "UpdateDeliveries of a missing delivery", err, apperr.ErrNotFound)

	// AddAttempts keeps the order and every field, per delivery.
	var as []webhook.DeliveryAttempt
	for i := range n {
		id := in[i%2].ID
		as = append(as, webhook.DeliveryAttempt{DeliveryID: id, Attempt: webhook.Attempt{Attempt: i + 1, At: t0.Add(time.Duration(i) * time.Second),
			StatusCode: 200 + i%3, Duration: time.Duration(i) * time.Millisecond, Response: fmt.Sprintf("r%d\x00", i), Error: fmt.Sprint("e", i)}})
	}
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error { return tx.AddAttempts(ctx, as) })
	for k := range 2 {
		logged, err := ws.Attempts(ctx, in[k].ID)
		if err != nil || len(logged) != n/2 {
			t.Fatalf("Attempts(%s) = %d, %v; want %d", in[k].ID, len(logged), err, n/2)
		}
		for j, a := range logged {
			i := 2*j + k
			var d diffs
			d.eq("Attempt", a.Attempt, i+1)
			d.time("At", a.At, t0.Add(time.Duration(i)*time.Second))
			d.eq("StatusCode", a.StatusCode, 200+i%3)
			d.eq("Duration", a.Duration, time.Duration(i)*time.Millisecond)
			d.eq("Response", a.Response, fmt.Sprintf("r%d", i))
			d.eq("Error", a.Error, fmt.Sprint("e", i))
			d.report(t, fmt.Sprintf("attempt %d of %s", j, in[k].ID))
		}
	}

	// DestinationsForUpdate: the existing ones, by id.
	whTx(t, db, func(ctx context.Context, tx webhook.Tx) error {
		ds, err := tx.DestinationsForUpdate(ctx, []int64{d2.ID, d1.ID + d2.ID + 1000, d1.ID})
		if err != nil {
			return err
		}
		if ids := destIDs(ds); !slices.Equal(ids, []int64{d1.ID, d2.ID}) {
			t.Errorf("DestinationsForUpdate = %v, want %v", ids, []int64{d1.ID, d2.ID})
		} else {
			checkDest(t, "DestinationsForUpdate", &ds[0], d1)
			checkDest(t, "DestinationsForUpdate", &ds[1], d2)
		}
		if ds, err := tx.DestinationsForUpdate(ctx, nil); err != nil || len(ds) != 0 {
			t.Errorf("DestinationsForUpdate(none) = %v, %v; want none", ds, err)
		}
		return nil
	})
}
