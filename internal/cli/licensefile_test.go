package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/wire"
)

// TestLicenseFileKeysCommands: `keyward keys license-file` creates (the
// first active, later ones announced; `init` is the same), lists, prints
// the public key, activates and retires (not the active key), in the
// signing directory's license-file subdirectory with 0600 files, without
// touching the reply-signing keys.
func TestLicenseFileKeysCommands(t *testing.T) {
	clearEnv(t)
	data := t.TempDir()
	dir := signing.LicenseKeyDir(filepath.Join(data, "signing"))
	if out := mustRun(t, "keys", "license-file", "list", "--data", data); !strings.Contains(out, "No license-file keys") {
		t.Fatalf("empty list: %s", out)
	}
	out := mustRun(t, "keys", "license-file", "create", "--data", data)
	set, err := signing.LoadLicenseKeys(dir)
	if err != nil || set == nil || !strings.Contains(out, set.Active.ID) || !strings.Contains(out, "active") {
		t.Fatalf("create: %v %s", err, out)
	}
	first := set.Active
	if st, err := os.Stat(filepath.Join(dir, first.ID+".pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, st)
	}
	out = mustRun(t, "keys", "license-file", "init", "--data", data)
	if !strings.Contains(out, "announced") {
		t.Fatalf("second key: %s", out)
	}
	set, _ = signing.LoadLicenseKeys(dir)
	var next *signing.LicenseKey
	for _, k := range set.Keys {
		if k.ID != first.ID {
			next = k
		}
	}
	list := mustRun(t, "keys", "license-file", "list", "--data", data)
	if !strings.Contains(list, first.ID+"  active") || !strings.Contains(list, next.ID+"  announced") {
		t.Fatalf("list:\n%s", list)
	}
	if pub := mustRun(t, "keys", "license-file", "public", "--data", data); pub != string(first.PublicPEM) {
		t.Fatalf("public: %s", pub)
	}
	if pub := mustRun(t, "keys", "license-file", "public", "--data", data, "--id", next.ID[:8]); pub != string(next.PublicPEM) {
		t.Fatalf("public --id: %s", pub)
	}
	if code, _, errOut := run(t, "keys", "license-file", "retire", "--data", data, first.ID); code != 1 || !strings.Contains(errOut, "active") {
		t.Fatalf("retired the active key: %d %s", code, errOut)
	}
	mustRun(t, "keys", "license-file", "activate", "--data", data, next.ID)
	mustRun(t, "keys", "license-file", "retire", "--data", data, first.ID)
	set, _ = signing.LoadLicenseKeys(dir)
	if len(set.Keys) != 1 || set.Active.ID != next.ID {
		t.Fatalf("after rotation: %+v", set)
	}
	if out := mustRun(t, "keys", "signing", "list", "--data", data); !strings.Contains(out, "not signed") {
		t.Fatalf("reply keys appeared: %s", out)
	}
}

// TestLicenseVerifyCommand: `keyward license verify` exits 0 for the test
// vector inside its window (for its device and app, with the key as PEM or
// as public-keys.php JSON) and 1, naming the reason, for another device,
// another app, after valid_until, a tampered file and an untrusted key.
func TestLicenseVerifyCommand(t *testing.T) {
	clearEnv(t)
	vector := filepath.Join("..", "licensefile", "testdata", "vector.lic")
	pubPEM := filepath.Join("..", "licensefile", "testdata", "vector.pub.pem")
	inWindow := "2026-11-30T00:00:00Z"

	out := mustRun(t, "license", "verify", "--public-key", pubPEM, "--file", vector, "--hwid", "HWID-0001", "--app", "app_demo", "--at", inWindow)
	for _, want := range []string{"genuine and valid for this device", "app_demo", "HWID-0001", "2026-12-04T10:00:00Z", `{"pro":true,"seats":5}`} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}

	// The JSON public-keys.php serves, as a pin file.
	pemBytes, _ := os.ReadFile(pubPEM)
	pins, err := licensefile.ParsePublicKeys(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	var keys []wire.PublicKey
	for kid := range pins {
		keys = append(keys, wire.PublicKey{Kid: kid, Alg: wire.AlgEd25519, Use: wire.UseLicenseFile, PublicKey: string(pemBytes), Active: true})
	}
	jsonFile := filepath.Join(t.TempDir(), "public-keys.json")
	b, _ := json.Marshal(wire.PublicKeysReply{Success: true, Keys: keys})
	os.WriteFile(jsonFile, b, 0o600)
	mustRun(t, "license", "verify", "--public-key", jsonFile, "--file", vector, "--at", inWindow)

	// Another operator's key.
	data := t.TempDir()
	mustRun(t, "keys", "license-file", "create", "--data", data)
	otherPub := filepath.Join(t.TempDir(), "other.pem")
	os.WriteFile(otherPub, []byte(mustRun(t, "keys", "license-file", "public", "--data", data)), 0o600)

	text, _ := os.ReadFile(vector)
	f, err := licensefile.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	for i, l := range lines { // flip one payload character: "seats":5 → another digit
		if i > 9 && strings.Contains(l, "ZSIsImZlYXR1cmVzIjp7InBybyI6dHJ1ZSwic2VhdHMiOjV9") {
			lines[i] = strings.Replace(l, "c2VhdHMiOjV9", "c2VhdHMiOjl9", 1)
		}
	}
	tampered := filepath.Join(t.TempDir(), "tampered.lic")
	os.WriteFile(tampered, []byte(strings.Join(lines, "\n")), 0o600)
	if g, err := licensefile.Parse(strings.Join(lines, "\n")); err != nil || string(g.Payload) == string(f.Payload) {
		t.Fatalf("tampering did not change the payload: %v", err)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		reason string
	}{
		{"another device", []string{"--public-key", pubPEM, "--file", vector, "--hwid", "HWID-0002", "--at", inWindow}, "wrong_device"},
		{"another app", []string{"--public-key", pubPEM, "--file", vector, "--app", "app_other", "--at", inWindow}, "wrong_app"},
		{"after valid_until", []string{"--public-key", pubPEM, "--file", vector, "--at", "2026-12-04T10:00:00Z"}, "expired"},
		{"tampered", []string{"--public-key", pubPEM, "--file", tampered, "--at", inWindow}, "bad_signature"},
		{"untrusted key", []string{"--public-key", otherPub, "--file", vector, "--at", inWindow}, "unknown_kid"},
		{"not a license file", []string{"--public-key", pubPEM, "--file", pubPEM, "--at", inWindow}, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"license", "verify"}, tc.args...)...)
			if code != 1 || out != "" || !strings.Contains(errOut, "NOT valid ("+tc.reason+")") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}

	// Real time (no --at): the vector's window has passed or not, and the
	// exit code says which.
	code, _, _ := run(t, "license", "verify", "--public-key", pubPEM, "--file", vector)
	if want := map[bool]int{true: 0, false: 1}[time.Now().Before(f.Claims.ValidUntil)]; code != want {
		t.Fatalf("now: exit %d, want %d", code, want)
	}
}

// TestServeLicenseFileKey: the first `keyward serve` generates the
// license-file key (and warns, naming its kid) and serves it from
// public-keys.php; the next start loads the same key and generates
// nothing; a key file that does not load stops the start.
func TestServeLicenseFileKey(t *testing.T) {
	clearEnv(t)
	data := t.TempDir()
	first := serve(t, "--addr", "127.0.0.1:0", "--data", data, "--bcrypt-cost", "4")
	set, err := signing.LoadLicenseKeys(signing.LicenseKeyDir(filepath.Join(data, "signing")))
	if err != nil || set == nil {
		t.Fatalf("no key after the first start: %v", err)
	}
	if log := first.stderr.String(); !strings.Contains(log, "generated a license-file signing key") || !strings.Contains(log, set.Active.ID) {
		t.Fatalf("first start log:\n%s", log)
	}
	servedKid := func(addr string) string {
		resp, err := http.Get("http://" + addr + "/api/app/public-keys.php")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res wire.PublicKeysReply
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || len(res.Keys) != 1 {
			t.Fatalf("public-keys.php: %v %+v", err, res)
		}
		return res.Keys[0].Kid
	}
	if kid := servedKid(first.addr); kid != set.Active.ID {
		t.Fatalf("served %s, generated %s", kid, set.Active.ID)
	}
	if code := first.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	second := serve(t, "--addr", "127.0.0.1:0", "--data", data, "--bcrypt-cost", "4")
	if kid := servedKid(second.addr); kid != set.Active.ID || strings.Contains(second.stderr.String(), "generated a license-file") {
		t.Fatalf("second start: kid %s\n%s", kid, second.stderr)
	}
	second.stop(t)

	broken := t.TempDir()
	dir := signing.LicenseKeyDir(filepath.Join(broken, "signing"))
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "0123456789abcdef.pem"), []byte("not a key"), 0o600)
	if code, _, errOut := run(t, "serve", "--addr", "127.0.0.1:0", "--data", broken, "--bcrypt-cost", "4"); code != 1 || !strings.Contains(errOut, "license-file keys") {
		t.Fatalf("broken key: exit %d\n%s", code, errOut)
	}
}
