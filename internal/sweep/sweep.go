// Package sweep runs keyward's periodic background work with an explicit
// lifecycle: Start launches the loops, Stop ends them and waits, and stopping
// twice is safe.
package sweep

import (
	"context"
	"log/slog"
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
}

// Observe sets fn to be told of every run of a job (its duration and
// error), for metrics. Call it before Start.
func (r *Runner) Observe(fn func(job string, took time.Duration, err error)) { r.observe = fn }

// New returns a Runner for jobs.
func New(log *slog.Logger, jobs ...Job) *Runner { return &Runner{jobs: jobs, log: log} }

// Start launches every job's loop.
func (r *Runner) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
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
		select {
		case <-ctx.Done():
			if j.Final != nil {
				fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := j.Final(fctx); err != nil {
					r.log.Error("job final run failed", "job", j.Name, "err", err)
				}
				cancel()
			}
			return
		case <-t.C:
			r.run(ctx, j)
		case <-j.Wake: // a nil channel never receives
			r.run(ctx, j)
		}
	}
}

func (r *Runner) run(ctx context.Context, j Job) {
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

// Stop ends every loop, runs final steps and waits for them.
func (r *Runner) Stop() {
	r.once.Do(func() {
		r.running.Store(false)
		if r.cancel != nil {
			r.cancel()
		}
		r.wg.Wait()
	})
}
