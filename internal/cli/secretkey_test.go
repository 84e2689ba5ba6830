package cli

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/seal"
)

// sealedValues reads every value of the sealed columns of the database of s
// (apps, TOTP and webhook secrets, server secrets, stored replies).
func sealedValues(t *testing.T, dataDir, url string) []string {
	t.Helper()
	db := kwtest.RawDB(t, dataDir, url)
	var out []string
	for _, q := range []string{`SELECT secret FROM apps`, `SELECT totp_secret FROM admin_users`, `SELECT secret FROM webhook_destinations`,
		`SELECT value FROM server_secrets`, `SELECT COALESCE(reply, '') FROM envelope_replays`} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != "" {
				out = append(out, v)
			}
		}
		rows.Close()
	}
	return out
}

// `keyward keys secret rotate` re-seals every stored secret under a new key,
// leaves the key file holding the new key alone (mode 0600), and a server
// started with it serves everything as before; the old key file is refused.
func TestSecretKeyRotate(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Rotated")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		session := app.Login(key, "hw-r")
		token := s.AdminToken()
		hook := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": "https://hooks.example.com/r",
			"events": []string{"key.created"}}).Obj("webhook")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil { // rotation runs with keyward stopped
			t.Fatal(err)
		}
		keyFile := filepath.Join(s.DataDir, "secret.key")
		old, err := seal.Load(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		before := sealedValues(t, s.DataDir, s.DatabaseURL)

		args := []string{"keys", "secret", "rotate", "--data", s.DataDir}
		if s.DatabaseURL != "" {
			args = append(args, "--database-url", s.DatabaseURL)
		}
		out := mustRun(t, args...)
		fresh, err := seal.Load(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if ids := fresh.IDs(); len(ids) != 1 || ids[0] == old.PrimaryID() {
			t.Fatalf("key file after rotation holds %v, want one new key (old %s)", ids, old.PrimaryID())
		}
		if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("key file after rotation: %v, %v; want mode 0600", info, err)
		}
		after := sealedValues(t, s.DataDir, s.DatabaseURL)
		if !strings.Contains(out, "re-encrypted "+strconv.Itoa(len(before))+" stored secrets") || len(after) != len(before) {
			t.Fatalf("rotate output %q; %d values before, %d after", out, len(before), len(after))
		}
		for _, v := range after {
			if !seal.SealedWith(v, fresh.PrimaryID()) {
				t.Errorf("value %q is not sealed with the new key %s", v, fresh.PrimaryID())
			}
		}

		// The old key file no longer opens the database.
		oldFile := filepath.Join(t.TempDir(), "old.key")
		if err := seal.Write(oldFile, old); err != nil {
			t.Fatal(err)
		}
		create := append(append([]string{"admin", "create"}, args[3:]...), "--secret-key-file", oldFile, "--username", "late", "--bcrypt-cost", "4")
		if code, _, errOut := run(t, create...); code != 1 || !strings.Contains(errOut, "sealed with secret key "+fresh.PrimaryID()) {
			t.Fatalf("admin create with the old key file: exit %d %s", code, errOut)
		}

		// A server with the rotated key file serves everything as before.
		s2 := kwtest.Start(t, kwtest.Options{Engine: engine, DataDir: s.DataDir, DatabaseURL: s.DatabaseURL, Clock: s.Clock})
		a2 := s2.NewApp(app.ID, app.Secret)
		if r := a2.Heartbeat(session, key); r.Body["success"] != true {
			t.Fatalf("heartbeat after rotation: %s", r)
		}
		a2.Login(key, "hw-r")
		if r := s2.AdminAs(token, "GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("a JWT signed before the rotation: %s", r)
		}
		got := s2.MustAdmin("GET", "/api/admin/webhooks.php?id="+strconv.Itoa(int(hook["id"].(float64))), nil).Obj("webhook")
		if got["secret"] != hook["secret"] {
			t.Fatalf("webhook secret after rotation %v, want %v", got["secret"], hook["secret"])
		}
	})
}

// With no key file, the first command generates one (mode 0600) under the
// data directory. On PostgreSQL a second process that generated its own key
// (another data directory) is refused, naming the key the database needs,
// instead of sealing secrets under a second key.
func TestSecretKeyGeneratedAndMismatchRefused(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var db []string
		if engine == "postgres" {
			db = []string{"--database-url", kwtest.PostgresURL(t)}
		}
		create := func(user string, extra ...string) (int, string) {
			t.Helper()
			args := append([]string{"admin", "create", "--username", user, "--password", "pass-" + user + "-123", "--bcrypt-cost", "4"}, db...)
			code, _, errOut := run(t, append(args, extra...)...)
			return code, errOut
		}
		d1 := t.TempDir()
		if code, errOut := create("first", "--data", d1); code != 0 {
			t.Fatalf("admin create: exit %d %s", code, errOut)
		}
		keyFile := filepath.Join(d1, "secret.key")
		info, err := os.Stat(keyFile)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("generated key file: %v, %v; want mode 0600", info, err)
		}
		kr, err := seal.Load(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		// Another key: on PostgreSQL, a process with its own data
		// directory; on SQLite, a key file that is not the database's (a
		// restore without its key file).
		other := []string{"--data", t.TempDir()}
		if engine == "sqlite" {
			other = []string{"--data", d1, "--secret-key-file", filepath.Join(t.TempDir(), "other.key")}
		}
		code, errOut := create("second", other...)
		if code != 1 || !strings.Contains(errOut, "sealed with secret key "+kr.PrimaryID()) {
			t.Fatalf("admin create with another generated key: exit %d %s; want a refusal naming key %s", code, errOut, kr.PrimaryID())
		}
		// With the right key file it works.
		if code, errOut := create("third", append(other, "--secret-key-file", keyFile)...); code != 0 {
			t.Fatalf("admin create with the database's key file: exit %d %s", code, errOut)
		}
	})
}

// A `keyward backup` archive holds neither the secret key file (not even
// when it lies under the signing directory) nor any secret in plaintext.
func TestBackupHoldsNoSecretKeyNorPlaintext(t *testing.T) {
	clearEnv(t)
	in := populate(t)
	s := in.s
	list := s.MustAdmin("GET", "/api/admin/webhooks.php", nil).Body["webhooks"].([]any)
	id := int(list[0].(map[string]any)["id"].(float64))
	hook := s.MustAdmin("GET", "/api/admin/webhooks.php?id="+strconv.Itoa(id), nil)
	hookSecret := findString(hook.Body, "secret")
	if hookSecret == "" {
		t.Fatalf("no webhook secret in %s", hook)
	}
	mustRun(t, "keys", "signing", "init", "--data", s.DataDir)
	keyText, err := os.ReadFile(filepath.Join(s.DataDir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	// The key file also sits under the signing directory, named by
	// --secret-key-file: still not archived.
	inSigning := filepath.Join(s.DataDir, "signing", "secret.key")
	if err := os.WriteFile(inSigning, keyText, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "kw.tar.gz")
	mustRun(t, "backup", "--data", s.DataDir, "--secret-key-file", inSigning, "--out", out)

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	rawKey := kwtest.SecretKeys.Marshal()
	secrets := map[string]string{"app secret": in.app.Secret, "session token": in.session, "webhook secret": hookSecret,
		"webhook secret body": strings.TrimPrefix(hookSecret, "whsec_")}
	for _, line := range strings.Split(string(rawKey), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			secrets["key file key"] = line
			k, _ := base64.StdEncoding.DecodeString(line)
			secrets["raw key"] = string(k)
		}
	}
	names := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names++
		if strings.HasSuffix(hdr.Name, "secret.key") {
			t.Errorf("archive holds %s", hdr.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		for what, v := range secrets {
			if strings.Contains(string(b), v) {
				t.Errorf("archive entry %s holds the %s", hdr.Name, what)
			}
		}
	}
	if names < 3 {
		t.Fatalf("archive has %d entries, want the database, artifacts and signing keys", names)
	}
}
