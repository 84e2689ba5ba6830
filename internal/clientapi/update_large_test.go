package clientapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// patternReader yields n deterministic bytes without holding them: the
// byte at offset x is byte(x*2654435761>>13) ^ byte(x>>8).
type patternReader struct{ off, n int64 }

// patternPeriod is the pattern's period: byte(x*2654435761>>13) depends on
// bits 0–20 of x only, byte(x>>8) on bits 8–15, so the byte at x+2 MiB is
// the byte at x.
const patternPeriod = 1 << 21

// patternTable is one period of the pattern, built once, from which Read
// copies: computed byte by byte, the 400 MB this test reads cost seconds
// under the race detector (a call into it for every byte written).
var patternTable = func() []byte {
	b := make([]byte, patternPeriod)
	for i := range b {
		x := uint64(i)
		b[i] = byte(x*2654435761>>13) ^ byte(x>>8)
	}
	return b
}()

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rest := p.n - p.off; int64(len(b)) > rest {
		b = b[:rest]
	}
	for n := 0; n < len(b); {
		n += copy(b[n:], patternTable[(p.off+int64(n))%patternPeriod:])
	}
	p.off += int64(len(b))
	return len(b), nil
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// A 200 MB artifact goes up and comes back down through real HTTP while the
// process allocates a small fraction of its size: neither the upload nor the
// download ever holds the file in memory. The blob store does not depend on
// the database engine, so SQLite alone runs this.
func TestUpdateLargeArtifactFlatMemory(t *testing.T) {
	const size = 200 << 20
	const budget = 8 << 20 // allocations allowed for the upload and, separately, the download
	s := kwtest.Boot(t, "sqlite", nil)
	a := s.CreateApp("Large")
	id := a.CreateRelease("2.0.0", nil)

	want := sha256.New()
	io.Copy(want, &patternReader{n: size})
	wantSum := hex.EncodeToString(want.Sum(nil))

	runtime.GC()
	before := totalAlloc()
	r := a.Upload(id, "", "", &patternReader{n: size}, wantSum)
	upAlloc := totalAlloc() - before
	if r.Status != 200 {
		t.Fatalf("upload: %s", r)
	}
	art := r.Obj("artifact")
	if art["sha256"] != wantSum || art["size"] != float64(size) {
		t.Fatalf("stored artifact %v; want sha256 %s size %d", art, wantSum, size)
	}
	if upAlloc > budget {
		t.Errorf("uploading %d MB allocated %d MB; want under %d MB (flat memory)", size>>20, upAlloc>>20, budget>>20)
	}
	s.MustAdmin("POST", "/api/admin/updates.php", map[string]any{"app_id": a.ID, "action": "publish", "id": id})

	req, _ := http.NewRequest("GET", s.URL+"/api/update/download.php?v=2.0.0", nil)
	req.Header.Set("X-App-Secret", a.Secret)
	runtime.GC()
	before = totalAlloc()
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	resp.Body.Close()
	downAlloc := totalAlloc() - before
	if err != nil || resp.StatusCode != 200 || n != size {
		t.Fatalf("download: status %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if sum := hex.EncodeToString(got.Sum(nil)); sum != wantSum {
		t.Fatalf("downloaded sha256 %s, want %s", sum, wantSum)
	}
	if downAlloc > budget {
		t.Errorf("downloading %d MB allocated %d MB; want under %d MB (flat memory)", size>>20, downAlloc>>20, budget>>20)
	}
	t.Logf("200 MB artifact: upload allocated %.1f MB, download %.1f MB", float64(upAlloc)/(1<<20), float64(downAlloc)/(1<<20))
}
