package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/webhook"
)

// A dispatcher run records a batch of attempts at once: to one destination
// that answers 200, one that answers 500, and one deleted (with its
// deliveries) while its deliveries are being sent. Each outcome lands as if
// recorded alone: the successes succeeded, the failures wait for their
// retry and count against their destination, the deleted destination's
// attempts are dropped without failing the rest of the batch.
func TestWebhookBatchRecord(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		const events = 5
		logs := &kwtest.LogBuffer{}
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Log: slog.New(slog.NewTextHandler(logs, nil))})
		a := s.CreateApp("Batch")
		var gone int64
		var deleteOnce sync.Once
		deleted := make(chan struct{})
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/ok":
			case "/fail":
				w.WriteHeader(http.StatusInternalServerError)
			case "/gone":
				deleteOnce.Do(func() {
					defer close(deleted)
					if err := s.Webhooks.DeleteDestination(context.Background(), audit.System, gone); err != nil {
						t.Errorf("DeleteDestination: %v", err)
					}
				})
				<-deleted
			}
		}))
		defer rcv.Close()
		ids := map[string]int64{}
		for _, p := range []string{"ok", "fail", "gone"} {
			w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": rcv.URL + "/" + p}).Obj("webhook")
			ids[p] = int64(w["id"].(float64))
		}
		gone = ids["gone"]
		writeBatchEvents(t, s, a.ID, events)
		if err := s.Dispatcher.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if strings.Contains(logs.String(), "record webhook attempts") {
			t.Fatalf("the batch was not recorded: %s", logs)
		}
		now := s.Clock.Now()
		for _, c := range []struct {
			dest     string
			status   string
			failures int
		}{{"ok", webhook.Succeeded, 0}, {"fail", webhook.Pending, events}} {
			dels, err := s.Webhooks.Deliveries(context.Background(), webhook.DeliveryFilter{DestinationID: ids[c.dest], Limit: 100})
			if err != nil || len(dels) != events {
				t.Fatalf("deliveries to %s: %d, %v; want %d", c.dest, len(dels), err, events)
			}
			for _, d := range dels {
				_, as, err := s.Webhooks.Delivery(context.Background(), d.ID)
				if err != nil || len(as) != 1 || as[0].Attempt != 1 {
					t.Errorf("attempts of %s to %s: %+v, %v; want one, attempt 1", d.ID, c.dest, as, err)
				}
				if d.Status != c.status || d.Attempts != 1 || !d.LockedUntil.IsZero() {
					t.Errorf("delivery to %s: status %s, attempts %d, lease %v; want %s, 1, none", c.dest, d.Status, d.Attempts, d.LockedUntil, c.status)
				}
				if c.status == webhook.Pending {
					if wait := d.NextAttemptAt.Sub(now); wait < 54*time.Second || wait > 66*time.Second {
						t.Errorf("failed delivery to %s retries in %s, want 1 min ± 10 %%", c.dest, wait)
					}
				}
			}
			dest, err := s.Webhooks.Destination(context.Background(), ids[c.dest])
			if err != nil || dest.Failures != c.failures || dest.PausedAt != nil {
				t.Errorf("destination %s: %+v, %v; want %d failures, not paused", c.dest, dest, err, c.failures)
			}
		}
		if _, err := s.Webhooks.Destination(context.Background(), gone); err == nil {
			t.Errorf("the deleted destination is still there")
		}
		// Nothing is left to send before the retries are due.
		if n, err := s.Dispatcher.SendDue(context.Background()); n != 0 || err != nil {
			t.Errorf("SendDue after the batch = %d, %v; want 0", n, err)
		}
	})
}

// writeBatchEvents writes n key.created events of app in one transaction.
func writeBatchEvents(t *testing.T, s *kwtest.Server, appID string, n int) {
	t.Helper()
	err := s.DB.WebhookStore().InTx(context.Background(), func(tx webhook.Tx) error {
		for i := range n {
			if err := tx.AddEvent(context.Background(), eventFor(appID, i, s.Clock.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func eventFor(appID string, i int, now time.Time) event.Event {
	return event.Event{AppID: appID, Type: event.KeyCreated, CreatedAt: now, Subject: fmt.Sprintf("key:%d", i), Data: map[string]any{"n": i}}
}

// A fan-out that queues AnalyzeAfter deliveries or more refreshes
// PostgreSQL's statistics of the deliveries (an ANALYZE, which
// pg_stat_user_tables.analyze_count counts), so the next claim is planned
// for the queue as it is; a smaller one does not.
func TestWebhookFanOutAnalyzes(t *testing.T) {
	t.Parallel()
	if len(kwtest.Engines()) == 1 {
		t.Skip(kwtest.NoPostgres)
	}
	s := kwtest.Start(t, kwtest.Options{Engine: "postgres"})
	a := s.CreateApp("Analyze")
	for i := range 2 {
		s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": fmt.Sprintf("http://127.0.0.1:9/%d", i)})
	}
	raw := kwtest.RawDB(t, "", s.DatabaseURL)
	analyzed := func() (n int) {
		t.Helper()
		if err := raw.QueryRow(`SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := analyzed()
	writeBatchEvents(t, s, a.ID, webhook.AnalyzeAfter/2-1) // 998 deliveries
	if err := s.Dispatcher.FanOut(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := analyzed(); n != before {
		t.Errorf("a fan-out of %d deliveries analyzed the table (analyze_count %d → %d)", webhook.AnalyzeAfter-2, before, n)
	}
	writeBatchEvents(t, s, a.ID, webhook.AnalyzeAfter/2) // 1 000
	if err := s.Dispatcher.FanOut(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := analyzed(); n != before+1 {
		t.Errorf("after a fan-out of %d deliveries: analyze_count %d → %d, want one ANALYZE", webhook.AnalyzeAfter, before, n)
	}
}
