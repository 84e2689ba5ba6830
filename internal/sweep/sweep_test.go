package sweep

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunnerRunsUntilStoppedAndRunsFinalOnce(t *testing.T) {
	var runs, finals atomic.Int32
	ran := make(chan struct{}, 100)
	r := New(slog.New(slog.DiscardHandler), Job{
		Name: "count", Interval: time.Millisecond,
		Run:   func(context.Context) error { runs.Add(1); ran <- struct{}{}; return nil },
		Final: func(context.Context) error { finals.Add(1); return nil },
	})
	if r.Running() {
		t.Error("Running before Start")
	}
	r.Start(context.Background())
	if !r.Running() {
		t.Error("not Running after Start")
	}
	<-ran // wait for a real run rather than sleeping
	r.Stop()
	if r.Running() {
		t.Error("Running after Stop")
	}
	r.Stop() // stopping twice is safe
	after := runs.Load()
	if after < 1 {
		t.Fatalf("runs = %d, want at least 1", after)
	}
	if got := finals.Load(); got != 1 {
		t.Errorf("final runs = %d, want 1", got)
	}
	// Stop waited for the loop goroutine to exit, so no run can follow.
	if runs.Load() != after {
		t.Errorf("job ran after Stop: %d runs, had %d", runs.Load(), after)
	}
}

func TestStopWithoutStart(t *testing.T) {
	New(slog.New(slog.DiscardHandler)).Stop()
}

// A job with a Wake channel runs as soon as it is woken, long before its
// interval, once per wake-up.
func TestWakeRunsAtOnce(t *testing.T) {
	wake := make(chan struct{})
	ran := make(chan struct{})
	r := New(slog.New(slog.DiscardHandler), Job{
		Name: "woken", Interval: time.Hour, Wake: wake,
		Run: func(context.Context) error { ran <- struct{}{}; return nil },
	})
	r.Start(context.Background())
	defer r.Stop()
	for range 3 {
		wake <- struct{}{} // unbuffered: received by the loop
		<-ran
	}
}
