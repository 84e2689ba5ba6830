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
