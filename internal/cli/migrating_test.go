package cli

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// docStep is one command of a guide's code blocks, in document order: a
// keyward command line, or a curl request with the shell variable its
// output is assigned to (NAME=$(curl … | jq …)), if any.
type docStep struct {
	keyward []string // keyward's arguments (after "keyward" or "kw")
	curl    *docCurl
}

// docCurl is a curl command line as a guide shows it.
type docCurl struct {
	assign string // the variable assigned from its output
	method string
	url    string
	header http.Header
	body   string // -d / --data-binary, "@file" for a file
	line   string
}

// docSteps returns the keyward and curl commands of md's code blocks in
// order (lines joined over trailing backslashes, cut at a pipe or comment).
func docSteps(md string) []docStep {
	var out []docStep
	for _, block := range codeBlocks(md) {
		var cont string
		for _, l := range strings.Split(block, "\n") {
			if strings.HasSuffix(l, "\\") {
				cont += strings.TrimSuffix(l, "\\") + " "
				continue
			}
			if openQuote(cont + l) { // a quoted argument goes on over the line break
				cont += l + "\n"
				continue
			}
			line := strings.TrimSpace(cont + l)
			cont = ""
			words := splitWords(line)
			var cut []string
			for _, w := range words {
				if w == "|" || w == "&&" || w == ";" || strings.HasPrefix(w, "#") {
					break
				}
				cut = append(cut, w)
			}
			if len(cut) == 0 {
				continue
			}
			assign := ""
			if name, rest, ok := strings.Cut(cut[0], "=$("); ok {
				assign, cut[0] = name, rest
			}
			switch cut[0] {
			case "keyward", "kw", "./keyward":
				out = append(out, docStep{keyward: cut[1:]})
			case "curl":
				c := &docCurl{assign: assign, header: http.Header{}, line: line}
				for i := 1; i < len(cut); i++ {
					w := cut[i]
					switch {
					case w == "-s":
					case w == "-X" && i+1 < len(cut):
						i++
						c.method = cut[i]
					case strings.HasPrefix(w, "-X"):
						c.method = strings.TrimPrefix(w, "-X")
					case (w == "-H" || w == "--header") && i+1 < len(cut):
						i++
						k, v, _ := strings.Cut(cut[i], ":")
						c.header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
					case (w == "-d" || w == "--data" || w == "--data-binary") && i+1 < len(cut):
						i++
						c.body = cut[i]
						if w != "--data-binary" && strings.HasPrefix(c.body, "@") {
							c.body = "-d " + c.body // a file through -d loses its line breaks: refused below
						}
					case strings.HasPrefix(w, "http"):
						c.url = w
					}
				}
				if c.method == "" {
					c.method = "GET"
					if c.body != "" {
						c.method = "POST"
					}
				}
				out = append(out, docStep{curl: c})
			}
		}
	}
	return out
}

// The hosted service's export of the app's keys, as such services give it:
// their own column names, statuses in their case, "YYYY-MM-DD HH:MM:SS"
// times, null for none, a lifetime key, several devices in one cell, and
// a column keyward does not read. The test clock is 2026-11-01 12:00 UTC.
const hostedExport = `License Key,Status,Type,Duration,Activated At,Expires At,HWIDs,Days Remaining,Max Devices,Note
WALK1-AAAAA-AAAAA-AAAAA,Active,Timed,365,2026-10-20 10:00:00,2027-10-20 10:00:00,ALICE-PC;ALICE-LAPTOP,353,2,Alice
WALK2-AAAAA-AAAAA-AAAAA,Active,Timed,30,2026-10-21 10:00:00,2026-11-20 10:00:00,BOB-PC,19,1,
WALK3-AAAAA-AAAAA-AAAAA,Active,Lifetime,null,2026-03-01 08:30:00,null,CAROL-PC,null,1,
WALK4-AAAAA-AAAAA-AAAAA,Not Activated,Timed,30,null,null,,null,1,reseller batch
WALK5-AAAAA-AAAAA-AAAAA,Banned,Timed,30,2026-09-01 12:00:00,2026-10-01 12:00:00,MALLORY-PC,0,1,chargeback
WALK6-AAAAA-AAAAA-AAAAA,Expired,Timed,30,2026-09-01 10:00:00,2026-10-01 10:00:00,DAN-PC,0,1,
`

// hostedLater is the same export a week on, "on the hosted side": Alice's
// key was banned (a refund), Bob renewed, and a key was sold.
const hostedLater = `License Key,Status,Type,Duration,Activated At,Expires At,HWIDs,Days Remaining,Max Devices,Note
WALK1-AAAAA-AAAAA-AAAAA,Banned,Timed,365,2026-10-20 10:00:00,2027-10-20 10:00:00,ALICE-PC;ALICE-LAPTOP,353,2,Alice (refunded)
WALK2-AAAAA-AAAAA-AAAAA,Active,Timed,30,2026-10-21 10:00:00,2026-12-20 10:00:00,BOB-PC,49,1,
WALK3-AAAAA-AAAAA-AAAAA,Active,Lifetime,null,2026-03-01 08:30:00,null,CAROL-PC,null,1,
WALK4-AAAAA-AAAAA-AAAAA,Not Activated,Timed,30,null,null,,null,1,reseller batch
WALK5-AAAAA-AAAAA-AAAAA,Banned,Timed,30,2026-09-01 12:00:00,2026-10-01 12:00:00,MALLORY-PC,0,1,chargeback
WALK6-AAAAA-AAAAA-AAAAA,Expired,Timed,30,2026-09-01 10:00:00,2026-10-01 10:00:00,DAN-PC,0,1,
WALK7-AAAAA-AAAAA-AAAAA,Active,Timed,30,2026-10-30 09:15:00,2026-11-29 09:15:00,ERIN-PC,28,1,
`

// TestMigratingWalkthrough runs docs/migrating.md as a vendor does, in the
// guide's order, with the guide's own commands: every `keyward` and `curl`
// command of its code blocks is run (serve aside, which kwtest does) with
// its placeholders filled in, against a keyward and a second keyward
// playing the hosted service, on each engine. Sign in; create the app
// adopting the hosted app's secret; import the hosted-style CSV export
// (dry run, apply; the API's dry run too); re-import a later export with
// --merge (dry run, apply, again: nothing changes); on the hosted side make
// a viewer's access token; set the upstream; count the keys to come; merge
// a final export and turn the upstream off. Along the way a shipped client
// (legacyClient: the legacy generation's envelope wire, written from
// sdk-compat.md, with the hosted app's secret and nothing else changed but
// its base URL) signs in and beats with the imported keys, is refused as
// the hosted service refused them, sees a ban from the merged export at its
// next heartbeat, signs in with a key only the hosted service knows,
// imported on first use with its device, and with the quiet customer's key
// after the final merge. Every keyward command the guide names must parse.
// A command the test does not expect, or an expected one the guide lost,
// fails it.
func TestMigratingWalkthrough(t *testing.T) {
	doc := repoFile(t, "docs/migrating.md")
	// Every keyward command the guide names, in code or in its text, parses.
	// (--file must name a file that exists: one stands in for the guide's.)
	stand := filepath.Join(t.TempDir(), "keys.csv")
	if err := os.WriteFile(stand, []byte(hostedExport), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range docCommands(doc) {
		for i := range args {
			if i > 0 && args[i-1] == "--file" {
				args[i] = stand
			}
		}
		if _, _, err := parseCommand(t, nil, args); err != nil {
			t.Errorf("docs/migrating.md: keyward %s: %v", strings.Join(args, " "), err)
		}
	}
	clearEnv(t)
	steps := docSteps(doc)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		up := kwtest.Start(t, kwtest.Options{Engine: engine}) // the hosted service
		kw := kwtest.Start(t, kwtest.Options{Engine: engine})
		dbArgs := []string{"--data", kw.DataDir}
		if kw.DatabaseURL != "" {
			dbArgs = append(dbArgs, "--database-url", kw.DatabaseURL)
		}

		// The hosted app: its secret is in every shipped copy; the keys of
		// the export, and one key sold after it, activated on a customer's
		// machine, that only lazy migration will bring.
		hosted := up.CreateApp("Photo Tool")
		h := http.Header{"Authorization": {"Bearer " + up.AdminToken()}, "Content-Type": {"text/csv"}}
		if r := up.Do("POST", "/api/admin/keys-import.php?dry_run=false&app_id="+hosted.ID, h, []byte(hostedExport)); r.Status != 200 {
			t.Fatalf("hosted keys: %s", r)
		}
		// What later.csv says happened on the hosted side, happens there.
		if r := up.Do("POST", "/api/admin/keys-import.php?dry_run=false&merge=true&app_id="+hosted.ID, h, []byte(hostedLater)); r.Status != 200 || r.Obj("report")["updated"] != 2.0 {
			t.Fatalf("hosted changes: %s", r)
		}
		lateKey := hosted.GenerateKeys(1, "days", 30, 1)[0]
		hosted.Login(lateKey, "FRANK-PC")
		// A customer who never signs in to keyward before the end.
		quietKey := hosted.GenerateKeys(1, "lifetime", 0, 1)[0]
		hosted.Login(quietKey, "HEIDI-PC")
		// A shipped copy works against the hosted service today.
		newLegacyClient(t, up, hosted.Secret).Login("WALK3-AAAAA-AAAAA-AAAAA", "CAROL-PC")
		export := up.Admin("GET", "/api/admin/keys.php?action=export&app_id="+hosted.ID, nil) // its export at the end
		if export.Status != 200 {
			t.Fatalf("hosted export: %s", export)
		}
		final := export.Raw

		dir := t.TempDir()
		files := map[string]string{}
		for name, text := range map[string]string{"keys.csv": hostedExport, "later.csv": hostedLater, "final.csv": string(final)} {
			files[name] = filepath.Join(dir, name)
			if err := os.WriteFile(files[name], []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		const viewerPassword = "a long password for the viewer"
		vars := map[string]string{
			"$HOSTED_OWNER_TOKEN": up.AdminToken(),
			"HOSTED_APP_ID":       hosted.ID,
		}
		fill := func(s string) string {
			pairs := []string{
				"https://licensing.example.com", kw.URL,
				"https://hosted.example.com", up.URL,
				`"password":"…"`, `"password":"` + kwtest.AdminPassword + `"`,
				"<a long password>", viewerPassword,
				"<the 64 hex characters>", hosted.Secret,
			}
			for k, v := range vars {
				pairs = append(pairs, k, v)
			}
			return strings.NewReplacer(pairs...).Replace(s)
		}
		var shipped *legacyClient // the shipped client, pointed at keyward
		var aliceSession string

		done := map[string]bool{}
		for _, st := range steps {
			if st.keyward != nil {
				args := make([]string, len(st.keyward))
				for i, a := range st.keyward {
					args[i] = fill(a)
				}
				if args[0] == "serve" {
					continue // kwtest runs keyward
				}
				if len(args) < 2 || args[0] != "import" || args[1] != "keys" {
					t.Fatalf("docs/migrating.md: keyward %s: a command the walkthrough does not know; add it here", strings.Join(args, " "))
				}
				var file string
				for i := range args {
					if args[i] == "--file" && i+1 < len(args) {
						file = args[i+1]
						if files[file] == "" {
							t.Fatalf("docs/migrating.md: keyward %s: no such file in the walkthrough", strings.Join(args, " "))
						}
						args[i+1] = files[file]
					}
				}
				flags := strings.Join(args[2:], " ")
				name := "import " + file + flagNames(args)
				t.Logf("keyward %s", flags)
				out := mustRunAt(t, kw.Clock.Now, append(args, dbArgs...)...)
				done[name] = true
				switch name {
				case "import keys.csv":
					want(t, out, "6 keys, 6 valid, 6 to add, 0 to update, 0 unchanged, 6 devices to bind", "not read: days_remaining", "Dry run")
					kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK1-AAAAA-AAAAA-AAAAA", "hwid": "ALICE-PC"}), 200, "INVALID_KEY")
				case "import keys.csv --apply":
					want(t, out, "6 keys added, 0 updated")
					// The shipped client, with nothing but its base URL changed.
					aliceSession = shipped.Login("WALK1-AAAAA-AAAAA-AAAAA", "ALICE-LAPTOP")
					if r := shipped.Heartbeat(aliceSession, "WALK1-AAAAA-AAAAA-AAAAA"); r.Body["success"] != true {
						t.Fatalf("heartbeat: %s", r)
					}
					r := shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK2-AAAAA-AAAAA-AAAAA", "hwid": "BOB-PC"})
					if r.Body["success"] != true || r.Obj("user")["expires_at"] != "2026-11-20T10:00:00Z" {
						t.Fatalf("Bob's key: %v", r.Body)
					}
					shipped.Login("WALK3-AAAAA-AAAAA-AAAAA", "CAROL-PC")
					shipped.Login("WALK4-AAAAA-AAAAA-AAAAA", "NEW-PC")
					kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK3-AAAAA-AAAAA-AAAAA", "hwid": "SOMEONE-ELSE"}), 200, "HWID_MISMATCH")
					kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK5-AAAAA-AAAAA-AAAAA", "hwid": "MALLORY-PC"}), 200, "BANNED")
					kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK6-AAAAA-AAAAA-AAAAA", "hwid": "DAN-PC"}), 200, "EXPIRED")
				case "import later.csv --merge":
					want(t, out, "7 keys, 7 valid, 1 to add, 2 to update, 4 unchanged",
						"WALK1-AAAAA-AAAAA-AAAAA\n  status: active → banned\n", "WALK2-AAAAA-AAAAA-AAAAA\n  expires_at: 2026-11-20T10:00:00Z → 2026-12-20T10:00:00Z\n", "Dry run")
					if r := shipped.Heartbeat(aliceSession, "WALK1-AAAAA-AAAAA-AAAAA"); r.Body["success"] != true {
						t.Fatalf("a dry run ended a session: %s", r)
					}
				case "import later.csv --merge --apply":
					want(t, out, "1 keys added, 2 updated, 4 unchanged")
					kw.SeeOtherProcesses() // the import is another process's write
					kwtest.ExpectCode(t, shipped.Heartbeat(aliceSession, "WALK1-AAAAA-AAAAA-AAAAA"), 200, "BANNED")
					shipped.Login("WALK7-AAAAA-AAAAA-AAAAA", "ERIN-PC")
					// WALK4 was activated here after the export said unused: kept.
					shipped.Login("WALK4-AAAAA-AAAAA-AAAAA", "NEW-PC")
					again := mustRunAt(t, kw.Clock.Now, append(args, dbArgs...)...)
					want(t, again, "0 keys added, 0 updated, 7 unchanged")
				case "import final.csv --merge":
					// Every key keyward has — imported, merged, or
					// imported on first use — is as the hosted service
					// has it; only the quiet customer's key is new.
					want(t, out, "9 keys, 9 valid, 1 to add, 0 to update, 8 unchanged", "Dry run")
				case "import final.csv --merge --apply":
					want(t, out, "1 keys added, 0 updated, 8 unchanged")
					shipped.Login(quietKey, "HEIDI-PC")
				default:
					t.Fatalf("docs/migrating.md: keyward %s: a command the walkthrough does not know; add it here", flags)
				}
				continue
			}

			c := st.curl
			if strings.HasPrefix(c.body, "-d @") {
				t.Fatalf("docs/migrating.md: %s: sends a file with -d, which drops its line breaks", c.line)
			}
			body := fill(c.body)
			if name, ok := strings.CutPrefix(body, "@"); ok {
				if files[name] == "" {
					t.Fatalf("docs/migrating.md: %s: no such file in the walkthrough", c.line)
				}
				b, _ := os.ReadFile(files[name])
				body = string(b)
			}
			u := fill(c.url)
			hd := http.Header{}
			for k, v := range c.header {
				hd.Set(k, fill(v[0]))
			}
			srv := kw
			if strings.HasPrefix(u, up.URL) {
				srv = up
			} else if !strings.HasPrefix(u, kw.URL) {
				t.Fatalf("docs/migrating.md: %s: names neither keyward nor the hosted service", c.line)
			}
			if strings.Contains(u+body+strings.Join(hd.Values("Authorization"), ""), "$") || regexp.MustCompile(`[A-Z_]{6,}`).MatchString(strings.ReplaceAll(u, "APP_ID", "")) {
				t.Fatalf("docs/migrating.md: %s: a placeholder the walkthrough cannot fill (%s %s)", c.line, u, body)
			}
			path := strings.TrimPrefix(u, srv.URL)
			t.Logf("curl -X%s %s", c.method, path)
			r := srv.Do(c.method, path, hd, []byte(body))
			if r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("docs/migrating.md: %s\n→ %s", c.line, r)
			}
			route := c.method + " " + strings.SplitN(path, "?", 2)[0]
			if srv == up {
				route = "hosted " + route
			}
			if route == "PUT /api/admin/apps.php" && !strings.Contains(body, "upstream_url") {
				route += " (off)"
			}
			done[route] = true
			switch route {
			case "POST /api/admin/login.php":
				vars["$"+c.assign] = r.Str("token")
			case "POST /api/admin/apps.php":
				app := r.Obj("app")
				if app["secret"] != hosted.Secret {
					t.Fatalf("the app did not adopt the hosted secret: %s", r)
				}
				vars["APP_ID"] = app["app_id"].(string)
				shipped = newLegacyClient(t, kw, hosted.Secret)
				kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "WALK1-AAAAA-AAAAA-AAAAA", "hwid": "ALICE-PC"}), 200, "INVALID_KEY")
			case "POST /api/admin/keys-import.php":
				// The same file through the API, after the command line
				// imported it: read alike, row for row, and refused key for key.
				rep := r.Obj("report")
				if rep["dry_run"] != true || rep["rows"] != 6.0 || rep["error_count"] != 6.0 || rep["imported"] != 0.0 ||
					!strings.Contains(string(r.Raw), "the app already has key") {
					t.Fatalf("the API's import: %s", r)
				}
			case "hosted POST /api/admin/members.php":
			case "hosted POST /api/admin/login.php":
				vars["$"+c.assign] = r.Str("token")
			case "hosted POST /api/admin/tokens.php":
				vars["HOSTED_TOKEN"] = r.Obj("token")["token"].(string)
			case "PUT /api/admin/apps.php":
				s := r.Obj("app")["settings"].(map[string]any)
				if s["upstream_enabled"] != true || s["upstream_token_set"] != true || strings.Contains(string(r.Raw), vars["HOSTED_TOKEN"]) {
					t.Fatalf("upstream settings: %s", r)
				}
				// A key only the hosted service knows: imported on first
				// use with its device, then answered as keyward's own.
				r := shipped.Env("/api/auth/login.php", map[string]any{"license_key": lateKey, "hwid": "FRANK-PC"})
				if r.Body["success"] != true || r.Obj("user")["expires_at"] != "2026-12-01T12:00:00Z" {
					t.Fatalf("lazy migration: %v", r.Body)
				}
				kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": lateKey, "hwid": "GRACE-PC"}), 200, "HWID_MISMATCH")
				kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": "NOWHERE-AAAAA-AAAAA", "hwid": "X"}), 200, "INVALID_KEY")
			case "PUT /api/admin/apps.php (off)":
				// Lookups stop: a key the hosted service sells now is unknown here.
				s := r.Obj("app")["settings"].(map[string]any)
				if s["upstream_enabled"] != false {
					t.Fatalf("upstream off: %s", r)
				}
				newer := hosted.GenerateKeys(1, "days", 30, 1)[0]
				kwtest.ExpectCode(t, shipped.Env("/api/auth/login.php", map[string]any{"license_key": newer, "hwid": "IVAN-PC"}), 200, "INVALID_KEY")
				shipped.Login(lateKey, "FRANK-PC") // what was imported stays
			case "GET /api/admin/apps.php":
				// The hosted service lists 9 keys; the quiet customer's is
				// the one still to come.
				if r.Body["imported"] != 1.0 || r.Body["remaining"] != 1.0 || r.Body["upstream_keys"] != 9.0 || r.Body["complete"] != true {
					t.Fatalf("upstream-status: %s", r)
				}
			default:
				t.Fatalf("docs/migrating.md: %s: a request the walkthrough does not know; add it here", c.line)
			}
		}
		for _, step := range []string{
			"POST /api/admin/login.php", "POST /api/admin/apps.php",
			"import keys.csv", "import keys.csv --apply", "POST /api/admin/keys-import.php",
			"import later.csv --merge", "import later.csv --merge --apply",
			"hosted POST /api/admin/members.php", "hosted POST /api/admin/login.php", "hosted POST /api/admin/tokens.php",
			"PUT /api/admin/apps.php", "GET /api/admin/apps.php",
			"import final.csv --merge", "import final.csv --merge --apply", "PUT /api/admin/apps.php (off)",
		} {
			if !done[step] {
				t.Errorf("docs/migrating.md no longer shows the step %q", step)
			}
		}
		// The key imported on first use is audited as such.
		r := kw.MustAdmin("GET", "/api/admin/audit.php?action=key.upstream_import&app_id="+vars["APP_ID"], nil)
		if e, _ := r.Body["entries"].([]any); len(e) != 1 {
			t.Fatalf("audit of the lazy import: %s", r)
		}
		var report struct{ Entries []json.RawMessage }
		_ = json.Unmarshal(kw.MustAdmin("GET", "/api/admin/audit.php?action=key.import&app_id="+vars["APP_ID"], nil).Raw, &report)
		if len(report.Entries) != 4 {
			t.Fatalf("%d key.import audit entries, want 4 (each --apply: the import, the merge, the merge again and the final one; dry runs write none)", len(report.Entries))
		}
	})
}

// openQuote reports whether s ends inside a quoted string (as splitWords
// reads quotes).
func openQuote(s string) bool {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		}
	}
	return quote != 0
}

// flagNames is the --apply/--merge flags of an import command line, in
// order, as " --merge --apply".
func flagNames(args []string) string {
	var b strings.Builder
	for _, a := range args {
		if a == "--merge" || a == "--apply" {
			b.WriteString(" " + a)
		}
	}
	return b.String()
}

// want fails the test unless out holds each of subs.
func want(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Fatalf("output lacks %q:\n%s", s, out)
		}
	}
}

// legacyClient is a shipped client of the legacy generation as
// ../shared/spec/sdk-compat.md §1 and §5 describe it (pwfauth-python 1.1:
// compact JSON, its User-Agent), written here from the spec rather than on
// keyward's envelope package, so the walkthrough's "shipped client" does not
// share the server's code: enc_key = SHA256("enc:"+secret), mac_key =
// SHA256("mac:"+secret), AES-256-CBC with PKCS#7 under a random IV, p =
// base64(IV‖ciphertext), s = hex HMAC-SHA256(mac_key, p + decimal t).
type legacyClient struct {
	t        *testing.T
	s        *kwtest.Server // where its base URL points
	secret   string
	enc, mac [32]byte
}

func newLegacyClient(t *testing.T, s *kwtest.Server, secret string) *legacyClient {
	return &legacyClient{t: t, s: s, secret: secret,
		enc: sha256.Sum256([]byte("enc:" + secret)), mac: sha256.Sum256([]byte("mac:" + secret))}
}

func (c *legacyClient) sign(p string, ts int64) string {
	m := hmac.New(sha256.New, c.mac[:])
	m.Write([]byte(p + strconv.FormatInt(ts, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// Env posts inner sealed to path and opens the enveloped reply; a plain
// reply claiming success is a forgery to these clients and fails the test.
func (c *legacyClient) Env(path string, inner map[string]any) *kwtest.Reply {
	c.t.Helper()
	plain, err := json.Marshal(inner)
	if err != nil {
		c.t.Fatal(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	plain = append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(c.enc[:])
	out := make([]byte, aes.BlockSize+len(plain))
	rand.Read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], plain)
	p := base64.StdEncoding.EncodeToString(out)
	now := c.s.Clock.Now().Unix()
	body := fmt.Sprintf(`{"p":%q,"t":%d,"s":%q}`, p, now, c.sign(p, now))
	h := http.Header{"X-App-Secret": {c.secret}, "Content-Type": {"application/json"},
		"User-Agent": {"pwfauth-python/1.1.0 (+https://pwfauth.com)"}}
	r := c.s.Do("POST", path, h, []byte(body))
	var env struct {
		P string `json:"p"`
		T *int64 `json:"t"`
		S string `json:"s"`
	}
	if json.Unmarshal(r.Raw, &env) != nil || env.P == "" || env.T == nil || env.S == "" {
		if r.Body["success"] == true {
			c.t.Fatalf("%s: a plain success on an envelope route, a forgery to a shipped client: %s", path, r)
		}
		return r
	}
	if !hmac.Equal([]byte(c.sign(env.P, *env.T)), []byte(env.S)) || *env.T-now > 300 || now-*env.T > 300 {
		c.t.Fatalf("%s: the reply's envelope does not verify: %s", path, r)
	}
	raw, err := base64.StdEncoding.DecodeString(env.P)
	if err != nil || len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		c.t.Fatalf("%s: the reply's p is no ciphertext: %s", path, r)
	}
	dec := make([]byte, len(raw)-aes.BlockSize)
	cipher.NewCBCDecrypter(block, raw[:aes.BlockSize]).CryptBlocks(dec, raw[aes.BlockSize:])
	n := int(dec[len(dec)-1])
	if n < 1 || n > aes.BlockSize {
		c.t.Fatalf("%s: bad padding in the reply", path)
	}
	r.Body, r.Sealed = nil, true
	if err := json.Unmarshal(dec[:len(dec)-n], &r.Body); err != nil {
		c.t.Fatalf("%s: the inner reply is no JSON object: %v", path, err)
	}
	return r
}

// Login signs in as the clients do and returns the session_id, which must
// be a string, with heartbeat_interval an integer (sdk-compat §0.3).
func (c *legacyClient) Login(key, hwid string) string {
	c.t.Helper()
	r := c.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": hwid})
	sid, ok := r.Body["session_id"].(string)
	iv, _ := r.Body["heartbeat_interval"].(float64)
	if r.Body["success"] != true || !ok || sid == "" || iv != float64(int(iv)) || iv < 1 {
		c.t.Fatalf("login %s on %s: %s %v", key, hwid, r, r.Body)
	}
	return sid
}

// Heartbeat beats a session as the clients do.
func (c *legacyClient) Heartbeat(sessionID, key string) *kwtest.Reply {
	c.t.Helper()
	return c.Env("/api/auth/heartbeat.php", map[string]any{"session_id": sessionID, "license_key": key})
}
