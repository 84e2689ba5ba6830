package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
)

// The settings page saves the lazy-migration settings with the write-only
// token (never shown back; empty keeps it, "remove" clears it) and links
// to the on-demand count of keys still to come.
func TestAppsUpstreamSettings(t *testing.T) {
	s := newSite(t)
	app := s.CreateApp("Mover")
	s.signIn()
	path := "/dashboard/apps/" + app.ID
	s.get(path).must(t)
	form := url.Values{"upstream_url": {"http://127.0.0.1:9"}, "upstream_app_id": {"hosted-1"},
		"upstream_token": {"kw_pat_never_shown"}, "upstream_enabled": {"on"}}
	p := s.post(path+"/upstream", form).must(t)
	if p.flash() != "Migration settings saved." {
		t.Fatalf("save: flash %q", p.flash())
	}
	st := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
	if st["upstream_url"] != "http://127.0.0.1:9" || st["upstream_app_id"] != "hosted-1" || st["upstream_enabled"] != true || st["upstream_token_set"] != true {
		t.Errorf("settings after save: %v", st)
	}
	if strings.Contains(p.Body, "kw_pat_never_shown") || !strings.Contains(p.Body, "leave empty to keep it") {
		t.Errorf("the token is shown, or its placeholder is missing")
	}
	// The main settings form still saves (it does not carry the upstream settings).
	sf := settingsForm(t, s, path)
	if p := s.post(path+"/settings", sf).must(t); p.flash() != "Settings saved." {
		t.Errorf("main settings: flash %q", p.flash())
	}
	// Empty token keeps it; switch off.
	s.get(path)
	s.post(path+"/upstream", url.Values{"upstream_url": {"http://127.0.0.1:9"}, "upstream_app_id": {"hosted-1"}}).must(t)
	st = s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
	if st["upstream_enabled"] != false || st["upstream_token_set"] != true {
		t.Errorf("after switching off: %v", st)
	}
	// The count page: the upstream is unreachable here, which it says.
	c := s.get(path + "/upstream").must(t)
	if !c.Has("Still to come") || !c.Has("could not be read") {
		t.Errorf("status page: %q", c.Text())
	}
	s.get(path)
	s.post(path+"/upstream", url.Values{"upstream_url": {""}, "upstream_app_id": {""}, "upstream_token_remove": {"on"}}).must(t)
	st = s.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID, nil).Obj("app")["settings"].(map[string]any)
	if st["upstream_token_set"] != false || st["upstream_url"] != "" {
		t.Errorf("after removing: %v", st)
	}
	// A refused URL: the API's message, nothing changed.
	s.get(path)
	if p := s.post(path+"/upstream", url.Values{"upstream_url": {"http://10.0.0.1"}}); !strings.Contains(p.flash(), "upstream_url") {
		t.Errorf("private address: flash %q", p.flash())
	}
}
