package loadtest

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestPauseWaitsItsTime checks that pause returns no earlier than asked, time
// after time on one pauser (the timer is re-armed and its expiry consumed),
// and that on Linux it waits through the poller rather than falling back to
// time.Sleep.
func TestPauseWaitsItsTime(t *testing.T) {
	p := newPauser()
	defer p.close()
	if runtime.GOOS == "linux" && !p.polled() {
		t.Fatal("no timerfd: the pauser fell back to time.Sleep")
	}
	for _, d := range []time.Duration{0, -time.Millisecond, 300 * time.Microsecond, 2 * time.Millisecond, time.Millisecond} {
		t0 := time.Now()
		p.pause(d)
		if got := time.Since(t0); got < d {
			t.Fatalf("pause(%v) returned after %v", d, got)
		}
	}
}

// BenchmarkPauseDuringCollection measures how late a 500 µs pause wakes
// while a collection of a large pointer heap runs and nothing else is
// runnable, so that the collector's idle workers hold every processor: the
// situation of an in-process server collecting between a paced client's
// requests. It reports the 99th-percentile overrun for the pauser and for
// time.Sleep.
func BenchmarkPauseDuringCollection(b *testing.B) {
	type node struct{ next *node }
	var heap []*node
	for range 1 << 21 {
		heap = append(heap, &node{})
	}
	for i := 1; i < len(heap); i++ {
		heap[i-1].next = heap[i]
	}
	for _, c := range []struct {
		name  string
		pause func(time.Duration)
	}{
		{"timerfd", newPauser().pause},
		{"sleep", time.Sleep},
	} {
		b.Run(c.name, func(b *testing.B) {
			over := make([]time.Duration, 0, b.N)
			for b.Loop() {
				done := make(chan struct{})
				go func() { runtime.GC(); close(done) }()
				t0 := time.Now()
				c.pause(500 * time.Microsecond)
				over = append(over, time.Since(t0)-500*time.Microsecond)
				<-done
			}
			slices.Sort(over)
			b.ReportMetric(float64(percentile(over, 50).Microseconds()), "p50-overrun-µs")
			b.ReportMetric(float64(percentile(over, 99).Microseconds()), "p99-overrun-µs")
		})
	}
	runtime.KeepAlive(heap)
}
