package dashboard_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/webhook"
)

// TestBrowserOwnersDay is the end-to-end story, driven through
// Chromium against a real keyward: an owner with two-factor sign-in creates
// an app, generates keys, watches a client's session appear, bans the key
// and sees the session end at the client's next heartbeat, publishes a
// release to 25 % of devices with the rollout slider, and points a webhook
// at a receiver and sees the delivery in its log. Every page on the way is
// checked for console errors and CSP violations. It runs on both engines.
func TestBrowserOwnersDay(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) { browserOwnersDay(t, engine) })
}

func browserOwnersDay(t *testing.T, engine string) {
	s := newSite(t, kwtest.Options{Engine: engine})
	totpSecret := enableTOTP(t, s)

	b := newBrowser(t, s, 1280, 900)

	// Sign in: password, then the authenticator code.
	b.open("/")
	if p := b.path(); !strings.HasPrefix(p, "/dashboard/login") {
		t.Fatalf("a signed-out visit to / landed on %s, want the sign-in page", p)
	}
	b.fill("#username", "admin")
	b.fill("#password", kwtest.AdminPassword)
	b.click(`form[action="/dashboard/login"] button[type=submit]`)
	b.mustSee("second step", "Code from your authenticator app")
	b.fill("#code", kwtest.TOTP(t, totpSecret, s.Clock.Now()))
	b.click(`form[action="/dashboard/login/2fa"] button[type=submit]`)
	if p := b.path(); p != "/dashboard/" {
		t.Fatalf("after the 2FA step the browser is at %s, want /dashboard/", p)
	}
	b.clean("sign-in")

	// Create an app; its secret is shown once.
	b.fill("#app-name", "Photo Studio")
	b.click(`form[action="/dashboard/apps"] button[type=submit]`)
	b.mustSee("new app", "shown only now")
	appID := b.text("#app-id-value")
	secret := b.text("#secret-value")
	if appID == "" || len(secret) < 20 {
		t.Fatalf("app id %q, secret %q: the new app's credentials are not on the page", appID, secret)
	}
	app := s.NewApp(appID, secret)
	appPath := "/dashboard/apps/" + url.PathEscape(appID)
	b.clean("create app")

	// Generate three keys.
	b.open(appPath + "/keys")
	b.fill("#kg-count", "3")
	b.fill("#kg-note", "launch batch")
	b.click(`form[action$="/keys/generate"] button[type=submit]`)
	b.mustSee("generated keys", "3 new keys")
	keys := strings.Fields(b.text("#kgen-list"))
	if len(keys) != 3 {
		t.Fatalf("generated keys on the page: %q, want 3", keys)
	}
	key := keys[0]
	b.clean("generate keys")

	// A client signs in through the real client API; its session appears.
	sid := app.Login(key, "HWID-STUDIO-PC")
	if r := app.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("first heartbeat: %s", r)
	}
	b.open(appPath + "/sessions")
	b.mustSee("sessions", key, "HWID-STUDIO-PC")
	b.clean("sessions")

	// Ban the key from its page; the confirmation is a dialog.
	b.open(appPath + "/keys/" + url.PathEscape(key))
	b.fill("#ka-reason", "chargeback")
	b.run("press Ban", chromedp.Click(chromedp.CSS(`form[data-confirm] input[name=action][value=ban] ~ button[type=submit]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS("#kw-confirm")))
	if got := b.text("#kw-confirm-text"); !strings.Contains(got, "Ban this key?") {
		t.Fatalf("confirmation dialog says %q", got)
	}
	b.click("#kw-confirm [data-dialog-ok]")
	b.mustSee("banned key", "banned")
	if k := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+appID+"&license_key="+url.QueryEscape(key), nil).Obj("key"); k["status"] != "banned" {
		t.Fatalf("after the ban in the browser the API says the key is %v", k["status"])
	}
	b.clean("ban")

	// The client's next heartbeat is refused, and the session is gone.
	kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "BANNED")
	b.open(appPath + "/sessions")
	b.mustSee("sessions after the ban", "No live sessions.")
	if body := b.bodyText(); strings.Contains(body, "HWID-STUDIO-PC") {
		t.Fatalf("the banned key's session is still listed: %.800s", body)
	}
	b.clean("sessions after the ban")

	// A release: draft, upload its file with the progress bar, 25 % with
	// the slider (keyboard), publish.
	b.open(appPath + "/updates")
	b.fill("#rel-version", "1.1.0")
	b.fill("#rel-changelog", "Faster exports.")
	b.click(`form[action$="/updates"] button[type=submit]`)
	b.mustSee("draft release", "1.1.0", "draft")
	artifact := filepath.Join(t.TempDir(), "PhotoStudio-1.1.0.zip")
	if err := os.WriteFile(artifact, []byte(strings.Repeat("photo studio build 1.1.0\n", 4000)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.run("choose the file", chromedp.SetUploadFiles(chromedp.CSS("#up-file"), []string{artifact}))
	b.click(`form[data-upload] button[type=submit]`)
	b.mustSee("uploaded artifact", "PhotoStudio-1.1.0.zip")
	b.run("set the slider to 25 %", chromedp.Focus(chromedp.CSS("#rollout")), chromedp.KeyEvent(kb.Home),
		chromedp.KeyEvent(strings.Repeat(kb.ArrowRight, 25)))
	if got := b.text("#rollout-out"); got != "25 %" {
		t.Fatalf("the slider's output shows %q, want 25 %%", got)
	}
	b.click(`form[action$="/rollout"] button[type=submit]`)
	b.click(`form[action$="/publish"] button[type=submit]`)
	b.mustSee("published release", "published", "25 %")
	rels := s.MustAdmin("GET", "/api/admin/updates.php?app_id="+url.QueryEscape(appID), nil).Body["releases"].([]any)
	if rel := rels[0].(map[string]any); len(rels) != 1 || rel["status"] != "published" || rel["rollout_percent"] != 25.0 {
		t.Fatalf("releases after publishing in the browser: %v", rels)
	}
	b.clean("release")

	// A webhook to a local receiver; its test delivery shows in the log.
	// The dispatcher of a test server runs only when asked: let it handle
	// the events so far, as a running server would have before the webhook
	// existed, so that only the test event is new to the receiver.
	webhooksDispatch(t, s)
	rc := newWebhooksReceiver(t)
	b.open(appPath + "/webhooks")
	b.fill("#wh-url", rc.URL+"/hook")
	b.fill("#wh-desc", "ops channel")
	b.click(`form[action$="/webhooks"] button[type=submit]`)
	whSecret := b.text("#webhook-secret-value")
	if whSecret == "" {
		t.Fatal("the webhook's signing secret is not shown after adding it")
	}
	b.click(`a.button[href*="/webhooks/"]`)
	b.click(`form[action$="/test"] button[type=submit]`)
	webhooksDispatch(t, s)
	hits := rc.hits()
	if len(hits) != 1 || hits[0].Event != "test" {
		t.Fatalf("the receiver got %d deliveries: %+v", len(hits), hits)
	}
	if !webhook.VerifyV2(whSecret, hits[0].SignatureV2, []byte(hits[0].Body), s.Clock.Now()) {
		t.Fatalf("the delivery's signature does not verify with the secret the page showed")
	}
	b.open(b.path())
	b.mustSee("delivery log", "succeeded", "200")
	b.clean("webhook")
}
