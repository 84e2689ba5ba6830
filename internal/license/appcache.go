package license

import (
	"sync"
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
type appCache struct {
	ttl time.Duration

	mu  sync.RWMutex
	gen uint64 // bumped by clear, so a lookup racing a change is not cached
	m   map[[32]byte]*cachedApp
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
	return &appCache{ttl: ttl, m: map[[32]byte]*cachedApp{}}
}

// get returns the cached entry for hash (nil on a miss), and the generation
// to pass to put after a miss.
func (c *appCache) get(hash [32]byte, now time.Time) (*cachedApp, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.m[hash]; e != nil && now.Before(e.until) {
		return e, c.gen
	}
	return nil, c.gen
}

// put caches e, read from the database at generation gen.
func (c *appCache) put(hash [32]byte, e *cachedApp, gen uint64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	e.until = now.Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxCachedApps {
		clear(c.m)
	}
	c.m[hash] = e
}

// clear forgets every app; called after any app change.
func (c *appCache) clear() {
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}
