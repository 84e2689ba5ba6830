package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/webhook"
)

// A job lease has one holder at a time: free → taken; held and unexpired →
// refused to others and renewed by its holder; expired → taken over. Racing
// processes never both win.
func TestJobLeases(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			db := openMigrated(t, e.migrated(t))
			ctx := context.Background()
			t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			try := func(holder string, now time.Time, want bool) {
				t.Helper()
				got, err := db.TryLease(ctx, "expire-keys", holder, now, now.Add(2*time.Minute))
				if err != nil || got != want {
					t.Fatalf("TryLease(%s at %s) = %v, %v; want %v", holder, now.Format(time.TimeOnly), got, err, want)
				}
			}
			try("a", t0, true)
			try("b", t0.Add(time.Minute), false)                      // held by a
			try("a", t0.Add(time.Minute), true)                       // a renews: until t0+3m
			try("b", t0.Add(150*time.Second), false)                  // still a's
			try("b", t0.Add(3*time.Minute+time.Millisecond), true)    // expired: b takes over
			try("a", t0.Add(3*time.Minute+2*time.Millisecond), false) // now b's
			if ok, err := db.TryLease(ctx, "other-job", "a", t0, t0.Add(time.Minute)); !ok || err != nil {
				t.Fatalf("another job's lease: %v, %v", ok, err)
			}

			// Racing holders of a free lease: exactly one wins.
			var wins atomic.Int32
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := db.TryLease(ctx, "race", string(rune('a'+i)), t0, t0.Add(time.Minute))
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
					}
				}()
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d racing holders won the lease, want 1", wins.Load())
			}
		})
	}
}

// PurgeWebhookLog deletes finished deliveries (and their attempts) and
// dispatched events older than the cutoff, in batches; pending deliveries,
// undispatched events and newer rows stay.
func TestPurgeWebhookLog(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			db := openMigrated(t, e.migrated(t))
			ctx := context.Background()
			old := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			recent := old.Add(60 * 24 * time.Hour)
			cutoff := old.Add(30 * 24 * time.Hour)
			ws := db.WebhookStore()
			err := ws.InTx(ctx, func(tx webhook.Tx) error {
				dest := &webhook.Destination{URL: "https://example.com/h", Secret: "s", Enabled: true, CreatedAt: old, UpdatedAt: old}
				if err := tx.InsertDestination(ctx, dest); err != nil {
					return err
				}
				for i, c := range []struct {
					status string
					at     time.Time
					sent   bool
				}{{webhook.Succeeded, old, true}, {webhook.Failed, old, true}, {webhook.Pending, old, true},
					{webhook.Succeeded, recent, true}, {webhook.Succeeded, old, false}, {webhook.Succeeded, old, true}} {
					id, err := tx.AddEventID(ctx, event.Event{Type: "test", CreatedAt: c.at, Data: map[string]any{}})
					if err != nil {
						return err
					}
					if c.sent {
						if err := tx.MarkDispatched(ctx, []int64{id}, c.at); err != nil {
							return err
						}
					}
					d := &webhook.Delivery{ID: fmt.Sprintf("whd_%d", i), DestinationID: dest.ID, EventID: id, Event: "test", Body: []byte("{}"),
						Status: c.status, NextAttemptAt: c.at, CreatedAt: c.at, UpdatedAt: c.at}
					if err := tx.InsertDelivery(ctx, d); err != nil {
						return err
					}
					if err := tx.AddAttempt(ctx, d.ID, webhook.Attempt{Attempt: 1, At: c.at}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			d, ev, err := db.PurgeWebhookLog(ctx, cutoff, 2) // batches of 2: several rounds
			if err != nil || d != 4 || ev != 4 {
				t.Fatalf("PurgeWebhookLog = %d deliveries, %d events, %v; want 4 and 4", d, ev, err)
			}
			left, err := ws.Deliveries(ctx, webhook.DeliveryFilter{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, l := range left {
				ids = append(ids, l.ID)
			}
			if got := strings.Join(ids, " "); got != "whd_3 whd_2" {
				t.Fatalf("deliveries left %q, want the recent one and the pending one", got)
			}
			if as, err := ws.Attempts(ctx, "whd_0"); err != nil || len(as) != 0 {
				t.Fatalf("attempts of a purged delivery: %v, %v", as, err)
			}
			evs, err := db.Events(ctx, 0, 100)
			if err != nil || len(evs) != 2 {
				t.Fatalf("events left: %d, %v; want 2 (the recent one and the undispatched one)", len(evs), err)
			}
		})
	}
}
