package adminapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// TestImportRoundTrip: a few thousand keys in every state, with devices,
// notes and features, exported, imported into a fresh app (dry run first)
// and exported again give the same bytes.
func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		src := s.CreateApp("Source")
		days := src.GenerateKeys(2000, "days", 30, 3)
		life := src.GenerateKeys(1000, "lifetime", 0, 1)
		dst := s.CreateApp("Destination")
		for i, k := range days[:120] {
			if i == 60 { // the first sixty will have expired at the export
				s.Clock.Advance(10 * 24 * time.Hour)
			}
			src.Login(k, fmt.Sprintf("pc-z%d", i))
			if i%3 == 0 { // a second device, bound later, sorting before the first
				s.Clock.Advance(time.Second)
				src.Login(k, fmt.Sprintf("pc-a%d", i))
			}
		}
		for _, k := range life[:40] {
			src.Login(k, "box-"+k)
		}
		s.Clock.Advance(25 * 24 * time.Hour)
		tok := s.LoginAdmin("admin", kwtest.AdminPassword) // the first token has expired
		adm := func(method, path string, body map[string]any) {
			t.Helper()
			if r := s.AdminAs(tok, method, path, body); r.Status != 200 {
				t.Fatalf("%s %s: %s", method, path, r)
			}
		}
		for i := 0; i < 30; i++ {
			adm("POST", "/api/admin/keys.php?action=ban", map[string]any{"app_id": src.ID, "license_key": days[i*4]})
			adm("POST", "/api/admin/keys.php?action=pause", map[string]any{"app_id": src.ID, "license_key": life[200+i]})
		}
		notes := []string{"VIP, \"gold\"", "line1\nline2", "plain", "ünïcode ✓"}
		for i := 0; i < 60; i++ {
			adm("PUT", "/api/admin/keys.php", map[string]any{"app_id": src.ID, "license_key": life[i*7], "note": notes[i%len(notes)],
				"features": map[string]any{"pro": i%2 == 0, "level": i, "tier": "t" + fmt.Sprint(i)}})
		}

		first := s.ExportCSV(t, src.ID, tok)
		if !strings.Contains(string(first), ",expired,") || !strings.Contains(string(first), ",banned,") ||
			!strings.Contains(string(first), ",paused,") || !strings.Contains(string(first), ";pc-a") {
			t.Fatalf("the fixture lacks a state:\n%s", first[:2000])
		}

		r := s.ImportCSV(dst.ID, "", first, tok)
		if r.Status != 200 {
			t.Fatalf("dry run: %s", r)
		}
		rep := r.Obj("report")
		if rep["dry_run"] != true || rep["rows"] != 3000.0 || rep["valid"] != 3000.0 || rep["to_insert"] != 3000.0 ||
			rep["imported"] != 0.0 || rep["error_count"] != 0.0 || rep["devices"] != 120.0+40+40 {
			t.Fatalf("dry-run report %v", rep)
		}
		if got := s.ExportCSV(t, dst.ID, tok); strings.Count(string(got), "\n") != 1 {
			t.Fatalf("a dry run imported keys:\n%s", got)
		}
		r = s.ImportCSV(dst.ID, "&dry_run=false", first, tok)
		if r.Status != 200 || r.Obj("report")["imported"] != 3000.0 {
			t.Fatalf("import: %s", r)
		}
		second := s.ExportCSV(t, dst.ID, tok)
		if string(second) != string(first) {
			a, b := strings.Split(string(first), "\n"), strings.Split(string(second), "\n")
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					t.Fatalf("export → import → export differs at line %d:\n%s\n%s", i+1, a[i], b[i])
				}
			}
			t.Fatalf("export → import → export: %d lines, then %d", len(a), len(b))
		}
		if e := importAudit(t, s, tok, dst.ID); len(e) != 1 || e[0].(map[string]any)["target"] != "3000 keys added, 0 updated" {
			t.Fatalf("audit %v", e)
		}

		// The imported keys work: the bound device and a new one within the
		// seats sign in, a key that expired and a banned one are refused.
		for _, hwid := range []string{"pc-z61", "pc-new"} {
			if r := dst.Env("/api/auth/login.php", map[string]any{"license_key": days[61], "hwid": hwid}); r.Body["success"] != true {
				t.Fatalf("login %s with an imported key: %v", hwid, r.Body)
			}
		}
		kwtest.ExpectCode(t, dst.Env("/api/auth/login.php", map[string]any{"license_key": days[1], "hwid": "pc-z1"}), 200, "EXPIRED")
		kwtest.ExpectCode(t, dst.Env("/api/auth/login.php", map[string]any{"license_key": days[0], "hwid": "pc-z0"}), 200, "BANNED")

		// Importing the same file again: every row is a duplicate.
		r = s.ImportCSV(dst.ID, "&dry_run=false", first, tok)
		kwtest.ExpectCode(t, r, 400, "IMPORT_REJECTED")
		if rep := r.Obj("report"); rep["error_count"] != 3000.0 || rep["to_insert"] != 0.0 {
			t.Fatalf("re-import report %v", rep)
		}
	})
}

// TestImportRejects: malformed rows and duplicates are reported with their
// line numbers, and nothing is imported.
func TestImportRejects(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Import")
		existing := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		body := "license_key,status,key_type,duration,max_devices,activated_at,expires_at,note,features,hwids,created_at\n" +
			"GOOD-1,unused,days,30,1,,,,{},,2026-11-01T12:00:00Z\n" +
			"GOOD-1,unused,days,30,1,,,,{},,\n" +
			existing + ",unused,lifetime,0,1,,,,{},,\n" +
			"GOOD-2,sleeping,days,30,1,,,,{},,\n" +
			"GOOD-3,active,days,30,0,2026-11-01T12:00:00Z,soon,,{},,\n" +
			"GOOD-4,unused,days,30,1,,,,\"{\"\"a\"\":[1]}\",,\n"
		r := s.ImportCSV(app.ID, "", []byte(body))
		if r.Status != 200 {
			t.Fatalf("dry run: %s", r)
		}
		rep := r.Obj("report")
		type le struct {
			line  float64
			field string
		}
		var got []le
		for _, e := range rep["errors"].([]any) {
			m := e.(map[string]any)
			f, _ := m["field"].(string)
			got = append(got, le{m["line"].(float64), f})
		}
		want := []le{{3, "license_key"}, {4, "license_key"}, {5, "status"}, {6, "max_devices"}, {6, "expires_at"}, {7, "features"}}
		if fmt.Sprint(got) != fmt.Sprint(want) || rep["rows"] != 6.0 || rep["valid"] != 1.0 || rep["to_insert"] != 0.0 {
			t.Fatalf("report %v, want errors at %v", rep, want)
		}

		r = s.ImportCSV(app.ID, "&dry_run=false", []byte(body))
		kwtest.ExpectCode(t, r, 400, "IMPORT_REJECTED")
		if rep := r.Obj("report"); rep["error_count"] != 6.0 {
			t.Fatalf("rejected report %v", rep)
		}
		if got := s.ExportCSV(t, app.ID); strings.Count(string(got), "\n") != 2 {
			t.Fatalf("a rejected import changed the keys:\n%s", got)
		}
		if e := importAudit(t, s, s.AdminToken(), app.ID); len(e) != 0 {
			t.Fatalf("a rejected import was audited: %v", e)
		}

		// An ambiguous header, JSON instead of CSV, a bad dry_run.
		r = s.ImportCSV(app.ID, "", []byte("key,License Key,status\nA,A,unused\n"))
		if errs := r.Obj("report")["errors"].([]any); r.Status != 200 || len(errs) == 0 || errs[0].(map[string]any)["line"] != 1.0 {
			t.Fatalf("bad header: %s", r)
		}
		// A JSON object that is no key file is a problem at line 1.
		r = s.Admin("POST", "/api/admin/keys-import.php?app_id="+app.ID, map[string]any{"csv": "x"})
		if errs := r.Obj("report")["errors"].([]any); r.Status != 200 || len(errs) != 1 || errs[0].(map[string]any)["line"] != 1.0 {
			t.Fatalf("a JSON object without keys: %s", r)
		}
		// A file with another content type — curl -d's form type, none at
		// all (curl -T), XML — is told which to send, not that it is no JSON.
		for _, ct := range []string{"application/xml", "application/x-www-form-urlencoded", ""} {
			h := http.Header{"Authorization": {"Bearer " + s.AdminToken()}}
			if ct != "" {
				h.Set("Content-Type", ct)
			}
			r := s.Do("POST", "/api/admin/keys-import.php?app_id="+app.ID, h, []byte(body))
			r.JSONFail(t, 400, "MISSING_FIELDS")
			if m := r.Str("message"); !strings.Contains(m, "Content-Type: text/csv") {
				t.Fatalf("content type %q: the refusal does not say which to send: %s", ct, r)
			}
		}
		s.ImportCSV(app.ID, "&dry_run=maybe", []byte(body)).JSONFail(t, 400, "MISSING_FIELDS")
		s.ImportCSV(app.ID, "&merge=perhaps", []byte(body)).JSONFail(t, 400, "MISSING_FIELDS")
		s.ImportCSV(app.ID, "&format=xml", []byte(body)).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

func importAudit(t *testing.T, s *kwtest.Server, tok, appID string) []any {
	t.Helper()
	r := s.AdminAs(tok, "GET", "/api/admin/audit.php?action=key.import&app_id="+appID, nil)
	if r.Status != 200 {
		t.Fatalf("audit: %s", r)
	}
	e, _ := r.Body["entries"].([]any)
	return e
}
