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
	r.Start(context.Background())
	<-ran // wait for a real run rather than sleeping
	r.Stop()
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
