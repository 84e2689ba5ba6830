package lockout

import (
	"context"
	"errors"
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
// store, DeleteCounter forgets the failures but keeps a running lock.
type memStore struct {
	m       map[[2]string]Counter
	reads   int
	updates int
	deletes int
	err     error // returned by every call when set
	purged  [2]time.Time
}

func newMemStore() *memStore { return &memStore{m: map[[2]string]Counter{}} }

func (s *memStore) Counter(_ context.Context, scope, subject string) (Counter, error) {
	s.reads++
	if s.err != nil {
		return Counter{}, s.err
	}
	return s.m[[2]string{scope, subject}], nil
}

func (s *memStore) UpdateCounter(_ context.Context, scope, subject string, fn func(*Counter)) error {
	s.updates++
	if s.err != nil {
		return s.err
	}
	c := s.m[[2]string{scope, subject}]
	fn(&c)
	s.m[[2]string{scope, subject}] = c
	return nil
}

func (s *memStore) DeleteCounter(_ context.Context, scope, subject string) error {
	s.deletes++
	if s.err != nil {
		return s.err
	}
	k := [2]string{scope, subject}
	if c, ok := s.m[k]; ok && !c.LockedUntil.IsZero() {
		c.Failures = 0
		s.m[k] = c
		return nil
	}
	delete(s.m, k)
	return nil
}

func (s *memStore) PurgeCounters(_ context.Context, cutoff, now time.Time) (int, error) {
	s.purged = [2]time.Time{cutoff, now}
	return 0, s.err
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
)

func retryAfter(t *testing.T, err error) int {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != CodeTooManyAttempts || e.Kind != apperr.RateLimited {
		t.Fatalf("err = %v, want TOO_MANY_ATTEMPTS", err)
	}
	return e.RetryAfter
}

func TestGuardLocksAfterMaxFailures(t *testing.T) {
	ctx := context.Background()
	g, _, clk := guardFixture()
	user := Subject{Scope: "account:app", ID: "alice", Policy: userPolicy}
	for i := range 3 {
		if err := g.Check(ctx, user); err != nil {
			t.Fatalf("check before failure %d: %v", i+1, err)
		}
		if err := g.Fail(ctx, user); err != nil {
			t.Fatal(err)
		}
	}
	if got := retryAfter(t, g.Check(ctx, user)); got != 900 {
		t.Fatalf("retry_after right after locking = %d, want 900", got)
	}
	clk.t = clk.t.Add(5 * time.Minute)
	if got := retryAfter(t, g.Check(ctx, user)); got != 600 {
		t.Fatalf("retry_after 5 minutes later = %d, want 600", got)
	}
	clk.t = clk.t.Add(10*time.Minute - time.Millisecond)
	if got := retryAfter(t, g.Check(ctx, user)); got != 1 {
		t.Fatalf("retry_after 1 ms before the end = %d, want 1", got)
	}
	clk.t = t0.Add(15 * time.Minute)
	if err := g.Check(ctx, user); err != nil {
		t.Fatalf("check when the lock ends: %v", err)
	}
	// Other subjects were never locked.
	if err := g.Check(ctx, Subject{Scope: "account:app", ID: "bob", Policy: userPolicy},
		Subject{Scope: "account:other", ID: "alice", Policy: userPolicy}); err != nil {
		t.Fatalf("other subjects: %v", err)
	}
}

// Check answers the longest running lock among the subjects.
func TestGuardCheckLongestLock(t *testing.T) {
	ctx := context.Background()
	g, _, _ := guardFixture()
	user := Subject{Scope: "admin", ID: "root", Policy: userPolicy}
	ip := Subject{Scope: "admin-ip", ID: "192.0.2.1", Policy: ipPolicy}
	for range 5 {
		if err := g.Fail(ctx, user, ip); err != nil {
			t.Fatal(err)
		}
	}
	if got := retryAfter(t, g.Check(ctx, user, ip)); got != 3600 {
		t.Fatalf("retry_after = %d, want the IP's 3600", got)
	}
	if got := retryAfter(t, g.Check(ctx, ip, user)); got != 3600 {
		t.Fatalf("retry_after (subjects reversed) = %d, want 3600", got)
	}
	if got := retryAfter(t, g.Check(ctx, user)); got != 900 {
		t.Fatalf("retry_after of the user alone = %d, want 900", got)
	}
}

// Subjects with a disabled policy or an empty ID are neither read nor written.
func TestGuardSkipsDisabledSubjects(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	off := Subject{Scope: "account:app", ID: "alice", Policy: Policy{MaxFailures: 0, Window: time.Minute, Lock: time.Minute}}
	noID := Subject{Scope: "account-ip:app", ID: "", Policy: ipPolicy}
	for range 50 {
		if err := g.Fail(ctx, off, noID); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(ctx, off, noID); err != nil {
		t.Fatalf("check: %v", err)
	}
	if err := g.Clear(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := g.Clear(ctx, noID); err != nil {
		t.Fatal(err)
	}
	if st.reads+st.updates+st.deletes != 0 || len(st.m) != 0 {
		t.Fatalf("store touched (%d reads, %d updates, %d deletes, %d counters) for disabled subjects",
			st.reads, st.updates, st.deletes, len(st.m))
	}
}

// Clear forgets the failures (and only reads when there are none), but a
// running lock stays.
func TestGuardClear(t *testing.T) {
	ctx := context.Background()
	g, st, clk := guardFixture()
	user := Subject{Scope: "account:app", ID: "alice", Policy: userPolicy}

	if err := g.Clear(ctx, user); err != nil {
		t.Fatal(err)
	}
	if st.deletes != 0 {
		t.Fatalf("Clear without failures deleted (%d deletes); want a read only", st.deletes)
	}
	for range 3 { // 2 failures, clear, 2 failures, clear, …: never 3 in a row
		for range 2 {
			if err := g.Fail(ctx, user); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Clear(ctx, user); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(ctx, user); err != nil {
		t.Fatalf("cleared between failures, still: %v", err)
	}
	for range 3 {
		if err := g.Fail(ctx, user); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Clear(ctx, user); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	if got := retryAfter(t, g.Check(ctx, user)); got != 840 {
		t.Fatalf("retry_after after Clear during a lock = %d, want 840 (the lock stays)", got)
	}
}

func TestGuardStoreErrors(t *testing.T) {
	ctx := context.Background()
	g, st, _ := guardFixture()
	boom := errors.New("database down")
	st.err = boom
	user := Subject{Scope: "account:app", ID: "alice", Policy: userPolicy}
	if err := g.Check(ctx, user); !errors.Is(err, boom) {
		t.Fatalf("Check: %v, want the store's error", err)
	}
	if err := g.Fail(ctx, user); !errors.Is(err, boom) {
		t.Fatalf("Fail: %v, want the store's error", err)
	}
	if err := g.Clear(ctx, user); !errors.Is(err, boom) {
		t.Fatalf("Clear: %v, want the store's error", err)
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

// A nil *Guard checks nothing, records nothing and clears nothing.
func TestGuardNilIsNoOp(t *testing.T) {
	ctx := context.Background()
	var g *Guard
	s := Subject{Scope: "account:app", ID: "alice", Policy: userPolicy}
	for range 10 {
		if err := g.Fail(ctx, s, s); err != nil {
			t.Fatalf("nil Fail: %v", err)
		}
	}
	if err := g.Check(ctx, s); err != nil {
		t.Fatalf("nil Check: %v", err)
	}
	if err := g.Clear(ctx, s); err != nil {
		t.Fatalf("nil Clear: %v", err)
	}
}
