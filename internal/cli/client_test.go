package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/signing"
)

// `keyward client …` against a real server: check, login, trial, update
// check and download, heartbeat until a ban kills it, and the exit codes.
func TestClientCommands(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("CLI app")
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"trial_enabled": true}})
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		conn := []string{"--url", s.URL, "--secret", app.Secret}
		cmd := func(args ...string) []string { return append(append([]string{"client"}, args...), conn...) }

		out := mustRun(t, cmd("check", "--key", key)...)
		if !strings.Contains(out, "valid true\nstatus unused\ntype days\nexpires not activated (30 days from activation)\n") {
			t.Fatalf("check: %q", out)
		}
		lifetime := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		if out := mustRun(t, cmd("check", "--key", lifetime)...); !strings.Contains(out, "type lifetime\nexpires never\n") {
			t.Fatalf("check a lifetime key: %q", out)
		}
		code, _, errOut := run(t, cmd("check", "--key", "NOPE-NOPE")...)
		if code != 3 || !strings.Contains(errOut, "INVALID_KEY") {
			t.Fatalf("check unknown key: exit %d, %q", code, errOut)
		}
		out = mustRun(t, cmd("login", "--key", key, "--hwid", "pc-1")...)
		if !regexp.MustCompile(`^session [0-9a-f]{64}\ninterval 30s\nkey ` + key + `\nstatus active\nexpires 20`).MatchString(out) {
			t.Fatalf("login: %q", out)
		}
		code, _, errOut = run(t, cmd("login", "--key", key, "--hwid", "pc-2")...)
		if code != 3 || !strings.Contains(errOut, "HWID_MISMATCH") {
			t.Fatalf("login elsewhere: exit %d, %q", code, errOut)
		}
		out = mustRun(t, cmd("trial", "--hwid", "pc-trial")...)
		if !regexp.MustCompile(`^trial TRIAL-\S+\nexpires 20\S+\nresumed false\n$`).MatchString(out) {
			t.Fatalf("trial: %q", out)
		}

		// Updates.
		artifact := bytes.Repeat([]byte("cli-artifact "), 5000)
		app.Release("1.2.0", artifact, nil)
		if out := mustRun(t, cmd("update", "check", "--version", "1.2.0")...); out != "up to date\n" {
			t.Fatalf("update check: %q", out)
		}
		sum := sha256.Sum256(artifact)
		out = mustRun(t, cmd("update", "check", "--version", "1.0.0")...)
		if !strings.Contains(out, "update 1.2.0\n") || !strings.Contains(out, "sha256 "+hex.EncodeToString(sum[:])) {
			t.Fatalf("update check: %q", out)
		}
		dst := filepath.Join(t.TempDir(), "app.bin")
		os.WriteFile(dst+".part", artifact[:1000], 0o644) // an earlier, interrupted run
		out = mustRun(t, cmd("update", "download", "--version", "1.0.0", "--out", dst)...)
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, artifact) || !strings.Contains(out, "saved "+dst) {
			t.Fatalf("download: %q", out)
		}
		bad := append([]byte(nil), artifact[:1000]...)
		bad[0] ^= 1
		os.WriteFile(dst+"2.part", bad, 0o644)
		code, _, errOut = run(t, cmd("update", "download", "--version", "1.0.0", "--out", dst+"2")...)
		if code != 6 || !strings.Contains(errOut, "sha256") {
			t.Fatalf("corrupted download: exit %d, %q", code, errOut)
		}

		// A pinned key the server does not sign with: exit 5.
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		pin := filepath.Join(t.TempDir(), "pin.pem")
		os.WriteFile(pin, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
		code, _, errOut = run(t, cmd("check", "--key", key, "--pin", pin)...)
		if code != 5 || !strings.Contains(errOut, "not signed") {
			t.Fatalf("pinned: exit %d, %q", code, errOut)
		}

		// Heartbeat: beats print lines; a ban ends the loop with exit 4.
		key2 := app.GenerateKeys(1, "days", 30, 1)[0]
		stdout, stderr := &kwtest.LogBuffer{}, &kwtest.LogBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- Run(context.Background(), cmd("heartbeat", "--key", key2, "--hwid", "pc-hb", "--interval", "20ms"), stdout, stderr)
		}()
		waitFor := func(what string) {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(stdout.String(), what) {
				if time.Now().After(deadline) {
					t.Fatalf("no %q in heartbeat output %q (stderr %q)", what, stdout, stderr)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		waitFor("beat ok\n")
		if r := app.KeyAction("ban", key2, nil); r.Status != 200 {
			t.Fatalf("ban: %s", r)
		}
		waitFor("kill BANNED\n")
		select {
		case code := <-done:
			if code != 4 || !strings.Contains(stderr.String(), "BANNED") {
				t.Fatalf("heartbeat after a ban: exit %d, stderr %q", code, stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("heartbeat did not exit after the ban")
		}

		// --count stops the loop and signs out.
		key3 := app.GenerateKeys(1, "days", 30, 1)[0]
		out = mustRun(t, cmd("heartbeat", "--key", key3, "--interval", "10ms", "--count", "2")...)
		if !strings.HasSuffix(out, "beat ok\nbeat ok\nstopped\n") {
			t.Fatalf("heartbeat --count: %q", out)
		}
	})
	// Usage errors.
	if code, _, errOut := run(t, "client", "check", "--key", "K"); code != 2 || !strings.Contains(errOut, "--url") {
		t.Fatalf("no --url: exit %d, %q", code, errOut)
	}
	t.Setenv("KEYWARD_CLIENT_URL", "http://127.0.0.1:1")
	t.Setenv("KEYWARD_CLIENT_SECRET", strings.Repeat("a", 64))
	if code, _, _ := run(t, "client", "check", "--key", "K"); code != 1 {
		t.Fatalf("unreachable server: exit %d", code)
	}
}

// `keyward client` on a floating key: a login prints the seats
// (max_devices); a login when every seat is held exits 3 with the server's
// seat message and how many are in use; the same machine signing in again
// reuses its seat; check takes none.
func TestClientFloatingSeats(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("CLI seats")
		r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime",
			"max_devices": 2, "floating": true})
		key := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)
		cmd := func(args ...string) []string {
			return append(append([]string{"client"}, args...), "--url", s.URL, "--secret", app.Secret, "--key", key)
		}
		for _, hwid := range []string{"pc-1", "pc-2"} {
			if out := mustRun(t, cmd("login", "--keep", "--hwid", hwid)...); !strings.Contains(out, "\nmax_devices 2\n") {
				t.Fatalf("login %s: %q", hwid, out)
			}
		}
		code, _, errOut := run(t, cmd("login", "--hwid", "pc-3")...)
		if code != 3 || !strings.Contains(errOut, "DEVICE_LIMIT: All 2 seats of this license are in use") ||
			!strings.Contains(errOut, "keyward: in use: 2 of 2\n") {
			t.Fatalf("login with every seat held: exit %d, %q", code, errOut)
		}
		if out := mustRun(t, cmd("check")...); !strings.Contains(out, "valid true\n") || !strings.Contains(out, "max_devices 2\n") {
			t.Fatalf("check: %q", out)
		}
		mustRun(t, cmd("login", "--hwid", "pc-1")...) // a restart on pc-1 reuses its seat (and signs out: one seat frees)
		mustRun(t, cmd("login", "--keep", "--hwid", "pc-3")...)
	})
}

// Errors are printed as one line with one "keyward: " prefix, also when the
// error comes from the client SDK, whose messages name the program already.
func TestErrorPrefixOnce(t *testing.T) {
	clearEnv(t)
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Prefix app")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad base URL", []string{"client", "check", "--key", "K", "--url", "ftp://example.com", "--secret", app.Secret}, 1,
			"keyward: base URL \"ftp://example.com\" must be http(s)://host[:port][/prefix]\n"},
		{"refusal", []string{"client", "check", "--key", "NOPE-NOPE", "--url", s.URL, "--secret", app.Secret}, 3,
			"keyward: INVALID_KEY"},
		{"usage", []string{"client", "check"}, 2, "keyward: missing flags"},
	}
	for _, c := range cases {
		code, _, errOut := run(t, c.args...)
		if code != c.code || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "keyward: keyward") != 0 ||
			strings.Count(strings.SplitN(errOut, "\n", 2)[0], "keyward:") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q once", c.name, code, errOut, c.code, c.want)
		}
	}
}

// Every refusal class exits with the code docs/clients.md lists for it: a
// kill code (BANNED, PAUSED, EXPIRED) refusing a sign-in or a check is a
// refusal (3), not an ended session (4, which TestClientCommands checks for
// a heartbeat loop a ban ends).
func TestClientExitCodes(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Exit codes")
		keys := append(app.GenerateKeys(3, "days", 30, 1), app.GenerateKeys(2, "days", 1, 1)...)
		banned, paused, bound, expired, fine := keys[0], keys[1], keys[2], keys[3], keys[4]
		for _, k := range []string{bound, expired} {
			mustRun(t, "client", "login", "--key", k, "--hwid", "pc-1", "--url", s.URL, "--secret", app.Secret)
		}
		if r := app.KeyAction("ban", banned, nil); r.Status != 200 {
			t.Fatalf("ban: %s", r)
		}
		if r := app.KeyAction("pause", paused, nil); r.Status != 200 {
			t.Fatalf("pause: %s", r)
		}
		s.Clock.Advance(48 * time.Hour) // the activated one-day key expires; the unused one starts now
		cases := []struct {
			name, cmd, key, hwid string
			code                 int
			stderr               string
		}{
			{"login banned", "login", banned, "pc-1", 3, "BANNED"},
			{"login paused", "login", paused, "pc-1", 3, "PAUSED"},
			{"login expired", "login", expired, "pc-1", 3, "EXPIRED"},
			{"login unknown", "login", "NOPE-NOPE-NOPE", "pc-1", 3, "INVALID_KEY"},
			{"login other device", "login", bound, "pc-2", 3, "HWID_MISMATCH"},
			{"check banned", "check", banned, "", 3, ""},
			{"check unknown", "check", "NOPE-NOPE-NOPE", "", 3, "INVALID_KEY"},
			{"login fine", "login", fine, "pc-1", 0, ""},
		}
		for _, c := range cases {
			args := []string{"client", c.cmd, "--key", c.key, "--url", s.URL, "--secret", app.Secret}
			if c.hwid != "" {
				args = append(args, "--hwid", c.hwid)
			}
			code, out, errOut := run(t, args...)
			if code != c.code || !strings.Contains(errOut, c.stderr) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d with %q", c.name, code, out, errOut, c.code, c.stderr)
			}
		}
	})
	// No server answering: 1; a usage error: 2.
	if code, _, _ := run(t, "client", "check", "--key", "K", "--url", "http://127.0.0.1:1", "--secret", strings.Repeat("a", 64)); code != 1 {
		t.Errorf("unreachable server: exit %d, want 1", code)
	}
	if code, _, _ := run(t, "client", "check", "--key", "K"); code != 2 {
		t.Errorf("missing flags: exit %d, want 2", code)
	}
}

// `keyward client --url …/api`: the server's 404 says the base URL should
// not end in /api, and the command adds a hint naming the flag.
func TestClientURLEndingInAPI(t *testing.T) {
	clearEnv(t)
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Prefix app")
	key := app.GenerateKeys(1, "days", 30, 1)[0]
	for _, url := range []string{s.URL + "/api", s.URL + "/api/"} {
		for _, cmd := range [][]string{{"check", "--key", key}, {"login", "--key", key}, {"trial"}, {"update", "check", "--version", "1.0.0"}} {
			code, _, errOut := run(t, append(append([]string{"client"}, cmd...), "--url", url, "--secret", app.Secret)...)
			for _, want := range []string{"keyward: NOT_FOUND: No such endpoint. The base URL should not end in /api",
				"keyward: hint: --url " + url + " ends in /api; give the server's root (without /api)"} {
				if code != 3 || !strings.Contains(errOut, want) {
					t.Errorf("%v --url %s: exit %d, %q; want %q", cmd, url, code, errOut, want)
				}
			}
		}
	}
	// The root works, and a 404 there carries no hint.
	mustRun(t, "client", "check", "--key", key, "--url", s.URL, "--secret", app.Secret)
}

// With the server's reply key pinned and the app's offline trust on,
// `keyward client check` and `login` print the signed trust_until the
// answer left the client with; without a pin they print none.
func TestClientShowsTrust(t *testing.T) {
	clearEnv(t)
	dir := filepath.Join(t.TempDir(), "signing")
	key, err := signing.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	pin := filepath.Join(t.TempDir(), "pin.pem")
	os.WriteFile(pin, key.PublicPEM, 0o644)
	s := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.SigningDir = dir }})
	app := s.CreateApp("Trust app")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"offline_enabled": true, "offline_ttl_hours": 24}})
	lk := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	want := "trust_until " + s.Clock.Now().Add(24*time.Hour).UTC().Format(time.RFC3339) + "\n"
	conn := []string{"--url", s.URL, "--secret", app.Secret}
	for _, cmd := range [][]string{{"check", "--key", lk}, {"login", "--key", lk, "--hwid", "pc-1"}} {
		args := append(append([]string{"client"}, cmd...), conn...)
		if out := mustRun(t, append(args, "--pin", pin)...); !strings.Contains(out, want) {
			t.Errorf("%v pinned: %q, want %q", cmd, out, want)
		}
		if out := mustRun(t, args...); strings.Contains(out, "trust_until") {
			t.Errorf("%v unpinned: %q", cmd, out)
		}
	}
}
