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
type replayCache struct {
	mu      sync.Mutex
	buckets map[int64]map[string]*replayEntry
	size    int
	max     int
	swept   int64
}

type replayEntry struct {
	done  chan struct{}
	reply []byte // nil when the first request failed internally
}

func newReplayCache(max int) *replayCache {
	return &replayCache{buckets: map[int64]map[string]*replayEntry{}, max: max}
}

const bucketSeconds = 10

// claim returns the entry for key and whether the caller is the first to see
// it (and so must call finish).
func (c *replayCache) claim(key string, expires, now time.Time) (*replayEntry, bool) {
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
		m = map[string]*replayEntry{}
		c.buckets[b] = m
	}
	if e, ok := m[key]; ok {
		return e, false
	}
	e := &replayEntry{done: make(chan struct{})}
	m[key] = e
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
	return e, true
}

// finish publishes the reply of a claimed entry. A nil reply (internal
// failure) also removes the entry so a retry runs again.
func (c *replayCache) finish(key string, expires time.Time, e *replayEntry, reply []byte) {
	e.reply = reply
	if reply == nil {
		c.mu.Lock()
		if m := c.buckets[expires.Unix()/bucketSeconds]; m != nil && m[key] == e {
			delete(m, key)
			c.size--
		}
		c.mu.Unlock()
	}
	close(e.done)
}

// wait blocks until the first request's reply is known.
func (e *replayEntry) wait(ctx context.Context) ([]byte, bool) {
	select {
	case <-e.done:
		return e.reply, e.reply != nil
	case <-ctx.Done():
		return nil, false
	}
}
