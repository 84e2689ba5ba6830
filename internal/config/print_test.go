package config

import (
	"strings"
	"testing"
)

// Every setting is listed with its flag and variable; secrets are masked.
func TestSettingsMaskSecrets(t *testing.T) {
	c := parse(t, "--admin-password", "hunter2-secret", "--s3-secret-key", "s3-very-secret", "--s3-access-key", "AKID",
		"--database-url", "postgres://kw:pg-secret@db:5432/kw?sslmode=disable", "--session-timeout", "90s")
	all := map[string]Setting{}
	var dump strings.Builder
	for _, s := range c.Settings() {
		all[s.Flag] = s
		dump.WriteString(s.Flag + "=" + s.Value + "\n")
	}
	for _, secret := range []string{"hunter2-secret", "s3-very-secret", "pg-secret"} {
		if strings.Contains(dump.String(), secret) {
			t.Fatalf("secret %q shown:\n%s", secret, dump.String())
		}
	}
	for flag, want := range map[string]string{"--admin-password": Masked, "--s3-secret-key": Masked, "--s3-access-key": "AKID",
		"--database-url": "postgres://kw:" + Masked + "@db:5432/kw?sslmode=disable", "--session-timeout": "1m30s",
		"--addr": "127.0.0.1:8080", "--tls-cert": ""} {
		if got := all[flag].Value; got != want {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	if all["--data"].Env != "KEYWARD_DATA" || len(all) < 40 {
		t.Fatalf("%d settings; --data %+v", len(all), all["--data"])
	}
	if got := maskURL("postgres://db/kw?password=p1&sslmode=disable"); strings.Contains(got, "p1") {
		t.Fatalf("query password shown: %s", got)
	}
}
