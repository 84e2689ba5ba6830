package edge

import (
	"bytes"
	"context"
	"reflect"
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
	for _, bk := range c.shards[0].buckets {
		if len(bk.chunks) != 0 {
			t.Fatalf("a shared reply is held in memory: %q", bk.chunks)
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
		if len(c.shards[i].waiters) != 0 {
			t.Fatal("an entry nobody waited for holds a channel")
		}
	}
	if used < maxReplayShards/2 {
		t.Fatalf("1000 entries landed in %d shards", used)
	}
}

// The entries hold no pointer, so the garbage collector does not scan the
// maps that hold them: a million of them per 100 000 heartbeating sessions.
func TestReplayCacheEntriesHoldNoPointers(t *testing.T) {
	t.Parallel()
	var holds func(reflect.Type) bool
	holds = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.String, reflect.UnsafePointer:
			return true
		case reflect.Array:
			return holds(ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				if holds(ty.Field(i).Type) {
					return true
				}
			}
		}
		return false
	}
	m := reflect.TypeOf(replayBucket{}.m)
	for _, ty := range []reflect.Type{m.Key(), m.Elem()} {
		if holds(ty) {
			t.Errorf("%s holds a pointer", ty)
		}
	}
}

// Replies are kept byte for byte: an equal reply right after another is
// stored once, different ones each their own, one larger than a chunk in
// a chunk of its own, and a caller appending to the reply it was given
// cannot change the reply stored after it.
func TestReplayCacheKeepsEachReply(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	big := bytes.Repeat([]byte("x"), replayChunk+10)
	replies := [][]byte{[]byte("heartbeat ok"), []byte("heartbeat ok"), []byte("banned"), {}, big, []byte("heartbeat ok")}
	for i, r := range replies {
		k := macN(byte(10 + i))
		if !c.claim(k, exp, replayT0) {
			t.Fatalf("claim %d refused", i)
		}
		c.finish(k, exp, r, false)
	}
	bk := c.shards[0].buckets[exp.Unix()/bucketSeconds]
	// "heartbeat ok" twice, "banned", "", big (a chunk of its own), then
	// "heartbeat ok" once more, after big, in a third chunk.
	if got := len(bk.chunks[0]); got != len("heartbeat ok")+len("banned") {
		t.Errorf("first chunk holds %d bytes: equal neighbours not stored once", got)
	}
	if len(bk.chunks) != 3 || len(bk.chunks[1]) != len(big) || cap(bk.chunks[1]) != len(big) {
		t.Errorf("chunks of %d, %d bytes: want the large reply alone in the second of three", len(bk.chunks), len(bk.chunks[1]))
	}
	for i, want := range replies {
		got, ok := c.wait(context.Background(), macN(byte(10+i)), exp)
		if !ok || got == nil || !bytes.Equal(got, want) {
			t.Fatalf("reply %d = %.20q, %v; want %.20q", i, got, ok, want)
		}
	}
	first, _ := c.wait(context.Background(), macN(10), exp)
	_ = append(first, "!!!!!!"...)
	if got, _ := c.wait(context.Background(), macN(12), exp); string(got) != "banned" {
		t.Fatalf("after an append to an earlier reply, reply = %q", got)
	}
}

// A duplicate waiting on an entry whose bucket expires wakes and gets no
// reply instead of waiting for its context.
func TestReplayCacheWaiterWakesWhenItsBucketGoes(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100)
	exp := replayT0.Add(300 * time.Second)
	c.claim(macN(1), exp, replayT0)
	got := make(chan bool)
	go func() {
		_, ok := c.wait(context.Background(), macN(1), exp)
		got <- ok
	}()
	for {
		c.shards[0].mu.Lock()
		n := len(c.shards[0].waiters)
		c.shards[0].mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.claim(macN(2), exp.Add(time.Hour), exp.Add(bucketSeconds*time.Second)) // sweeps exp's bucket
	if <-got {
		t.Fatal("a waiter on a swept entry reported a reply")
	}
	c.finish(macN(1), exp, []byte("late"), false) // the first finishes after: nothing to do
}
