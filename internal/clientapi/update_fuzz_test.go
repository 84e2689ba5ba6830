package clientapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// FuzzUpdateRoutes sends fuzzed check bodies (sealed in valid envelopes, so
// the fields themselves are parsed) and fuzzed download queries and Range
// headers to one SQLite server with a multi-platform release: no 5xx, JSON
// refusals carry a client error code, and a download is 200, 206, 304, 404,
// 400 or 416, never a server error.
func FuzzUpdateRoutes(f *testing.F) {
	s := kwtest.Start(f, kwtest.Options{Engine: "sqlite"})
	a := s.CreateApp("FuzzUpdates")
	id := a.CreateRelease("1.2.0", map[string]any{"rollout": 5000})
	for _, p := range [][2]string{{"windows", "x64"}, {"macos", "arm64"}, {"", ""}} {
		if r := a.Upload(id, p[0], p[1], bytesOf(3000), ""); r.Status != 200 {
			f.Fatalf("upload: %s", r)
		}
	}
	s.MustAdmin("POST", "/api/admin/updates.php", map[string]any{"app_id": a.ID, "action": "publish", "id": id})

	for _, seed := range []struct{ body, v, os, arch, rng string }{
		{`{"v":"1.0.0","hwid":"h"}`, "1.2.0", "windows", "x64", "bytes=0-99"},
		{`{"version":"1.0.0-rc.1","channel":"beta","os":"darwin","arch":"aarch64","license_key":null}`, "1.2.0", "", "", "bytes=-10"},
		{`{"v":"1.2","channel":"nightly"}`, "1.2", "beos", "", "bytes=5000-"},
		{`{"v":7,"os":["x"],"hwid":{}}`, "v1.2.0", "WINDOWS", "X64", "bytes=1-2,4-5"},
		{`{}`, "", "", "", "items=0-1"},
	} {
		f.Add([]byte(seed.body), seed.v, seed.os, seed.arch, seed.rng)
	}
	f.Fuzz(func(t *testing.T, body []byte, v, os, arch, rng string) {
		if json.Valid(body) {
			env, err := a.Keys.Seal(body, s.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("POST", s.URL+"/api/update/check.php", bytes.NewReader(env.Marshal()))
			req.Header = kwtest.AppHeader(a.Secret)
			resp, err := kwtest.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("check %q: %d %s", body, resp.StatusCode, raw)
			}
			if e, err := envelope.Parse(raw); err == nil {
				if raw, _, err = a.Keys.Verify(e, s.Clock.Now()); err != nil {
					t.Fatalf("check %q: reply envelope does not verify: %v", body, err)
				}
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("check %q: reply is not a JSON object: %s", body, raw)
			}
			if ok, _ := m["success"].(bool); !ok {
				if code, _ := m["error_code"].(string); code == "" || code == "INTERNAL" {
					t.Fatalf("check %q: refusal without a client code: %s", body, raw)
				}
			}
		}
		q := url.Values{"v": {v}, "os": {os}, "arch": {arch}}
		req, err := http.NewRequest("GET", s.URL+"/api/update/download.php?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-App-Secret", a.Secret)
		if validHeader(rng) {
			req.Header.Set("Range", rng)
		}
		resp, err := kwtest.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 200, 206, 304, 400, 404, 416:
		default:
			t.Fatalf("download v=%q os=%q arch=%q Range %q: %d", v, os, arch, rng, resp.StatusCode)
		}
	})
}

// validHeader reports whether s can be sent as a header value at all.
func validHeader(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// bytesOf returns an io.Reader of n deterministic bytes.
func bytesOf(n int64) *patternReader { return &patternReader{n: n} }
