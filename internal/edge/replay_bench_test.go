package edge

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"
)

// BenchmarkReplayCacheGC times a full garbage collection with a million
// answered heartbeats in the replay cache (100 000 sessions beating every
// 30 s over the five minutes an entry is kept): what the cache adds to
// every collection's marking.
func BenchmarkReplayCacheGC(b *testing.B) {
	c := newReplayCache(2_000_000)
	reply := []byte(`{"success":true,"message":"Heartbeat OK"}`)
	for i := range 1_000_000 {
		var k replayKey
		binary.LittleEndian.PutUint64(k[:], uint64(i)*0x9E3779B97F4A7C15)
		exp := replayT0.Add(time.Duration(i%300) * time.Second)
		c.claim(k, exp, replayT0)
		c.finish(k, exp, reply, false)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
	b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-B/entry")
	runtime.KeepAlive(c)
}

// BenchmarkReplayCacheSteady times one heartbeat's claim and finish in a
// cache held at its bound of a million entries, with time moving at 20 000
// envelopes a second: every ten seconds a new bucket fills and the oldest
// is dropped, as under a large fleet's heartbeats.
func BenchmarkReplayCacheSteady(b *testing.B) {
	const perSecond = 20_000
	c := newReplayCache(1_000_000)
	reply := []byte(`{"success":true,"message":"Heartbeat OK"}`)
	i := 0
	op := func() {
		var k replayKey
		binary.LittleEndian.PutUint64(k[:], uint64(i)*0x9E3779B97F4A7C15)
		binary.LittleEndian.PutUint64(k[8:], uint64(i))
		now := replayT0.Add(time.Duration(i) * (time.Second / perSecond))
		exp := now.Add(300 * time.Second)
		if c.claim(k, exp, now) {
			c.finish(k, exp, reply, false)
		}
		i++
	}
	for range 3_000_000 { // past the bound, with buckets dropped early
		op()
	}
	b.ResetTimer()
	for range b.N {
		op()
	}
}
