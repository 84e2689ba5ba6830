package loadtest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one measured phase.
type Result struct {
	Name       string
	Requests   int64           // completed requests, failures included
	Errors     int64           // requests that failed (transport, HTTP status, or success:false)
	Elapsed    time.Duration   // measuring time
	P50, P99   time.Duration   // latency percentiles over all requests
	FirstError string          // the first failure, for the report
	lat        []time.Duration // every request's latency, sorted, for add
}

// add folds b, a later round of the same phase, into r: counts and times
// summed, percentiles over both rounds' requests.
func (r *Result) add(b Result) {
	if r.Name == "" {
		*r = b
		return
	}
	r.Requests += b.Requests
	r.Errors += b.Errors
	r.Elapsed += b.Elapsed
	if r.FirstError == "" {
		r.FirstError = b.FirstError
	}
	r.lat = append(r.lat, b.lat...)
	slices.Sort(r.lat)
	r.P50, r.P99 = percentile(r.lat, 50), percentile(r.lat, 99)
}

// RPS is completed requests per second.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Measure runs do from conns goroutines, first for warmup (unrecorded) and
// then for d, and returns throughput, latency percentiles and failures. The
// i passed to do is unique across goroutines within a phase.
func Measure(ctx context.Context, name string, conns int, warmup, d time.Duration, do func(ctx context.Context, i int) error) Result {
	return MeasureAt(ctx, name, conns, warmup, d, 0, do)
}

// MeasureAt is Measure at a fixed offered rate (requests per second over all
// goroutines; 0: as fast as they can). Each goroutine sends on a schedule,
// and a request sent late because the previous reply came after its time
// counts its latency from that time, so a server that falls behind shows it
// in the percentiles rather than in a lower rate. A request whose goroutine
// was waiting for its time counts from when it is sent.
func MeasureAt(ctx context.Context, name string, conns int, warmup, d time.Duration, rate float64,
	do func(ctx context.Context, i int) error) Result {
	if warmup > 0 {
		drive(ctx, conns, warmup, rate, do)
	}
	res := drive(ctx, conns, d, rate, do)
	res.Name = name
	return res
}

// each calls do for i = 0 … n-1 from conns goroutines, unmeasured, and
// returns the first error.
func each(ctx context.Context, conns, n int, do func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && first.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return *err
	}
	return ctx.Err()
}

func drive(ctx context.Context, conns int, d time.Duration, rate float64, do func(ctx context.Context, i int) error) Result {
	type worker struct {
		lat    []time.Duration
		errs   int64
		first  string
		firstT time.Time
	}
	ws := make([]worker, conns)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range ws {
		wg.Add(1)
		go func(me *worker, w int) {
			defer wg.Done()
			me.lat = make([]time.Duration, 0, 4096)
			var every time.Duration // per goroutine, with a rate
			var wait *pauser
			next := start
			if rate > 0 {
				every = time.Duration(float64(conns) / rate * float64(time.Second))
				next = start.Add(every * time.Duration(w) / time.Duration(conns))
				wait = newPauser()
				defer wait.close()
			}
			for i := w; ctx.Err() == nil; i += conns {
				t0 := time.Now()
				if every > 0 {
					if !next.Before(deadline) {
						return
					}
					if early := next.Sub(t0); early > 0 {
						// On time: the request's latency counts from when
						// it is sent. The pause can overrun, and that is
						// the load tool's delay, not the server's.
						wait.pause(early)
						t0 = time.Now()
					} else {
						// Behind: the last reply came after this request's
						// time, and the wait since then counts.
						t0 = next
					}
					next = next.Add(every)
				}
				if !t0.Before(deadline) {
					return
				}
				err := do(ctx, i)
				t1 := time.Now()
				me.lat = append(me.lat, t1.Sub(t0))
				if err != nil {
					me.errs++
					if me.first == "" {
						me.first, me.firstT = err.Error(), t1
					}
				}
			}
		}(&ws[w], w)
	}
	wg.Wait()
	res := Result{Elapsed: time.Since(start)}
	var all []time.Duration
	var firstT time.Time
	for _, w := range ws {
		all = append(all, w.lat...)
		res.Errors += w.errs
		if w.first != "" && (res.FirstError == "" || w.firstT.Before(firstT)) {
			res.FirstError, firstT = w.first, w.firstT
		}
	}
	res.Requests = int64(len(all))
	slices.Sort(all)
	res.P50, res.P99 = percentile(all, 50), percentile(all, 99)
	res.lat = all
	return res
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i, 1)-1]
}
