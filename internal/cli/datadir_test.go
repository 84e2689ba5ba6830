package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// A data directory keyward cannot create is reported naming the directory,
// the user, why and what to do, not as SQLite's "unable to open database
// file (14)". A path under a regular file fails for root too.
func TestDataDirUnderAFile(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o644)
	dir := filepath.Join(file, "data")
	me := userLabel(t, os.Geteuid())
	for _, cmd := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"migrate"}, {"admin", "create", "--username", "someone"}} {
		code, _, errOut := run(t, append(cmd, "--data", dir)...)
		for _, want := range []string{"keyward: data directory: " + dir + " does not exist and cannot be created by user " + me,
			"not a directory", file + " is a file", "--data (KEYWARD_DATA)"} {
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("%v: exit %d, %q; want %q", cmd, code, errOut, want)
			}
		}
		if strings.Contains(errOut, "(14)") {
			t.Errorf("%v: SQLite's error leaks: %q", cmd, errOut)
		}
	}
}

// A data directory that exists but the user may not write to: the message
// names the directory, the user, its owner and the fix. Root ignores
// permissions, so as root the commands run in a child process as the user
// nobody (uid 65534), from a copy of this test binary.
func TestDataDirNotWritable(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "data")
	os.Mkdir(dir, 0o755)
	uid := os.Geteuid()
	runAs := func(args ...string) (int, string) {
		code, _, errOut := run(t, args...)
		return code, errOut
	}
	if uid == 0 {
		uid = 65534
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(base, "keyward.test")
		copyFile(t, exe, bin)
		runAs = func(args ...string) (int, string) {
			cmd := exec.Command(bin)
			cmd.Dir = base
			cmd.Env = []string{"KEYWARD_DATADIR_CHILD=" + strings.Join(args, "\x1f"), "PATH=/usr/bin:/bin"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child as uid 65534: %v\n%s%s", err, out, stderr.Bytes())
			}
			code, msg, _ := strings.Cut(string(out), "\n")
			n, err := strconv.Atoi(code)
			if err != nil {
				t.Fatalf("child output %q", out)
			}
			return n, msg
		}
	} else {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	me := userLabel(t, uid)
	owner := userLabel(t, os.Geteuid())
	for _, cmd := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"migrate"}} {
		code, errOut := runAs(append(cmd, "--data", dir)...)
		for _, want := range []string{"keyward: data directory: " + dir + " is not writable by user " + me,
			"permission denied", "it belongs to " + owner, "sudo chown -R ", "--data (KEYWARD_DATA)"} {
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("%v: exit %d, %q; want %q", cmd, code, errOut, want)
			}
		}
		if strings.Contains(errOut, "(14)") {
			t.Errorf("%v: SQLite's error leaks: %q", cmd, errOut)
		}
	}
	// A directory below it cannot be created either.
	code, errOut := runAs("migrate", "--data", filepath.Join(dir, "sub"))
	if want := "keyward: data directory: " + filepath.Join(dir, "sub") + " does not exist and cannot be created by user " + me; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("sub directory: exit %d, %q; want %q", code, errOut, want)
	}
}

// TestMain runs TestDataDirNotWritable's child process when
// KEYWARD_DATADIR_CHILD is set: the command line in it, printing the exit
// code and stderr; otherwise the tests.
func TestMain(m *testing.M) {
	if args := os.Getenv("KEYWARD_DATADIR_CHILD"); args != "" {
		var stderr bytes.Buffer
		code := Run(context.Background(), strings.Split(args, "\x1f"), io.Discard, &stderr)
		fmt.Printf("%d\n%s", code, stderr.Bytes())
		os.Exit(0)
	}
	code := m.Run()
	if deployBuild.dir != "" {
		os.RemoveAll(deployBuild.dir)
	}
	os.Exit(code)
}

// userLabel is how the messages name the user uid: "name (uid N)".
func userLabel(t *testing.T, uid int) string {
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil && u.Username != "" {
		name = u.Username
	}
	return fmt.Sprintf("%s (uid %d)", name, uid)
}

func copyFile(t *testing.T, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// On PostgreSQL with the key file, update artifacts and signing keys
// elsewhere nothing lives in the data directory, so an unusable one (here, under a file) does
// not stop keyward: the check applies only where the directory is used.
func TestDataDirUnusedOnPostgres(t *testing.T) {
	clearEnv(t)
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip(kwtest.NoPostgres)
	}
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o644)
	keys := filepath.Join(t.TempDir(), "secret.key")
	s := kwtest.Start(t, kwtest.Options{Engine: "postgres", Configure: func(c *config.Config) {
		c.Data = filepath.Join(file, "data")
		c.SecretKeyFile = keys
		c.BlobDir = t.TempDir()
		c.SigningDir = t.TempDir()
	}})
	if r := s.Do("GET", "/readyz", nil, nil); r.Status != 200 {
		t.Fatalf("readyz: %s", r)
	}
	mustRun(t, "migrate", "--database-url", s.DatabaseURL, "--data", filepath.Join(file, "data"))
}
