package loadtest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Result is one measured phase.
type Result struct {
	Name       string
	Requests   int64         // completed requests, failures included
	Errors     int64         // requests that failed (transport, HTTP status, or success:false)
	Elapsed    time.Duration // measuring time
	P50, P99   time.Duration // latency percentiles over all requests
	FirstError string        // the first failure, for the report
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
	if warmup > 0 {
		drive(ctx, conns, warmup, do)
	}
	res := drive(ctx, conns, d, do)
	res.Name = name
	return res
}

func drive(ctx context.Context, conns int, d time.Duration, do func(ctx context.Context, i int) error) Result {
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
			for i := w; ctx.Err() == nil; i += conns {
				t0 := time.Now()
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
