package dashboard_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Secrets as a hosted service shows them: 64 hex characters, both cases in
// the first (kept as typed).
const (
	adoptA = "0123456789ABCDEF0123456789abcdef" + "FEDCBA9876543210fedcba9876543210"
	adoptB = "cafebabe" + "cafebabe" + "cafebabe" + "cafebabe" + "cafebabe" + "cafebabe" + "cafebabe" + "cafebabe"
)

// The new-app form takes an optional existing secret: the app is created
// with exactly that secret (spaces around a paste dropped), the secret page
// shows it, and clients using it are served. A malformed secret or one
// another app has is refused with the API's message and creates nothing.
func TestAppsCreateWithExistingSecret(t *testing.T) {
	s := newSite(t)
	s.signIn()
	home := s.get("/dashboard/").must(t)
	if !home.Has("Existing app secret (optional)") {
		t.Fatalf("the new-app form has no existing-secret field: %q", home.Text())
	}
	p := s.post("/dashboard/apps", url.Values{"name": {"Moved"}, "version": {"4.0"}, "secret": {"  " + adoptA + "\n"}}).must(t)
	m := secretRE.FindStringSubmatch(p.Body)
	if m == nil || m[1] != adoptA {
		t.Fatalf("create with a secret: shown %v, want %s: %q", m, adoptA, p.Text())
	}
	apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)
	if len(apps) != 1 {
		t.Fatalf("%d apps, want 1", len(apps))
	}
	id := apps[0].(map[string]any)["app_id"].(string)
	app := s.NewApp(id, adoptA)
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	sid := app.Login(key, "pc")
	if r := app.Heartbeat(sid, key); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("heartbeat with the adopted secret: %s", r)
	}

	for name, c := range map[string]struct{ secret, want string }{
		"too short": {adoptB[:63], "64 hexadecimal"},
		"not hex":   {"x" + adoptB[1:], "64 hexadecimal"},
		"taken":     {adoptA, "Another app already uses this secret"},
	} {
		s.get("/dashboard/")
		p := s.post("/dashboard/apps", url.Values{"name": {"Bad " + name}, "version": {"1.0"}, "secret": {c.secret}})
		if !strings.Contains(p.flash(), c.want) {
			t.Errorf("%s: flash %q, want it to say %q", name, p.flash(), c.want)
		}
		if secretRE.MatchString(p.Body) {
			t.Errorf("%s: a secret page was shown", name)
		}
	}
	if n := len(s.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)); n != 1 {
		t.Fatalf("refused creations left %d apps, want 1", n)
	}
}

// The settings page of an owner offers "Adopt an existing secret": without
// confirm=yes it asks first and changes nothing; confirmed, the app's old
// secret is refused and the one entered is served. A secret another app
// has is refused with the API's message. An admin who is not the owner is
// not offered the form, and the API refuses the post.
func TestAppsAdoptSecret(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Tool")
	other := s.CreateApp("Other")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	s.AddMember(app.ID, "admin2", "admin2-long-password", "admin")
	s.signIn()
	path := "/dashboard/apps/" + app.ID

	page := s.get(path).must(t)
	if !page.Has("Adopt an existing secret") {
		t.Fatalf("the owner's settings page does not offer adopting a secret: %q", page.Text())
	}
	p := s.post(path+"/adopt-secret", url.Values{"secret": {adoptA}}).must(t)
	if !p.Has("Adopt this app secret?") {
		t.Fatalf("unconfirmed adopt: %q", p.Text())
	}
	checkKey := func(secret string) string {
		r := s.NewApp(app.ID, secret).Plain("/api/auth/check-key.php", map[string]any{"license_key": key})
		code, _ := r.Body["error_code"].(string)
		return code
	}
	if code := checkKey(app.Secret); code != "" {
		t.Fatalf("the old secret stopped working without a confirmation: %s", code)
	}
	s.get(path)
	p = s.post(path+"/adopt-secret", url.Values{"secret": {adoptA}, "confirm": {"yes"}}).must(t)
	if !strings.HasPrefix(p.flash(), "Secret adopted") {
		t.Fatalf("confirmed adopt: flash %q", p.flash())
	}
	if code := checkKey(app.Secret); code != "INVALID_APP" {
		t.Errorf("old secret after adopting: %q, want INVALID_APP", code)
	}
	if code := checkKey(adoptA); code != "" {
		t.Errorf("adopted secret: %q, want served", code)
	}
	if strings.Contains(p.Body, adoptA) {
		t.Error("the settings page shows the adopted secret")
	}

	// Another app's secret: refused, nothing changed.
	s.get("/dashboard/apps/" + other.ID)
	p = s.post("/dashboard/apps/"+other.ID+"/adopt-secret", url.Values{"secret": {adoptA}, "confirm": {"yes"}})
	if !strings.Contains(p.flash(), "Another app already uses this secret") {
		t.Errorf("taken secret: flash %q", p.flash())
	}
	if r := other.Plain("/api/auth/check-key.php", map[string]any{"license_key": "NOPE"}); r.Body["error_code"] == "INVALID_APP" {
		t.Error("the refused adopt changed the other app's secret")
	}
	// An empty field: a message, nothing changed.
	s.get(path)
	if p := s.post(path+"/adopt-secret", url.Values{"secret": {"  "}, "confirm": {"yes"}}); !strings.Contains(p.flash(), "64 hexadecimal") {
		t.Errorf("empty secret: flash %q", p.flash())
	}

	// An admin below owner: no form, and the API's refusal.
	jar, _ := cookiejar.New(nil)
	s2 := &site{Server: s.Server, t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	s2.signInAs("admin2", "admin2-long-password")
	if page := s2.get(path).must(t); page.Has("Adopt an existing secret") {
		t.Error("a non-owner is offered adopting a secret")
	}
	p = s2.post(path+"/adopt-secret", url.Values{"secret": {adoptB}, "confirm": {"yes"}})
	if f := p.flash(); f == "" || strings.HasPrefix(f, "Secret adopted") {
		t.Errorf("non-owner adopt: flash %q, want a refusal", f)
	}
	if code := checkKey(adoptA); code != "" {
		t.Errorf("adopted secret after a non-owner's attempt: %q", code)
	}
}
