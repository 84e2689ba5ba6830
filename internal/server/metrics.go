package server

import (
	"context"
	"errors"
	"io"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/internal/blob"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/internal/store"
)

// newMetrics builds the server's registry: keyward's own metrics, the
// database pools' statistics and the gauges read at scrape time.
func (s *Server) newMetrics() *metrics.Metrics {
	m := metrics.New()
	m.DBPools(s.DB.Pools())
	if s.DB.Engine() == store.SQLite {
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_write_batches_total",
			Help: "Write batches SQLite's writer committed (group commit: one commit for every write transaction queued meanwhile)."},
			func() float64 { b, _ := s.DB.WriteBatches(); return float64(b) }))
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_write_batch_units_total",
			Help: "Write transactions committed in SQLite's write batches; divided by keyward_write_batches_total, the average batch."},
			func() float64 { _, u := s.DB.WriteBatches(); return float64(u) }))
	}
	cache := func(f func(store.SessionCacheStatus) float64) func() float64 {
		return func() float64 { return f(s.DB.SessionCacheStatus()) }
	}
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_session_cache_on",
		Help: "1 while heartbeats are answered from the in-memory session cache, 0 while they read the database (--session-cache 0; on PostgreSQL, while notifications are not heard)."},
		cache(func(c store.SessionCacheStatus) float64 {
			if c.On {
				return 1
			}
			return 0
		})))
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_session_cache_sessions",
		Help: "Sessions whose heartbeat state the session cache holds."},
		cache(func(c store.SessionCacheStatus) float64 { return float64(c.Entries) })))
	if s.DB.Engine() == store.Postgres {
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_session_cache_listen_failures_total",
			Help: "Times the session cache stopped hearing PostgreSQL's notifications (connection lost, ping late); each turned it off until heard again."},
			cache(func(c store.SessionCacheStatus) float64 { return float64(c.ListenFailures) })))
	}
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_sessions_live",
		Help: "Open sessions of every app, counted at scrape time (NaN when the database does not answer)."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := s.DB.LiveSessions(ctx)
			if err != nil {
				s.opts.Log.Warn("metrics: count live sessions", "err", err)
				return math.NaN()
			}
			return float64(n)
		}))
	backlog := func(pick func(pending, paused int64) int64) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			pending, paused, err := s.DB.WebhookBacklog(ctx)
			if err != nil {
				s.opts.Log.Warn("metrics: count webhook backlog", "err", err)
				return math.NaN()
			}
			return float64(pick(pending, paused))
		}
	}
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_webhook_deliveries_pending",
		Help: "Webhook deliveries waiting to be sent or retried, counted at scrape time."},
		backlog(func(pending, _ int64) int64 { return pending })))
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_webhook_destinations_paused",
		Help: "Webhook destinations paused after failures in a row, counted at scrape time."},
		backlog(func(_, paused int64) int64 { return paused })))
	return m
}

// countedBlobs counts the blob store's failures; a missing object and a
// cancelled request are not failures of the store.
type countedBlobs struct {
	blob.Store
	m *metrics.Metrics
}

func (c countedBlobs) note(op string, err error) {
	if err != nil && !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, context.Canceled) {
		c.m.BlobError(op)
	}
}

func (c countedBlobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	n, err := c.Store.Put(ctx, key, r)
	c.note("put", err)
	return n, err
}

func (c countedBlobs) Open(ctx context.Context, key string) (blob.Object, error) {
	o, err := c.Store.Open(ctx, key)
	c.note("open", err)
	return o, err
}

func (c countedBlobs) Delete(ctx context.Context, key string) error {
	err := c.Store.Delete(ctx, key)
	c.note("delete", err)
	return err
}
