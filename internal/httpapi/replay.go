package httpapi

import (
	"context"
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
//
// Replies of routes also claimed in the shared store (login, logout: a login
// reply holds the new session's token) are not kept here: the entry only
// says the envelope was answered, and a replay reads the reply, stored
// sealed, from the shared store. So no session token sits in this cache for
// five minutes, and a replayed login (rare) costs one indexed read.
type replayCache struct {
	mu      sync.Mutex
	buckets map[int64]map[replayKey]replayEntry
	size    int
	max     int
	swept   int64
	// changed is closed and replaced whenever a pending entry finishes, waking
	// the (rare) duplicates waiting for one.
	changed chan struct{}
}

// replayKey is an envelope's MAC.
type replayKey [32]byte

type replayEntry struct {
	reply   []byte // the first reply; nil while pending or when in the shared store
	pending bool
}

func newReplayCache(max int) *replayCache {
	return &replayCache{buckets: map[int64]map[replayKey]replayEntry{}, max: max, changed: make(chan struct{})}
}

const bucketSeconds = 10

func keyOf(mac []byte) replayKey {
	var k replayKey
	copy(k[:], mac)
	return k
}

// claim reports whether the caller is the first to see the envelope (and so
// must call finish). A later caller gets the first reply from wait.
func (c *replayCache) claim(key replayKey, expires, now time.Time) bool {
	b := expires.Unix() / bucketSeconds
	c.mu.Lock()
	defer c.mu.Unlock()
	if nb := now.Unix() / bucketSeconds; nb != c.swept {
		c.swept = nb
		for k, m := range c.buckets {
			if k < nb {
				c.size -= len(m)
				delete(c.buckets, k)
			}
		}
	}
	m := c.buckets[b]
	if m == nil {
		m = map[replayKey]replayEntry{}
		c.buckets[b] = m
	}
	if _, ok := m[key]; ok {
		return false
	}
	m[key] = replayEntry{pending: true}
	c.size++
	for c.size > c.max && len(c.buckets) > 1 {
		oldest := int64(-1)
		for k := range c.buckets {
			if k != b && (oldest == -1 || k < oldest) {
				oldest = k
			}
		}
		c.size -= len(c.buckets[oldest])
		delete(c.buckets, oldest)
	}
	return true
}

// finish publishes the reply of a claimed envelope. A nil reply (internal
// failure) removes the entry so a retry runs again. With shared, the reply is
// in the shared store: the entry records only that there is one.
func (c *replayCache) finish(key replayKey, expires time.Time, reply []byte, shared bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.buckets[expires.Unix()/bucketSeconds]; m != nil {
		if e, ok := m[key]; ok && e.pending {
			if reply == nil {
				delete(m, key)
				c.size--
			} else if shared {
				m[key] = replayEntry{}
			} else {
				m[key] = replayEntry{reply: reply}
			}
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait blocks until the first request's reply is known. It returns false when
// there is none to give: the first request failed internally, the entry was
// evicted, or ctx ended. A nil reply with true means the reply is in the
// shared store.
func (c *replayCache) wait(ctx context.Context, key replayKey, expires time.Time) ([]byte, bool) {
	for {
		c.mu.Lock()
		e, ok := c.buckets[expires.Unix()/bucketSeconds][key]
		changed := c.changed
		c.mu.Unlock()
		if !ok {
			return nil, false
		}
		if !e.pending {
			return e.reply, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false
		}
	}
}
