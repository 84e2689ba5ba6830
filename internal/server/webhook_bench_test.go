package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/webhook"
)

// benchReceiver answers 200 at once and reports each arrival.
func benchReceiver(b *testing.B, arrived func(id string)) string {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived(r.Header.Get("X-Webhook-Id"))
	}))
	b.Cleanup(rcv.Close)
	return rcv.URL
}

func benchEvents(b *testing.B, s *kwtest.Server, appID string, n int) {
	benchSubjectEvents(b, s, appID, n, 0)
}

// benchSubjectEvents writes n events about subjects key:0 … key:subjects-1
// in turn (subjects 0: none).
func benchSubjectEvents(b *testing.B, s *kwtest.Server, appID string, n, subjects int) {
	err := s.DB.WebhookStore().InTx(context.Background(), func(tx webhook.Tx) error {
		for i := range n {
			subject := ""
			if subjects > 0 {
				subject = event.KeySubject(int64(i % subjects))
			}
			if _, err := tx.AddEventID(context.Background(), event.Event{AppID: appID, Type: event.KeyCreated, CreatedAt: s.Clock.Now(),
				Data: map[string]any{"app_id": appID, "n": i}, Subject: subject}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWebhookDeliveries measures fan-out plus signed delivery to a
// local receiver: b.N events, one destination, the dispatcher driven until
// all arrived (8 sends at once, one process, SQLite). See docs/performance.md.
func BenchmarkWebhookDeliveries(b *testing.B) {
	var got atomic.Int64
	s := kwtest.Start(b, kwtest.Options{Engine: "sqlite"})
	a := s.CreateApp("bench")
	s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": benchReceiver(b, func(string) { got.Add(1) })})
	benchEvents(b, s, a.ID, b.N)
	b.ResetTimer()
	for got.Load() < int64(b.N) {
		if err := s.Dispatcher.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkWebhookSubjects measures the same with every event about one of
// 1000 keys (5 events a key at -benchtime=5000x), on each engine: the cost
// of per-subject order (a later event of a key waits for the earlier one)
// to throughput across subjects. See docs/performance.md.
func BenchmarkWebhookSubjects(b *testing.B) {
	for _, engine := range kwtest.Engines() {
		b.Run(engine, func(b *testing.B) {
			var got atomic.Int64
			s := kwtest.Start(b, kwtest.Options{Engine: engine})
			a := s.CreateApp("bench")
			s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": benchReceiver(b, func(string) { got.Add(1) })})
			benchSubjectEvents(b, s, a.ID, b.N, 1000)
			b.ResetTimer()
			for got.Load() < int64(b.N) {
				if err := s.Dispatcher.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkWebhookLatency measures the time from an event's commit to its
// arrival at the receiver with the dispatcher running on its own, as in
// production (every second): events are written at random points of that
// interval.
func BenchmarkWebhookLatency(b *testing.B) {
	var mu sync.Mutex
	arrived := make(chan time.Time, 1024)
	s := kwtest.Start(b, kwtest.Options{Engine: "sqlite", DispatchEvery: time.Second})
	a := s.CreateApp("bench")
	s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": benchReceiver(b, func(string) {
		mu.Lock()
		defer mu.Unlock()
		arrived <- time.Now()
	})})
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(time.Duration(137*(i%7)) * time.Millisecond)
		start := time.Now()
		benchEvents(b, s, a.ID, 1)
		lat = append(lat, (<-arrived).Sub(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Milliseconds()), "p90-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
}
