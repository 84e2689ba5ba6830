package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/internal/store"
)

// ---- lockout counters ----

func readCounter(t *testing.T, s lockout.Store, scope, subject string) lockout.Counter {
	t.Helper()
	c, err := s.Counter(context.Background(), scope, subject)
	if err != nil {
		t.Fatalf("Counter(%s, %s): %v", scope, subject, err)
	}
	return c
}

// setCounter stores c as the counter of scope/subject.
func setCounter(t *testing.T, s lockout.Store, scope, subject string, c lockout.Counter) {
	t.Helper()
	if err := s.UpdateCounter(context.Background(), scope, subject, func(p *lockout.Counter) { *p = c }); err != nil {
		t.Fatalf("UpdateCounter(%s, %s): %v", scope, subject, err)
	}
}

// checkCounter compares a counter with what want reads back as: times at
// millisecond precision in UTC, the zero time as the zero time.
func checkCounter(t *testing.T, what string, got, want lockout.Counter) {
	t.Helper()
	var d diffs
	d.eq("Failures", got.Failures, want.Failures)
	for _, f := range []struct {
		name      string
		got, want time.Time
	}{{"WindowStart", got.WindowStart, want.WindowStart}, {"LockedUntil", got.LockedUntil, want.LockedUntil}} {
		if f.want.IsZero() {
			if !f.got.IsZero() {
				d = append(d, fmt.Sprintf("%s = %v, want the zero time", f.name, f.got))
			}
			continue
		}
		d.time(f.name, f.got, f.want)
	}
	d.report(t, what)
}

// Counters are created by their first update, read back as stored, and kept
// per scope and subject.
func testLockoutCounters(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	if c, err := s.Counter(ctx, "login:app", "bob"); err != nil || c != (lockout.Counter{}) {
		t.Fatalf("Counter of an unknown subject = %+v, %v; want the zero Counter", c, err)
	}

	first := lockout.Counter{Failures: 1, WindowStart: t0}
	err := s.UpdateCounter(ctx, "login:app", "bob", func(c *lockout.Counter) {
		if *c != (lockout.Counter{}) {
			t.Errorf("UpdateCounter of a new subject passed %+v, want the zero Counter", *c)
		}
		*c = first
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCounter(t, "counter after the first update", readCounter(t, s, "login:app", "bob"), first)

	second := lockout.Counter{Failures: 2, WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}
	err = s.UpdateCounter(ctx, "login:app", "bob", func(c *lockout.Counter) {
		checkCounter(t, "counter UpdateCounter passes to fn", *c, first)
		*c = second
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCounter(t, "counter after the second update", readCounter(t, s, "login:app", "bob"), second)

	// Scope and subject are separate keys.
	other := lockout.Counter{Failures: 7, WindowStart: t0.Add(time.Hour)}
	setCounter(t, s, "login:app", "alice", other)
	admin := lockout.Counter{Failures: 3, WindowStart: t0.Add(2 * time.Hour), LockedUntil: t0.Add(3 * time.Hour)}
	setCounter(t, s, "admin", "bob", admin)
	checkCounter(t, "login:app/bob", readCounter(t, s, "login:app", "bob"), second)
	checkCounter(t, "login:app/alice", readCounter(t, s, "login:app", "alice"), other)
	checkCounter(t, "admin/bob", readCounter(t, s, "admin", "bob"), admin)
	checkCounter(t, "login:other/bob", readCounter(t, s, "login:other", "bob"), lockout.Counter{})
	checkCounter(t, "admin/alice", readCounter(t, s, "admin", "alice"), lockout.Counter{})

	// Zero times are stored as zero times, not as some instant.
	setCounter(t, s, "login:app", "bob", lockout.Counter{Failures: 4})
	checkCounter(t, "counter with zero times", readCounter(t, s, "login:app", "bob"), lockout.Counter{Failures: 4})
	if c := readCounter(t, s, "login:app", "bob"); !c.WindowStart.IsZero() || !c.LockedUntil.IsZero() {
		t.Errorf("zero times read back as %v, %v", c.WindowStart, c.LockedUntil)
	}
	checkCounter(t, "admin/bob after another subject changed", readCounter(t, s, "admin", "bob"), admin)
}

// DeleteCounter forgets a subject's failures; a lock outlives it.
func testLockoutDelete(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	setCounter(t, s, "login:app", "free", lockout.Counter{Failures: 3, WindowStart: t0})
	locked := lockout.Counter{Failures: 2, WindowStart: t0, LockedUntil: t0.Add(time.Hour)}
	setCounter(t, s, "login:app", "locked", locked)
	setCounter(t, s, "admin", "free", lockout.Counter{Failures: 5, WindowStart: t0})

	if err := s.DeleteCounter(ctx, "login:app", "free"); err != nil {
		t.Fatal(err)
	}
	checkCounter(t, "deleted counter", readCounter(t, s, "login:app", "free"), lockout.Counter{})
	checkCounter(t, "same subject in another scope", readCounter(t, s, "admin", "free"),
		lockout.Counter{Failures: 5, WindowStart: t0})

	if err := s.DeleteCounter(ctx, "login:app", "locked"); err != nil {
		t.Fatal(err)
	}
	c := readCounter(t, s, "login:app", "locked")
	if c.Failures != 0 {
		t.Errorf("locked counter after DeleteCounter has %d failures, want 0", c.Failures)
	}
	if !c.LockedUntil.Equal(stored(locked.LockedUntil)) {
		t.Errorf("DeleteCounter lifted a running lock: LockedUntil = %v, want %v", c.LockedUntil, stored(locked.LockedUntil))
	}

	if err := s.DeleteCounter(ctx, "login:app", "unknown"); err != nil {
		t.Errorf("DeleteCounter of an unknown subject: %v", err)
	}
	// A deleted counter starts afresh.
	err := s.UpdateCounter(ctx, "login:app", "free", func(c *lockout.Counter) {
		if *c != (lockout.Counter{}) {
			t.Errorf("UpdateCounter after DeleteCounter passed %+v, want the zero Counter", *c)
		}
		c.Failures = 1
	})
	if err != nil {
		t.Fatal(err)
	}
}

// PurgeCounters deletes counters whose window started before cutoff and whose
// lock (if any) is over at now.
func testLockoutPurge(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	cutoff, now := t0, t0.Add(time.Hour)
	counters := []struct {
		subject string
		c       lockout.Counter
		purged  bool
	}{
		{"old", lockout.Counter{Failures: 1, WindowStart: cutoff.Add(-time.Millisecond)}, true},
		{"old-lock-over", lockout.Counter{Failures: 0, WindowStart: cutoff.Add(-time.Hour), LockedUntil: now.Add(-time.Minute)}, true},
		{"old-locked", lockout.Counter{Failures: 0, WindowStart: cutoff.Add(-time.Hour), LockedUntil: now.Add(time.Minute)}, false},
		{"at-cutoff", lockout.Counter{Failures: 1, WindowStart: cutoff}, false},
		{"recent", lockout.Counter{Failures: 2, WindowStart: cutoff.Add(10 * time.Minute)}, false},
		{"recent-locked", lockout.Counter{Failures: 0, WindowStart: cutoff.Add(10 * time.Minute), LockedUntil: now.Add(time.Hour)}, false},
	}
	for _, c := range counters {
		setCounter(t, s, "login:app", c.subject, c.c)
	}
	n, err := s.PurgeCounters(ctx, cutoff, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("PurgeCounters = %d, want 2 (old, old-lock-over)", n)
	}
	for _, c := range counters {
		want := c.c
		if c.purged {
			want = lockout.Counter{}
		}
		checkCounter(t, "counter "+c.subject+" after PurgeCounters", readCounter(t, s, "login:app", c.subject), want)
	}
	if n, err := s.PurgeCounters(ctx, cutoff, now); err != nil || n != 0 {
		t.Errorf("second PurgeCounters = %d, %v; want 0", n, err)
	}
}

// Concurrent updates of one counter all count, starting from no row at all.
func testLockoutConcurrentUpdates(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	const workers = 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			err := s.UpdateCounter(ctx, "login:app", "bob", func(c *lockout.Counter) {
				if c.Failures == 0 {
					c.WindowStart = t0
				}
				c.Failures++
			})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("UpdateCounter: %v", err)
	}
	checkCounter(t, "counter after concurrent updates", readCounter(t, s, "login:app", "bob"),
		lockout.Counter{Failures: workers, WindowStart: t0})
}
