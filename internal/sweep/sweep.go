// Package sweep runs keyward's periodic background work with an explicit
// lifecycle: Start launches the loops, Shutdown lets the runs under way
// finish until its context ends and then cuts them, naming them, Stop cuts
// at once; both wait, and stopping twice is safe.
package sweep

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Job is one periodic task.
type Job struct {
	Name     string
	Interval time.Duration
	Run      func(context.Context) error
	// Final runs once after the loop stops (for example to flush buffers).
	Final func(context.Context) error
	// Wake, when set, runs the job at once whenever it receives, besides
	// the interval (the webhook dispatcher when an event is committed).
	Wake <-chan struct{}
}

// Runner runs jobs until stopped.
type Runner struct {
	jobs   []Job
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	// running is true from Start until Stop begins.
	running atomic.Bool
	observe func(job string, took time.Duration, err error)
	// stop is closed when stopping begins: loops start no new run.
	stop chan struct{}
	// busy counts the runs under way by job name.
	busyMu sync.Mutex
	busy   map[string]int
}

// Observe sets fn to be told of every run of a job (its duration and
// error), for metrics. Call it before Start.
func (r *Runner) Observe(fn func(job string, took time.Duration, err error)) { r.observe = fn }

// New returns a Runner for jobs.
func New(log *slog.Logger, jobs ...Job) *Runner { return &Runner{jobs: jobs, log: log} }

// Start launches every job's loop.
func (r *Runner) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.stop = make(chan struct{})
	r.busy = map[string]int{}
	for _, j := range r.jobs {
		r.wg.Add(1)
		go r.loop(ctx, j)
	}
	r.running.Store(true)
}

// Running reports whether the jobs were started and not yet stopped.
func (r *Runner) Running() bool { return r.running.Load() }

func (r *Runner) loop(ctx context.Context, j Job) {
	defer r.wg.Done()
	t := time.NewTicker(j.Interval)
	defer t.Stop()
	for {
		// Stopping wins over a tick that is also due.
		select {
		case <-r.stop:
			r.final(j)
			return
		default:
		}
		select {
		case <-r.stop:
			r.final(j)
			return
		case <-t.C:
			r.run(ctx, j)
		case <-j.Wake: // a nil channel never receives
			r.run(ctx, j)
		}
	}
}

// final runs j's final step, bounded on its own: it flushes buffers, which
// must happen even when the runs were cut.
func (r *Runner) final(j Job) {
	if j.Final == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Final(fctx); err != nil {
		r.log.Error("job final run failed", "job", j.Name, "err", err)
	}
}

func (r *Runner) run(ctx context.Context, j Job) {
	r.busyMu.Lock()
	r.busy[j.Name]++
	r.busyMu.Unlock()
	defer func() {
		r.busyMu.Lock()
		if r.busy[j.Name]--; r.busy[j.Name] == 0 {
			delete(r.busy, j.Name)
		}
		r.busyMu.Unlock()
	}()
	start := time.Now()
	err := j.Run(ctx)
	if ctx.Err() != nil {
		return // stopping: not a failure, nor a run worth timing
	}
	if err != nil {
		r.log.Error("job failed", "job", j.Name, "err", err)
	}
	if r.observe != nil {
		r.observe(j.Name, time.Since(start), err)
	}
}

// Busy names the jobs with a run under way, sorted.
func (r *Runner) Busy() []string {
	r.busyMu.Lock()
	defer r.busyMu.Unlock()
	out := make([]string, 0, len(r.busy))
	for name := range r.busy {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Stop ends every loop at once — a run under way is cancelled — runs the
// final steps and waits for them.
func (r *Runner) Stop() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Shutdown(ctx)
}

// Shutdown ends every loop: no new run starts, the runs under way may
// finish until ctx ends, and then they are cancelled. It runs the final
// steps, waits for them, and returns the names of the jobs whose runs it
// cut (nil when all finished in time, or when stopped before).
func (r *Runner) Shutdown(ctx context.Context) (cut []string) {
	r.once.Do(func() {
		r.running.Store(false)
		if r.cancel == nil {
			return // never started
		}
		close(r.stop)
		done := make(chan struct{})
		go func() { r.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			cut = r.Busy()
			r.cancel()
			<-done
		}
		r.cancel()
	})
	return cut
}
