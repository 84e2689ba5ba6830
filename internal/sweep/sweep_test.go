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

// Shutdown lets a run under way finish while its context lasts, and cuts
// (cancels and names) the runs still going when it ends; the final steps
// run either way.
func TestShutdownCutsRunsStillGoingAtTheDeadline(t *testing.T) {
	started := make(chan struct{}, 2)
	finish := make(chan struct{})
	var finals atomic.Int32
	r := New(slog.New(slog.DiscardHandler),
		Job{Name: "stuck", Interval: time.Millisecond, Final: func(context.Context) error { finals.Add(1); return nil },
			Run: func(ctx context.Context) error {
				started <- struct{}{} // once: it never returns before the cut
				<-ctx.Done()          // only a cut ends it
				return ctx.Err()
			}},
		Job{Name: "finishing", Interval: time.Millisecond, Final: func(context.Context) error { finals.Add(1); return nil },
			Run: func(ctx context.Context) error {
				select { // may run again before Shutdown begins
				case started <- struct{}{}:
				default:
				}
				<-finish
				return nil
			}},
	)
	r.Start(context.Background())
	<-started
	<-started
	if busy := r.Busy(); len(busy) != 2 || busy[0] != "finishing" || busy[1] != "stuck" {
		t.Fatalf("Busy = %v, want [finishing stuck]", busy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cut := make(chan []string)
	go func() { cut <- r.Shutdown(ctx) }()
	close(finish) // "finishing" ends by itself within the deadline
	for len(r.Busy()) != 1 {
		time.Sleep(time.Millisecond) // waiting for "finishing" to return, not for time to pass
	}
	cancel() // the deadline
	if got := <-cut; len(got) != 1 || got[0] != "stuck" {
		t.Errorf("Shutdown cut %v, want [stuck]", got)
	}
	if n := finals.Load(); n != 2 {
		t.Errorf("final steps run %d times, want 2", n)
	}
	if r.Shutdown(context.Background()) != nil || len(r.Busy()) != 0 {
		t.Error("a second Shutdown cut something")
	}
}
