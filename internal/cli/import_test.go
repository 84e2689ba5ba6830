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
			os.WriteFile(bad, []byte(strings.SplitN(first, "\n", 2)[0]+"\nNEW-1,unused,days,30,1,,,,{},,\nNEW-1,unused,days,30,1,,,,{},,\nNEW-2,fine,days,30,1,,,,{},,\n"), 0o600)
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
