package adminapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// importFile posts body with contentType to keys-import.php as the test admin.
func importFile(s *kwtest.Server, appID, contentType, query string, body []byte) *kwtest.Reply {
	s.T.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {contentType}}
	return s.Do("POST", "/api/admin/keys-import.php?app_id="+appID+query, h, body)
}

func keyDetail(t *testing.T, s *kwtest.Server, appID, key string) map[string]any {
	t.Helper()
	r := s.Admin("GET", "/api/admin/keys.php?app_id="+appID+"&license_key="+key, nil)
	if r.Status != 200 {
		t.Fatalf("key %s: %s", key, r)
	}
	return r.Obj("key")
}

func sorted(s []string) []string { slices.Sort(s); return s }

func hwidsOf(k map[string]any) []string {
	var out []string
	for _, d := range k["devices"].([]any) {
		out = append(out, d.(map[string]any)["hwid"].(string))
	}
	return out
}

// TestImportHostedStyle: a hosted service's export (its own column names,
// Active, 2026-11-20 10:00:00, null, a lifetime marker) imports, and the
// keys then work as their rows say.
func TestImportHostedStyle(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Hosted")
		body := "Key,Status,Type,Expires,HWID,Notes,Days Remaining\n" +
			"HOST-1,Active,days,2026-11-20 10:00:00,pc-1,null,19\n" +
			"HOST-2,Unused,lifetime,null,,,\n" +
			"HOST-3,BANNED,days,2026-11-20,pc-3,refund,\n" +
			"HOST-4,active,,never,pc-4,,\n"
		r := s.ImportCSV(app.ID, "&dry_run=false", []byte(body))
		if r.Status != 200 {
			t.Fatalf("import: %s", r)
		}
		rep := r.Obj("report")
		if rep["imported"] != 4.0 || rep["format"] != "csv" || fmt.Sprint(rep["ignored"]) != "[days_remaining]" {
			t.Fatalf("report %v", rep)
		}
		k := keyDetail(t, s, app.ID, "HOST-1")
		if k["status"] != "active" || k["expires_at"] != "2026-11-20T10:00:00Z" || k["activated_at"] != "2026-11-01T12:00:00Z" ||
			k["note"] != "" || !reflect.DeepEqual(hwidsOf(k), []string{"pc-1"}) {
			t.Fatalf("HOST-1 = %v", k)
		}
		if k := keyDetail(t, s, app.ID, "HOST-2"); k["status"] != "unused" || k["key_type"] != "lifetime" || k["expires_at"] != nil {
			t.Fatalf("HOST-2 = %v", k)
		}
		if k := keyDetail(t, s, app.ID, "HOST-4"); k["key_type"] != "lifetime" || k["expires_at"] != nil {
			t.Fatalf("HOST-4 = %v", k)
		}
		app.Login("HOST-1", "pc-1")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": "HOST-1", "hwid": "pc-9"}), 200, "HWID_MISMATCH")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": "HOST-3", "hwid": "pc-3"}), 200, "BANNED")
		app.Login("HOST-2", "pc-2")
	})
}

// TestImportJSONBetweenServers: the list reply of GET keys.php on one
// keyward, posted as JSON to another, gives the same keys; a key's detail
// reply brings its devices with a merge.
func TestImportJSONBetweenServers(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		from := kwtest.Start(t, kwtest.Options{Engine: engine})
		to := kwtest.Start(t, kwtest.Options{Engine: engine})
		src := from.CreateApp("Source")
		days := src.GenerateKeys(6, "days", 30, 2)
		life := src.GenerateKeys(3, "lifetime", 0, 1)
		src.Login(days[0], "pc-a")
		src.Login(days[0], "pc-b")
		src.Login(life[0], "box")
		src.KeyAction("ban", days[1], nil)
		src.KeyAction("pause", life[1], nil)
		from.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": src.ID, "license_key": life[2], "note": "VIP\n\"gold\"",
			"features": map[string]any{"pro": true, "level": 2}})
		list := from.MustAdmin("GET", "/api/admin/keys.php?app_id="+src.ID, nil)
		dst := to.CreateApp("Destination")

		r := importFile(to, dst.ID, "application/json", "&dry_run=false", list.Raw)
		if r.Status != 200 || r.Obj("report")["imported"] != 9.0 || r.Obj("report")["format"] != "json" {
			t.Fatalf("import: %s", r)
		}
		got := to.MustAdmin("GET", "/api/admin/keys.php?app_id="+dst.ID, nil)
		strip := func(r *kwtest.Reply) []any {
			keys := r.Body["keys"].([]any)
			for _, k := range keys {
				delete(k.(map[string]any), "last_self_reset_at")
			}
			return keys
		}
		if a, b := strip(list), strip(got); !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Fatalf("keys differ after the import:\n%s\n%s", ja, jb)
		}

		// The list carries no devices; a key's detail reply does.
		detail := from.MustAdmin("GET", "/api/admin/keys.php?app_id="+src.ID+"&license_key="+days[0], nil)
		r = importFile(to, dst.ID, "text/plain", "&merge=true&dry_run=false", detail.Raw)
		if rep := r.Obj("report"); r.Status != 200 || rep["updated"] != 1.0 || rep["devices"] != 2.0 {
			t.Fatalf("merge of a detail reply: %s", r)
		}
		if k := keyDetail(t, to, dst.ID, days[0]); !reflect.DeepEqual(hwidsOf(k), []string{"pc-a", "pc-b"}) {
			t.Fatalf("devices after the merge: %v", k["devices"])
		}
		dst.Login(days[0], "pc-b")
		kwtest.ExpectCode(t, dst.Env("/api/auth/login.php", map[string]any{"license_key": days[1], "hwid": "x"}), 200, "BANNED")
		kwtest.ExpectCode(t, dst.Env("/api/auth/login.php", map[string]any{"license_key": life[1], "hwid": "x"}), 200, "PAUSED")
	})
}

// TestImportMerge: merge=true updates the keys the app has (only the fields
// the file gives; devices added, none removed; an activation made here
// kept), adds the rest, reports per key what changes, and a merged ban
// ends the live session at its next heartbeat as an admin ban does.
func TestImportMerge(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Merge")
		keys := app.GenerateKeys(4, "days", 30, 2)
		live := app.Login(keys[0], "pc-1") // will be banned by the file
		app.Login(keys[1], "pc-old")       // moved here: the file adds pc-new, keeps pc-old
		app.Login(keys[3], "pc-here")      // activated here, unused in the file
		body := "key,status,expires,devices,note,seats,duration\n" +
			keys[0] + ",Banned,2026-12-01 12:00:00,pc-1,refunded,2,30\n" +
			keys[1] + ",active,2027-01-01,pc-new,,2,30\n" +
			keys[2] + ",unused,,,vip,5,30\n" +
			keys[3] + ",unused,,,,2,30\n" +
			"NEW-1,active,2027-01-01,pc-x,,1,30\n"

		// Without merge the keys the app has are problems.
		r := s.ImportCSV(app.ID, "", []byte(body))
		if rep := r.Obj("report"); rep["error_count"] != 4.0 || rep["to_insert"] != 0.0 {
			t.Fatalf("without merge: %s", r)
		}

		r = s.ImportCSV(app.ID, "&merge=true", []byte(body))
		rep := r.Obj("report")
		if r.Status != 200 || rep["error_count"] != 0.0 || rep["to_insert"] != 1.0 || rep["to_update"] != 3.0 ||
			rep["unchanged"] != 1.0 || rep["devices"] != 2.0 || rep["dry_run"] != true || rep["merge"] != true {
			t.Fatalf("merge dry run: %s", r)
		}
		changes := map[string]string{}
		for _, c := range rep["changes"].([]any) {
			c := c.(map[string]any)
			for _, f := range c["fields"].([]any) {
				f := f.(map[string]any)
				changes[c["license_key"].(string)+" "+f["field"].(string)] = f["old"].(string) + " → " + f["new"].(string)
			}
		}
		want := map[string]string{
			keys[0] + " status":      "active → banned",
			keys[0] + " note":        " → refunded",
			keys[1] + " expires_at":  "2026-12-01T12:00:00Z → 2027-01-01T00:00:00Z",
			keys[1] + " hwids":       "pc-old → pc-new",
			keys[2] + " note":        " → vip",
			keys[2] + " max_devices": "2 → 5",
		}
		if !reflect.DeepEqual(changes, want) {
			t.Fatalf("changes %v\nwant %v", changes, want)
		}
		if k := keyDetail(t, s, app.ID, keys[0]); k["status"] != "active" {
			t.Fatalf("a dry run changed a key: %v", k)
		}

		r = s.ImportCSV(app.ID, "&merge=true&dry_run=false", []byte(body))
		if rep := r.Obj("report"); r.Status != 200 || rep["imported"] != 1.0 || rep["updated"] != 3.0 || rep["dry_run"] != false {
			t.Fatalf("merge: %s", r)
		}
		kwtest.ExpectCode(t, app.Heartbeat(live, keys[0]), 200, "BANNED")
		if ev := s.EventsOf(app.ID, "key.banned"); len(ev) != 1 || ev[0]["license_key"] != keys[0] {
			t.Fatalf("key.banned events %v", ev)
		}
		if k := keyDetail(t, s, app.ID, keys[1]); !reflect.DeepEqual(sorted(hwidsOf(k)), []string{"pc-new", "pc-old"}) || k["expires_at"] != "2027-01-01T00:00:00Z" {
			t.Fatalf("moved key after the merge: %v", k)
		}
		if k := keyDetail(t, s, app.ID, keys[3]); k["status"] != "active" || !reflect.DeepEqual(hwidsOf(k), []string{"pc-here"}) {
			t.Fatalf("a key activated here after an unused row: %v", k)
		}
		if k := keyDetail(t, s, app.ID, keys[2]); k["note"] != "vip" || k["max_devices"] != 5.0 || k["status"] != "unused" {
			t.Fatalf("merged unused key: %v", k)
		}
		app.Login("NEW-1", "pc-x")
		r = s.Admin("GET", "/api/admin/audit.php?action=key.ban&app_id="+app.ID, nil)
		if e, _ := r.Body["entries"].([]any); len(e) != 1 || e[0].(map[string]any)["target"] != keys[0] {
			t.Fatalf("the merged ban's audit entry: %s", r)
		}
		e := importAudit(t, s, s.AdminToken(), app.ID)
		if len(e) != 1 {
			t.Fatalf("audit %v", e)
		}
		if d := e[0].(map[string]any)["details"].(map[string]any); d["added"] != 1.0 || d["updated"] != 3.0 || d["merge"] != true {
			t.Fatalf("audit details %v", d)
		}

		// The same file again changes nothing.
		r = s.ImportCSV(app.ID, "&merge=true", []byte(body))
		if rep := r.Obj("report"); rep["to_update"] != 0.0 || rep["unchanged"] != 5.0 || len(rep["changes"].([]any)) != 0 {
			t.Fatalf("merge again: %s", r)
		}

		// A file that unbans: the key is active again and signs in.
		r = s.ImportCSV(app.ID, "&merge=true&dry_run=false", []byte("key,status\n"+keys[0]+",active\n"))
		if r.Status != 200 || r.Obj("report")["updated"] != 1.0 {
			t.Fatalf("unban by merge: %s", r)
		}
		app.Login(keys[0], "pc-1")
	})
}

// TestImportAmbiguous: two names of one field are refused with their line
// (a CSV header, a JSON object), and nothing is imported.
func TestImportAmbiguous(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Ambiguous")
		for _, c := range []struct {
			ct, body string
			line     float64
			field    string
		}{
			{"text/csv", "key,expires,expiry\nA,2027-01-01,2028-01-01\n", 1, "expires_at"},
			{"application/json", "[\n {\"key\": \"A\", \"type\": \"lifetime\"},\n {\"key\": \"B\",\n  \"hwid\": \"x\", \"devices\": [\"y\"], \"type\": \"lifetime\"}\n]", 3, "hwids"},
		} {
			r := importFile(s, app.ID, c.ct, "&dry_run=false", []byte(c.body))
			kwtest.ExpectCode(t, r, 400, "IMPORT_REJECTED")
			errs := r.Obj("report")["errors"].([]any)
			if e := errs[0].(map[string]any); len(errs) != 1 || e["line"] != c.line || e["field"] != c.field {
				t.Fatalf("%s: errors %v, want line %v on %s", c.ct, errs, c.line, c.field)
			}
		}
		if got := s.ExportCSV(t, app.ID); strings.Count(string(got), "\n") != 1 {
			t.Fatalf("a refused import imported:\n%s", got)
		}
	})
}
