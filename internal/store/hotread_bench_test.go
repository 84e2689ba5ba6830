package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// BenchmarkHeartbeatViewWrites measures the heartbeat's session read over
// 100 000 live sessions on SQLite, four readers per core, while another
// goroutine commits a one-session write at a steady rate: never, once a
// second (a heartbeat flush), and twenty times a second (what flushing each
// 500-session chunk on its own came to at 100 000 sessions). Every commit
// makes each read connection drop its page cache and memory map at its next
// read, so the rate of commits, not their size, sets what a read costs;
// cpu-ns/op (the process's CPU time per read) shows it through the noise of
// a shared machine better than ns/op. cache=on runs the same reads with the
// session cache on (sessioncache.go), every session read once first: what a
// heartbeat's read costs in a running fleet.
func BenchmarkHeartbeatViewWrites(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	db := benchApp(b)
	insertSessions(b, db, n)
	ls := db.LicenseStore()
	touches := touchesOf(b, ls, insertedTokens(n), benchT0)
	for _, cache := range []string{"off", "on"} {
		if cache == "on" {
			// The session cache, every session read once.
			if err := db.CacheSessions(ctx, n); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if _, err := ls.HeartbeatView(ctx, fmt.Sprintf("tok-%d", i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, every := range []time.Duration{0, time.Second, 50 * time.Millisecond} {
			b.Run(fmt.Sprintf("cache=%s/commit-every=%v", cache, every), func(b *testing.B) {
				stop, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					if every == 0 {
						return
					}
					tick := time.NewTicker(every)
					defer tick.Stop()
					for i := 1; ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
							t := touches[i%n]
							t.At = benchT0.Add(time.Duration(i) * time.Second)
							if err := ls.TouchSessions(ctx, []license.Touch{t}); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}()
				b.SetParallelism(4)
				b.ReportAllocs()
				cpu0 := kwtest.CPUTime()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(rand.Uint64(), 1))
					for pb.Next() {
						if _, err := ls.HeartbeatView(ctx, fmt.Sprintf("tok-%d", r.IntN(n))); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(kwtest.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
				close(stop)
				<-done
			})
		}
	}
}
