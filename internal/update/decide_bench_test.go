package update

import (
	"fmt"
	"strconv"
	"testing"
)

// BenchmarkDecide measures the pure decision over an app's releases: three
// platform artifacts each, a staged newest release (so the HMAC bucket is
// computed) and a caller several versions behind. See docs/performance.md.
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprintf("releases=%d", n), func(b *testing.B) {
			rels := make([]Release, n)
			for i := range rels {
				rels[i] = rel(fmt.Sprintf("1.%d.0", i), Stable)
				rels[i].Artifacts = []Artifact{{OS: "windows", Arch: "x64"}, {OS: "macos", Arch: "arm64"}, {OS: "linux", Arch: "x64"}}
			}
			rels[n-1].Rollout = 2500
			req := Request{Version: v(fmt.Sprintf("1.%d.0", n-5)), Channel: Stable, OS: "windows", Arch: "x64"}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req.HWID = "pc-" + strconv.Itoa(i%1000)
				if d := Decide(policy, rels, req); d.Release == nil {
					b.Fatal("no update")
				}
			}
		})
	}
}
