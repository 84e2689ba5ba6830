package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// installation is a SQLite installation populated through a real server.
type installation struct {
	s        *kwtest.Server
	app      *kwtest.App
	keys     []string // keys[0] activated on "hw-0" with a live session, keys[1] banned, the rest unused
	session  string   // keys[0]'s session
	artifact []byte
}

func populate(t *testing.T) *installation {
	t.Helper()
	s := kwtest.Start(t, kwtest.Options{})
	in := &installation{s: s, app: s.CreateApp("Moved"), artifact: bytes.Repeat([]byte("artifact!"), 5000)}
	a := in.app
	in.keys = a.GenerateKeys(4, "lifetime", 0, 1)
	in.session = a.Login(in.keys[0], "hw-0")
	if r := a.Heartbeat(in.session, in.keys[0]); r.Body["success"] != true {
		t.Fatalf("heartbeat: %s", r)
	}
	a.Login(in.keys[1], "hw-1")
	if r := a.KeyAction("ban", in.keys[1], nil); r.Status != 200 {
		t.Fatalf("ban: %s", r)
	}
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"accounts_enabled": true, "account_signup_days": 30}})
	if r := a.Plain("/api/auth/account-register.php", map[string]any{"username": "alice", "password": "first-pass-123"}); r.Body["success"] != true {
		t.Fatalf("account register: %s", r)
	}
	s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": "https://hooks.example.com/kw", "events": []string{"key.created"}})
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "title": "Launch", "active": true})
	a.Release("1.1.0", in.artifact, nil)
	return in
}

// checkInstallation logs in to s with the installation's keys.
func (in *installation) check(t *testing.T, s *kwtest.Server) *kwtest.App {
	t.Helper()
	a := s.NewApp(in.app.ID, in.app.Secret)
	a.Login(in.keys[0], "hw-0")
	kwtest.ExpectCode(t, a.Env("/api/auth/login.php", map[string]any{"license_key": in.keys[0], "hwid": "other"}), 200, "HWID_MISMATCH")
	kwtest.ExpectCode(t, a.Env("/api/auth/login.php", map[string]any{"license_key": in.keys[1], "hwid": "hw-1"}), 200, "BANNED")
	a.Login(in.keys[2], "hw-2")
	return a
}

func TestBackupRestoreWhileServing(t *testing.T) {
	clearEnv(t)
	in := populate(t)
	s, a := in.s, in.app
	mustRun(t, "keys", "signing", "init", "--data", s.DataDir)
	signingFiles := readTree(t, filepath.Join(s.DataDir, "signing"))
	// The license-file key the server generated at its first start is in
	// the signing directory, so the archive carries it.
	if _, ok := signingFiles["license-file/active"]; !ok {
		t.Fatalf("no license-file key in the signing directory: %v", slices.Collect(maps.Keys(signingFiles)))
	}

	// Logins keep writing (sessions, devices, audit) while the backup runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes, failures atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := a.Env("/api/auth/login.php", map[string]any{"license_key": in.keys[3], "hwid": "hw-3"})
			if r.Body["success"] == true {
				writes.Add(1)
			} else {
				failures.Add(1)
			}
		}
	}()
	for writes.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	out := filepath.Join(t.TempDir(), "kw.tar.gz")
	msg := mustRun(t, "backup", "--data", s.DataDir, "--out", out)
	before := writes.Load()
	for writes.Load() < before+3 {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d logins failed during the backup", failures.Load())
	}
	if !strings.Contains(msg, "1 artifact files") || !strings.Contains(msg, fmt.Sprintf("%d signing files", len(signingFiles))) {
		t.Fatalf("backup output: %s", msg)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v %v", info, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	dir := t.TempDir()
	mustRun(t, "restore", "--data", dir, "--in", out)
	if code, _, errOut := run(t, "restore", "--data", dir, "--in", out); code != 1 || !strings.Contains(errOut, "already holds a database") {
		t.Fatalf("second restore: %d %s", code, errOut)
	}
	mustRun(t, "restore", "--data", dir, "--in", out, "--force")
	if got := readTree(t, filepath.Join(dir, "signing")); fmt.Sprint(got) != fmt.Sprint(signingFiles) || len(got) == 0 {
		t.Fatalf("restored signing directory differs: %d files, want %d", len(got), len(signingFiles))
	}

	s2 := kwtest.Start(t, kwtest.Options{DataDir: dir})
	if r := s2.NewApp(in.app.ID, in.app.Secret).Heartbeat(in.session, in.keys[0]); r.Body["success"] != true {
		t.Fatalf("heartbeat of a session from before the backup: %v", r.Body)
	}
	in.check(t, s2)
	in.checkArtifact(t, s2)

	if code, _, errOut := run(t, "backup", "--database-url", "postgres://x@127.0.0.1/none", "--out", out); code != 1 || !strings.Contains(errOut, "pg_dump") {
		t.Fatalf("backup of PostgreSQL: %d %s", code, errOut)
	}
}

// checkArtifact downloads the release's artifact from s.
func (in *installation) checkArtifact(t *testing.T, s *kwtest.Server) {
	t.Helper()
	a := s.NewApp(in.app.ID, in.app.Secret)
	r := a.Env("/api/update/check.php", map[string]any{"version": "1.0.0", "license_key": in.keys[0], "hwid": "hw-0"})
	if r.Body["success"] != true {
		t.Fatalf("update check: %s", r)
	}
	url := findString(r.Body, "download_url")
	if url == "" {
		t.Fatalf("no download_url in %v", r.Body)
	}
	if i := strings.Index(url, "api/"); i >= 0 {
		url = "/" + url[i:]
	}
	d := s.Do("GET", url, http.Header{"X-App-Secret": {in.app.Secret}}, nil)
	if d.Status != 200 || !bytes.Equal(d.Raw, in.artifact) {
		t.Fatalf("download %s: %d, %d bytes", url, d.Status, len(d.Raw))
	}
}

// readTree returns the files under dir by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func findString(v any, name string) string {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[name].(string); ok && s != "" {
			return s
		}
		for _, e := range x {
			if s := findString(e, name); s != "" {
				return s
			}
		}
	case []any:
		for _, e := range x {
			if s := findString(e, name); s != "" {
				return s
			}
		}
	}
	return ""
}

func TestRestoreRefusesMaliciousArchives(t *testing.T) {
	clearEnv(t)
	for name, entries := range map[string][]tar.Header{
		"parent":    {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "blobs/../../evil", Typeflag: tar.TypeReg}},
		"dotdot":    {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "../evil", Typeflag: tar.TypeReg}},
		"absolute":  {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "/tmp/evil", Typeflag: tar.TypeReg}},
		"symlink":   {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "blobs/link", Typeflag: tar.TypeSymlink, Linkname: "/etc"}},
		"stranger":  {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "evil.sh", Typeflag: tar.TypeReg}},
		"no db":     {{Name: "blobs/x", Typeflag: tar.TypeReg}},
		"two dbs":   {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: "keyward.db", Typeflag: tar.TypeReg}},
		"backslash": {{Name: "keyward.db", Typeflag: tar.TypeReg}, {Name: `blobs\..\..\evil`, Typeflag: tar.TypeReg}},
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			var buf bytes.Buffer
			gz := gzip.NewWriter(&buf)
			tw := tar.NewWriter(gz)
			for _, h := range entries {
				body := []byte("x")
				if h.Typeflag != tar.TypeReg {
					body = nil
				}
				h.Size = int64(len(body))
				h.Mode = 0o600
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
				tw.Write(body)
			}
			tw.Close()
			gz.Close()
			arch := filepath.Join(base, "evil.tar.gz")
			os.WriteFile(arch, buf.Bytes(), 0o600)
			data := filepath.Join(base, "data", "inner")
			code, _, errOut := run(t, "restore", "--data", data, "--in", arch)
			if code != 1 {
				t.Fatalf("restore of a malicious archive: exit %d %s", code, errOut)
			}
			if _, err := os.Stat(filepath.Join(base, "data", "evil")); err == nil {
				t.Fatal("a file was written outside the data directory")
			}
			if _, err := os.Stat(filepath.Join(data, "keyward.db")); err == nil {
				t.Fatal("a database was restored from a refused archive")
			}
		})
	}
}
