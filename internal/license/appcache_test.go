package license

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func appHash(i int) [32]byte {
	var h [32]byte
	copy(h[:], fmt.Sprintf("app-%d", i))
	return h
}

// The cache answers a fill until its TTL, drops everything on clear, and
// refuses a fill read before a clear (its app may be the old one).
func TestAppCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newAppCache(time.Second)
	h := appHash(1)
	if e, _ := c.get(h, now); e != nil {
		t.Fatal("an empty cache answered")
	}
	_, gen := c.get(h, now)
	c.put(h, &cachedApp{app: App{ID: "a1"}}, gen, now)
	if e, _ := c.get(h, now.Add(999*time.Millisecond)); e == nil || e.app.ID != "a1" {
		t.Fatalf("within the TTL: %v", e)
	}
	if e, _ := c.get(h, now.Add(time.Second)); e != nil {
		t.Error("an entry outlived its TTL")
	}

	// A lookup that missed before a clear may have read the app before the
	// change: its fill is dropped.
	_, stale := c.get(appHash(2), now)
	c.clear()
	c.put(appHash(2), &cachedApp{app: App{ID: "old"}}, stale, now)
	if e, _ := c.get(appHash(2), now); e != nil {
		t.Error("a fill read before a clear was kept")
	}
	if e, _ := c.get(h, now); e != nil {
		t.Error("clear kept an entry")
	}
	_, gen = c.get(appHash(2), now)
	c.put(appHash(2), &cachedApp{app: App{ID: "new"}}, gen, now)
	if e, _ := c.get(appHash(2), now); e == nil || e.app.ID != "new" {
		t.Errorf("a fill after the clear: %v", e)
	}

	// A TTL of zero or less caches nothing.
	off := newAppCache(-1)
	_, gen = off.get(h, now)
	off.put(h, &cachedApp{}, gen, now)
	if e, _ := off.get(h, now); e != nil {
		t.Error("a cache with no TTL kept an entry")
	}
}

// The cache holds at most maxCachedApps entries: the next new one starts it
// over. A refill of a held app does not count twice.
func TestAppCacheBound(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newAppCache(time.Hour)
	for i := range maxCachedApps {
		_, gen := c.get(appHash(i), now)
		c.put(appHash(i), &cachedApp{}, gen, now)
	}
	_, gen := c.get(appHash(0), now)
	c.put(appHash(0), &cachedApp{}, gen, now) // a refill
	if e, _ := c.get(appHash(maxCachedApps-1), now); e == nil {
		t.Fatal("a refill of a held app started the cache over")
	}
	c.put(appHash(maxCachedApps), &cachedApp{}, gen, now)
	if e, _ := c.get(appHash(1), now); e != nil {
		t.Error("the cache grew past its bound")
	}
	if e, _ := c.get(appHash(maxCachedApps), now); e == nil {
		t.Error("the entry past the bound was not kept")
	}
}

// Concurrent lookups, fills and clears (run with -race): a lookup sees an
// entry or none, never a torn one.
func TestAppCacheConcurrent(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newAppCache(time.Hour)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				h := appHash(i % 50)
				e, gen := c.get(h, now)
				switch {
				case e == nil:
					c.put(h, &cachedApp{app: App{ID: fmt.Sprint(i % 50)}}, gen, now)
				case e.app.ID != fmt.Sprint(i%50):
					t.Errorf("app %d answered with %q", i%50, e.app.ID)
					return
				}
				if g == 0 && i%100 == 0 {
					c.clear()
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkAppCacheGet is every client request's app lookup, from all
// cores at once, on one app (most installations serve one or a few).
func BenchmarkAppCacheGet(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	c := newAppCache(time.Hour)
	h := appHash(1)
	_, gen := c.get(h, now)
	c.put(h, &cachedApp{}, gen, now)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if e, _ := c.get(h, now); e == nil {
				b.Error("miss")
				return
			}
		}
	})
}
