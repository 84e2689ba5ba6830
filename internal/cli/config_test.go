package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config print shows every effective setting, secrets masked; a --config
// JSON file sets defaults that environment variables and flags override;
// an unknown setting in the file or an invalid value is refused, named.
func TestConfigPrint(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "keyward.json")
	os.WriteFile(file, []byte(`{"session-timeout": "90s", "admin_password": "file-secret", "bcrypt_cost": 11, "trust-proxy": true,
		"database_url": "postgres://kw:pg-secret@db/kw", "s3_secret_key": "zz-s3-hidden", "lockout_window": "20m"}`), 0o600)
	t.Setenv("KEYWARD_LOCKOUT_WINDOW", "25m")
	out := mustRun(t, "--config", file, "config", "print", "--bcrypt-cost", "13")
	for _, secret := range []string{"file-secret", "pg-secret", "zz-s3-hidden"} {
		if strings.Contains(out, secret) {
			t.Fatalf("secret %q printed:\n%s", secret, out)
		}
	}
	for flag, want := range map[string]string{"--session-timeout": "1m30s", "--bcrypt-cost": "13", "--trust-proxy": "true",
		"--lockout-window": "25m0s", "--admin-password": "********", "--database-url": "postgres://kw:********@db/kw",
		"--addr": "127.0.0.1:8080", "--token-ttl": "12h0m0s"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == flag {
				found = f[len(f)-1] == want
			}
		}
		if !found {
			t.Errorf("%s is not %q:\n%s", flag, want, out)
		}
	}
	if !strings.Contains(out, "KEYWARD_SESSION_TIMEOUT") {
		t.Errorf("variables are not shown:\n%s", out)
	}

	os.WriteFile(file, []byte(`{"sesion_timeout": "90s"}`), 0o600)
	if code, _, errOut := run(t, "--config", file, "config", "print"); code == 0 || !strings.Contains(errOut, "sesion_timeout") {
		t.Fatalf("misspelt setting: exit %d\n%s", code, errOut)
	}
	os.WriteFile(file, []byte(`{"session_timeout": "5s"}`), 0o600)
	if code, _, errOut := run(t, "--config", file, "config", "print"); code == 0 || !strings.Contains(errOut, "--session-timeout (KEYWARD_SESSION_TIMEOUT)") {
		t.Fatalf("invalid value: exit %d\n%s", code, errOut)
	}
	os.WriteFile(file, []byte(`not json`), 0o600)
	if code, _, _ := run(t, "--config", file, "config", "print"); code == 0 {
		t.Fatal("a file that is not JSON was accepted")
	}
}
