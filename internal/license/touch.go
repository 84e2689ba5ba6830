package license

import (
	"hash/maphash"
	"sync"
	"time"
)

// touchShards is how many locks the heartbeat touch buffer is split over, so
// concurrent heartbeats (each reads and may write the buffer) rarely share
// one: no process-wide lock on the hot path.
const touchShards = 64

// touchBuffer holds heartbeat last-seen times not yet written, sharded by
// session ID.
type touchBuffer struct {
	seed   maphash.Seed
	shards [touchShards]touchShard
}

type touchShard struct {
	mu      sync.Mutex
	touched map[string]time.Time // session ID → last heartbeat not yet written
	// flushed is the part of the batch the last flush wrote (or is
	// writing), kept until the next one so a read racing the write still
	// sees its times.
	flushed map[string]time.Time
	_       [32]byte // keeps neighbouring shards' locks off one cache line
}

func newTouchBuffer() touchBuffer {
	return touchBuffer{seed: maphash.MakeSeed()}
}

func (b *touchBuffer) shard(id string) *touchShard {
	return &b.shards[maphash.String(b.seed, id)%touchShards]
}

// touch records a heartbeat of session id at t.
func (b *touchBuffer) touch(id string, t time.Time) {
	sh := b.shard(id)
	sh.mu.Lock()
	if sh.touched == nil {
		sh.touched = map[string]time.Time{}
	}
	sh.touched[id] = t
	sh.mu.Unlock()
}

// last returns the latest buffered (or being written) time of session id.
func (b *touchBuffer) last(id string) (time.Time, bool) {
	sh := b.shard(id)
	sh.mu.Lock()
	t, ok := sh.touched[id]
	if f, fok := sh.flushed[id]; fok && (!ok || f.After(t)) {
		t, ok = f, true
	}
	sh.mu.Unlock()
	return t, ok
}

// forget drops session id's buffered time (the session ended).
func (b *touchBuffer) forget(id string) {
	sh := b.shard(id)
	sh.mu.Lock()
	delete(sh.touched, id)
	sh.mu.Unlock()
}

// take empties the buffer into one batch to write. Each shard's part stays
// visible (flushed) until a later take finds the shard with times again.
func (b *touchBuffer) take() map[string]time.Time {
	var batch map[string]time.Time
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		part := sh.touched
		if len(part) == 0 {
			sh.mu.Unlock()
			continue
		}
		sh.touched = nil
		sh.flushed = part
		sh.mu.Unlock()
		if batch == nil {
			batch = make(map[string]time.Time, len(part)*touchShards)
		}
		for id, t := range part {
			batch[id] = t
		}
	}
	return batch
}

// putBack returns a batch that could not be written, keeping newer times.
func (b *touchBuffer) putBack(batch map[string]time.Time) {
	for id, t := range batch {
		sh := b.shard(id)
		sh.mu.Lock()
		if sh.touched == nil {
			sh.touched = map[string]time.Time{}
		}
		if cur, ok := sh.touched[id]; !ok || cur.Before(t) {
			sh.touched[id] = t
		}
		sh.mu.Unlock()
	}
}
