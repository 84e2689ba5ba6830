package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/licensefile"
)

// `keyward client offline-request` prints an activation request, MACed
// with the app secret, for the key and device; the admin API turns it into
// a license file, which `keyward license verify` accepts for that device
// with the server's published keys and refuses for another. With --out it
// writes the request to a 0600 file; a secret of the wrong length is an
// error.
func TestClientOfflineRequest(t *testing.T) {
	clearEnv(t)
	// The command stamps the request with the machine's clock: the server's
	// is set to it.
	clock := kwtest.NewClock()
	clock.Set(time.Now().UTC().Truncate(time.Second))
	s := kwtest.Start(t, kwtest.Options{Clock: clock})
	app := s.CreateApp("Air-gapped")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"offline_enabled": true}})
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]

	out := mustRun(t, "client", "offline-request", "--app-secret", app.Secret, "--app-id", app.ID, "--key", key, "--hwid", "press-7")
	doc, err := licensefile.ParseRequest(out)
	if err != nil {
		t.Fatalf("not an activation request: %v\n%s", err, out)
	}
	if doc.AppID != app.ID || doc.LicenseKey != key || doc.HWID != "press-7" || doc.Verify(app.Secret) != nil {
		t.Fatalf("request %+v", doc.Request)
	}
	r := s.MustAdmin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": out})
	dir := t.TempDir()
	file := filepath.Join(dir, "license.txt")
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(file, []byte(r.Str("license_file")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, s.Do("GET", "/api/app/public-keys.php", nil, nil).Raw, 0o600); err != nil {
		t.Fatal(err)
	}
	at := s.Clock.Now().Format("2006-01-02T15:04:05Z")
	mustRun(t, "license", "verify", "--public-key", keys, "--file", file, "--hwid", "press-7", "--app", app.ID, "--at", at)
	if code, _, _ := run(t, "license", "verify", "--public-key", keys, "--file", file, "--hwid", "press-8", "--at", at); code != 1 {
		t.Fatalf("verify for another device: exit %d, want 1", code)
	}

	// Without --app-id (a machine that never reached the server): the MAC
	// names the app; written to a file.
	reqFile := filepath.Join(dir, "request.txt")
	mustRun(t, "client", "offline-request", "--app-secret", app.Secret, "--key", key, "--hwid", "press-7", "--out", reqFile)
	b, err := os.ReadFile(reqFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(reqFile); st.Mode().Perm() != 0o600 {
		t.Fatalf("request file mode %v", st.Mode().Perm())
	}
	r2 := s.MustAdmin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": string(b)})
	if f, err := licensefile.Parse(r2.Str("license_file")); err != nil || f.Claims.AppID != app.ID || f.Claims.HWID != "press-7" {
		t.Fatalf("file from a request without app id: %v %+v", err, f)
	}

	code, _, errOut := run(t, "client", "offline-request", "--app-secret", "short", "--key", key)
	if code == 0 || !strings.Contains(errOut, "64-character") {
		t.Fatalf("short secret: exit %d, %q", code, errOut)
	}
}

// `keyward client license-file` writes the key's license file for the
// device to --out and prints its id, valid_until and, for a floating key,
// the borrow, which --return gives back; OFFLINE_DISABLED exits 3.
func TestClientLicenseFile(t *testing.T) {
	clearEnv(t)
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Files")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	conn := []string{"--url", s.URL, "--secret", app.Secret}
	cmd := func(args ...string) []string {
		return append(append([]string{"client", "license-file"}, args...), conn...)
	}
	code, _, errOut := run(t, cmd("--key", key, "--hwid", "pc-1")...)
	if code != 3 || !strings.Contains(errOut, "OFFLINE_DISABLED") {
		t.Fatalf("offline off: exit %d, %q", code, errOut)
	}
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"offline_enabled": true}})
	out := mustRun(t, cmd("--key", key, "--hwid", "pc-1")...)
	if f, err := licensefile.Parse(out); err != nil || f.Claims.HWID != "pc-1" {
		t.Fatalf("stdout is not the file: %v\n%s", err, out)
	}
	r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1, "floating": true})
	fk := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)
	file := filepath.Join(t.TempDir(), "lic.txt")
	out = mustRun(t, cmd("--key", fk, "--hwid", "laptop", "--out", file)...)
	if !strings.Contains(out, "floating true\n") || !strings.Contains(out, "borrow ") {
		t.Fatalf("license-file output: %q", out)
	}
	borrow := strings.TrimSpace(out[strings.Index(out, "borrow ")+len("borrow "):])
	if b, err := os.ReadFile(file); err != nil || !strings.HasPrefix(string(b), "-----BEGIN KEYWARD LICENSE FILE-----") {
		t.Fatalf("file: %v %q", err, b)
	}
	kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": fk, "hwid": "desk"}), 200, "DEVICE_LIMIT")
	if out := mustRun(t, cmd("--return", borrow)...); out != "returned\n" {
		t.Fatalf("return: %q", out)
	}
	app.Login(fk, "desk")
}
