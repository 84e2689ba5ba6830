// Package lockout counts failures per subject — an account's username, an
// admin, a client IP, an app's secret regenerations — and locks a subject for
// a while once it has failed too often. Counters live in the database, so a
// lockout holds across every keyward process sharing it. The package knows
// nothing of HTTP or SQL; the caller's Store does the atomic update.
package lockout

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// CodeTooManyAttempts is the wire code of a lockout (sdk-compat §2.1).
const CodeTooManyAttempts = "TOO_MANY_ATTEMPTS"

// Policy says when a subject is locked: MaxFailures failures within Window
// lock it for Lock. A zero MaxFailures disables the policy.
type Policy struct {
	MaxFailures int
	Window      time.Duration
	Lock        time.Duration
}

// Counter is the stored state of one subject.
type Counter struct {
	Failures    int
	WindowStart time.Time
	LockedUntil time.Time
}

// Fail returns the counter after one more failure at now. A failure after
// the window has passed starts a new window; reaching MaxFailures locks the
// subject and starts counting afresh, so the lock does not renew itself on
// the first failure after it lifts.
func (p Policy) Fail(c Counter, now time.Time) Counter {
	if c.Failures == 0 || !now.Before(c.WindowStart.Add(p.Window)) {
		c.Failures, c.WindowStart = 0, now
	}
	c.Failures++
	if p.MaxFailures > 0 && c.Failures >= p.MaxFailures {
		c.LockedUntil = now.Add(p.Lock)
		c.Failures, c.WindowStart = 0, now
	}
	return c
}

// Store keeps counters. UpdateCounter must apply fn atomically with respect
// to every other process (a row lock or a single writer).
type Store interface {
	// Counter returns a subject's counter; the zero Counter when it has none.
	Counter(ctx context.Context, scope, subject string) (Counter, error)
	// UpdateCounter reads the counter (zero if none), applies fn and stores it.
	UpdateCounter(ctx context.Context, scope, subject string, fn func(*Counter)) error
	// DeleteCounter forgets a subject's failures but keeps a running lock
	// (Guard.Clear relies on it).
	DeleteCounter(ctx context.Context, scope, subject string) error
	// PurgeCounters deletes counters whose window started before cutoff and
	// that are not locked at now.
	PurgeCounters(ctx context.Context, cutoff, now time.Time) (int, error)
}

// Subject is one thing failures are counted against: Scope names the kind
// (and app), ID the instance.
type Subject struct {
	Scope  string
	ID     string
	Policy Policy
}

// Guard checks and records failures. A nil *Guard checks nothing.
type Guard struct {
	store Store
	now   func() time.Time
}

// New returns a Guard over store with the clock now.
func New(store Store, now func() time.Time) *Guard { return &Guard{store: store, now: now} }

// Check returns TOO_MANY_ATTEMPTS (429, with retry_after) when any subject
// is locked now.
func (g *Guard) Check(ctx context.Context, subjects ...Subject) error {
	if g == nil {
		return nil
	}
	now := g.now()
	var until time.Time
	for _, s := range subjects {
		if s.Policy.MaxFailures <= 0 || s.ID == "" {
			continue
		}
		c, err := g.store.Counter(ctx, s.Scope, s.ID)
		if err != nil {
			return err
		}
		if c.LockedUntil.After(now) && c.LockedUntil.After(until) {
			until = c.LockedUntil
		}
	}
	if until.IsZero() {
		return nil
	}
	return Locked(until.Sub(now))
}

// Fail records one failure against every subject.
func (g *Guard) Fail(ctx context.Context, subjects ...Subject) error {
	if g == nil {
		return nil
	}
	now := g.now()
	for _, s := range subjects {
		if s.Policy.MaxFailures <= 0 || s.ID == "" {
			continue
		}
		p := s.Policy
		if err := g.store.UpdateCounter(ctx, s.Scope, s.ID, func(c *Counter) { *c = p.Fail(*c, now) }); err != nil {
			return err
		}
	}
	return nil
}

// Trip records one occurrence against s and reports whether it starts a
// burst: the one that reached s.Policy.MaxFailures within the window while
// no earlier burst's quiet period (Policy.Lock) was running. Detectors use
// it to report a burst once, not on each occurrence.
func (g *Guard) Trip(ctx context.Context, s Subject) (bool, error) {
	if g == nil || s.Policy.MaxFailures <= 0 || s.ID == "" {
		return false, nil
	}
	now := g.now()
	p := s.Policy
	tripped := false
	err := g.store.UpdateCounter(ctx, s.Scope, s.ID, func(c *Counter) {
		quiet := c.LockedUntil.After(now)
		*c = p.Fail(*c, now)
		tripped = !quiet && c.LockedUntil.After(now)
	})
	return tripped, err
}

// Clear forgets a subject's failures, as after a successful sign-in. A
// running lock is kept: a correct password does not lift it.
func (g *Guard) Clear(ctx context.Context, s Subject) error {
	if g == nil {
		return nil
	}
	if s.Policy.MaxFailures <= 0 || s.ID == "" {
		return nil
	}
	// Read first: most sign-ins have nothing to forget, and a read is
	// cheaper than a write transaction.
	c, err := g.store.Counter(ctx, s.Scope, s.ID)
	if err != nil || c.Failures == 0 {
		return err
	}
	return g.store.DeleteCounter(ctx, s.Scope, s.ID)
}

// Purge deletes counters that can no longer matter: their window has passed
// by more than maxAge and they hold no running lock.
func (g *Guard) Purge(ctx context.Context, maxAge time.Duration) (int, error) {
	if g == nil {
		return 0, nil
	}
	now := g.now()
	return g.store.PurgeCounters(ctx, now.Add(-maxAge), now)
}

// Locked returns the TOO_MANY_ATTEMPTS error for a lock with d left.
func Locked(d time.Duration) *apperr.Error {
	secs := int(math.Ceil(d.Seconds()))
	if secs < 1 {
		secs = 1
	}
	e := apperr.New(apperr.RateLimited, CodeTooManyAttempts,
		fmt.Sprintf("Too many failed attempts. Try again in %s.", humanize(secs)))
	e.RetryAfter = secs
	return e
}

func humanize(secs int) string {
	switch {
	case secs < 60:
		return plural(secs, "second")
	case (secs+59)/60 < 60:
		return plural((secs+59)/60, "minute")
	default:
		return plural((secs+3599)/3600, "hour")
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
