package dashboard_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var secretRE = regexp.MustCompile(`<code id="secret-value" class="secret">([^<]+)</code>`)

func TestAppsCreateShowsTheSecretOnce(t *testing.T) {
	s := newSite(t)
	s.signIn()
	s.get("/dashboard/").must(t)
	p := s.post("/dashboard/apps", url.Values{"name": {"Photo Studio"}, "version": {"2.1.0"}}).must(t)
	m := secretRE.FindStringSubmatch(p.Body)
	if m == nil || !p.Has("shown only now") {
		t.Fatalf("create: no secret shown: %q", p.Text())
	}
	apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)
	if len(apps) != 1 {
		t.Fatalf("%d apps, want 1", len(apps))
	}
	app := apps[0].(map[string]any)
	id := app["app_id"].(string)
	if app["name"] != "Photo Studio" || app["version"] != "2.1.0" {
		t.Errorf("created app %v", app)
	}
	// The secret works: a client signed with it is answered (a wrong key,
	// but past the envelope).
	c := s.NewApp(id, m[1])
	if r := c.Env("/api/auth/login.php", map[string]any{"license_key": "NOPE-NOPE", "hwid": "h1"}); r.Body["error_code"] == "INVALID_SIGNATURE" || r.Status == 0 {
		t.Errorf("client with the shown secret: %s", r)
	}
	// Listed, and the secret is never shown again.
	home := s.get("/dashboard/").must(t)
	if !home.Has("Photo Studio") || !home.Has(id) {
		t.Errorf("home does not list the app: %q", home.Text())
	}
	settings := s.get("/dashboard/apps/" + id).must(t)
	if regexp.MustCompile(regexp.QuoteMeta(m[1])).MatchString(home.Body + settings.Body) {
		t.Error("the secret is shown again after creation")
	}

	// A refused name shows the API's message and creates nothing.
	s.get("/dashboard/")
	p = s.post("/dashboard/apps", url.Values{"name": {""}, "version": {"1.0"}})
	if p.flash() == "" || len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)) != 1 {
		t.Errorf("empty name: flash %q", p.flash())
	}
}

func TestAppsSettingsSave(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Editor")
	s.signIn()
	path := "/dashboard/apps/" + app.ID
	s.get(path).must(t)
	form := settingsForm(t, s, path)
	form.Set("heartbeat_interval", "90")
	form.Set("trial_enabled", "on")
	form.Set("maintenance_message", "Back soon")
	p := s.post(path+"/settings", form).must(t)
	if p.flash() != "Settings saved." {
		t.Fatalf("save: flash %q", p.flash())
	}
	st := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
	if st["heartbeat_interval"] != 90.0 || st["trial_enabled"] != true || st["maintenance_message"] != "Back soon" {
		t.Errorf("settings after save: interval %v trial %v message %v", st["heartbeat_interval"], st["trial_enabled"], st["maintenance_message"])
	}
	if !strings.Contains(p.Body, `value="Back soon"`) {
		t.Error("the saved value is not shown back")
	}

	// A non-number and a value the API refuses: a message, nothing changed.
	for _, bad := range []struct{ field, value string }{{"heartbeat_interval", "often"}, {"heartbeat_interval", "-5"}, {"trial_duration_unit", "weeks"}} {
		s.get(path)
		form := settingsForm(t, s, path)
		form.Set(bad.field, bad.value)
		p := s.post(path+"/settings", form)
		if p.Status != 200 || p.flash() == "" || p.flash() == "Settings saved." {
			t.Errorf("%s=%q: %d flash %q, want a refusal", bad.field, bad.value, p.Status, p.flash())
		}
		st := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
		if st["heartbeat_interval"] != 90.0 || st["trial_duration_unit"] == "weeks" {
			t.Errorf("%s=%q changed the settings: %v", bad.field, bad.value, st)
		}
	}
}

// settingsForm reads the settings form's current values off the page, as a
// browser would submit them.
func settingsForm(t *testing.T, s *site, path string) url.Values {
	t.Helper()
	p := s.get(path).must(t)
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input id="[^"]*" name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(p.Body, -1) {
		form.Set(m[1], htmlUnescape(m[2]))
	}
	for _, m := range regexp.MustCompile(`<input type="checkbox" id="[^"]*" name="([^"]+)" checked>`).FindAllStringSubmatch(p.Body, -1) {
		form.Set(m[1], "on")
	}
	for _, m := range regexp.MustCompile(`(?s)<select id="[^"]*" name="([^"]+)">.*?<option selected>([^<]*)</option>`).FindAllStringSubmatch(p.Body, -1) {
		form.Set(m[1], m[2])
	}
	if form.Get("name") == "" || form.Get("heartbeat_interval") == "" {
		t.Fatalf("settings form not found on %s", path)
	}
	return form
}

func TestAppsSecretAndRevokeConfirmFirst(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Tool")
	s.signIn()
	path := "/dashboard/apps/" + app.ID

	// Without confirm=yes: a confirmation page, nothing changed.
	s.get(path)
	p := s.post(path+"/secret", nil).must(t)
	if !p.Has("Regenerate the app secret?") || !regexp.MustCompile(`name="confirm" value="yes"`).MatchString(p.Body) {
		t.Fatalf("unconfirmed regenerate: %q", p.Text())
	}
	if r := app.Env("/api/auth/login.php", map[string]any{"license_key": "NOPE", "hwid": "h"}); r.Body["error_code"] == "INVALID_SIGNATURE" {
		t.Fatal("the old secret stopped working without a confirmation")
	}
	p = s.post(path+"/secret", url.Values{"confirm": {"yes"}}).must(t)
	m := secretRE.FindStringSubmatch(p.Body)
	if m == nil || m[1] == app.Secret {
		t.Fatalf("confirmed regenerate: no new secret: %q", p.Text())
	}

	s.get(path)
	s.post(path+"/revoke", nil).must(t)
	if s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["revoked"] != false {
		t.Fatal("unconfirmed revoke revoked the app")
	}
	s.get(path)
	p = s.post(path+"/revoke", url.Values{"confirm": {"yes"}}).must(t)
	if p.flash() != "App revoked." || s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["revoked"] != true {
		t.Fatalf("confirmed revoke: flash %q", p.flash())
	}
	if !p.Has("revoked") {
		t.Error("the app page does not say it is revoked")
	}
}

func TestAppsOfOthersAreRefused(t *testing.T) {
	s := newSite(t)
	mine := s.CreateApp("Mine")
	other := s.CreateApp("Other")
	s.AddMember(mine.ID, "viewer1", "viewer-password-1", "viewer")
	s.signInAs("viewer1", "viewer-password-1")
	home := s.get("/dashboard/").must(t)
	if !home.Has("Mine") || home.Has("Other") {
		t.Errorf("viewer's home: %q", home.Text())
	}
	if p := s.get("/dashboard/apps/" + other.ID); p.Status != 403 && p.Status != 404 {
		t.Errorf("foreign app page: %d", p.Status)
	}
	// A viewer cannot change settings: the API's refusal is shown.
	path := "/dashboard/apps/" + mine.ID
	form := settingsForm(t, s, path)
	form.Set("heartbeat_interval", "77")
	p := s.post(path+"/settings", form)
	if p.flash() == "" || p.flash() == "Settings saved." {
		t.Errorf("viewer save: flash %q", p.flash())
	}
	if st := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+mine.ID, nil).Obj("app")["settings"].(map[string]any); st["heartbeat_interval"] == 77.0 {
		t.Error("a viewer changed the settings")
	}
}

// The Offline group of the settings form shows offline_enabled and
// offline_ttl_hours with their defaults, saves them, and a TTL outside 1 to
// 8760 hours is refused with the API's message naming the range.
func TestAppsSettingsOffline(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Offline")
	s.signIn()
	path := "/dashboard/apps/" + app.ID
	p := s.get(path).must(t)
	if !p.Has("Offline trust enabled") || !strings.Contains(p.Body, `name="offline_ttl_hours" value="168"`) {
		t.Fatalf("settings page without the offline fields: %q", p.Text())
	}
	form := settingsForm(t, s, path)
	if form.Get("offline_enabled") != "" {
		t.Fatal("offline trust is on by default")
	}
	form.Set("offline_enabled", "on")
	form.Set("offline_ttl_hours", "72")
	if p := s.post(path+"/settings", form).must(t); p.flash() != "Settings saved." {
		t.Fatalf("save: flash %q", p.flash())
	}
	st := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
	if st["offline_enabled"] != true || st["offline_ttl_hours"] != 72.0 {
		t.Fatalf("after save: %v %v", st["offline_enabled"], st["offline_ttl_hours"])
	}
	form = settingsForm(t, s, path)
	form.Set("offline_ttl_hours", "8761")
	if p := s.post(path+"/settings", form); !strings.Contains(p.flash(), "1 to 8760 hours") {
		t.Fatalf("TTL out of range: flash %q", p.flash())
	}
}
