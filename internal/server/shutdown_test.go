package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// connectionError reports whether err is a request that never got an answer
// because the server had stopped: refused, reset, or a closed connection
// (before any byte of a response).
func connectionError(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	return strings.Contains(err.Error(), "server closed idle connection")
}

// Close under load: it stops accepting, lets every in-flight request
// finish (a slow upload included), flushes the buffered heartbeats, and
// closes the database. No client sees a truncated answer or a 5xx; requests
// after the shutdown fail only to connect.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, FlushEvery: time.Hour, ReapEvery: time.Hour})
		app := s.CreateApp("Busy")
		admin := s.AdminToken()
		const workers = 16
		keys := app.GenerateKeys(workers+1, "lifetime", 0, 1)
		sids := make([]string, workers+1)
		for i, k := range keys {
			sids[i] = app.Login(k, fmt.Sprintf("pc-%d", i))
		}
		rel := s.MustAdmin("POST", "/api/admin/updates.php", map[string]any{"app_id": app.ID, "version": "1.1.0"}).Obj("release")
		relID := int64(rel["id"].(float64))

		// Past the heartbeat coalescing window, the next beat of each
		// session is buffered (FlushEvery is an hour): only Close writes it.
		s.Clock.Advance(30 * time.Second)
		beat := s.Clock.Now()
		last := len(keys) - 1
		if r := app.Heartbeat(sids[last], keys[last]); r.Body["success"] != true {
			t.Fatalf("heartbeat: %v", r)
		}

		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}, Timeout: 20 * time.Second}
		defer client.CloseIdleConnections()

		var (
			closed   atomic.Bool // Close has returned
			answered atomic.Int64
			failedMu sync.Mutex
			failures []string
		)
		fail := func(format string, args ...any) {
			failedMu.Lock()
			defer failedMu.Unlock()
			if len(failures) < 20 {
				failures = append(failures, fmt.Sprintf(format, args...))
			}
		}
		// send sends one request and checks its answer is whole: a status
		// below 500 and a complete JSON object (an opened, verified
		// envelope when sealed) with success true. It returns false once
		// the server is gone.
		send := func(what, method, path string, header http.Header, body []byte, sealed bool) (map[string]any, bool) {
			after := closed.Load()
			req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
			if err != nil {
				panic(err)
			}
			req.Header = header
			resp, err := client.Do(req)
			if err != nil {
				if !connectionError(err) {
					fail("%s: not a connection error: %v", what, err)
				}
				return nil, false
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				fail("%s: answer cut: %d, %d bytes read, then %v", what, resp.StatusCode, len(raw), err)
				return nil, false
			}
			if after {
				fail("%s: answered %d after Close returned", what, resp.StatusCode)
			}
			if resp.StatusCode >= 500 {
				fail("%s: %d %s", what, resp.StatusCode, raw)
				return nil, true
			}
			if sealed {
				env, err := envelope.Parse(raw)
				if err != nil {
					fail("%s: reply is not an envelope: %v: %s", what, err, raw)
					return nil, true
				}
				if raw, _, err = app.Keys.Verify(env, s.Clock.Now()); err != nil {
					fail("%s: reply envelope does not verify: %v", what, err)
					return nil, true
				}
			}
			var out map[string]any
			if err := json.Unmarshal(raw, &out); err != nil || out["success"] != true {
				fail("%s: %d, not a whole successful JSON answer (%v): %s", what, resp.StatusCode, err, raw)
				return nil, true
			}
			answered.Add(1)
			return out, true
		}
		clientHeader := func() http.Header {
			return http.Header{"X-App-Secret": {app.Secret}, "Content-Type": {"application/json"}}
		}
		seal := func(inner map[string]any) []byte {
			b, _ := json.Marshal(inner)
			env, err := app.Keys.Seal(b, s.Clock.Now())
			if err != nil {
				panic(err)
			}
			return env.Marshal()
		}

		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				key, hwid, sid := keys[w], fmt.Sprintf("pc-%d", w), sids[w]
				for i := 0; ; i++ {
					var ok bool
					switch {
					case i%8 == 7: // a fresh login of the same device
						var r map[string]any
						r, ok = send("login", "POST", "/api/auth/login.php", clientHeader(), seal(map[string]any{"license_key": key, "hwid": hwid}), true)
						if id, _ := r["session_id"].(string); id != "" {
							sid = id
						}
					case w%4 == 0 && i%2 == 1:
						ok = true
						if _, ok = send("admin sessions", "GET", "/api/admin/sessions.php?app_id="+app.ID,
							http.Header{"Authorization": {"Bearer " + admin}}, nil, false); ok && i%16 == 1 {
							_, ok = send("admin keys", "POST", "/api/admin/keys.php", http.Header{"Authorization": {"Bearer " + admin},
								"Content-Type": {"application/json"}}, []byte(`{"app_id":"`+app.ID+`","count":1,"key_type":"lifetime"}`), false)
						}
					default:
						_, ok = send("heartbeat", "POST", "/api/auth/heartbeat.php", clientHeader(), seal(map[string]any{"session_id": sid, "license_key": key}), true)
					}
					if !ok && closed.Load() {
						return
					}
					if !ok {
						time.Sleep(time.Millisecond) // the server is going; keep trying until Close returns
					}
				}
			})
		}

		// A slow upload: 4 MiB streamed in 64 KiB chunks, in flight when
		// Close starts.
		const size, chunk = 4 << 20, 64 << 10
		data := bytes.Repeat([]byte("keyward!"), size/8)
		sum := sha256.Sum256(data)
		pr, pw := io.Pipe()
		written := make(chan int, size/chunk)
		go func() {
			for off := 0; off < size; off += chunk {
				if _, err := pw.Write(data[off : off+chunk]); err != nil {
					return
				}
				written <- off + chunk
				time.Sleep(10 * time.Millisecond)
			}
			pw.Close()
		}()
		type result struct {
			status int
			raw    []byte
			err    error
		}
		uploaded := make(chan result, 1)
		go func() {
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/api/admin/updates.php?action=upload&app_id=%s&id=%d&sha256=%s",
				s.URL, app.ID, relID, hex.EncodeToString(sum[:])), pr)
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/octet-stream")
			resp, err := client.Do(req)
			if err != nil {
				uploaded <- result{err: err}
				return
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			uploaded <- result{resp.StatusCode, raw, err}
		}()

		// Some load before the upload gets going.
		for wait := time.Now().Add(5 * time.Second); answered.Load() < 4*workers && time.Now().Before(wait); {
			time.Sleep(5 * time.Millisecond)
		}
		for n := range written {
			if n >= 8*chunk {
				break
			}
		}
		before := answered.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := s.Close(ctx)
		took := time.Since(start)
		closed.Store(true)
		if err != nil {
			t.Errorf("Close: %v (after %v)", err, took)
		}
		wg.Wait()

		up := <-uploaded
		if up.err != nil || up.status != 200 {
			t.Errorf("the upload in flight at Close: %d %v %s", up.status, up.err, up.raw)
		} else {
			var r struct {
				Success  bool
				Artifact struct {
					Size   int64
					SHA256 string
				}
			}
			if err := json.Unmarshal(up.raw, &r); err != nil || !r.Success || r.Artifact.Size != size || r.Artifact.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("the upload in flight at Close: %v %s", err, up.raw)
			}
		}
		failedMu.Lock()
		for _, f := range failures {
			t.Error(f)
		}
		failedMu.Unlock()
		if before < workers {
			t.Errorf("only %d answers before Close; the load did not run", before)
		}
		t.Logf("%d whole answers (%d before Close), Close took %v", answered.Load(), before, took)

		// The database is closed; a second Close is harmless.
		if _, err := s.DB.LicenseStore().Sessions(context.Background(), license.SessionFilter{AppID: app.ID, Limit: 1}); err == nil {
			t.Error("a query after Close succeeded; the database is still open")
		}
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("a second Close: %v", err)
		}

		// Reopened, the database has the buffered beat.
		db, err := store.Open(context.Background(), store.Options{DataDir: s.DataDir, URL: s.DatabaseURL})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		list, err := db.LicenseStore().Sessions(context.Background(), license.SessionFilter{AppID: app.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ss := range list {
			if ss.HWID == fmt.Sprintf("pc-%d", last) {
				found = true
				if !ss.LastSeenAt.Equal(beat) {
					t.Errorf("the session's last_seen_at after Close = %v, want the last beat's %v", ss.LastSeenAt, beat)
				}
			}
		}
		if !found {
			t.Errorf("the beaten session (device pc-%d) is not among the app's %d live sessions", last, len(list))
		}
	})
}
