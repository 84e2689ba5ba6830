package dashboard_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/internal/kwtest"
)

// TestBrowserFloatingSeats: an owner generates a floating key with the
// generate form's checkbox, machines take its seats through the client
// API, and the key page's "Floating seats" section shows the count N/M and
// each seat (machine, since, last heartbeat); a logout frees one; the edit
// form's checkbox switches the key back to device seats. Both engines.
func TestBrowserFloatingSeats(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := newSite(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Floating Studio")
		b := newBrowser(t, s, 1280, 900)
		b.open("/")
		b.fill("#username", "admin")
		b.fill("#password", kwtest.AdminPassword)
		b.click(`form[action="/dashboard/login"] button[type=submit]`)
		b.clean("sign-in")

		appPath := "/dashboard/apps/" + url.PathEscape(app.ID)
		b.open(appPath + "/keys")
		b.fill("#kg-count", "1")
		b.run("choose lifetime", jsDo(`document.querySelector("#kg-type").value = "lifetime"`))
		b.fill("#kg-dev", "2")
		b.run("tick floating", chromedp.Click(chromedp.CSS("#kg-floating"), chromedp.NodeVisible))
		b.click(`form[action$="/keys/generate"] button[type=submit]`)
		keys := strings.Fields(b.text("#kgen-list"))
		if len(keys) != 1 {
			t.Fatalf("generated keys on the page: %q", keys)
		}
		key := keys[0]
		detail := func() map[string]any {
			return s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+url.QueryEscape(key), nil).Obj("key")
		}
		if k := detail(); k["floating"] != true || k["max_devices"] != 2.0 {
			t.Fatalf("the generate form made %v", k)
		}
		b.clean("generate")

		sid1 := app.Login(key, "MACHINE-ONE")
		app.Login(key, "MACHINE-TWO")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "MACHINE-THREE"}), 200, "DEVICE_LIMIT")

		keyPath := appPath + "/keys/" + url.PathEscape(key)
		b.open(keyPath)
		b.mustSee("key page", "Floating seats", "floating")
		if got := b.text("#kfs-count"); got != "2/2 in use" {
			t.Fatalf("seat count shows %q, want 2/2 in use", got)
		}
		rows := b.text("#kfs-table")
		for _, want := range []string{"Machine", "Since", "Last heartbeat", "MACHINE-ONE", "MACHINE-TWO"} {
			if !strings.Contains(rows, want) {
				t.Fatalf("seats table lacks %q: %s", want, rows)
			}
		}
		if strings.Contains(rows, "MACHINE-THREE") {
			t.Fatalf("the refused machine is listed: %s", rows)
		}
		b.clean("key page")

		if r := app.Env("/api/auth/logout.php", map[string]any{"session_id": sid1, "license_key": key}); r.Body["success"] != true {
			t.Fatalf("logout: %s", r)
		}
		b.open(keyPath)
		if got := b.text("#kfs-count"); got != "1/2 in use" {
			t.Fatalf("after a logout the seat count shows %q, want 1/2 in use", got)
		}
		if rows := b.text("#kfs-table"); strings.Contains(rows, "MACHINE-ONE") || !strings.Contains(rows, "MACHINE-TWO") {
			t.Fatalf("seats after the logout: %s", rows)
		}

		// The edit form's box is ticked for a floating key; clearing it
		// switches the key back to device seats, and the section goes.
		if !value(b, "edit box", chromedp.Evaluate[bool](`document.querySelector("#ke-floating").checked`)) {
			t.Fatal("the edit form's floating box is not ticked for a floating key")
		}
		b.run("clear floating", chromedp.Click(chromedp.CSS("#ke-floating"), chromedp.NodeVisible))
		b.click(`form input[name=action][value=update] ~ button[type=submit]`)
		b.mustSee("saved", "Key saved.")
		if k := detail(); k["floating"] != false {
			t.Fatalf("after clearing the box the key is %v", k["floating"])
		}
		if strings.Contains(b.bodyText(), "Floating seats") {
			t.Fatal("a key that is not floating shows the seats section")
		}
		b.clean("edit")
	})
}
