package dashboard_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/licensefile"
)

// TestBrowserLicenseFiles: the key page's "License files" section lists the
// files issued for a key — an online file of a floating key (a borrowed
// seat) and one from an air-gapped activation request through the admin
// API — with device, source, issued, valid until and state; the Revoke
// button asks in the confirm dialog, marks the file revoked (the API says
// so) and the device's next file request is refused LICENSE_FILE_REVOKED;
// a returned borrow shows "returned"; the Floating seats count includes
// the seats borrowed by files. Both engines.
func TestBrowserLicenseFiles(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := newSite(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Offline Works")
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"offline_enabled": true, "offline_ttl_hours": 72}})
		r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 3, "floating": true})
		key := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)

		online := app.Env("/api/auth/license-file.php", map[string]any{"license_key": key, "hwid": "LAPTOP-ONLINE"})
		if online.Body["success"] != true {
			t.Fatalf("license-file: %s", online)
		}
		returned := app.Env("/api/auth/license-file.php", map[string]any{"license_key": key, "hwid": "LAPTOP-RETURNED"})
		if r := app.Env("/api/auth/license-file.php", map[string]any{"session_id": returned.Str("session_id"), "return": true}); r.Body["success"] != true {
			t.Fatalf("return: %s", r)
		}
		req, err := licensefile.NewRequest(app.ID, key, "PRESS-AIRGAP", s.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		text, err := licensefile.MakeRequest(req, app.Secret)
		if err != nil {
			t.Fatal(err)
		}
		s.MustAdmin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": text})

		b := newBrowser(t, s, 1280, 900)
		b.open("/")
		b.fill("#username", "admin")
		b.fill("#password", kwtest.AdminPassword)
		b.click(`form[action="/dashboard/login"] button[type=submit]`)
		b.clean("sign-in")

		keyPath := "/dashboard/apps/" + url.PathEscape(app.ID) + "/keys/" + url.PathEscape(key)
		b.open(keyPath)
		b.mustSee("key page", "License files")
		rows := b.text("#klf-table")
		for _, want := range []string{"Device", "Source", "Issued", "Valid until", "State", "LAPTOP-ONLINE", "LAPTOP-RETURNED", "PRESS-AIRGAP",
			"online", "admin", "borrowed seat", "returned", "issued"} {
			if !strings.Contains(rows, want) {
				t.Fatalf("license files table lacks %q: %s", want, rows)
			}
		}
		if got := b.text("#kfs-count"); got != "2/3 in use" {
			t.Fatalf("seat count shows %q, want 2/3 in use (two borrowed files)", got)
		}
		if got := b.text("#kfs-borrowed"); got != "2 borrowed by license files" {
			t.Fatalf("borrowed seats show %q", got)
		}
		b.clean("key page")

		id := online.Str("file_id")
		b.run("press Revoke", chromedp.Click(chromedp.CSS(`#klf-`+id+` button[type=submit]`), chromedp.NodeVisible),
			chromedp.WaitVisible(chromedp.CSS("#kw-confirm")))
		if got := b.text("#kw-confirm-text"); !strings.Contains(got, "Revoke this license file?") || !strings.Contains(got, "stays valid offline") {
			t.Fatalf("confirmation dialog says %q", got)
		}
		b.click("#kw-confirm [data-dialog-ok]")
		b.mustSee("revoked", "License file revoked.")
		if row := b.text("#klf-" + id); !strings.Contains(row, "revoked") {
			t.Fatalf("the revoked file's row: %s", row)
		}
		var revoked bool
		for _, f := range s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")["license_files"].([]any) {
			if m := f.(map[string]any); m["id"] == id {
				revoked = m["revoked_at"] != nil
			}
		}
		if !revoked {
			t.Fatal("after Revoke in the browser the API does not show the file revoked")
		}
		kwtest.ExpectCode(t, app.Env("/api/auth/license-file.php", map[string]any{"license_key": key, "hwid": "LAPTOP-ONLINE"}), 200, "LICENSE_FILE_REVOKED")
		b.clean("revoke")
	})
}
