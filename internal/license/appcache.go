package license

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// appCache remembers apps by secret hash for a short time, so the hot path
// (every heartbeat, login and check-key resolves its app secret) does not read
// the apps table each time. Changes made through this process clear it at
// once; changes made through another process sharing the database are seen
// within the TTL. With each app it keeps the app's envelope Box, so the keys
// are derived (two SHA-256) and the cipher built once per fill, not per
// request.
//
// Every client request reads it, from every core, so a lookup writes no
// shared memory: the entries are in a sync.Map, whose loads take no lock,
// and the generation is an atomic. A read lock (a sync.RWMutex) would add
// to the lock's reader count and take it away again, two atomic writes to
// one cache line that both cores' requests pass through
// (BenchmarkAppCacheGet). Writers (a fill, a clear) take mu.
type appCache struct {
	ttl time.Duration

	gen atomic.Uint64 // bumped by clear, so a lookup racing a change is not cached
	m   sync.Map      // [32]byte secret hash → *cachedApp

	mu sync.Mutex // held by put and clear
	n  int        // entries stored since the last clear (mu)
}

// cachedApp is shared by every request that resolves the app until it
// expires: it is never changed after put.
type cachedApp struct {
	app   App
	box   *envelope.Box
	until time.Time
}

// maxCachedApps bounds the cache; only valid secrets are ever stored, so it
// is reached only by installations with that many apps.
const maxCachedApps = 10000

func newAppCache(ttl time.Duration) *appCache {
	return &appCache{ttl: ttl}
}

// get returns the cached entry for hash (nil on a miss), and the generation
// to pass to put after a miss. The generation is read first: a clear after
// it makes the put that follows a miss drop its (maybe older) app.
func (c *appCache) get(hash [32]byte, now time.Time) (*cachedApp, uint64) {
	gen := c.gen.Load()
	if v, ok := c.m.Load(hash); ok {
		if e := v.(*cachedApp); now.Before(e.until) {
			return e, gen
		}
	}
	return nil, gen
}

// put caches e, read from the database at generation gen.
func (c *appCache) put(hash [32]byte, e *cachedApp, gen uint64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	e.until = now.Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen.Load() {
		return
	}
	if _, held := c.m.Load(hash); !held {
		if c.n >= maxCachedApps {
			c.m.Clear()
			c.n = 0
		}
		c.n++
	}
	c.m.Store(hash, e)
}

// clear forgets every app; called after any app change.
func (c *appCache) clear() {
	c.mu.Lock()
	c.gen.Add(1)
	c.m.Clear()
	c.n = 0
	c.mu.Unlock()
}
