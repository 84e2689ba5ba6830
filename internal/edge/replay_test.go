package edge

import (
	"context"
	"sync"
	"testing"
	"time"
)

var replayT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// keyOf is the cache key of a (short, made-up) MAC.
func keyOf(mac []byte) replayKey {
	var k replayKey
	copy(k[:], mac)
	return k
}

func macN(n byte) replayKey { return keyOf([]byte{n, 1, 2, 3}) }

func TestReplayCacheAnswersARepeatWithTheFirstReply(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	if !c.claim(macN(1), exp, replayT0) {
		t.Fatal("first claim refused")
	}
	if c.claim(macN(1), exp, replayT0) {
		t.Fatal("second claim of the same MAC granted")
	}
	if !c.claim(macN(2), exp, replayT0) {
		t.Fatal("claim of another MAC refused")
	}
	c.finish(macN(1), exp, []byte("first"), false)
	got, ok := c.wait(context.Background(), macN(1), exp)
	if !ok || string(got) != "first" {
		t.Fatalf("wait = %q, %v; want the first reply", got, ok)
	}
}

func TestReplayCacheWaitersWakeWhenTheFirstFinishes(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	var wg sync.WaitGroup
	replies := make([]string, 4)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, ok := c.wait(context.Background(), macN(1), exp)
			if ok {
				replies[i] = string(b)
			}
		}()
	}
	// Finishing another entry wakes the waiters, which must go back to waiting.
	c.claim(macN(2), exp, replayT0)
	c.finish(macN(2), exp, []byte("other"), false)
	c.finish(macN(1), exp, []byte("first"), false)
	wg.Wait()
	for i, r := range replies {
		if r != "first" {
			t.Errorf("waiter %d got %q, want the first reply", i, r)
		}
	}
}

func TestReplayCacheFailedFirstLetsARetryRun(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	c.finish(macN(1), exp, nil, false)
	if _, ok := c.wait(context.Background(), macN(1), exp); ok {
		t.Fatal("wait found a reply for a request that failed")
	}
	if !c.claim(macN(1), exp, replayT0) {
		t.Fatal("a retry after an internal failure was refused")
	}
}

func TestReplayCacheWaitGivesUpWithTheContext(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := c.wait(ctx, macN(1), exp); ok {
		t.Fatal("wait on a pending entry with a cancelled context reported a reply")
	}
}

func TestReplayCacheForgetsEntriesOnceTheWindowHasPassed(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	c.finish(macN(1), exp, []byte("first"), false)
	// Still inside the window: remembered.
	if c.claim(macN(1), exp, exp.Add(-time.Second)) {
		t.Fatal("entry forgotten before its expiry")
	}
	// A later claim, past the expiry bucket, sweeps it.
	c.claim(macN(9), exp.Add(time.Hour), exp.Add(bucketSeconds*time.Second))
	if n := c.len(); n != 1 {
		t.Fatalf("size after sweep = %d, want 1", n)
	}
	if _, ok := c.wait(context.Background(), macN(1), exp); ok {
		t.Fatal("expired entry still answered")
	}
}

func TestReplayCacheDropsTheOldestBucketWhenFull(t *testing.T) {
	t.Parallel()
	c := newReplayCache(2)
	early := replayT0.Add(100 * time.Second)
	late := replayT0.Add(300 * time.Second)
	c.claim(macN(1), early, replayT0)
	c.claim(macN(2), late, replayT0)
	c.claim(macN(3), late, replayT0) // over the cap: the early bucket goes
	if n := c.len(); n != 2 {
		t.Fatalf("size = %d, want 2", n)
	}
	if c.claim(macN(2), late, replayT0) || c.claim(macN(3), late, replayT0) {
		t.Fatal("entries of the newest bucket were dropped")
	}
	if !c.claim(macN(1), early, replayT0) {
		t.Fatal("entry of the dropped bucket still present")
	}
}

// A shared-scope reply (a login's, holding the session token) is not kept in
// the process cache: the entry only says it was answered, so wait returns no
// bytes and the caller reads the sealed reply from the shared store.
func TestReplayCacheKeepsNoSharedReply(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	c.finish(macN(1), exp, []byte(`{"session_id":"secret-token"}`), true)
	got, ok := c.wait(context.Background(), macN(1), exp)
	if !ok || got != nil {
		t.Fatalf("wait = %q, %v; want answered with no reply kept", got, ok)
	}
	for _, m := range c.shards[0].buckets {
		for _, e := range m {
			if e.reply != nil {
				t.Fatalf("a shared reply is held in memory: %q", e.reply)
			}
		}
	}
}

// A large cache is split into shards; every rule holds across them, and a
// request nobody waits for makes no channel.
func TestReplayCacheSharded(t *testing.T) {
	c := newReplayCache(2_000_000)
	if len(c.shards) != maxReplayShards {
		t.Fatalf("shards = %d, want %d", len(c.shards), maxReplayShards)
	}
	exp := replayT0.Add(300 * time.Second)
	for i := range 1000 {
		k := keyOf([]byte{byte(i), byte(i >> 8), 7})
		if !c.claim(k, exp, replayT0) {
			t.Fatalf("claim %d: not first", i)
		}
		if c.claim(k, exp, replayT0) {
			t.Fatalf("claim %d again: first", i)
		}
		c.finish(k, exp, []byte{byte(i)}, false)
		if got, ok := c.wait(context.Background(), k, exp); !ok || len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("wait %d = %v, %v", i, got, ok)
		}
	}
	if n := c.len(); n != 1000 {
		t.Fatalf("len = %d, want 1000", n)
	}
	used := 0
	for i := range c.shards {
		if c.shards[i].size > 0 {
			used++
		}
		for _, m := range c.shards[i].buckets {
			for _, e := range m {
				if e.done != nil {
					t.Fatal("an entry nobody waited for holds a channel")
				}
			}
		}
	}
	if used < maxReplayShards/2 {
		t.Fatalf("1000 entries landed in %d shards", used)
	}
}
