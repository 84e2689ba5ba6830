package httpapi_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// BenchmarkUpdateCheck measures update/check.php over real HTTP with real
// envelopes on SQLite: 20 published releases, the newest staged at 25 %,
// callers with distinct hwids (so each check also records its device).
// See docs/performance.md.
func BenchmarkUpdateCheck(b *testing.B) {
	s := kwtest.Start(b, kwtest.Options{Engine: "sqlite"})
	a := s.CreateApp("bench")
	for i := range 20 {
		fields := map[string]any{}
		if i == 19 {
			fields["rollout"] = 2500
		}
		a.Release("1."+strconv.Itoa(i)+".0", []byte("artifact "+strconv.Itoa(i)), fields)
	}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			r := a.Env("/api/update/check.php", map[string]any{"v": "1.10.0", "hwid": "pc-" + strconv.FormatInt(i%5000, 10),
				"license_key": nil})
			if r.Status != 200 || r.Body["update_available"] != true {
				b.Errorf("check: %s", r)
				return
			}
		}
	})
}
