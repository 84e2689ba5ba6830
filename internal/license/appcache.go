package license

import (
	"sync"
	"time"
)

// appCache remembers apps by secret hash for a short time, so the hot path
// (every heartbeat, login and check-key resolves its app secret) does not read
// the apps table each time. Changes made through this process clear it at
// once; changes made through another process sharing the database are seen
// within the TTL.
type appCache struct {
	ttl time.Duration

	mu  sync.RWMutex
	gen uint64 // bumped by clear, so a lookup racing a change is not cached
	m   map[string]cachedApp
}

type cachedApp struct {
	app   App
	until time.Time
}

// maxCachedApps bounds the cache; only valid secrets are ever stored, so it
// is reached only by installations with that many apps.
const maxCachedApps = 10000

func newAppCache(ttl time.Duration) *appCache {
	return &appCache{ttl: ttl, m: map[string]cachedApp{}}
}

// get returns a copy of the cached app for hash, and the generation to pass to
// put after a miss.
func (c *appCache) get(hash string, now time.Time) (*App, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.m[hash]; ok && now.Before(e.until) {
		a := e.app
		return &a, c.gen
	}
	return nil, c.gen
}

// put caches a, read from the database at generation gen.
func (c *appCache) put(hash string, a *App, gen uint64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxCachedApps {
		clear(c.m)
	}
	c.m[hash] = cachedApp{app: *a, until: now.Add(c.ttl)}
}

// clear forgets every app; called after any app change.
func (c *appCache) clear() {
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}
