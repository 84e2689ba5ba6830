package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// logRecords returns the JSON log records in b whose msg is msg.
func logRecords(t *testing.T, b *kwtest.LogBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Bytes())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// tempFiles lists the temporary files under the blob directory.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// A stop forced by --shutdown-timeout over real HTTP: an upload still
// streaming and a webhook delivery still waiting for its receiver are cut
// when the limit hits, rather than holding the stop; the log names the
// request (method, route pattern, request id — not the path with its
// query) and the job; the cut upload leaves no temp file in the blob
// directory; and Close says it forced the stop.
func TestShutdownTimeoutCutsRequestsAndJobs(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		logs := &kwtest.LogBuffer{}
		s := kwtest.Start(t, kwtest.Options{Engine: engine, FlushEvery: time.Hour, ReapEvery: time.Hour, DispatchEvery: 20 * time.Millisecond,
			Log: slog.New(slog.NewJSONHandler(logs, nil)),
			Configure: func(c *config.Config) {
				c.ShutdownTimeout = 300 * time.Millisecond
				c.WebhookTimeout = time.Minute // the delivery waits for its receiver, not for its timeout
			}})
		app := s.CreateApp("Stopping")

		// A receiver that never answers: the dispatcher's run waits on it.
		reached := make(chan struct{}, 1)
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // read whole, a closed connection cancels r's context
			select {
			case reached <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		}))
		defer rx.Close()
		hook := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": rx.URL + "/hook"}).Obj("webhook")
		s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "action": "test", "id": hook["id"]})
		select {
		case <-reached:
		case <-time.After(20 * time.Second):
			t.Fatal("the webhook delivery never reached the receiver")
		}

		// An upload that streams a first part and then stalls.
		rel := s.MustAdmin("POST", "/api/admin/updates.php", map[string]any{"app_id": app.ID, "version": "2.0.0"}).Obj("release")
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() {
			chunk := bytes.Repeat([]byte("k"), 64<<10)
			for range 4 {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
		}()
		const rid = "cut-upload-1"
		uploaded := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/api/admin/updates.php?action=upload&app_id=%s&id=%d&sha256=%s",
				s.URL, app.ID, int64(rel["id"].(float64)), strings.Repeat("ab", 32)), pr)
			req.Header.Set("Authorization", "Bearer "+s.AdminToken())
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set("X-Request-Id", rid)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				err = fmt.Errorf("answered %d %s", resp.StatusCode, b)
			}
			uploaded <- err
		}()
		blobs := filepath.Join(s.DataDir, "blobs")
		for wait := time.Now().Add(20 * time.Second); len(tempFiles(t, blobs)) == 0; {
			if time.Now().After(wait) {
				t.Fatal("the upload never began writing its temp file")
			}
			time.Sleep(5 * time.Millisecond) // waiting for the upload to reach the blob store, not for time to pass
		}

		start := time.Now()
		err := s.Close(context.Background())
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "--shutdown-timeout") {
			t.Errorf("Close = %v, want an error saying the stop was forced by --shutdown-timeout", err)
		}
		if took > 10*time.Second {
			t.Errorf("Close took %v with a 300ms --shutdown-timeout", took)
		}
		if n := len(s.API().InFlight()); n != 0 {
			t.Errorf("Close returned with %d requests still running", n)
		}
		if left := tempFiles(t, blobs); len(left) != 0 {
			t.Errorf("the cut upload left temp files: %v", left)
		}
		// The client still waits for more of its body to send; end it.
		pw.CloseWithError(io.ErrClosedPipe)
		select {
		case err := <-uploaded:
			if err == nil || strings.Contains(err.Error(), "answered 200") {
				t.Errorf("the cut upload: %v, want it cut", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the cut upload's client never returned")
		}

		cut := logRecords(t, logs, "shutdown: request cut")
		found := false
		for _, r := range cut {
			if r["request_id"] == rid {
				found = true
				if r["method"] != "PUT" || r["route"] != "/api/admin/updates.php" || r["level"] != "WARN" {
					t.Errorf("the cut upload is logged as %v, want method PUT, route /api/admin/updates.php, level WARN", r)
				}
				if line, _ := json.Marshal(r); strings.Contains(string(line), "sha256=") || strings.Contains(string(line), "action=upload") {
					t.Errorf("the cut request's log line carries the query: %s", line)
				}
			}
		}
		if !found {
			t.Errorf("no request cut logged with request_id %s; cut: %v", rid, cut)
		}
		jobs := logRecords(t, logs, "shutdown: job cut")
		named := false
		for _, r := range jobs {
			named = named || r["job"] == "dispatch-webhooks"
		}
		if !named {
			t.Errorf("the dispatcher's run waiting on the receiver is not logged as cut; jobs cut: %v", jobs)
		}
	})
}
