package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// shellWords splits a command line written in the docs as a POSIX shell
// would for the simple forms they use: words separated by spaces, 'single'
// and "double" quotes.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// Every `keyward loadtest` command line in docs/performance.md (as `go run
// ./cmd/keyward loadtest …`, `keyward loadtest …` or a built binary such as
// `/tmp/kw-new loadtest …`) is accepted by the command-line parser as
// written: no flag there is unknown or malformed.
func TestLoadtestDocCommandLines(t *testing.T) {
	clearEnv(t)
	doc, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)(?:go run \\./cmd/keyward|\\bkeyward|/tmp/kw[-\\w]*) (loadtest\\b[^`\\n#]*)")
	n := 0
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		args := shellWords(t, strings.TrimSpace(m[1]))
		var c cli
		p, err := newParser(&c, io.Discard, io.Discard, func(code int) { t.Fatalf("%q: exit %d", m[0], code) })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(args); err != nil {
			t.Errorf("docs/performance.md: %q: %v", m[0], err)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("found %d loadtest command lines in docs/performance.md, expected at least 10", n)
	}
}

// `keyward loadtest --database-url …` without --data runs: update artifacts
// and the generated key file go to a temporary directory removed at exit, and
// it says so. A later run on that database is refused naming
// --secret-key-file; with --secret-key-file (or --data) it runs again.
func TestLoadtestDatabaseURLWithoutData(t *testing.T) {
	clearEnv(t)
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip(kwtest.NoPostgres)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	small := []string{"loadtest", "--sessions", "5", "--duration", "200ms", "--warmup", "0s", "--conns", "4"}
	db := kwtest.PostgresURL(t)
	code, out, errOut := run(t, append(small, "--database-url", db)...)
	if code != 0 || !strings.Contains(out, "heartbeat / echo") || !strings.Contains(errOut, "loadtest: no --data") {
		t.Fatalf("first run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary directory was left behind: %v", left)
	}
	code, _, errOut = run(t, append(small, "--database-url", db)...)
	if code != 1 || !strings.Contains(errOut, "--secret-key-file") {
		t.Fatalf("second run with another temporary key: exit %d, %q", code, errOut)
	}

	// Keeping the key: with --secret-key-file the same database runs twice.
	db = kwtest.PostgresURL(t)
	key := filepath.Join(t.TempDir(), "secret.key")
	for i := range 2 {
		code, out, errOut = run(t, append(small, "--database-url", db, "--secret-key-file", key, "--admin-password", "loadtest-password-1")...)
		if code != 0 || !strings.Contains(out, "heartbeat / echo") || strings.Contains(errOut, "loadtest: no --data") {
			t.Fatalf("run %d with --secret-key-file: exit %d\nstdout %s\nstderr %s", i+1, code, out, errOut)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary directory was left behind: %v", left)
	}
}

// `keyward loadtest --mode mix --herd` runs end to end on the in-process
// server: the report lists every kind and the herd line with all sessions
// back; a malformed --mix is refused before anything starts.
func TestLoadtestMixHerd(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir())
	code, out, errOut := run(t, "loadtest", "--mode", "mix", "--sessions", "6", "--duration", "300ms", "--warmup", "0s",
		"--conns", "2", "--herd", "--herd-conns", "3", "--mix", "heartbeat=1,login=1,check-key=1,update=1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"  heartbeat", "  login", "  check-key", "  update", "mix / echo:", "herd: 6/6 sessions logged in again in "} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, _, errOut = run(t, "loadtest", "--mode", "mix", "--mix", "heartbeat=1,ping=2")
	if code != 1 || !strings.Contains(errOut, `unknown kind "ping"`) {
		t.Errorf("bad --mix: exit %d, %q", code, errOut)
	}
}

// `keyward loadtest --cpu-profile FILE` writes a CPU profile (gzipped
// protobuf) of the measured phase.
func TestLoadtestCPUProfile(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir())
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, out, errOut := run(t, "loadtest", "--sessions", "4", "--duration", "200ms", "--warmup", "0s", "--conns", "2", "--cpu-profile", prof)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %d bytes, %v", len(b), err)
	}
}

// `keyward loadtest --heap-profile FILE`, alone and with --cpu-profile,
// writes a heap profile (gzipped protobuf) at the end of the measured phase.
func TestLoadtestHeapProfile(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	for _, extra := range [][]string{nil, {"--cpu-profile", filepath.Join(dir, "cpu.prof")}} {
		heap := filepath.Join(dir, "heap.prof")
		os.Remove(heap)
		args := append([]string{"loadtest", "--sessions", "4", "--duration", "200ms", "--warmup", "0s", "--conns", "2", "--heap-profile", heap}, extra...)
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", extra, code, out, errOut)
		}
		for _, p := range append([]string{heap}, extra[min(1, len(extra)):]...) {
			b, err := os.ReadFile(p)
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatalf("%v: %s: %d bytes, %v", extra, p, len(b), err)
			}
		}
	}
}

// `keyward loadtest --half-rate --trace FILE` writes a runtime/trace of the
// half-rate phase; without --half-rate there is no such phase and it
// refuses at once.
func TestLoadtestTrace(t *testing.T) {
	clearEnv(t)
	t.Setenv("TMPDIR", t.TempDir())
	tr := filepath.Join(t.TempDir(), "half.trace")
	code, out, errOut := run(t, "loadtest", "--sessions", "4", "--duration", "200ms", "--warmup", "0s", "--conns", "2", "--half-rate", "--trace", tr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	b, err := os.ReadFile(tr)
	if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("trace: %d bytes starting %.10q, %v", len(b), b, err)
	}
	code, _, errOut = run(t, "loadtest", "--sessions", "4", "--duration", "200ms", "--trace", tr)
	if code == 0 || !strings.Contains(errOut, "--half-rate") {
		t.Fatalf("--trace without --half-rate: exit %d, stderr %s", code, errOut)
	}
}
