package ratelimit

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for the limiter; time moves only by advance.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// mustAllow fails unless key gets a token.
func mustAllow(t *testing.T, l *Limiter, key string) {
	t.Helper()
	if ok, wait := l.Allow(key); !ok {
		t.Fatalf("Allow(%q) refused (wait %v), want a token", key, wait)
	}
}

// mustRefuse fails unless key is refused with exactly the wait want.
func mustRefuse(t *testing.T, l *Limiter, key string, want time.Duration) {
	t.Helper()
	ok, wait := l.Allow(key)
	if ok {
		t.Fatalf("Allow(%q) granted, want a refusal", key)
	}
	if wait != want {
		t.Fatalf("Allow(%q) refused with wait %v, want %v", key, wait, want)
	}
}

// shardOf is the shard index key lands in.
func (l *Limiter) shardOf(key string) int { return int(maphash.String(l.seed, key) % shardCount) }

// keysInShard returns n keys (with prefix) that land in shard i.
func keysInShard(l *Limiter, i, n int, prefix string) []string {
	var out []string
	for j := 0; len(out) < n; j++ {
		k := fmt.Sprintf("%s-%d", prefix, j)
		if l.shardOf(k) == i {
			out = append(out, k)
		}
	}
	return out
}

// A fresh key gets Burst tokens at once; the next is refused with the time
// until one token is back, and a granted call reports no wait.
func TestLimiterBurstThenRefusal(t *testing.T) {
	clk := newFakeClock()
	l := New(Rate{PerSecond: 2, Burst: 5}, clk.now, 0)
	if !l.Enabled() {
		t.Fatal("Enabled() = false for a positive rate")
	}
	for i := range 5 {
		ok, wait := l.Allow("1.2.3.4")
		if !ok || wait != 0 {
			t.Fatalf("token %d: Allow = %v, %v; want true, 0", i+1, ok, wait)
		}
	}
	// Empty bucket at 2/s: one token is back in 500 ms.
	mustRefuse(t, l, "1.2.3.4", 500*time.Millisecond)
	// A refusal takes nothing: the wait is the same, not longer.
	mustRefuse(t, l, "1.2.3.4", 500*time.Millisecond)

	// Part of the way there, the wait shrinks accordingly.
	clk.advance(200 * time.Millisecond)
	mustRefuse(t, l, "1.2.3.4", 300*time.Millisecond)
	clk.advance(300 * time.Millisecond)
	mustAllow(t, l, "1.2.3.4")
	mustRefuse(t, l, "1.2.3.4", 500*time.Millisecond)
}

// Tokens come back with the clock at the rate, never beyond Burst.
func TestLimiterRefill(t *testing.T) {
	clk := newFakeClock()
	l := New(Rate{PerSecond: 1, Burst: 3}, clk.now, 0)
	for range 3 {
		mustAllow(t, l, "k")
	}
	mustRefuse(t, l, "k", time.Second)

	clk.advance(time.Second)
	mustAllow(t, l, "k")
	mustRefuse(t, l, "k", time.Second)

	clk.advance(2 * time.Second)
	mustAllow(t, l, "k")
	mustAllow(t, l, "k")
	mustRefuse(t, l, "k", time.Second)

	// A long idle time refills to Burst only.
	clk.advance(time.Hour)
	for range 3 {
		mustAllow(t, l, "k")
	}
	mustRefuse(t, l, "k", time.Second)
}

// Fractional rates: 0.5/s gives a token every two seconds.
func TestLimiterFractionalRate(t *testing.T) {
	clk := newFakeClock()
	l := New(Rate{PerSecond: 0.5, Burst: 2}, clk.now, 0)
	mustAllow(t, l, "k")
	mustAllow(t, l, "k")
	mustRefuse(t, l, "k", 2*time.Second)

	clk.advance(time.Second) // half a token
	mustRefuse(t, l, "k", time.Second)
	clk.advance(time.Second) // one token
	mustAllow(t, l, "k")
	mustRefuse(t, l, "k", 2*time.Second)

	clk.advance(3 * time.Second) // one and a half tokens
	mustAllow(t, l, "k")
	mustRefuse(t, l, "k", time.Second)

	// 0.1/s: ten seconds per token.
	slow := New(Rate{PerSecond: 0.1, Burst: 1}, clk.now, 0)
	mustAllow(t, slow, "k")
	mustRefuse(t, slow, "k", 10*time.Second)
	clk.advance(9 * time.Second)
	if ok, wait := slow.Allow("k"); ok || wait <= 0 || wait > 1001*time.Millisecond {
		t.Fatalf("0.1/s after 9 s: Allow = %v, %v; want a refusal with about 1 s left", ok, wait)
	}
	clk.advance(time.Second)
	mustAllow(t, slow, "k")
}

// Each key has its own bucket.
func TestLimiterKeysIndependent(t *testing.T) {
	clk := newFakeClock()
	l := New(Rate{PerSecond: 1, Burst: 2}, clk.now, 0)
	mustAllow(t, l, "a")
	mustAllow(t, l, "a")
	mustRefuse(t, l, "a", time.Second)
	for _, k := range []string{"b", "c", "", "a ", "A"} {
		mustAllow(t, l, k)
		mustAllow(t, l, k)
		mustRefuse(t, l, k, time.Second)
	}
	mustRefuse(t, l, "a", time.Second)
	if n := l.Len(); n != 6 {
		t.Fatalf("Len() = %d, want 6", n)
	}
}

// A zero rate and a nil *Limiter allow everything, tracking nothing.
func TestLimiterDisabled(t *testing.T) {
	clk := newFakeClock()
	for name, l := range map[string]*Limiter{
		"zero rate":       New(Rate{PerSecond: 0, Burst: 1}, clk.now, 0),
		"zero rate+burst": New(Rate{}, clk.now, 0),
		"nil":             nil,
	} {
		if l.Enabled() {
			t.Errorf("%s: Enabled() = true", name)
		}
		for i := range 10_000 {
			if ok, wait := l.Allow("k"); !ok || wait != 0 {
				t.Fatalf("%s: call %d: Allow = %v, %v; want true, 0", name, i, ok, wait)
			}
		}
		if l != nil {
			if n := l.Len(); n != 0 {
				t.Errorf("%s: Len() = %d, want 0 (a disabled limiter tracks nothing)", name, n)
			}
		}
	}
	var nilL *Limiter
	if ok, _ := nilL.Allow(""); !ok {
		t.Fatal("nil limiter refused")
	}
}

// A Burst below 1 is treated as 1: one token, then a refusal.
func TestLimiterBurstBelowOne(t *testing.T) {
	for _, burst := range []int{0, -1, -100} {
		clk := newFakeClock()
		l := New(Rate{PerSecond: 1, Burst: burst}, clk.now, 0)
		mustAllow(t, l, "k")
		mustRefuse(t, l, "k", time.Second)
		clk.advance(time.Second)
		mustAllow(t, l, "k")
		mustRefuse(t, l, "k", time.Second)
		// Idle for long: still only one token.
		clk.advance(time.Minute)
		mustAllow(t, l, "k")
		mustRefuse(t, l, "k", time.Second)
	}
}

// A flood of distinct keys keeps memory bounded by maxKeys, whether the
// buckets are full (idle) or not.
func TestLimiterMemoryBounded(t *testing.T) {
	const maxKeys = 64
	for _, tc := range []struct {
		name string
		rate Rate
		step time.Duration
	}{
		// Burst 1: every new bucket is empty at once, so no bucket is ever
		// full; eviction must drop half a shard.
		{"none full", Rate{PerSecond: 1, Burst: 1}, 0},
		// Burst 3: buckets are partly drained; time passes so older ones
		// become full again and are dropped first.
		{"some full", Rate{PerSecond: 10, Burst: 3}, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			l := New(tc.rate, clk.now, maxKeys)
			peak := 0
			for i := range 10_000 {
				mustAllow(t, l, fmt.Sprintf("10.0.%d.%d", i/256, i%256))
				if i%100 == 0 {
					peak = max(peak, l.Len())
				}
				clk.advance(tc.step)
			}
			peak = max(peak, l.Len())
			if peak > 2*maxKeys {
				t.Fatalf("Len() reached %d after 10 000 distinct keys with maxKeys %d", peak, maxKeys)
			}
			if l.Len() == 0 {
				t.Fatal("Len() = 0: the limiter forgot every key")
			}
		})
	}

	// The default (maxKeys <= 0) is 100 000: a per-shard share of 3125.
	l := New(Rate{PerSecond: 1, Burst: 1}, newFakeClock().now, 0)
	if l.perMax != 100_000/shardCount {
		t.Fatalf("default per-shard cap %d, want %d", l.perMax, 100_000/shardCount)
	}
	// A tiny maxKeys still leaves one key per shard.
	if l := New(Rate{PerSecond: 1, Burst: 1}, newFakeClock().now, 5); l.perMax != 1 {
		t.Fatalf("maxKeys 5: per-shard cap %d, want 1", l.perMax)
	}
}

// When a shard is full, eviction drops the idle full buckets and keeps a
// bucket that is still being limited: the limited key stays refused.
func TestLimiterEvictionKeepsLimitedBucket(t *testing.T) {
	const perShard = 8
	clk := newFakeClock()
	l := New(Rate{PerSecond: 1, Burst: 3}, clk.now, perShard*shardCount)
	if l.perMax != perShard {
		t.Fatalf("per-shard cap %d, want %d", l.perMax, perShard)
	}
	const limited = "203.0.113.66"
	sh := l.shardOf(limited)

	// The attacker drains its bucket.
	for range 3 {
		mustAllow(t, l, limited)
	}
	mustRefuse(t, l, limited, time.Second)

	// Other clients of the same shard take a token each, filling the shard.
	others := keysInShard(l, sh, perShard-1, "client")
	for _, k := range others {
		mustAllow(t, l, k)
	}
	if n := len(l.shards[sh].buckets); n != perShard {
		t.Fatalf("shard holds %d buckets, want %d", n, perShard)
	}

	// Time passes: the other clients' buckets refill (idle and full); the
	// attacker keeps hammering and stays empty.
	clk.advance(3 * time.Second)
	for range 3 {
		mustAllow(t, l, limited)
	}
	mustRefuse(t, l, limited, time.Second)

	// A new key in the full shard triggers an eviction.
	newcomer := keysInShard(l, sh, perShard, "newcomer")[perShard-1]
	mustAllow(t, l, newcomer)

	// The limited key was kept: still refused right after.
	mustRefuse(t, l, limited, time.Second)
	b := l.shards[sh].buckets
	if _, ok := b[limited]; !ok {
		t.Fatal("the limited bucket was evicted")
	}
	for _, k := range others {
		if _, ok := b[k]; ok {
			t.Errorf("idle full bucket %q survived the eviction", k)
		}
	}
	if len(b) != 2 {
		t.Fatalf("shard holds %d buckets after eviction, want 2 (limited key and newcomer)", len(b))
	}
	// Forgetting full buckets changed nothing: the others get a full burst.
	for _, k := range others {
		for range 3 {
			mustAllow(t, l, k)
		}
	}
}

// Many goroutines on one key at one instant never get more than Burst tokens
// between them (run with -race).
func TestLimiterConcurrentOneKey(t *testing.T) {
	const burst, workers, calls = 50, 64, 200
	clk := newFakeClock()
	l := New(Rate{PerSecond: 1, Burst: burst}, clk.now, 0)
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range calls {
				// Other keys in between, so shards are contended too.
				l.Allow(fmt.Sprintf("other-%d-%d", w, i%4))
				if ok, wait := l.Allow("hot"); ok {
					granted.Add(1)
				} else if wait <= 0 {
					t.Errorf("refusal with wait %v", wait)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if g := granted.Load(); g != burst {
		t.Fatalf("%d tokens granted on one key at one instant, want exactly Burst %d", g, burst)
	}

	// One second later: exactly one more, however many ask.
	clk.advance(time.Second)
	granted.Store(0)
	start = make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 10 {
				if ok, _ := l.Allow("hot"); ok {
					granted.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if g := granted.Load(); g != 1 {
		t.Fatalf("%d tokens granted after 1 s at 1/s, want 1", g)
	}
}

// A flood of new keys that fills every shard with buckets still being
// drawn from forgets the fuller half first: a client limited hard stays
// limited, so fresh keys cannot wash out its state.
func TestLimiterFloodKeepsMostLimited(t *testing.T) {
	clk := newFakeClock()
	l := New(Rate{PerSecond: 1, Burst: 3}, clk.now, 256)
	for range 3 {
		mustAllow(t, l, "attacker")
	}
	for i := range 50_000 {
		l.Allow(fmt.Sprintf("2001:db8::%x", i)) // each new key keeps 2 of its 3 tokens
	}
	if ok, _ := l.Allow("attacker"); ok {
		t.Fatal("the limited client was forgotten by the flood of new keys")
	}
	if n := l.Len(); n > 2*256 {
		t.Fatalf("Len = %d after the flood, want at most %d", n, 2*256)
	}
}
