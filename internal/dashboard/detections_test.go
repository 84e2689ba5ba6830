package dashboard_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The detections page lists what leak and abuse detection reported, newest
// first: a key used from too many devices (linked to its page, with what
// was seen and done) and an address guessing keys; the kind filter narrows
// the list, and a refused filter is shown as the API's message.
func TestDetectionsPage(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Watched")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{
		"leak_max_hwids": 2, "leak_window_hours": 24, "leak_action": "pause", "suspicious_invalid_keys": 3, "suspicious_window_minutes": 10}})
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	app.Login(key, "owner-pc")
	for _, pc := range []string{"copy-1", "copy-2"} {
		app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": pc})
	}
	s.Clock.Advance(60e9)
	for range 3 {
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": "AAAAA-BBBBB-CCCCC-DDDDD", "hwid": "pc"}), 200, "INVALID_KEY")
	}
	s.signIn()
	base := "/dashboard/apps/" + url.PathEscape(app.ID) + "/detections"

	p := s.get(base).must(t)
	text := p.Text()
	leak := "suspected key leak " + key + " 3 devices within 24 h; the key was paused" // addresses are not counted (leak_max_ips 0)
	abuse := "suspicious activity 127.0.0.1 invalid keys: 3 within 10 min"
	if !strings.Contains(text, leak) || !strings.Contains(text, abuse) {
		t.Fatalf("detections page does not show both reports: %s", text)
	}
	if strings.Index(text, abuse) > strings.Index(text, leak) {
		t.Error("the newer report (the key guessing) is not listed first")
	}
	if !strings.Contains(p.Body, `href="/dashboard/apps/`+url.PathEscape(app.ID)+`/keys/`+key+`"`) {
		t.Error("the leaked key does not link to its page")
	}

	p = s.get(base + "?kind=key.suspected_leak").must(t)
	if !p.Has(leak) || p.Has("suspicious activity 127.0.0.1") {
		t.Fatalf("kind filter: %s", p.Text())
	}
	p = s.get(base + "?kind=nope").must(t)
	if f := p.flash(); !strings.Contains(f, "use key.suspected_leak or suspicious_activity") || p.Has("suspected key leak") {
		t.Fatalf("a bad kind: flash %q", p.flash())
	}

	empty := s.CreateApp("Quiet")
	if p := s.get("/dashboard/apps/" + url.PathEscape(empty.ID) + "/detections").must(t); !p.Has("Nothing detected.") {
		t.Fatalf("an app without reports: %s", p.Text())
	}
}
