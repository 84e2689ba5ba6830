package analytics

import (
	"context"
	"sync"
	"time"
)

// hourMS is an hour in milliseconds, the rollup resolution.
const hourMS = int64(time.Hour / time.Millisecond)

// cell is one rollup: an app's metric and code within the hour starting at
// hour (Unix milliseconds).
type cell struct {
	app, metric, code string
	hour              int64
}

// Recorder counts events in memory per app, metric, code and UTC hour, and
// writes the counts with Flush. It is safe for concurrent use. A crash loses
// the counts since the last successful flush; nothing else is lost, because a
// failed flush keeps its counts for the next one.
type Recorder struct {
	store Store

	mu     sync.Mutex
	counts map[cell]int64
}

// NewRecorder returns a Recorder that flushes to store.
func NewRecorder(store Store) *Recorder {
	return &Recorder{store: store, counts: map[cell]int64{}}
}

// Add counts one occurrence of metric with code (see the metric constants
// for which code goes with which metric) for appID at the given time. It
// never blocks on the database and allocates only for the first occurrence
// of an app, metric, code and hour since the last flush.
func (r *Recorder) Add(appID, metric, code string, at time.Time) {
	k := cell{app: appID, metric: metric, code: code, hour: hourOf(at)}
	r.mu.Lock()
	r.counts[k]++
	r.mu.Unlock()
}

// Pending returns how many distinct rollups wait for the next flush.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.counts)
}

// Flush writes every pending count with one Store.AddUsage call (one
// transaction). When the store fails, the counts are merged back and the
// next flush writes them; the error is returned. Call it periodically and at
// shutdown.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	if len(r.counts) == 0 {
		r.mu.Unlock()
		return nil
	}
	batch := r.counts
	r.counts = make(map[cell]int64, len(batch))
	r.mu.Unlock()

	counts := make([]Count, 0, len(batch))
	for k, n := range batch {
		counts = append(counts, Count{AppID: k.app, Metric: k.metric, Code: k.code, Hour: time.UnixMilli(k.hour).UTC(), N: n})
	}
	if err := r.store.AddUsage(ctx, counts); err != nil {
		r.mu.Lock()
		for k, n := range batch {
			r.counts[k] += n
		}
		r.mu.Unlock()
		return err
	}
	return nil
}

// hourOf returns the start of at's UTC hour in Unix milliseconds.
func hourOf(at time.Time) int64 {
	ms := at.UnixMilli()
	h := ms / hourMS
	if ms < 0 && ms%hourMS != 0 { // floor, not truncation toward zero
		h--
	}
	return h * hourMS
}
