package edge

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// replayCache remembers, per process, the reply given to each verified
// envelope until the envelope's timestamp leaves the ±300 s window, so a
// request seen again is answered with the first reply instead of being run
// twice. A duplicate that arrives while the first is still running waits for
// it. Entries are grouped in 10-second buckets by expiry so expired ones go in
// one delete; when the cache holds more than max entries the oldest bucket is
// dropped early (routes whose side effects matter also use the shared store).
//
// Every verified envelope of every client lands here, so an entry is kept
// small: the 32-byte MAC as the key (it was verified under the app's key, so
// it also tells apps apart) and the reply bytes, about 120 bytes in all.
// The cache is split into shards by MAC, each with its own lock, buckets and
// share of max, so concurrent requests rarely wait for one another: no
// process-wide lock on the hot path. A small cache (under 64 Ki entries) is
// one shard.
//
// Replies of routes also claimed in the shared store (login, logout: a login
// reply holds the new session's token) are not kept here: the entry only
// says the envelope was answered, and a replay reads the reply, stored
// sealed, from the shared store. So no session token sits in this cache for
// five minutes, and a replayed login (rare) costs one indexed read.
type replayCache struct {
	seed   maphash.Seed
	shards []replayShard
}

type replayShard struct {
	mu      sync.Mutex
	buckets map[int64]map[replayKey]replayEntry
	size    int
	max     int
	swept   int64
	_       [40]byte // keeps neighbouring shards' locks off one cache line
}

// replayKey is an envelope's MAC.
type replayKey [32]byte

type replayEntry struct {
	reply   []byte // the first reply; nil while pending or when in the shared store
	pending bool
	// done is made by the first duplicate that waits for a pending entry
	// (rare) and closed by finish; requests nobody waits for make none.
	done chan struct{}
}

// maxReplayShards bounds the shards; each holds at least replayShardMin
// entries, so the oldest-bucket eviction stays meaningful per shard.
const (
	maxReplayShards = 64
	replayShardMin  = 1 << 10
)

func newReplayCache(max int) *replayCache {
	n := min(maxReplayShards, max/replayShardMin)
	if n < 1 {
		n = 1
	}
	c := &replayCache{seed: maphash.MakeSeed(), shards: make([]replayShard, n)}
	for i := range c.shards {
		c.shards[i] = replayShard{buckets: map[int64]map[replayKey]replayEntry{}, max: max / n}
	}
	return c
}

const bucketSeconds = 10

func (c *replayCache) shard(key *replayKey) *replayShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.Bytes(c.seed, key[:])%uint64(len(c.shards))]
}

// len returns the number of entries held.
func (c *replayCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.size
		sh.mu.Unlock()
	}
	return n
}

// claim reports whether the caller is the first to see the envelope (and so
// must call finish). A later caller gets the first reply from wait.
func (c *replayCache) claim(key replayKey, expires, now time.Time) bool {
	b := expires.Unix() / bucketSeconds
	sh := c.shard(&key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if nb := now.Unix() / bucketSeconds; nb != sh.swept {
		sh.swept = nb
		for k, m := range sh.buckets {
			if k < nb {
				sh.size -= len(m)
				delete(sh.buckets, k)
			}
		}
	}
	m := sh.buckets[b]
	if m == nil {
		m = map[replayKey]replayEntry{}
		sh.buckets[b] = m
	}
	if _, ok := m[key]; ok {
		return false
	}
	m[key] = replayEntry{pending: true}
	sh.size++
	for sh.size > sh.max && len(sh.buckets) > 1 {
		oldest := int64(-1)
		for k := range sh.buckets {
			if k != b && (oldest == -1 || k < oldest) {
				oldest = k
			}
		}
		for _, e := range sh.buckets[oldest] {
			if e.done != nil {
				close(e.done) // its waiters find the entry gone
			}
		}
		sh.size -= len(sh.buckets[oldest])
		delete(sh.buckets, oldest)
	}
	return true
}

// finish publishes the reply of a claimed envelope. A nil reply (internal
// failure) removes the entry so a retry runs again. With shared, the reply is
// in the shared store: the entry records only that there is one.
func (c *replayCache) finish(key replayKey, expires time.Time, reply []byte, shared bool) {
	sh := c.shard(&key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.buckets[expires.Unix()/bucketSeconds]
	if m == nil {
		return
	}
	e, ok := m[key]
	if !ok || !e.pending {
		return
	}
	switch {
	case reply == nil:
		delete(m, key)
		sh.size--
	case shared:
		m[key] = replayEntry{}
	default:
		m[key] = replayEntry{reply: reply}
	}
	if e.done != nil {
		close(e.done)
	}
}

// wait blocks until the first request's reply is known. It returns false when
// there is none to give: the first request failed internally, the entry was
// evicted, or ctx ended. A nil reply with true means the reply is in the
// shared store.
func (c *replayCache) wait(ctx context.Context, key replayKey, expires time.Time) ([]byte, bool) {
	sh := c.shard(&key)
	b := expires.Unix() / bucketSeconds
	for {
		sh.mu.Lock()
		m := sh.buckets[b]
		e, ok := m[key]
		if !ok {
			sh.mu.Unlock()
			return nil, false
		}
		if !e.pending {
			sh.mu.Unlock()
			return e.reply, true
		}
		if e.done == nil {
			e.done = make(chan struct{})
			m[key] = e
		}
		done := e.done
		sh.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, false
		}
	}
}
