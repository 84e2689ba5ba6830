package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// UpdateCounters passes the counters in the order of the keys (a missing one
// as the zero Counter, whatever the keys' sort order) and stores every change
// fn makes, leaving other counters alone.
func testLockoutUpdateMany(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	ip := lockout.Counter{Failures: 4, WindowStart: t0}
	setCounter(t, s, "admin-ip", "192.0.2.1", ip)
	setCounter(t, s, "admin", "other", lockout.Counter{Failures: 9, WindowStart: t0})
	keys := []lockout.Key{{Scope: "admin-ip", Subject: "192.0.2.1"}, {Scope: "admin", Subject: "root"}}
	user := lockout.Counter{Failures: 1, WindowStart: t0.Add(time.Minute), LockedUntil: t0.Add(time.Hour)}
	err := s.UpdateCounters(ctx, keys, func(cs []lockout.Counter) {
		if len(cs) != 2 {
			t.Fatalf("UpdateCounters passed %d counters, want 2", len(cs))
		}
		checkCounter(t, "first counter passed (admin-ip)", cs[0], ip)
		checkCounter(t, "second counter passed (admin, no row yet)", cs[1], lockout.Counter{})
		cs[0].Failures++
		cs[1] = user
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCounter(t, "admin-ip after UpdateCounters", readCounter(t, s, "admin-ip", "192.0.2.1"),
		lockout.Counter{Failures: 5, WindowStart: t0})
	checkCounter(t, "admin/root after UpdateCounters", readCounter(t, s, "admin", "root"), user)
	checkCounter(t, "admin/other (not a key)", readCounter(t, s, "admin", "other"),
		lockout.Counter{Failures: 9, WindowStart: t0})
	if err := s.UpdateCounters(ctx, nil, func(cs []lockout.Counter) {
		if len(cs) != 0 {
			t.Errorf("UpdateCounters without keys passed %v", cs)
		}
	}); err != nil {
		t.Errorf("UpdateCounters without keys: %v", err)
	}
}

// Reservations of two subjects at once, in both key orders, are atomic
// across the pair: each admits an attempt only when neither counter has
// reached the limit and then counts it on both, so exactly limit are
// admitted and both counters end at limit — with no deadlock between the
// two orders.
func testLockoutConcurrentReservations(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := db.LockoutStore()
	const workers, limit = 24, 7
	user, ip := lockout.Key{Scope: "account:app", Subject: "bob"}, lockout.Key{Scope: "account-ip:app", Subject: "192.0.2.9"}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		keys := []lockout.Key{user, ip}
		if i%2 == 1 {
			keys = []lockout.Key{ip, user}
		}
		wg.Go(func() {
			ok := false
			err := s.UpdateCounters(ctx, keys, func(cs []lockout.Counter) {
				ok = cs[0].Failures < limit && cs[1].Failures < limit
				if ok {
					cs[0].Failures++
					cs[1].Failures++
				}
			})
			if err != nil {
				errs <- err
			} else if ok {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("UpdateCounters: %v", err)
	}
	if n := admitted.Load(); n != limit {
		t.Errorf("%d of %d concurrent reservations admitted, want exactly %d", n, workers, limit)
	}
	for _, k := range []lockout.Key{user, ip} {
		if c := readCounter(t, s, k.Scope, k.Subject); c.Failures != limit {
			t.Errorf("%s/%s counted %d, want %d", k.Scope, k.Subject, c.Failures, limit)
		}
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
