package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/keyward/keyward/internal/blob/s3fake"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Update artifacts in an S3-compatible bucket (an in-process S3-protocol
// server): selected by configuration, shared by every keyward process, so
// a release uploaded through one process downloads through another.
// Helpers start with s3.

func s3Configure(endpoint string) func(*config.Config) {
	return func(c *config.Config) {
		c.S3Endpoint, c.S3Bucket, c.S3Region, c.S3AccessKey, c.S3SecretKey = endpoint, "keyward-test", "us-east-1", "k", "s"
		c.S3Insecure, c.S3Prefix = true, "artifacts"
	}
}

func s3Objects(t *testing.T, backend *s3mem.Backend) []string {
	t.Helper()
	list, err := backend.ListBucket("keyward-test", nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

func s3Download(t *testing.T, s *kwtest.Server, secret, version string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/api/update/download.php?v="+version, nil)
	req.Header.Set("X-App-Secret", secret)
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("download %s: %d %s", version, resp.StatusCode, b)
	}
	return b
}

func TestUpdatesS3Store(t *testing.T) {
	t.Parallel()
	backend, endpoint := s3fake.Start(t)
	s := kwtest.Start(t, kwtest.Options{Engine: "sqlite", Configure: s3Configure(endpoint)})
	a := s.CreateApp("S3")
	art := bytes.Repeat([]byte("keyward-s3-"), 5000)
	a.Release("1.1.0", art, nil)
	objs := s3Objects(t, backend)
	if len(objs) != 1 || len(objs[0]) < len("artifacts/releases/") || objs[0][:len("artifacts/releases/")] != "artifacts/releases/" {
		t.Fatalf("bucket holds %q; want one object under artifacts/releases/", objs)
	}
	if entries, _ := os.ReadDir(s.DataDir + "/blobs"); len(entries) != 0 {
		t.Fatalf("the S3 store also wrote to the data directory: %v", entries)
	}
	if got := s3Download(t, s, a.Secret, "1.1.0"); !bytes.Equal(got, art) {
		t.Fatalf("downloaded %d bytes that differ from the %d uploaded", len(got), len(art))
	}

	// Deleting a draft removes its object from the bucket.
	id := a.CreateRelease("1.2.0", nil)
	if r := a.Upload(id, "", "", bytes.NewReader([]byte("draft")), ""); r.Status != 200 {
		t.Fatalf("upload: %s", r)
	}
	if n := len(s3Objects(t, backend)); n != 2 {
		t.Fatalf("%d objects after the draft's upload; want 2", n)
	}
	s.MustAdmin("DELETE", "/api/admin/updates.php", map[string]any{"app_id": a.ID, "id": id})
	if n := len(s3Objects(t, backend)); n != 1 {
		t.Fatalf("%d objects after deleting the draft; want 1", n)
	}
}

func TestUpdatesAcrossServersS3Postgres(t *testing.T) {
	t.Parallel()
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	_, endpoint := s3fake.Start(t)
	url := kwtest.PostgresURL(t)
	clock := kwtest.NewClock()
	a := kwtest.Start(t, kwtest.Options{DatabaseURL: url, Clock: clock, Configure: s3Configure(endpoint)})
	b := kwtest.Start(t, kwtest.Options{DatabaseURL: url, Clock: clock, Configure: s3Configure(endpoint)})
	app := a.CreateApp("Shared")
	art := bytes.Repeat([]byte{0, 1, 2, 3, 250}, 40000)
	app.Release("2.0.0", art, nil)

	onB := b.NewApp(app.ID, app.Secret)
	r := onB.Env("/api/update/check.php", map[string]any{"v": "1.0.0", "hwid": "pc-1"})
	u := r.Obj("update")
	sum := sha256.Sum256(art)
	if r.Body["update_available"] != true || u["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("check through the second process: %s", r)
	}
	if got := s3Download(t, b, app.Secret, "2.0.0"); !bytes.Equal(got, art) {
		t.Fatal("the second process served different bytes")
	}
}

// Update checks are buffered per process and written by the flush job; a
// process that stops writes what it holds, so another process's stats see
// every check (no check lost on a clean shutdown).
func TestUpdateChecksFlushedOnCloseSQLite(t *testing.T) {
	t.Parallel()
	updateChecksFlushedOnClose(t, startSQLitePair)
}

func TestUpdateChecksFlushedOnClosePostgres(t *testing.T) {
	t.Parallel()
	updateChecksFlushedOnClose(t, startPostgresPair)
}

func updateChecksFlushedOnClose(t *testing.T, pair func(*testing.T) (a, b *kwtest.Server)) {
	a, b := pair(t)
	app := a.CreateApp("Flush")
	app.Release("1.1.0", []byte("bytes"), nil)
	for _, hwid := range []string{"pc-1", "pc-2", "pc-3"} {
		if r := app.Env("/api/update/check.php", map[string]any{"v": "1.0.0", "hwid": hwid}); r.Body["update_available"] != true {
			t.Fatalf("check: %s", r)
		}
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("close: %v", err)
	}
	st := b.MustAdmin("GET", "/api/admin/updates.php?action=stats&app_id="+app.ID, nil)
	if st.Body["devices"] != float64(3) {
		t.Fatalf("stats through the other process after a clean stop: %s", st.Raw)
	}
}
