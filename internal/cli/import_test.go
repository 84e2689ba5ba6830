package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// import keys: a dry run reports and changes nothing, --apply imports
// (export → import → export gives the same bytes), a bad file exits 1
// naming the lines and imports nothing.
func TestImportKeys(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			o := kwtest.Options{Engine: engine, DataDir: t.TempDir()}
			args := []string{"--data", o.DataDir}
			if engine == "postgres" {
				o.DatabaseURL = kwtest.MigratedPostgresURL(t)
				args = append(args, "--database-url", o.DatabaseURL) // the data directory holds the secret key file
			}
			s := kwtest.Start(t, o)
			src, dst := s.CreateApp("Source"), s.CreateApp("Destination")
			keys := src.GenerateKeys(50, "days", 30, 2)
			src.Login(keys[0], "pc-1")
			src.Login(keys[0], "pc-0")
			src.KeyAction("ban", keys[1], nil)
			export := func(appID string) string {
				r := s.Admin("GET", "/api/admin/keys.php?action=export&app_id="+appID, nil)
				if r.Status != 200 {
					t.Fatalf("export: %s", r)
				}
				return string(r.Raw)
			}
			first := export(src.ID)
			file := filepath.Join(t.TempDir(), "keys.csv")
			if err := os.WriteFile(file, []byte(first), 0o600); err != nil {
				t.Fatal(err)
			}
			base := append([]string{"import", "keys", "--app", dst.ID, "--file", file}, args...)
			out := mustRun(t, base...)
			if !strings.Contains(out, "50 keys, 50 valid, 50 to add, 0 to update, 0 unchanged, 2 devices to bind") || !strings.Contains(out, "Dry run") {
				t.Fatalf("dry run:\n%s", out)
			}
			if got := export(dst.ID); strings.Count(got, "\n") != 1 {
				t.Fatalf("the dry run imported:\n%s", got)
			}
			out = mustRun(t, append(base, "--apply")...)
			if !strings.Contains(out, "50 keys added, 0 updated") {
				t.Fatalf("apply:\n%s", out)
			}
			if got := export(dst.ID); got != first {
				t.Fatalf("export after import:\n%s\nwant:\n%s", got, first)
			}

			// The same file again: every key is taken; exit 1, nothing changes.
			code, _, errOut := run(t, append(base, "--apply")...)
			if code != 1 || !strings.Contains(errOut, "line 2 "+keys[0]+" (license_key): the app already has key") || !strings.Contains(errOut, "50 problems") {
				t.Fatalf("re-import: exit %d\n%s", code, errOut)
			}
			bad := filepath.Join(t.TempDir(), "bad.csv")
			os.WriteFile(bad, []byte(strings.SplitN(first, "\n", 2)[0]+"\nNEW-1,unused,days,30,1,,,,{},,,false\nNEW-1,unused,days,30,1,,,,{},,,false\nNEW-2,fine,days,30,1,,,,{},,,false\n"), 0o600)
			code, _, errOut = run(t, append([]string{"import", "keys", "--app", src.ID, "--file", bad, "--apply"}, args...)...)
			if code != 1 || !strings.Contains(errOut, "line 3 NEW-1 (license_key): duplicate of line 2") || !strings.Contains(errOut, "line 4 NEW-2 (status)") {
				t.Fatalf("bad file: exit %d\n%s", code, errOut)
			}
			if got := export(src.ID); got != first {
				t.Fatal("a rejected import changed the keys")
			}
			code, _, errOut = run(t, append([]string{"import", "keys", "--app", "no-such-app", "--file", file}, args...)...)
			if code != 1 || !strings.Contains(errOut, "not found") {
				t.Fatalf("unknown app: exit %d\n%s", code, errOut)
			}
		})
	}
}

// import keys with JSON and --merge: the list reply of GET keys.php, saved
// as a .json file, imports without --format; a hosted-style CSV with
// --merge reports per key what changes, then bans a key (whose live
// session is refused at its next heartbeat) and adds a new one.
func TestImportKeysJSONMerge(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			o := kwtest.Options{Engine: engine, DataDir: t.TempDir()}
			args := []string{"--data", o.DataDir}
			if engine == "postgres" {
				o.DatabaseURL = kwtest.MigratedPostgresURL(t)
				args = append(args, "--database-url", o.DatabaseURL)
			}
			s := kwtest.Start(t, o)
			src, dst := s.CreateApp("Source"), s.CreateApp("Destination")
			keys := src.GenerateKeys(3, "days", 30, 2)
			src.Login(keys[0], "pc-1")
			list := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+src.ID, nil)
			dir := t.TempDir()
			file := filepath.Join(dir, "keys.json")
			if err := os.WriteFile(file, list.Raw, 0o600); err != nil {
				t.Fatal(err)
			}
			out := mustRun(t, append([]string{"import", "keys", "--app", dst.ID, "--file", file, "--apply"}, args...)...)
			if !strings.Contains(out, "(json)") || !strings.Contains(out, "3 keys added, 0 updated") {
				t.Fatalf("JSON import:\n%s", out)
			}
			live := dst.Login(keys[0], "pc-1")

			merge := filepath.Join(dir, "hosted.txt") // no telling extension: detected as CSV
			os.WriteFile(merge, []byte("Key,Status,Expires,HWID,Notes\n"+keys[0]+",Banned,2026-12-01 12:00:00,pc-1,chargeback\n"+
				"NEW-1,Active,2026-12-24 00:00:00,pc-9,null\n"), 0o600)
			base := append([]string{"import", "keys", "--app", dst.ID, "--file", merge}, args...)
			code, _, errOut := run(t, base...)
			if code != 1 || !strings.Contains(errOut, "line 2 "+keys[0]+" (license_key): the app already has key") {
				t.Fatalf("without --merge: exit %d\n%s", code, errOut)
			}
			out = mustRun(t, append(base, "--merge")...)
			if !strings.Contains(out, "(csv)") || !strings.Contains(out, "1 to add, 1 to update") ||
				!strings.Contains(out, "line 2: "+keys[0]+"\n  status: active → banned\n  note: (none) → chargeback\n") ||
				!strings.Contains(out, "Dry run") {
				t.Fatalf("merge dry run:\n%s", out)
			}
			if r := dst.Heartbeat(live, keys[0]); r.Body["success"] != true {
				t.Fatalf("a dry run ended the session: %v", r.Body)
			}
			out = mustRun(t, append(base, "--merge", "--apply")...)
			if !strings.Contains(out, "1 keys added, 1 updated") {
				t.Fatalf("merge:\n%s", out)
			}
			s.SeeOtherProcesses() // the import is another process's write
			kwtest.ExpectCode(t, dst.Heartbeat(live, keys[0]), 200, "BANNED")
			dst.Login("NEW-1", "pc-9")

			// A forced format that is not the file's is a problem, not a guess.
			code, _, errOut = run(t, append(base, "--format", "json")...)
			if code != 1 || !strings.Contains(errOut, "line 1") {
				t.Fatalf("--format json on a CSV: exit %d\n%s", code, errOut)
			}
		})
	}
}

// import keys with another secret key file than the server's (run from
// another machine on PostgreSQL, or with a stray --secret-key-file) stops
// before reading the app, naming the key the database is sealed with and
// the flag that gives it; nothing is imported.
func TestImportKeysWrongSecretKeyFile(t *testing.T) {
	clearEnv(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Keys")
		file := filepath.Join(t.TempDir(), "keys.csv")
		os.WriteFile(file, []byte("key,status,duration\nSKF-1,unused,30\n"), 0o600)
		args := []string{"import", "keys", "--app", app.ID, "--file", file, "--apply", "--data", s.DataDir,
			"--secret-key-file", filepath.Join(t.TempDir(), "other.key")}
		if s.DatabaseURL != "" {
			args = append(args, "--database-url", s.DatabaseURL)
		}
		code, _, errOut := run(t, args...)
		if code != 1 || !strings.Contains(errOut, "--secret-key-file") || !strings.Contains(errOut, "sealed with secret key") {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		if r := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID, nil); len(r.Body["keys"].([]any)) != 0 {
			t.Fatalf("imported with the wrong key file: %s", r)
		}
	})
}
