package cli

// Tests of the deployment files in deploy/ and of docs/deploy.md: the systemd
// units pass `systemd-analyze verify` (with the binary they start really
// built) and stay hardened, the settings they and the documented layouts give
// keyward are ones its command line accepts and validates, the backup unit's
// commands work, and every keyward command the guide shows parses.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Paths the shipped files use, replaced by temporary ones in the tests.
const (
	unitBinary  = "/usr/local/bin/keyward"
	unitData    = "/var/lib/keyward"
	unitBackups = "/var/backups/keyward"
	// deployVersion is the version the test binary is stamped with, by the
	// same -ldflags docs/deploy.md shows.
	deployVersion = "deploy-test"
	versionLDFlag = "-X github.com/keyward/keyward/internal/cli.Version="
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deployBuild is cmd/keyward built once per test process (the deployment
// tests that run it share the build; linking it is seconds of CPU), in a
// directory TestMain removes.
var deployBuild struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// buildKeyward builds cmd/keyward the way docs/deploy.md does (static,
// version stamped), once per test process, and returns its path.
func buildKeyward(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build keyward: %v", err)
	}
	deployBuild.once.Do(func() {
		deployBuild.dir, deployBuild.err = os.MkdirTemp("", "keyward-deploy-")
		if deployBuild.err != nil {
			return
		}
		deployBuild.bin = filepath.Join(deployBuild.dir, "keyward")
		cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags", versionLDFlag+deployVersion, "-o", deployBuild.bin, "./cmd/keyward")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		deployBuild.out, deployBuild.err = cmd.CombinedOutput()
	})
	if deployBuild.err != nil {
		t.Fatalf("go build: %v\n%s", deployBuild.err, deployBuild.out)
	}
	bin := deployBuild.bin
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "keyward "+deployVersion {
		t.Fatalf("keyward version = %q, %v; want keyward %s (the -ldflags of docs/deploy.md)", out, err, deployVersion)
	}
	return bin
}

// unitEntry is one Key=Value of a unit file.
type unitEntry struct {
	section, key, value string
}

// parseUnit reads a systemd unit file: sections, Key=Value lines, comments
// (# and ;) and lines continued with a trailing backslash.
func parseUnit(t *testing.T, text string) []unitEntry {
	t.Helper()
	var out []unitEntry
	section := ""
	var cont strings.Builder
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		line = cont.String() + line
		cont.Reset()
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("line %d: not Key=Value: %q", n+1, line)
		}
		out = append(out, unitEntry{section, strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out
}

// unitValues is every value of key in section, in order.
func unitValues(entries []unitEntry, section, key string) []string {
	var out []string
	for _, e := range entries {
		if e.section == section && e.key == key {
			out = append(out, e.value)
		}
	}
	return out
}

// unitValue is the one value of key in section.
func unitValue(t *testing.T, entries []unitEntry, section, key string) string {
	t.Helper()
	v := unitValues(entries, section, key)
	if len(v) != 1 {
		t.Fatalf("[%s] %s: %d values %q, want one", section, key, len(v), v)
	}
	return v[0]
}

// splitWords splits a command line as systemd and sh do for the simple forms
// the deploy files use: words separated by blanks, '…' and "…" quoting.
func splitWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// unescapeUnit undoes the escapes of a unit's command line: %% and $$.
func unescapeUnit(s string) string {
	return strings.NewReplacer("%%", "%", "$$", "$").Replace(s)
}

// keywardArgs returns the arguments after the keyward binary in an ExecStart
// line, looking inside `sh -c '…'` when the binary is started by a shell.
func keywardArgs(t *testing.T, execStart string) []string {
	t.Helper()
	words := splitWords(unescapeUnit(execStart))
	if len(words) == 3 && words[0] == "/bin/sh" && words[1] == "-c" {
		words = splitWords(words[2])
	}
	i := slices.Index(words, unitBinary)
	if i < 0 {
		t.Fatalf("ExecStart %q does not start %s", execStart, unitBinary)
	}
	return words[i+1:]
}

// parseEnvFile reads an EnvironmentFile as systemd does for the forms the
// deploy files use: KEY=VALUE lines, # and ; comments, a value quoted whole
// with ' or ". It also returns the names of the commented-out examples
// (#KEYWARD_…=…), which must be real settings too.
func parseEnvFile(t *testing.T, text string) (vars map[string]string, examples []string) {
	t.Helper()
	vars = map[string]string{}
	example := regexp.MustCompile(`^#\s*(KEYWARD_[A-Z0-9_]+)=`)
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := example.FindStringSubmatch(line); m != nil {
			examples = append(examples, m[1])
			continue
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			t.Fatalf("line %d: not KEY=VALUE: %q", n+1, line)
		}
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if strings.ContainsAny(v, " \t'\"&;$") {
			t.Fatalf("line %d: %s: quote a value holding blanks or shell characters: %q", n+1, k, v)
		}
		if _, dup := vars[k]; dup {
			t.Fatalf("line %d: %s is set twice", n+1, k)
		}
		vars[k] = v
	}
	return vars, examples
}

// testParser is the command line Run parses, with output discarded and exits
// turned into panics (a --help in a checked command is a mistake).
func testParser(t *testing.T, c *cli) *kong.Kong {
	t.Helper()
	p, err := newParser(c, io.Discard, io.Discard, func(code int) { panic(fmt.Sprintf("exit %d", code)) })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parseCommand parses args as keyward's command line under env (and no other
// KEYWARD_* variable) without running the command; it returns the parsed
// command line and the selected command's path.
func parseCommand(t *testing.T, env map[string]string, args []string) (*cli, string, error) {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	var c cli
	kctx, err := testParser(t, &c).Parse(args)
	if err != nil {
		return nil, "", err
	}
	return &c, kctx.Command(), nil
}

// envNames is every KEYWARD_* variable some flag of the command line reads,
// and those of serve alone.
func envNames(t *testing.T) (all, serve map[string]bool) {
	t.Helper()
	var c cli
	p := testParser(t, &c)
	all, serve = map[string]bool{}, map[string]bool{}
	var walk func(n *kong.Node, underServe bool)
	walk = func(n *kong.Node, underServe bool) {
		underServe = underServe || (n.Type == kong.CommandNode && n.Name == "serve")
		for _, f := range n.Flags {
			for _, e := range f.Tag.Envs {
				all[e] = true
				if underServe {
					serve[e] = true
				}
			}
		}
		for _, ch := range n.Children {
			walk(ch, underServe)
		}
	}
	walk(p.Model.Node, false)
	if len(serve) < 40 {
		t.Fatalf("found only %d variables of serve; the walk is broken", len(serve))
	}
	// The global --config flag is read before serve.
	for e := range all {
		if e == "KEYWARD_CONFIG" {
			serve[e] = true
		}
	}
	return all, serve
}

// checkServeSettings parses the unit's ExecStart under env as keyward would
// start, validates the configuration as serve does, and checks that systemd
// waits for keyward's whole graceful stop before killing it.
func checkServeSettings(t *testing.T, what string, unit []unitEntry, env map[string]string) {
	t.Helper()
	args := keywardArgs(t, unitValue(t, unit, "Service", "ExecStart"))
	c, cmd, err := parseCommand(t, env, args)
	if err != nil {
		t.Fatalf("%s: keyward %s: %v", what, strings.Join(args, " "), err)
	}
	if cmd != "serve" {
		t.Fatalf("%s: ExecStart runs %q, want serve", what, cmd)
	}
	if err := c.Serve.Validate(); err != nil {
		t.Fatalf("%s: keyward refuses the settings:\n%v", what, err)
	}
	if c.Serve.Data != unitData {
		t.Errorf("%s: data directory %q, want the unit's StateDirectory %s", what, c.Serve.Data, unitData)
	}
	stop, err := time.ParseDuration(unitValue(t, unit, "Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatal(err)
	}
	// --shutdown-timeout for requests and jobs, then up to 5 s (server.cutGrace)
	// for cut requests to unwind, then closing the database: 15 s of margin.
	if want := c.Serve.StopTimeout() + 15*time.Second; stop < want {
		t.Errorf("%s: TimeoutStopSec=%s cuts keyward's graceful stop short: want at least %s (--shutdown-timeout %s + 15s)",
			what, stop, want, c.Serve.StopTimeout())
	}
}

// TestDeployUnitSettingsAreKeywards checks that the service unit starts a
// configuration keyward accepts: its ExecStart with deploy/keyward.env, and
// with the env file of each layout docs/deploy.md shows (parsed and validated
// as serve does, under no other variable); that every variable named there,
// commented-out examples included, is one keyward reads; and that
// TimeoutStopSec leaves room for the graceful stop.
func TestDeployUnitSettingsAreKeywards(t *testing.T) {
	unit := parseUnit(t, repoFile(t, "deploy/keyward.service"))
	all, serve := envNames(t)

	env, examples := parseEnvFile(t, repoFile(t, "deploy/keyward.env"))
	if len(env) == 0 || len(examples) < 10 {
		t.Fatalf("deploy/keyward.env: %d settings and %d examples; the parser is broken", len(env), len(examples))
	}
	for _, name := range append(slices.Sorted(maps.Keys(env)), examples...) {
		if !serve[name] {
			t.Errorf("deploy/keyward.env: %s is no variable of keyward serve", name)
		}
	}
	checkServeSettings(t, "deploy/keyward.env", unit, env)
	if env["KEYWARD_TRUST_PROXY"] != "true" || !strings.HasPrefix(env["KEYWARD_ADDR"], "127.0.0.1:") {
		t.Errorf("deploy/keyward.env is layout 1 (loopback behind a proxy): KEYWARD_ADDR=%q KEYWARD_TRUST_PROXY=%q",
			env["KEYWARD_ADDR"], env["KEYWARD_TRUST_PROXY"])
	}

	// The env file of each layout in the guide.
	doc := repoFile(t, "docs/deploy.md")
	layouts := 0
	for _, block := range codeBlocks(doc) {
		if !strings.HasPrefix(block, "# /etc/keyward/keyward.env") {
			continue
		}
		layouts++
		env, examples := parseEnvFile(t, block)
		for name := range env {
			if !serve[name] {
				t.Errorf("docs/deploy.md, env file %d: %s is no variable of keyward serve", layouts, name)
			}
		}
		for _, name := range examples {
			if !serve[name] {
				t.Errorf("docs/deploy.md, env file %d: %s is no variable of keyward serve", layouts, name)
			}
		}
		checkServeSettings(t, fmt.Sprintf("docs/deploy.md, env file %d", layouts), unit, env)
	}
	if layouts != 3 {
		t.Errorf("docs/deploy.md shows %d env files (# /etc/keyward/keyward.env), want one per layout (3)", layouts)
	}
	// Any variable the guide names anywhere.
	for _, loc := range regexp.MustCompile(`KEYWARD_[A-Z0-9_]*[A-Z0-9]`).FindAllStringIndex(doc, -1) {
		name := doc[loc[0]:loc[1]]
		if strings.HasPrefix(doc[loc[1]:], "_*") { // a family, such as KEYWARD_S3_*
			continue
		}
		if !all[name] {
			t.Errorf("docs/deploy.md names %s, which no keyward flag reads", name)
		}
	}
}

// codeBlocks returns the contents of the fenced code blocks of a Markdown text.
func codeBlocks(md string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in {
				out = append(out, strings.Join(cur, "\n"))
				cur = nil
			}
			in = !in
			continue
		}
		if in {
			cur = append(cur, line)
		}
	}
	return out
}

// docCommands returns the keyward command lines of the code blocks of md:
// lines (joined over trailing backslashes) whose command is keyward or kw,
// the guide's wrapper, cut at a shell operator or comment.
func docCommands(md string) [][]string {
	var out [][]string
	for _, block := range codeBlocks(md) {
		var lines []string
		var cont string
		for _, l := range strings.Split(block, "\n") {
			if strings.HasSuffix(l, "\\") {
				cont += strings.TrimSuffix(l, "\\") + " "
				continue
			}
			lines = append(lines, cont+l)
			cont = ""
		}
		for _, l := range lines {
			words := splitWords(strings.TrimSpace(l))
			if len(words) == 0 || (words[0] != "keyward" && words[0] != "kw" && words[0] != "./keyward") {
				continue
			}
			args := []string{}
			for _, w := range words[1:] {
				if w == "|" || w == "&&" || w == ";" || w == ">" || w == "||" || strings.HasPrefix(w, "#") {
					break
				}
				args = append(args, w)
			}
			out = append(out, args)
		}
	}
	// Commands quoted inline in the text, when they carry flags.
	for _, m := range regexp.MustCompile("`(?:kw|keyward) ([^`]*--[^`]*)`").FindAllStringSubmatch(md, -1) {
		out = append(out, splitWords(m[1]))
	}
	return out
}

// TestDeployGuideCommandsParse parses every keyward command docs/deploy.md
// shows (directly or through its kw wrapper) with keyward's own command
// line, without running it: an unknown command or flag, a missing required
// flag or a bad value fails. It also checks that the kw wrapper runs the
// binary as the unit's user with the unit's environment file, and that the
// guide builds the binary with the -ldflags this test stamps it with.
func TestDeployGuideCommandsParse(t *testing.T) {
	doc := repoFile(t, "docs/deploy.md")
	cmds := docCommands(doc)
	if len(cmds) < 10 {
		t.Fatalf("found only %d keyward commands in docs/deploy.md; the extraction is broken", len(cmds))
	}
	// The check can fail: an unknown flag and a missing required one are errors.
	for _, bad := range [][]string{{"backup", "--data", "/d", "--outt", "/x"}, {"restore", "--data", "/d"}} {
		if _, _, err := parseCommand(t, nil, bad); err == nil {
			t.Fatalf("keyward %s parsed without an error", strings.Join(bad, " "))
		}
	}
	seen := map[string]bool{}
	for _, args := range cmds {
		t.Logf("keyward %s", strings.Join(args, " "))
		_, cmd, err := parseCommand(t, nil, args)
		if err != nil {
			t.Errorf("docs/deploy.md: keyward %s: %v", strings.Join(args, " "), err)
			continue
		}
		seen[strings.Fields(cmd)[0]] = true
	}
	for _, want := range []string{"serve", "migrate", "admin", "backup", "restore", "keys", "config", "version"} {
		if !seen[want] {
			t.Errorf("docs/deploy.md shows no `keyward %s`", want)
		}
	}

	unit := parseUnit(t, repoFile(t, "deploy/keyward.service"))
	wrapper := fmt.Sprintf("--uid=%s --gid=%s -p EnvironmentFile=%s -- %s",
		unitValue(t, unit, "Service", "User"), unitValue(t, unit, "Service", "Group"),
		unitValue(t, unit, "Service", "EnvironmentFile"), unitBinary)
	if !strings.Contains(doc, "kw() { systemd-run ") || !strings.Contains(doc, wrapper) {
		t.Errorf("docs/deploy.md: the kw wrapper must run %s as the unit does (%q)", unitBinary, wrapper)
	}
	if !strings.Contains(doc, versionLDFlag) {
		t.Errorf("docs/deploy.md does not build with %s…", versionLDFlag)
	}
}

// systemdAnalyze returns the path of systemd-analyze, or skips the test
// saying why.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("systemd-analyze is not installed (%v): the units cannot be verified here", err)
	}
	return p
}

// installUnits copies the unit files of deploy/ into a temporary unit
// directory with the binary and paths replaced, and the drop-in under
// keyward.service.d/. It returns the directory.
func installUnits(t *testing.T, bin string, dropIn bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"keyward.service", "keyward-backup.service", "keyward-backup.timer"} {
		text := strings.ReplaceAll(repoFile(t, "deploy/"+name), unitBinary, bin)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if dropIn {
		d := filepath.Join(dir, "keyward.service.d")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "bind-low-ports.conf"), []byte(repoFile(t, "deploy/keyward-bind-low-ports.conf")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// analyze runs systemd-analyze with the unit directory first in the search
// path (so drop-ins are found) and returns its combined output.
func analyze(t *testing.T, sa, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(sa, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDeployUnitsVerify runs `systemd-analyze verify` on the shipped units
// (the service alone and with the low-ports drop-in, the backup service and
// its timer), each starting a keyward really built, and fails on any line it
// prints: systemd reports unknown keys, bad values and missing executables
// as warnings and still exits 0. A unit with an unknown key must fail, which
// proves the check can fail. Then `systemd-analyze security` must rate the
// services' exposure at most 2.0 ("OK"), so hardening cannot quietly go.
func TestDeployUnitsVerify(t *testing.T) {
	sa := systemdAnalyze(t)
	bin := buildKeyward(t)
	for _, dropIn := range []bool{false, true} {
		dir := installUnits(t, bin, dropIn)
		units := []string{"./keyward.service", "./keyward-backup.service", "./keyward-backup.timer"}
		out, err := analyze(t, sa, dir, append([]string{"verify", "--man=no"}, units...)...)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("systemd-analyze verify (drop-in %v): %v\n%s", dropIn, err, out)
		}
		for _, unit := range []string{"./keyward.service", "./keyward-backup.service"} {
			out, err := analyze(t, sa, dir, "security", "--offline=yes", "--threshold=20", "--no-pager", unit)
			if err != nil {
				t.Errorf("systemd-analyze security %s (drop-in %v): exposure over 2.0: %v\n%s", unit, dropIn, err, out)
			}
			if dropIn && unit == "./keyward.service" && !strings.Contains(out, "CAP_NET_(BIND_SERVICE") {
				t.Errorf("the drop-in does not grant CAP_NET_BIND_SERVICE:\n%s", out)
			}
		}
	}

	// The check itself: a unit with a mistake is reported.
	dir := installUnits(t, bin, false)
	bad := filepath.Join(dir, "keyward.service")
	text, _ := os.ReadFile(bad)
	os.WriteFile(bad, bytes.Replace(text, []byte("ProtectHome=yes"), []byte("ProtectHome=yes\nProtectHomeDirectory=yes"), 1), 0o644)
	if out, _ := analyze(t, sa, dir, "verify", "--man=no", "./keyward.service"); !strings.Contains(out, "ProtectHomeDirectory") {
		t.Errorf("systemd-analyze verify did not report an unknown key: %q", out)
	}
}

// TestDeployBackupUnitCommands runs the backup service's ExecStart and
// ExecStartPost (the shell line and find, unescaped as systemd does, with the
// paths moved to a temporary directory) against a real data directory: a
// dated archive, mode 0600, is written, restore accepts it, and the clean-up
// deletes archives older than 14 days and keeps newer ones.
func TestDeployBackupUnitCommands(t *testing.T) {
	clearEnv(t)
	bin := buildKeyward(t)
	unit := parseUnit(t, repoFile(t, "deploy/keyward-backup.service"))
	root := t.TempDir()
	data, backups := filepath.Join(root, "data"), filepath.Join(root, "backups")
	if err := os.Mkdir(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "admin", "create", "--data", data, "--username", "owner", "--bcrypt-cost", "4").CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	paths := strings.NewReplacer(unitBinary, bin, unitData, data, unitBackups, backups)

	old := filepath.Join(backups, "keyward-20250101T031500Z.tar.gz")
	recent := filepath.Join(backups, "keyward-recent.tar.gz")
	for _, f := range []string{old, recent} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-15 * 24 * time.Hour)
	os.Chtimes(old, long, long)
	os.Chtimes(recent, time.Now().Add(-13*24*time.Hour), time.Now().Add(-13*24*time.Hour))

	start := splitWords(paths.Replace(unescapeUnit(unitValue(t, unit, "Service", "ExecStart"))))
	if out, err := exec.Command(start[0], start[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("ExecStart %q: %v\n%s", start, err, out)
	}
	post := splitWords(paths.Replace(unescapeUnit(unitValue(t, unit, "Service", "ExecStartPost"))))
	if out, err := exec.Command(post[0], post[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("ExecStartPost %q: %v\n%s", post, err, out)
	}
	entries, _ := os.ReadDir(backups)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	dated := regexp.MustCompile(`^keyward-\d{8}T\d{6}Z\.tar\.gz$`)
	var made string
	for _, n := range names {
		if dated.MatchString(n) && n != filepath.Base(old) {
			made = filepath.Join(backups, n)
		}
	}
	if made == "" || slices.Contains(names, filepath.Base(old)) || !slices.Contains(names, filepath.Base(recent)) || len(names) != 2 {
		t.Fatalf("backups after the unit ran: %q; want a new dated archive and the 13-day-old one, the 15-day-old one deleted", names)
	}
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive %s: %v, mode %v; want 0600", made, err, fi.Mode().Perm())
	}
	restored := filepath.Join(root, "restored")
	if out, err := exec.Command(bin, "restore", "--data", restored, "--in", made).CombinedOutput(); err != nil {
		t.Fatalf("restore of the unit's archive: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(restored, "keyward.db")); err != nil {
		t.Fatal(err)
	}
}

// TestDeployProxyConfigs checks the proxy snippets of layout 1 with the
// proxies themselves, where they are installed: `nginx -t` and `caddy
// validate` on them as shipped, then a real keyward (--trust-proxy) behind
// each, the snippet changed only in its ports, upstream and certificate.
// Through HTTPS a ban is audited with the address the client connected from
// (127.0.0.2), not the X-Forwarded-For it forged, and replies carry HSTS
// (X-Forwarded-Proto reached keyward); over plain HTTP the client API is
// answered in place while the admin and reseller APIs and the dashboard are
// redirected to HTTPS with 308.
func TestDeployProxyConfigs(t *testing.T) {
	t.Run("nginx", func(t *testing.T) {
		nginx, err := exec.LookPath("nginx")
		if err != nil {
			t.Skip("nginx is not installed: deploy/nginx.conf cannot be checked here")
		}
		dir := t.TempDir()
		cert, key := writeSelfSigned(t, dir)
		certs := strings.NewReplacer(
			"/etc/letsencrypt/live/licensing.example.com/fullchain.pem", cert,
			"/etc/letsencrypt/live/licensing.example.com/privkey.pem", key)
		conf := func(site string) string {
			os.WriteFile(filepath.Join(dir, "keyward.conf"), []byte(site), 0o644)
			main := fmt.Sprintf("pid %s/nginx.pid;\nerror_log %s/error.log;\ndaemon off;\nevents {}\nhttp {\n  access_log off;\n  include %s/keyward.conf;\n}\n", dir, dir, dir)
			os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644)
			return filepath.Join(dir, "nginx.conf")
		}
		shipped := certs.Replace(repoFile(t, "deploy/nginx.conf"))
		if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", conf(shipped)).CombinedOutput(); err != nil {
			t.Fatalf("nginx -t on deploy/nginx.conf: %v\n%s", err, out)
		}

		srv, app, licenseKey := proxiedKeyward(t)
		httpsAddr, httpAddr := freeAddr(t), freeAddr(t)
		site := strings.NewReplacer("server 127.0.0.1:8080;", "server "+srv.Addr()+";",
			"listen 443 ssl;", "listen "+httpsAddr+" ssl;", "listen [::]:443 ssl;", "",
			"listen 80;", "listen "+httpAddr+";", "listen [::]:80;", "").Replace(shipped)
		// The shipped listen lines, not ":443" anywhere: the free port
		// put in their place may itself begin with 443.
		if site == shipped || strings.Contains(site, "server 127.0.0.1:8080") || strings.Contains(site, "listen 443") ||
			strings.Contains(site, "[::]:443") || strings.Contains(site, "listen 80") || strings.Contains(site, "[::]:80") {
			t.Fatal("deploy/nginx.conf no longer has the lines this test moves to free ports")
		}
		startProxy(t, exec.Command(nginx, "-p", dir, "-c", conf(site)))
		checkProxy(t, httpsAddr, httpAddr, srv, app, licenseKey)
	})
	t.Run("caddy", func(t *testing.T) {
		caddy, err := exec.LookPath("caddy")
		if err != nil {
			t.Skip("caddy is not installed: deploy/Caddyfile cannot be checked here")
		}
		dir := t.TempDir()
		env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		validate := exec.Command(caddy, "validate", "--adapter", "caddyfile", "--config", filepath.Join("..", "..", "deploy", "Caddyfile"))
		validate.Env = env
		if out, err := validate.CombinedOutput(); err != nil {
			t.Fatalf("caddy validate on deploy/Caddyfile: %v\n%s", err, out)
		} else if strings.Contains(string(out), "not formatted") {
			t.Errorf("deploy/Caddyfile is not formatted as caddy fmt would:\n%s", out)
		}

		srv, app, licenseKey := proxiedKeyward(t)
		httpsAddr, httpAddr := freeAddr(t), freeAddr(t)
		_, httpsPort, _ := strings.Cut(httpsAddr, ":")
		_, httpPort, _ := strings.Cut(httpAddr, ":")
		shipped := repoFile(t, "deploy/Caddyfile")
		// The shipped sites with a local CA instead of Let's Encrypt, on free ports.
		site := fmt.Sprintf("{\n\tadmin off\n\tskip_install_trust\n\thttp_port %s\n\thttps_port %s\n}\n\n", httpPort, httpsPort) +
			strings.NewReplacer("127.0.0.1:8080", srv.Addr(),
				"licensing.example.com {\n", "licensing.example.com {\n\ttls internal\n").Replace(shipped)
		if !strings.Contains(site, "tls internal") || strings.Contains(site, "127.0.0.1:8080") {
			t.Fatal("deploy/Caddyfile no longer has the lines this test changes")
		}
		os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(site), 0o644)
		run := exec.Command(caddy, "run", "--adapter", "caddyfile", "--config", filepath.Join(dir, "Caddyfile"))
		run.Env = env
		startProxy(t, run)
		checkProxy(t, httpsAddr, httpAddr, srv, app, licenseKey)
	})
}

// proxiedKeyward starts a keyward with --trust-proxy and an app with a key.
func proxiedKeyward(t *testing.T) (*kwtest.Server, *kwtest.App, string) {
	t.Helper()
	srv := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.TrustProxy = true }})
	app := srv.CreateApp("Proxied")
	return srv, app, app.GenerateKeys(1, "lifetime", 0, 1)[0]
}

// startProxy starts cmd, stopped (and waited for) when the test ends.
func startProxy(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
}

// checkProxy drives keyward through the proxy listening on httpsAddr and
// httpAddr as a client at 127.0.0.2 asking for licensing.example.com.
func checkProxy(t *testing.T, httpsAddr, httpAddr string, srv *kwtest.Server, app *kwtest.App, licenseKey string) {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if strings.HasSuffix(addr, ":443") {
					return dialer.DialContext(ctx, network, httpsAddr)
				}
				return dialer.DialContext(ctx, network, httpAddr)
			},
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "licensing.example.com"},
		},
	}
	do := func(method, url string, header http.Header, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// Wait for the proxy (caddy makes its local CA first).
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "https://licensing.example.com/healthz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not answer GET /healthz over HTTPS within 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// HTTPS: X-Forwarded-Proto and X-Forwarded-For reach keyward, set by the proxy.
	resp, body := do("GET", "https://licensing.example.com/healthz", nil, "")
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("HTTPS through the proxy: no Strict-Transport-Security (X-Forwarded-Proto not https?): %s", body)
	}
	ban := http.Header{"Authorization": {"Bearer " + srv.AdminToken()}, "Content-Type": {"application/json"},
		"X-Forwarded-For": {"203.0.113.9"}}
	if resp, body := do("POST", "https://licensing.example.com/api/admin/keys.php?action=ban", ban,
		`{"app_id":"`+app.ID+`","license_key":"`+licenseKey+`"}`); resp.StatusCode != 200 {
		t.Fatalf("ban through the proxy: %d %s", resp.StatusCode, body)
	}
	entries := srv.MustAdmin("GET", "/api/admin/audit.php?action=key.ban", nil).Body["entries"].([]any)
	if ip := entries[0].(map[string]any)["actor"].(map[string]any)["ip"]; ip != "127.0.0.2" {
		t.Errorf("ban through the proxy audited from %q, want the client's 127.0.0.2 (not the forged 203.0.113.9 nor the proxy's 127.0.0.1)", ip)
	}

	// Plain HTTP: the client API in place, the rest redirected.
	check := http.Header{"X-App-Secret": {app.Secret}, "Content-Type": {"application/json"}}
	resp, body = do("POST", "http://licensing.example.com/api/auth/check-key.php", check, `{"license_key":"`+licenseKey+`"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"success"`) || resp.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("check-key over plain HTTP: %d %q (HSTS %q); want keyward's answer in place, without HSTS",
			resp.StatusCode, body, resp.Header.Get("Strict-Transport-Security"))
	}
	for _, path := range []string{"/api/admin/keys.php?app_id=x", "/api/reseller/keys.php", "/dashboard/"} {
		resp, _ := do("GET", "http://licensing.example.com"+path, nil, "")
		if want := "https://licensing.example.com" + path; resp.StatusCode != 308 || resp.Header.Get("Location") != want {
			t.Errorf("GET %s over plain HTTP: %d to %q; want 308 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

// writeSelfSigned writes a throwaway certificate and key into dir.
func writeSelfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "licensing.example.com"},
		DNSNames: []string{"licensing.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key
}
