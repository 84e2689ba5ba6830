package lockout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// Policy.Fail is the whole counting rule: one case per branch.
func TestPolicyFail(t *testing.T) {
	p := Policy{MaxFailures: 10, Window: 15 * time.Minute, Lock: 15 * time.Minute}
	cases := []struct {
		name string
		p    Policy
		in   Counter
		now  time.Time
		want Counter
	}{
		{name: "first failure opens a window",
			p: p, in: Counter{}, now: t0,
			want: Counter{Failures: 1, WindowStart: t0}},
		{name: "failure within the window counts",
			p: p, in: Counter{Failures: 3, WindowStart: t0}, now: t0.Add(14 * time.Minute),
			want: Counter{Failures: 4, WindowStart: t0}},
		{name: "last instant of the window still counts",
			p: p, in: Counter{Failures: 3, WindowStart: t0}, now: t0.Add(15*time.Minute - time.Nanosecond),
			want: Counter{Failures: 4, WindowStart: t0}},
		{name: "failure at the end of the window restarts the count",
			p: p, in: Counter{Failures: 9, WindowStart: t0}, now: t0.Add(15 * time.Minute),
			want: Counter{Failures: 1, WindowStart: t0.Add(15 * time.Minute)}},
		{name: "failure after the window restarts the count",
			p: p, in: Counter{Failures: 9, WindowStart: t0}, now: t0.Add(time.Hour),
			want: Counter{Failures: 1, WindowStart: t0.Add(time.Hour)}},
		{name: "a cleared counter (no failures, old window) opens a new window",
			p: p, in: Counter{Failures: 0, WindowStart: t0.Add(-time.Minute)}, now: t0,
			want: Counter{Failures: 1, WindowStart: t0}},
		{name: "reaching MaxFailures locks and restarts the count",
			p: p, in: Counter{Failures: 9, WindowStart: t0}, now: t0.Add(5 * time.Minute),
			want: Counter{Failures: 0, WindowStart: t0.Add(5 * time.Minute), LockedUntil: t0.Add(20 * time.Minute)}},
		{name: "beyond MaxFailures (a lowered limit) locks too",
			p: Policy{MaxFailures: 3, Window: time.Minute, Lock: time.Hour}, in: Counter{Failures: 7, WindowStart: t0},
			now:  t0.Add(time.Second),
			want: Counter{Failures: 0, WindowStart: t0.Add(time.Second), LockedUntil: t0.Add(time.Hour + time.Second)}},
		{name: "MaxFailures 1 locks on the first failure",
			p: Policy{MaxFailures: 1, Window: time.Minute, Lock: 30 * time.Second}, in: Counter{}, now: t0,
			want: Counter{Failures: 0, WindowStart: t0, LockedUntil: t0.Add(30 * time.Second)}},
		{name: "MaxFailures 0 never locks",
			p: Policy{MaxFailures: 0, Window: 15 * time.Minute, Lock: 15 * time.Minute}, in: Counter{Failures: 1000, WindowStart: t0},
			now:  t0.Add(time.Minute),
			want: Counter{Failures: 1001, WindowStart: t0}},
		{name: "a lifted lock stays recorded while a new window counts",
			p: p, in: Counter{Failures: 0, WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}, now: t0.Add(16 * time.Minute),
			want: Counter{Failures: 1, WindowStart: t0.Add(16 * time.Minute), LockedUntil: t0.Add(15 * time.Minute)}},
		{name: "a window restarted after the lock does not renew it",
			p: p, in: Counter{Failures: 0, WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}, now: t0.Add(15 * time.Minute),
			want: Counter{Failures: 1, WindowStart: t0.Add(15 * time.Minute), LockedUntil: t0.Add(15 * time.Minute)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Fail(tc.in, tc.now)
			if got.Failures != tc.want.Failures || !got.WindowStart.Equal(tc.want.WindowStart) || !got.LockedUntil.Equal(tc.want.LockedUntil) {
				t.Fatalf("Fail(%+v, %v) = %+v, want %+v", tc.in, tc.now, got, tc.want)
			}
		})
	}
}

// Sequences of failures through Policy.Fail: the tenth within the window
// locks; nine, a pause longer than the window, and one more do not.
func TestPolicyFailSequences(t *testing.T) {
	p := Policy{MaxFailures: 10, Window: 15 * time.Minute, Lock: 15 * time.Minute}
	var c Counter
	now := t0
	for i := 1; i <= 9; i++ {
		c = p.Fail(c, now)
		if !c.LockedUntil.IsZero() || c.Failures != i {
			t.Fatalf("after %d failures: %+v, want %d failures and no lock", i, c, i)
		}
		now = now.Add(time.Minute)
	}
	c = p.Fail(c, now)
	if !c.LockedUntil.Equal(now.Add(15*time.Minute)) || c.Failures != 0 {
		t.Fatalf("tenth failure at %v: %+v, want locked until %v and the count restarted", now, c, now.Add(15*time.Minute))
	}

	c, now = Counter{}, t0
	for range 9 {
		c = p.Fail(c, now)
		now = now.Add(time.Second)
	}
	now = t0.Add(16 * time.Minute)
	c = p.Fail(c, now)
	if !c.LockedUntil.IsZero() || c.Failures != 1 || !c.WindowStart.Equal(now) {
		t.Fatalf("nine failures, a pause beyond the window, one more: %+v, want 1 failure in a new window", c)
	}
}

// Policy.Reserve refuses while a lock runs and otherwise counts the attempt
// as Fail does.
func TestPolicyReserve(t *testing.T) {
	p := Policy{MaxFailures: 3, Window: 15 * time.Minute, Lock: 15 * time.Minute}
	cases := []struct {
		name string
		in   Counter
		now  time.Time
		want Counter
		ok   bool
	}{
		{"first attempt opens a window", Counter{}, t0, Counter{Failures: 1, WindowStart: t0}, true},
		{"an attempt within the window counts", Counter{Failures: 1, WindowStart: t0}, t0.Add(time.Minute),
			Counter{Failures: 2, WindowStart: t0}, true},
		{"the attempt reaching the limit locks and may still go ahead", Counter{Failures: 2, WindowStart: t0}, t0.Add(time.Minute),
			Counter{WindowStart: t0.Add(time.Minute), LockedUntil: t0.Add(16 * time.Minute)}, true},
		{"refused while locked, nothing counted", Counter{WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}, t0.Add(time.Minute),
			Counter{WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}, false},
		{"refused at the last instant of the lock", Counter{WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)},
			t0.Add(15*time.Minute - time.Nanosecond), Counter{WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)}, false},
		{"admitted when the lock ends, in a new window", Counter{WindowStart: t0, LockedUntil: t0.Add(15 * time.Minute)},
			t0.Add(15 * time.Minute), Counter{Failures: 1, WindowStart: t0.Add(15 * time.Minute), LockedUntil: t0.Add(15 * time.Minute)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.Reserve(tc.in, tc.now)
			if ok != tc.ok || !sameCounter(got, tc.want) {
				t.Fatalf("Reserve(%+v, %v) = %+v, %v; want %+v, %v", tc.in, tc.now, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func sameCounter(a, b Counter) bool {
	return a.Failures == b.Failures && a.WindowStart.Equal(b.WindowStart) && a.LockedUntil.Equal(b.LockedUntil)
}

// GiveBack undoes one reservation: one case per branch, with and without
// forgetting.
func TestGiveBack(t *testing.T) {
	lock := t0.Add(15 * time.Minute)
	counted := Reserved{Before: Counter{Failures: 1, WindowStart: t0}, After: Counter{Failures: 2, WindowStart: t0}}
	locking := Reserved{Before: Counter{Failures: 2, WindowStart: t0.Add(-time.Minute)},
		After: Counter{WindowStart: t0, LockedUntil: lock}}
	cases := []struct {
		name   string
		now    Counter
		r      Reserved
		forget bool
		want   Counter
	}{
		{"its failure comes off the count", Counter{Failures: 2, WindowStart: t0}, counted, false,
			Counter{Failures: 1, WindowStart: t0}},
		{"others' failures since stay", Counter{Failures: 5, WindowStart: t0}, counted, false,
			Counter{Failures: 4, WindowStart: t0}},
		{"forget: the failures up to it go, those counted since stay", Counter{Failures: 5, WindowStart: t0}, counted, true,
			Counter{Failures: 3, WindowStart: t0}},
		{"forget with nothing since", Counter{Failures: 2, WindowStart: t0}, counted, true,
			Counter{Failures: 0, WindowStart: t0}},
		{"forget in a new window forgets nothing of it", Counter{Failures: 2, WindowStart: t0.Add(20 * time.Minute)}, counted, true,
			Counter{Failures: 2, WindowStart: t0.Add(20 * time.Minute)}},
		{"a new window never holds its failure", Counter{Failures: 1, WindowStart: t0.Add(20 * time.Minute)}, counted, false,
			Counter{Failures: 1, WindowStart: t0.Add(20 * time.Minute)}},
		{"a lock set by others since stays", Counter{WindowStart: t0.Add(time.Minute), LockedUntil: lock.Add(time.Minute)}, counted, false,
			Counter{WindowStart: t0.Add(time.Minute), LockedUntil: lock.Add(time.Minute)}},
		{"a lock set by others stays even when forgetting",
			Counter{WindowStart: t0.Add(time.Minute), LockedUntil: lock.Add(time.Minute)}, counted, true,
			Counter{WindowStart: t0.Add(time.Minute), LockedUntil: lock.Add(time.Minute)}},
		{"never below zero", Counter{WindowStart: t0}, counted, false, Counter{WindowStart: t0}},
		{"the lock it set is lifted: the counter as before", Counter{WindowStart: t0, LockedUntil: lock}, locking, false,
			locking.Before},
		{"the lock it set is lifted and the failures forgotten", Counter{WindowStart: t0, LockedUntil: lock}, locking, true,
			Counter{Failures: 0, WindowStart: t0.Add(-time.Minute)}},
		{"a later lock than the one it set stays", Counter{WindowStart: t0.Add(time.Hour), LockedUntil: lock.Add(time.Hour)}, locking, false,
			Counter{WindowStart: t0.Add(time.Hour), LockedUntil: lock.Add(time.Hour)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := GiveBack(tc.now, tc.r, tc.forget); !sameCounter(got, tc.want) {
				t.Fatalf("GiveBack(%+v, %+v, %v) = %+v, want %+v", tc.now, tc.r, tc.forget, got, tc.want)
			}
		})
	}
}

// Locked rounds the time left up to whole seconds (at least one) and words
// it in seconds, minutes or hours.
func TestLocked(t *testing.T) {
	cases := []struct {
		d     time.Duration
		retry int
		when  string
	}{
		{15 * time.Minute, 900, "15 minutes"},
		{10 * time.Minute, 600, "10 minutes"},
		{0, 1, "1 second"},
		{-5 * time.Second, 1, "1 second"},
		{time.Nanosecond, 1, "1 second"},
		{500 * time.Millisecond, 1, "1 second"},
		{time.Second, 1, "1 second"},
		{1200 * time.Millisecond, 2, "2 seconds"},
		{59 * time.Second, 59, "59 seconds"},
		{59*time.Second + time.Millisecond, 60, "1 minute"},
		{time.Minute, 60, "1 minute"},
		{61 * time.Second, 61, "2 minutes"},
		{90 * time.Second, 90, "2 minutes"},
		{14*time.Minute + 59*time.Second, 899, "15 minutes"},
		{time.Hour, 3600, "1 hour"},
		{time.Hour + time.Second, 3601, "2 hours"},
		{2 * time.Hour, 7200, "2 hours"},
		{24 * time.Hour, 86400, "24 hours"},
	}
	for _, tc := range cases {
		e := Locked(tc.d)
		if e.Kind != apperr.RateLimited || e.Code != "TOO_MANY_ATTEMPTS" {
			t.Errorf("Locked(%v): kind %v code %q, want RateLimited TOO_MANY_ATTEMPTS", tc.d, e.Kind, e.Code)
		}
		if e.RetryAfter != tc.retry {
			t.Errorf("Locked(%v).RetryAfter = %d, want %d", tc.d, e.RetryAfter, tc.retry)
		}
		if want := "Too many failed attempts. Try again in " + tc.when + "."; e.Message != want {
			t.Errorf("Locked(%v).Message = %q, want %q", tc.d, e.Message, want)
		}
	}
}

// memStore is an in-memory Store for the Guard tests. Like the database
// store it keeps times at millisecond precision, and it serialises updates.
type memStore struct {
	mu      sync.Mutex
	m       map[Key]Counter
	reads   int
	updates int
	err     error // returned by every call when set
	purged  [2]time.Time
}

func newMemStore() *memStore { return &memStore{m: map[Key]Counter{}} }

func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func (s *memStore) Counter(ctx context.Context, scope, subject string) (Counter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return Counter{}, s.err
	}
	return s.m[Key{scope, subject}], nil
}

func (s *memStore) UpdateCounter(ctx context.Context, scope, subject string, fn func(*Counter)) error {
	return s.UpdateCounters(ctx, []Key{{scope, subject}}, func(cs []Counter) { fn(&cs[0]) })
}

func (s *memStore) UpdateCounters(ctx context.Context, keys []Key, fn func([]Counter)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates++
	if s.err != nil {
		return s.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cs := make([]Counter, len(keys))
	for i, k := range keys {
		cs[i] = s.m[k]
	}
	fn(cs)
	for i, k := range keys {
		c := cs[i]
		c.WindowStart, c.LockedUntil = msTime(c.WindowStart), msTime(c.LockedUntil)
		s.m[k] = c
	}
	return nil
}

func (s *memStore) PurgeCounters(_ context.Context, cutoff, now time.Time) (int, error) {
	s.purged = [2]time.Time{cutoff, now}
	return 0, s.err
}

func (s *memStore) get(sub Subject) Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[Key{sub.Scope, sub.ID}]
}

type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func guardFixture() (*Guard, *memStore, *testClock) {
	st, clk := newMemStore(), &testClock{t: t0}
	return New(st, clk.now), st, clk
}

var (
	userPolicy = Policy{MaxFailures: 3, Window: 15 * time.Minute, Lock: 15 * time.Minute}
	ipPolicy   = Policy{MaxFailures: 5, Window: 15 * time.Minute, Lock: time.Hour}
	user       = Subject{Scope: "account:app", ID: "alice", Policy: userPolicy}
	ip         = Subject{Scope: "account-ip:app", ID: "192.0.2.1", Policy: ipPolicy}
)

func retryAfter(t *testing.T, err error) int {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != CodeTooManyAttempts || e.Kind != apperr.RateLimited {
		t.Fatalf("err = %v, want TOO_MANY_ATTEMPTS", err)
	}
	return e.RetryAfter
}

// reserve reserves an attempt that must be admitted.
func reserve(t *testing.T, g *Guard, subs ...Subject) *Reservation {
	t.Helper()
	r, err := g.Reserve(context.Background(), subs...)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	return r
}

func wantCounter(t *testing.T, what string, got, want Counter) {
	t.Helper()
	if !sameCounter(got, want) {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

// Kept reservations are failures: the one reaching the limit is admitted and
// locks; then every attempt is refused with the time left, counting nothing,
// until the lock ends.
func TestGuardReserveLocksAfterMaxFailures(t *testing.T) {
	ctx := context.Background()
	g, st, clk := guardFixture()
	for range 3 {
		reserve(t, g, user)
	}
	locked := st.get(user)
	if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, user); return err }()); got != 900 {
		t.Fatalf("retry_after right after locking = %d, want 900", got)
	}
	clk.t = clk.t.Add(5 * time.Minute)
	for range 3 {
		if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, user); return err }()); got != 600 {
			t.Fatalf("retry_after 5 minutes later = %d, want 600", got)
		}
	}
	wantCounter(t, "counter after refused attempts", st.get(user), locked)
	clk.t = t0.Add(15 * time.Minute)
	reserve(t, g, user)
	if c := st.get(user); c.Failures != 1 {
		t.Fatalf("first attempt after the lock: %+v, want 1 failure in a new window", c)
	}
	other := Subject{Scope: "account:other", ID: "alice", Policy: userPolicy}
	reserve(t, g, other)
}

// A lock on any subject refuses the attempt with the longest lock, and the
// attempt counts on none of them.
func TestGuardReserveLongestLockCountsNothing(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	other := Subject{Scope: "account:app", ID: "bob", Policy: userPolicy}
	for range 5 {
		reserve(t, g, ip)
	}
	for range 3 {
		reserve(t, g, other)
	}
	before := st.get(user)
	if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, user, ip); return err }()); got != 3600 {
		t.Fatalf("retry_after = %d, want the IP's 3600", got)
	}
	if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, other, ip); return err }()); got != 3600 {
		t.Fatalf("retry_after with both locked = %d, want the longest (3600)", got)
	}
	if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, other); return err }()); got != 900 {
		t.Fatalf("retry_after of the user alone = %d, want 900", got)
	}
	wantCounter(t, "user counter after a refused attempt", st.get(user), before)
}

// However many attempts arrive at once, no more than MaxFailures are
// admitted per lock.
func TestGuardReserveConcurrent(t *testing.T) {
	g, _, _ := guardFixture()
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := g.Reserve(context.Background(), user, ip); err == nil {
				admitted.Add(1)
			} else if apperr.CodeOf(err) == CodeTooManyAttempts {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 3 || refused.Load() != 47 {
		t.Fatalf("50 attempts at once: %d admitted, %d refused; want 3 and 47", admitted.Load(), refused.Load())
	}
}

// A success gives its attempt back and forgets the failures of the subjects
// named (the username), only its own attempt on the others (the IP).
func TestGuardGiveBackOnSuccess(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	reserve(t, g, user, ip)
	reserve(t, g, user, ip)
	r := reserve(t, g, user, ip) // the third locks the user
	if !st.get(user).LockedUntil.After(t0) {
		t.Fatalf("third attempt did not lock: %+v", st.get(user))
	}
	if err := r.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if c := st.get(user); c.Failures != 0 || c.LockedUntil.After(t0) {
		t.Fatalf("user after a success that had locked it: %+v, want no failures and no lock", c)
	}
	if c := st.get(ip); c.Failures != 2 {
		t.Fatalf("IP after a success: %d failures, want 2 (its own attempt given back)", c.Failures)
	}
	for range 3 {
		reserve(t, g, user) // the count started afresh
	}
	if err := r.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reserve(ctx, user); apperr.CodeOf(err) != CodeTooManyAttempts {
		t.Fatalf("a second GiveBack of one reservation undid another's lock: %v", err)
	}
}

// A lock set by other attempts while a right one was being compared stays.
func TestGuardGiveBackKeepsOthersLock(t *testing.T) {
	ctx := context.Background()
	g, _, _ := guardFixture()
	right := reserve(t, g, user)
	reserve(t, g, user)
	reserve(t, g, user) // locks
	if err := right.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if got := retryAfter(t, func() error { _, err := g.Reserve(ctx, user); return err }()); got != 900 {
		t.Fatalf("retry_after after the success = %d, want 900", got)
	}
}

// A success forgets the failures counted before it, not those of attempts
// reserved while it was being compared: a burst of guesses around a success
// gets no more than its own unused budget back.
func TestGuardGiveBackKeepsLaterFailures(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	reserve(t, g, user)
	right := reserve(t, g, user)
	reserve(t, g, user) // locks
	if c := st.get(user); !c.LockedUntil.After(t0) {
		t.Fatalf("third attempt did not lock: %+v", c)
	}
	if err := right.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reserve(ctx, user); apperr.CodeOf(err) != CodeTooManyAttempts {
		t.Fatalf("lock set after the success's reservation: %v, want it kept", err)
	}

	g, st, _ = guardFixture()
	reserve(t, g, user)
	right = reserve(t, g, user)
	if err := right.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if c := st.get(user); c.Failures != 0 {
		t.Fatalf("after a success: %d failures, want 0", c.Failures)
	}
	right = reserve(t, g, user)
	reserve(t, g, user) // compared while the right one was
	if err := right.GiveBack(ctx, user); err != nil {
		t.Fatal(err)
	}
	if c := st.get(user); c.Failures != 1 {
		t.Fatalf("after a success with one attempt reserved since: %d failures, want 1", c.Failures)
	}
}

// Abandon gives the attempt back (not a credential failure) and returns the
// error; it works even after the client hung up (a cancelled context).
func TestGuardAbandon(t *testing.T) {
	g, st, _ := guardFixture()
	reserve(t, g, user)
	ctx, cancel := context.WithCancel(context.Background())
	r := reserve(t, g, user, ip)
	cancel()
	banned := apperr.New(apperr.Forbidden, "BANNED", "banned")
	if err := r.Abandon(ctx, banned); err != banned {
		t.Fatalf("Abandon returned %v, want its error", err)
	}
	if u, i := st.get(user), st.get(ip); u.Failures != 1 || i.Failures != 0 {
		t.Fatalf("after Abandon: user %d, IP %d failures; want 1 and 0", u.Failures, i.Failures)
	}
}

// The clock's sub-millisecond part does not keep a reservation from
// recognising its own lock once stored at millisecond precision.
func TestGuardGiveBackSubMillisecondClock(t *testing.T) {
	g, st, clk := guardFixture()
	clk.t = t0.Add(123456789 * time.Nanosecond)
	reserve(t, g, user)
	reserve(t, g, user)
	r := reserve(t, g, user)
	if err := r.GiveBack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := st.get(user); c.Failures != 2 || c.LockedUntil.After(clk.t) {
		t.Fatalf("after giving back the locking attempt: %+v, want 2 failures and no lock", c)
	}
}

// Subjects with a disabled policy or an empty ID are neither read nor
// written, and a reservation of none of them gives back nothing.
func TestGuardSkipsDisabledSubjects(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	off := Subject{Scope: "account:app", ID: "alice", Policy: Policy{MaxFailures: 0, Window: time.Minute, Lock: time.Minute}}
	noID := Subject{Scope: "account-ip:app", ID: "", Policy: ipPolicy}
	for range 50 {
		r := reserve(t, g, off, noID)
		if err := r.GiveBack(ctx, off); err != nil {
			t.Fatal(err)
		}
	}
	if tripped, err := g.Trip(ctx, off); tripped || err != nil {
		t.Fatalf("Trip of a disabled subject = %v, %v", tripped, err)
	}
	if st.reads+st.updates != 0 || len(st.m) != 0 {
		t.Fatalf("store touched (%d reads, %d updates, %d counters) for disabled subjects", st.reads, st.updates, len(st.m))
	}
}

// Trip reports the occurrence that starts a burst, once per quiet period.
func TestGuardTrip(t *testing.T) {
	ctx := context.Background()
	g, _, clk := guardFixture()
	var got []bool
	for range 5 {
		tripped, err := g.Trip(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tripped)
	}
	clk.t = t0.Add(15 * time.Minute)
	for range 3 {
		tripped, _ := g.Trip(ctx, user)
		got = append(got, tripped)
	}
	want := []bool{false, false, true, false, false, false, false, true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Trip results %v, want %v", got, want)
	}
}

func TestGuardStoreErrors(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	r := reserve(t, g, user)
	boom := errors.New("database down")
	st.err = boom
	if _, err := g.Reserve(ctx, user); !errors.Is(err, boom) {
		t.Fatalf("Reserve: %v, want the store's error", err)
	}
	if err := r.GiveBack(ctx); !errors.Is(err, boom) {
		t.Fatalf("GiveBack: %v, want the store's error", err)
	}
	if _, err := g.Trip(ctx, user); !errors.Is(err, boom) {
		t.Fatalf("Trip: %v, want the store's error", err)
	}
	if _, err := g.Purge(ctx, time.Hour); !errors.Is(err, boom) {
		t.Fatalf("Purge: %v, want the store's error", err)
	}
}

func TestGuardPurgeCutoff(t *testing.T) {
	g, st, _ := guardFixture()
	if _, err := g.Purge(context.Background(), 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if !st.purged[0].Equal(t0.Add(-2*time.Hour)) || !st.purged[1].Equal(t0) {
		t.Fatalf("PurgeCounters(cutoff %v, now %v), want (%v, %v)", st.purged[0], st.purged[1], t0.Add(-2*time.Hour), t0)
	}
}

// A nil *Guard admits everything and its nil reservations give back
// nothing.
func TestGuardNilIsNoOp(t *testing.T) {
	ctx := context.Background()
	var g *Guard
	for range 10 {
		r, err := g.Reserve(ctx, user, user)
		if err != nil || r != nil {
			t.Fatalf("nil Reserve: %v, %v", r, err)
		}
		if err := r.GiveBack(ctx, user); err != nil {
			t.Fatalf("nil GiveBack: %v", err)
		}
		if err := r.Abandon(ctx, nil); err != nil {
			t.Fatalf("nil Abandon: %v", err)
		}
	}
	if tripped, err := g.Trip(ctx, user); tripped || err != nil {
		t.Fatalf("nil Trip: %v, %v", tripped, err)
	}
}

// Clear ends a running lock and forgets the failures of one subject only:
// the next attempt is admitted as the first of a new window, and the other
// subjects keep their counts. A nil Guard clears nothing.
func TestGuardClear(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	for range 3 {
		reserve(t, g, user, ip)
	}
	retryAfter(t, func() error { _, err := g.Reserve(ctx, user); return err }())
	if err := g.Clear(ctx, user); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	wantCounter(t, "cleared counter", st.get(user), Counter{})
	if c := st.get(ip); c.Failures != 3 {
		t.Fatalf("the IP's counter changed with the user's: %+v", c)
	}
	reserve(t, g, user)
	if c := st.get(user); c.Failures != 1 {
		t.Fatalf("first attempt after Clear: %+v, want 1 failure", c)
	}
	var none *Guard
	if err := none.Clear(ctx, user); err != nil {
		t.Fatalf("nil Guard Clear: %v", err)
	}
}
