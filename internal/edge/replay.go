package edge

import (
	"bytes"
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
// Every verified envelope of every client lands here: at 100 000 sessions
// beating every 30 s that is a million entries. So an entry holds no
// pointer: the 32-byte MAC as the key (it was verified under the app's key,
// so it also tells apps apart) and where its reply lies in its bucket's
// byte chunks. The garbage collector then has nothing to scan in the
// entries (a map whose keys and values hold no pointers is not scanned),
// where a slice per entry made it walk every entry in every cycle: with a
// million entries a full collection took 11 ms, now 1.2 ms
// (BenchmarkReplayCacheGC; docs/performance.md, "The session cache without
// pointers"). A reply equal to the one stored just before it in the bucket
// (a fleet's heartbeats share one) is stored once.
//
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
	buckets map[int64]*replayBucket
	// waiters holds a channel for each pending entry a duplicate waits on
	// (rare), closed by finish or when the entry's bucket goes.
	waiters map[replayKey]chan struct{}
	size    int
	max     int
	swept   int64
	_       [40]byte // keeps neighbouring shards' locks off one cache line
}

// replayKey is an envelope's MAC.
type replayKey [32]byte

// replayBucket holds the entries expiring in one 10-second span and the
// bytes of their replies, appended to chunks and dropped with the bucket.
type replayBucket struct {
	m      map[replayKey]replayEntry
	chunks [][]byte
	last   replayEntry // the reply stored last, for reuse by an equal one
}

// replayEntry is one envelope's state; its reply, when kept, is
// chunks[chunk][off:off+n] of its bucket. It holds no pointer (see
// replayCache).
type replayEntry struct {
	chunk, off, n uint32
	state         replayState
}

type replayState uint8

const (
	replayPending replayState = iota // claimed, no reply yet
	replayKept                       // answered; the reply is in the chunks
	replayShared                     // answered; the reply is in the shared store
)

// A bucket's first reply chunk is replayFirstChunk bytes, each next one
// twice the last up to replayChunk (a shard has up to 61 buckets, most of
// them small); a larger reply gets a chunk of its own.
const (
	replayFirstChunk = 256
	replayChunk      = 64 << 10
)

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
		c.shards[i] = replayShard{buckets: map[int64]*replayBucket{}, max: max / n}
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
		for k := range sh.buckets {
			if k < nb {
				sh.drop(k)
			}
		}
	}
	bk := sh.buckets[b]
	if bk == nil {
		bk = &replayBucket{m: map[replayKey]replayEntry{}}
		sh.buckets[b] = bk
	}
	if _, ok := bk.m[key]; ok {
		return false
	}
	bk.m[key] = replayEntry{state: replayPending}
	sh.size++
	for sh.size > sh.max && len(sh.buckets) > 1 {
		oldest := int64(-1)
		for k := range sh.buckets {
			if k != b && (oldest == -1 || k < oldest) {
				oldest = k
			}
		}
		sh.drop(oldest)
	}
	return true
}

// drop forgets bucket k; the waiters of its pending entries wake and find
// them gone (sh.mu held).
func (sh *replayShard) drop(k int64) {
	bk := sh.buckets[k]
	if bk == nil {
		return
	}
	for key, ch := range sh.waiters {
		if _, ok := bk.m[key]; ok {
			close(ch)
			delete(sh.waiters, key)
		}
	}
	sh.size -= len(bk.m)
	delete(sh.buckets, k)
}

// finish publishes the reply of a claimed envelope. A nil reply (internal
// failure) removes the entry so a retry runs again. With shared, the reply is
// in the shared store: the entry records only that there is one.
func (c *replayCache) finish(key replayKey, expires time.Time, reply []byte, shared bool) {
	sh := c.shard(&key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if ch := sh.waiters[key]; ch != nil {
		close(ch)
		delete(sh.waiters, key)
	}
	bk := sh.buckets[expires.Unix()/bucketSeconds]
	if bk == nil {
		return
	}
	e, ok := bk.m[key]
	if !ok || e.state != replayPending {
		return
	}
	switch {
	case reply == nil:
		delete(bk.m, key)
		sh.size--
	case shared:
		bk.m[key] = replayEntry{state: replayShared}
	default:
		bk.m[key] = bk.keep(reply)
	}
}

// keep stores reply's bytes in the bucket and returns the entry naming
// them: those of the reply stored just before when equal.
func (bk *replayBucket) keep(reply []byte) replayEntry {
	if l := bk.last; l.state == replayKept && int(l.n) == len(reply) && bytes.Equal(bk.bytes(l), reply) {
		return l
	}
	n := len(bk.chunks)
	if n == 0 || cap(bk.chunks[n-1])-len(bk.chunks[n-1]) < len(reply) {
		size := replayFirstChunk
		if n > 0 {
			size = min(replayChunk, 2*cap(bk.chunks[n-1]))
		}
		bk.chunks = append(bk.chunks, make([]byte, 0, max(size, len(reply))))
		n++
	}
	ch := &bk.chunks[n-1]
	e := replayEntry{chunk: uint32(n - 1), off: uint32(len(*ch)), n: uint32(len(reply)), state: replayKept}
	*ch = append(*ch, reply...)
	bk.last = e
	return e
}

// bytes returns e's reply, capped so that an append by the caller cannot
// reach the bytes stored after it.
func (bk *replayBucket) bytes(e replayEntry) []byte {
	if e.n == 0 {
		return []byte{}
	}
	end := e.off + e.n
	return bk.chunks[e.chunk][e.off:end:end]
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
		bk := sh.buckets[b]
		var e replayEntry
		ok := false
		if bk != nil {
			e, ok = bk.m[key]
		}
		if !ok {
			sh.mu.Unlock()
			return nil, false
		}
		switch e.state {
		case replayKept:
			reply := bk.bytes(e)
			sh.mu.Unlock()
			return reply, true
		case replayShared:
			sh.mu.Unlock()
			return nil, true
		}
		done := sh.waiters[key]
		if done == nil {
			if sh.waiters == nil {
				sh.waiters = map[replayKey]chan struct{}{}
			}
			done = make(chan struct{})
			sh.waiters[key] = done
		}
		sh.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, false
		}
	}
}
