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
	touched map[string]Touch // session ID → last heartbeat not yet written
	// flushed is the part of the batch the last flush wrote (or is
	// writing), kept until the next one so a read racing the write still
	// sees its times.
	flushed map[string]Touch
	_       [32]byte // keeps neighbouring shards' locks off one cache line
}

func newTouchBuffer() touchBuffer {
	return touchBuffer{seed: maphash.MakeSeed()}
}

func (b *touchBuffer) shard(id string) *touchShard {
	return &b.shards[maphash.String(b.seed, id)%touchShards]
}

// touch records a heartbeat of session id: t says when, and where the
// store writes it.
func (b *touchBuffer) touch(id string, t Touch) {
	sh := b.shard(id)
	sh.mu.Lock()
	if sh.touched == nil {
		sh.touched = map[string]Touch{}
	}
	sh.touched[id] = t
	sh.mu.Unlock()
}

// last returns the latest buffered (or being written) time of session id.
func (b *touchBuffer) last(id string) (time.Time, bool) {
	sh := b.shard(id)
	sh.mu.Lock()
	t, ok := sh.touched[id]
	if f, fok := sh.flushed[id]; fok && (!ok || f.At.After(t.At)) {
		t, ok = f, true
	}
	sh.mu.Unlock()
	return t.At, ok
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
func (b *touchBuffer) take() map[string]Touch {
	var batch map[string]Touch
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
			batch = make(map[string]Touch, len(part)*touchShards)
		}
		for id, t := range part {
			batch[id] = t
		}
	}
	return batch
}

// putBack returns a batch that could not be written, keeping newer times.
func (b *touchBuffer) putBack(batch map[string]Touch) {
	for id, t := range batch {
		sh := b.shard(id)
		sh.mu.Lock()
		if sh.touched == nil {
			sh.touched = map[string]Touch{}
		}
		if cur, ok := sh.touched[id]; !ok || cur.At.Before(t.At) {
			sh.touched[id] = t
		}
		sh.mu.Unlock()
	}
}
