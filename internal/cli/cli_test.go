package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// run executes the command line and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustRunAt is mustRun with the commands' clock set to now (withClock),
// for a command sharing a database with a server on an injected clock.
func mustRunAt(t *testing.T, now func() time.Time, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Run(withClock(context.Background(), now), args, &out, &errOut); code != 0 {
		t.Fatalf("keyward %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String()
}

// mustRun is run that fails the test on a non-zero exit.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("keyward %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// clearEnv unsets every KEYWARD_ variable for the test (restored after), so
// the caller's environment cannot change what the commands see.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KEYWARD_") && name != "KEYWARD_TEST_DATABASE_URL" {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// dbArgs returns the database flags of a fresh database of engine: a data
// directory holding the test secret key file (the one kwtest servers use),
// and the database URL on PostgreSQL.
func dbArgs(t *testing.T, engine string) []string {
	dir := t.TempDir()
	if err := kwtest.WriteSecretKey(filepath.Join(dir, "secret.key")); err != nil {
		t.Fatal(err)
	}
	if engine == "postgres" {
		return []string{"--database-url", kwtest.PostgresURL(t), "--data", dir}
	}
	return []string{"--data", dir}
}

// served is a `keyward serve` running in a goroutine.
type served struct {
	addr   string
	stdout *kwtest.LogBuffer
	stderr *kwtest.LogBuffer
	cancel context.CancelFunc
	done   chan int
}

var listeningRE = regexp.MustCompile(`listening on (https?)://(\S+) `)

// serve starts `keyward serve args…` and waits until it reports its address.
// App user account passwords are hashed at bcrypt's cheapest cost (as on
// kwtest's servers) unless args set --account-bcrypt-cost: every server
// hashes a dummy password at that cost when it starts.
func serve(t *testing.T, args ...string) *served {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--account-bcrypt-cost") }) {
		args = append([]string{"--account-bcrypt-cost", "4"}, args...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stdout: &kwtest.LogBuffer{}, stderr: &kwtest.LogBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() { s.done <- Run(ctx, append([]string{"serve"}, args...), s.stdout, s.stderr) }()
	t.Cleanup(func() { s.stop(t) })
	deadline := time.After(20 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(s.stdout.String()); m != nil {
			s.addr = m[2]
			return s
		}
		select {
		case code := <-s.done:
			s.done <- code
			t.Fatalf("serve exited with %d before listening\nstdout: %s\nstderr: %s", code, s.stdout, s.stderr)
		case <-deadline:
			t.Fatalf("serve did not report an address\nstdout: %s\nstderr: %s", s.stdout, s.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop cancels serve and returns its exit code (once; later calls repeat it).
func (s *served) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
		return -1
	}
}

// adminLogin signs in at base and returns the HTTP status and token.
func adminLogin(t *testing.T, base, user, pass string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": user, "password": pass})
	resp, err := http.Post(base+"/api/admin/login.php", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		Token     string `json:"token"`
		ErrorCode string `json:"error_code"`
	}
	json.Unmarshal(raw, &r)
	if resp.StatusCode != 200 && r.ErrorCode != "INVALID_CREDENTIALS" {
		t.Fatalf("admin login: %d %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, r.Token
}

// `keyward version` prints the build's version.
func TestVersionCommand(t *testing.T) {
	clearEnv(t)
	if out := mustRun(t, "version"); out != "keyward dev\n" {
		t.Fatalf("version printed %q", out)
	}
	old := Version
	Version = "1.4.2"
	t.Cleanup(func() { Version = old })
	if out := mustRun(t, "version"); out != "keyward 1.4.2\n" {
		t.Fatalf("version printed %q", out)
	}
}

// Unknown commands and flags exit 2 with a message; --help exits 0 and
// lists the commands.
func TestUsageErrors(t *testing.T) {
	clearEnv(t)
	code, _, errOut := run(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, "frobnicate") {
		t.Fatalf("unknown command: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "migrate", "--no-such-flag")
	if code != 2 || !strings.Contains(errOut, "no-such-flag") {
		t.Fatalf("unknown flag: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, cmd := range []string{"serve", "migrate", "admin", "version"} {
		if !strings.Contains(out, cmd) {
			t.Errorf("--help does not list %s:\n%s", cmd, out)
		}
	}
	code, _, errOut = run(t, "admin", "create", "--data", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "username") {
		t.Fatalf("admin create without --username: exit %d, stderr %q", code, errOut)
	}
}

// `keyward migrate` creates the schema on a fresh database and is
// idempotent.
func TestMigrateIsIdempotent(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			args := append([]string{"migrate"}, dbArgs(t, engine)...)
			first := mustRun(t, args...)
			if !regexp.MustCompile(`^database schema at version [1-9]\d*\n$`).MatchString(first) {
				t.Fatalf("first migrate printed %q", first)
			}
			if second := mustRun(t, args...); second != first {
				t.Fatalf("second migrate printed %q, first %q", second, first)
			}
			if engine == "sqlite" {
				if _, err := os.Stat(filepath.Join(args[2], "keyward.db")); err != nil {
					t.Fatalf("no database file in --data: %v", err)
				}
			}
		})
	}
}

// A database URL that is not postgres:// is refused with a clear error.
func TestMigrateRefusesOtherDatabaseURLs(t *testing.T) {
	clearEnv(t)
	code, _, errOut := run(t, "migrate", "--database-url", "mysql://root@localhost/keyward")
	if code != 1 || !strings.Contains(errOut, "postgres://") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// An admin created with `keyward admin create` signs in to a server on the
// same database; the server then creates no bootstrap admin. A second admin
// with the same username is refused.
func TestAdminCreateThenLogin(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			db := dbArgs(t, engine)
			out := mustRun(t, append([]string{"admin", "create", "--username", "alice", "--password", "alice-secret-pw", "--bcrypt-cost", "4"}, db...)...)
			if out != "created admin \"alice\"\n" {
				t.Fatalf("admin create printed %q", out)
			}
			if strings.Contains(out, "alice-secret-pw") {
				t.Fatal("admin create echoed the given password")
			}

			code, out, errOut := run(t, append([]string{"admin", "create", "--username", "alice", "--password", "other-password", "--bcrypt-cost", "4"}, db...)...)
			if code != 1 || !strings.Contains(errOut, "already exists") || strings.Contains(out, "created") {
				t.Fatalf("duplicate admin: exit %d, stdout %q, stderr %q", code, out, errOut)
			}

			srv := serve(t, append([]string{"--addr", "127.0.0.1:0", "--bcrypt-cost", "4"}, db...)...)
			base := "http://" + srv.addr
			if st, tok := adminLogin(t, base, "alice", "alice-secret-pw"); st != 200 || tok == "" {
				t.Fatalf("alice login: %d", st)
			}
			// The duplicate attempt did not change alice's password.
			if st, _ := adminLogin(t, base, "alice", "other-password"); st != 401 {
				t.Fatalf("the refused duplicate changed the password: %d", st)
			}
			// An admin existed, so serve bootstrapped none.
			if st, _ := adminLogin(t, base, "admin", "any-password-at-all"); st != 401 {
				t.Fatal("bootstrap admin created although one existed")
			}
			if strings.Contains(srv.stdout.String(), "Created admin") {
				t.Fatalf("serve bootstrapped an admin: %s", srv.stdout)
			}
			if code := srv.stop(t); code != 0 {
				t.Fatalf("serve exit %d: %s", code, srv.stderr)
			}
		})
	}
}

// admin create refuses invalid usernames and passwords with exit 1 and
// generates (and prints) a password when none is given.
func TestAdminCreateValidationAndGeneratedPassword(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, c := range []struct{ user, pass, msg string }{
		{"al", "long-enough-pw", "username"},
		{"bad name!", "long-enough-pw", "username"},
		{"bob", "short", "password"},
		{"bob", strings.Repeat("p", 73), "password"},
	} {
		code, _, errOut := run(t, "admin", "create", "--data", dir, "--bcrypt-cost", "4", "--username", c.user, "--password", c.pass)
		if code != 1 || !strings.Contains(errOut, c.msg) {
			t.Errorf("user %q pass %d bytes: exit %d, stderr %q", c.user, len(c.pass), code, errOut)
		}
	}
	out := mustRun(t, "admin", "create", "--data", dir, "--bcrypt-cost", "4", "--username", "carol")
	m := regexp.MustCompile(`(?m)^generated password: (\S{20})$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "created admin \"carol\"") {
		t.Fatalf("admin create without password printed %q", out)
	}
	srv := serve(t, "--addr", "127.0.0.1:0", "--data", dir, "--bcrypt-cost", "4")
	if st, _ := adminLogin(t, "http://"+srv.addr, "carol", m[1]); st != 200 {
		t.Fatalf("login with the generated password: %d", st)
	}
	for _, u := range []string{"al", "bob"} {
		if st, _ := adminLogin(t, "http://"+srv.addr, u, "long-enough-pw"); st != 401 {
			t.Fatalf("refused admin %s exists", u)
		}
	}
}

// `serve --addr 8081` and `serve --port 8081` fail before anything starts,
// each with a hint spelling the --addr that listens on port 8081.
func TestServeAddrHints(t *testing.T) {
	clearEnv(t)
	data := t.TempDir()
	code, _, errOut := run(t, "serve", "--data", data, "--addr", "8081")
	if code == 0 || !strings.Contains(errOut, "did you mean --addr 127.0.0.1:8081") || !strings.Contains(errOut, "--addr :8081") ||
		strings.Contains(errOut, "keyward: keyward") {
		t.Errorf("--addr 8081: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"--port", "8081"}, {"--port=8081"}} {
		code, _, errOut = run(t, append([]string{"serve", "--data", data}, args...)...)
		if code != 2 || !strings.Contains(errOut, "unknown flag --port: use --addr 127.0.0.1:8081 (this machine only) or --addr :8081") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	if code, _, errOut = run(t, "serve", "--data", data, "--port"); code != 2 || !strings.Contains(errOut, "use --addr 127.0.0.1:PORT") {
		t.Errorf("--port without a value: exit %d, %q", code, errOut)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("the refused commands wrote into the data directory: %v", entries)
	}
}
