// Package lockout counts failures per subject — an account's username, an
// admin, a client IP, an app's secret regenerations — and locks a subject for
// a while once it has failed too often. Counters live in the database, so a
// lockout holds across every keyward process sharing it. A sign-in reserves
// its attempt (Guard.Reserve) before comparing the credential, so attempts
// running at once cannot overrun the limit. The package knows nothing of
// HTTP or SQL; the caller's Store does the atomic update.
package lockout

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// CodeTooManyAttempts is the wire code of a lockout (sdk-compat §2.1).
const CodeTooManyAttempts = wire.CodeTooManyAttempts

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

// Reserve returns the counter after one attempt at now and whether the
// attempt may go ahead. While a lock runs it is refused and c is returned
// unchanged. Otherwise the attempt counts as a failure before the credential
// is compared (Fail): the attempt that reaches MaxFailures sets the lock and
// is still compared itself, so at most MaxFailures attempts are compared per
// window, however many run at once.
func (p Policy) Reserve(c Counter, now time.Time) (Counter, bool) {
	if c.LockedUntil.After(now) {
		return c, false
	}
	return p.Fail(c, now), true
}

// Reserved is what one reservation did to a counter: the counter before and
// after it.
type Reserved struct {
	Before, After Counter
}

// setLock reports whether the reservation set a lock.
func (r Reserved) setLock() bool { return !r.After.LockedUntil.Equal(r.Before.LockedUntil) }

// GiveBack returns c, the counter now, with reservation r given back: the
// attempt turned out not to be a wrong credential. When r set the lock that
// is still running, the counter is what it was before r (while a lock runs no
// attempt counts, so nothing came since); otherwise r's failure is taken off
// the count if the window r counted in is still the current one (a lock set
// since by others stays, and a new window never holds r's failure).
//
// With forget — after a successful sign-in — the failures counted up to and
// including r are forgotten too; those counted since r (attempts still being
// compared) stay, so a success in the middle of a burst of guesses frees no
// more than the budget the burst had used before it. A lock r did not set
// stays even then.
func GiveBack(c Counter, r Reserved, forget bool) Counter {
	switch {
	case r.setLock():
		if c.LockedUntil.Equal(r.After.LockedUntil) {
			c = r.Before
			if forget {
				c.Failures = 0
			}
		}
	case c.WindowStart.Equal(r.After.WindowStart):
		n := 1
		if forget {
			n = r.After.Failures
		}
		c.Failures = max(c.Failures-n, 0)
	}
	return c
}

// Key names one stored counter.
type Key struct {
	Scope, Subject string
}

// Store keeps counters. UpdateCounter and UpdateCounters must apply fn
// atomically with respect to every other process (row locks or a single
// writer).
type Store interface {
	// Counter returns a subject's counter; the zero Counter when it has none.
	Counter(ctx context.Context, scope, subject string) (Counter, error)
	// UpdateCounter reads the counter (zero if none), applies fn and stores it.
	UpdateCounter(ctx context.Context, scope, subject string, fn func(*Counter)) error
	// UpdateCounters reads the counters of distinct keys (zero if none), in
	// the order of keys, lets fn change them in place and stores them, all
	// in one transaction: no other update of any of them comes in between.
	UpdateCounters(ctx context.Context, keys []Key, fn func([]Counter)) error
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

// counted reports whether s is counted at all: a zero MaxFailures disables
// its policy and an empty ID (no client IP, say) has nothing to count on.
func (s Subject) counted() bool { return s.Policy.MaxFailures > 0 && s.ID != "" }

// Guard reserves attempts and records occurrences. A nil *Guard counts
// nothing.
type Guard struct {
	store Store
	now   func() time.Time
}

// New returns a Guard over store with the clock now.
func New(store Store, now func() time.Time) *Guard { return &Guard{store: store, now: now} }

// clock is now at the millisecond precision counters are stored at, so a
// reservation recognises its own window and lock when it reads them back.
func (g *Guard) clock() time.Time { return time.UnixMilli(g.now().UnixMilli()).UTC() }

// Reservation is one attempt counted by Guard.Reserve. A wrong credential
// leaves it as it is: the attempt stays counted as a failure. Anything else —
// the right credential, or an outcome that is not a credential failure —
// gives it back (GiveBack, Abandon). A nil *Reservation gives back nothing.
type Reservation struct {
	g        *Guard
	subjects []Subject
	done     []Reserved
	settled  bool
}

// Reserve counts one attempt against every subject before the credential
// is compared, in one transaction: it returns TOO_MANY_ATTEMPTS (429, with
// retry_after of the longest lock) and counts nothing when any subject is
// locked, and otherwise counts the attempt as a failure of each (Policy.
// Reserve). Concurrent attempts thus never get more comparisons than the
// policy allows, across every process sharing the database. Subjects with a
// disabled policy or no ID are skipped.
func (g *Guard) Reserve(ctx context.Context, subjects ...Subject) (*Reservation, error) {
	if g == nil {
		return nil, nil
	}
	var subs []Subject
	var keys []Key
	for _, s := range subjects {
		if s.counted() {
			subs = append(subs, s)
			keys = append(keys, Key{s.Scope, s.ID})
		}
	}
	if len(subs) == 0 {
		return nil, nil
	}
	now := g.clock()
	r := &Reservation{g: g, subjects: subs, done: make([]Reserved, len(subs))}
	var until time.Time
	err := g.store.UpdateCounters(ctx, keys, func(cs []Counter) {
		until = time.Time{}
		for _, c := range cs {
			if c.LockedUntil.After(now) && c.LockedUntil.After(until) {
				until = c.LockedUntil
			}
		}
		if !until.IsZero() {
			return
		}
		for i := range cs {
			after, _ := subs[i].Policy.Reserve(cs[i], now)
			r.done[i] = Reserved{Before: cs[i], After: after}
			cs[i] = after
		}
	})
	if err != nil {
		return nil, err
	}
	if !until.IsZero() {
		return nil, Locked(until.Sub(now))
	}
	return r, nil
}

// GiveBack gives the attempt back, in one transaction (see the pure rule
// GiveBack): after the right credential, or an outcome that is not a
// credential failure. The failures of the subjects in forget (matched by
// Scope and ID) counted up to this attempt are forgotten too, as a
// successful sign-in forgets its username's; a running lock the reservation
// did not set stays. It runs even
// when ctx is cancelled (the client hung up after its attempt was compared),
// and only once per reservation.
func (r *Reservation) GiveBack(ctx context.Context, forget ...Subject) error {
	if r == nil || r.settled {
		return nil
	}
	r.settled = true
	keys := make([]Key, len(r.subjects))
	for i, s := range r.subjects {
		keys[i] = Key{s.Scope, s.ID}
	}
	return r.g.store.UpdateCounters(context.WithoutCancel(ctx), keys, func(cs []Counter) {
		for i := range cs {
			f := false
			for _, s := range forget {
				f = f || (s.Scope == r.subjects[i].Scope && s.ID == r.subjects[i].ID)
			}
			cs[i] = GiveBack(cs[i], r.done[i], f)
		}
	})
}

// Abandon gives the attempt back because it ended in err, which is not a
// credential failure (a banned account, a database error, a lock of another
// subject), and returns err. Should giving back fail, the attempt stays
// counted: the safe side.
func (r *Reservation) Abandon(ctx context.Context, err error) error {
	_ = r.GiveBack(ctx)
	return err
}

// Trip records one occurrence against s and reports whether it starts a
// burst: the one that reached s.Policy.MaxFailures within the window while
// no earlier burst's quiet period (Policy.Lock) was running. Detectors use
// it to report a burst once, not on each occurrence.
func (g *Guard) Trip(ctx context.Context, s Subject) (bool, error) {
	if g == nil || !s.counted() {
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

// Clear forgets s's failures and ends its lock, as when an operator resets
// the credential they were counted against: the failures of the old one
// say nothing about the new one. It holds across processes like every
// counter.
func (g *Guard) Clear(ctx context.Context, s Subject) error {
	if g == nil || s.ID == "" {
		return nil
	}
	return g.store.UpdateCounter(ctx, s.Scope, s.ID, func(c *Counter) { *c = Counter{} })
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
