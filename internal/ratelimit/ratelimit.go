// Package ratelimit is an in-memory token-bucket limiter keyed by a string
// (a client IP, a session). State is per process: behind a load balancer
// each keyward process limits what it sees. Memory is bounded: idle full
// buckets are dropped first when a shard reaches its share of MaxKeys.
package ratelimit

import (
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"
)

// Rate is a bucket's refill rate and size. A PerSecond of 0 disables it.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Limiter hands out tokens per key. It is safe for concurrent use.
type Limiter struct {
	rate   Rate
	now    func() time.Time
	seed   maphash.Seed
	perMax int
	shards [shardCount]shard
}

const shardCount = 32

type shard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a Limiter of rate with the clock now, tracking at most about
// maxKeys keys (default 100 000).
func New(rate Rate, now func() time.Time, maxKeys int) *Limiter {
	if maxKeys <= 0 {
		maxKeys = 100_000
	}
	if rate.Burst < 1 {
		rate.Burst = 1
	}
	l := &Limiter{rate: rate, now: now, seed: maphash.MakeSeed(), perMax: max(maxKeys/shardCount, 1)}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*bucket{}
	}
	return l
}

// Enabled reports whether the limiter limits anything.
func (l *Limiter) Enabled() bool { return l != nil && l.rate.PerSecond > 0 }

// Allow takes a token for key. When none is left it returns false and how
// long until one is back. A nil or disabled Limiter allows everything.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	if !l.Enabled() {
		return true, 0
	}
	now := l.now()
	sh := &l.shards[maphash.String(l.seed, key)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.buckets[key]
	if b == nil {
		if len(sh.buckets) >= l.perMax {
			l.evict(sh, now)
		}
		b = &bucket{tokens: float64(l.rate.Burst), last: now}
		sh.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / l.rate.PerSecond * float64(time.Second)))
	return false, wait
}

func (l *Limiter) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(float64(l.rate.Burst), b.tokens+el.Seconds()*l.rate.PerSecond)
		b.last = now
	}
}

// evict drops the buckets that have refilled completely (forgetting them
// changes nothing); if none has, it drops the fuller half of the shard, so a
// flood of new keys cannot grow memory without bound and the clients being
// limited hardest are the last to be forgotten.
func (l *Limiter) evict(sh *shard, now time.Time) {
	for k, b := range sh.buckets {
		l.refill(b, now)
		if b.tokens >= float64(l.rate.Burst) {
			delete(sh.buckets, k)
		}
	}
	if len(sh.buckets) < l.perMax {
		return
	}
	levels := make([]float64, 0, len(sh.buckets))
	for _, b := range sh.buckets {
		levels = append(levels, b.tokens)
	}
	slices.Sort(levels)
	median := levels[len(levels)/2]
	n := len(sh.buckets) / 2
	for k, b := range sh.buckets {
		if n == 0 {
			break
		}
		if b.tokens >= median {
			delete(sh.buckets, k)
			n--
		}
	}
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}
