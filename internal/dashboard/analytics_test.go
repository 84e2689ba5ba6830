package dashboard_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// The analytics page over real client activity: logins, activations, a
// trial, refused sign-ins, a sampled live session count, update checks by
// version and keys by status, drawn as server-side SVG charts with their
// figures in words.
func TestAnalyticsPage(t *testing.T) {
	s := newSite(t)
	a := s.CreateApp("Charts")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"trial_enabled": true}})
	keys := a.GenerateKeys(3, "lifetime", 0, 2)
	a.Login(keys[0], "pc-1")
	a.Login(keys[0], "pc-2") // a second device: a login, not an activation
	a.Login(keys[1], "pc-3")
	for range 2 {
		kwtest.ExpectCode(t, a.Env("/api/auth/login.php", map[string]any{"license_key": "NOPE-NOPE", "hwid": "pc-9"}), 200, "INVALID_KEY")
	}
	if r := a.Plain("/api/auth/trial.php", map[string]any{"hwid": "trial-pc"}); r.Body["success"] != true {
		t.Fatalf("trial: %s", r)
	}
	if err := s.Analytics.Sample(context.Background(), s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	a.KeyAction("ban", keys[1], nil)
	for _, c := range []struct{ v, hwid string }{{"1.2.0", "pc-1"}, {"1.2.0", "pc-2"}, {"1.3.0-beta.1", "pc-3"}} {
		a.Env("/api/update/check.php", map[string]any{"v": c.v, "hwid": c.hwid})
	}
	// analytics.php flushes what the server holds in memory before it
	// reports, so the page shows this activity at once (no waiting).

	s.signIn()
	p := s.get("/dashboard/apps/" + a.ID + "/analytics?range=24h").must(t)
	if !strings.Contains(p.Body, `aria-current="page">Analytics</a>`) {
		t.Error("the Analytics entry of the app menu is not current")
	}
	// The range selector: a GET form, auto-submitting, with a button.
	if !regexp.MustCompile(`<select id="an-range" name="range" data-autosubmit>`).MatchString(p.Body) ||
		!strings.Contains(p.Body, `<option value="24h" selected>`) || !p.Has("Show") {
		t.Errorf("range selector missing or not on 24h")
	}
	text := p.Text()
	for _, want := range []string{
		// Stat tiles: live sessions (3 key sessions + the trial's, minus the banned key's), logins, activations, trials, refusals.
		"3 Live sessions now", "3 Logins", "2 Activations", "1 New trials", "2 Refused sign-ins",
		// Keys by status.
		"2 active", "1 banned", "1 unused", /* the trial is an active key */
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q: %s", want, text)
		}
	}
	// Every chart is an accessible SVG with its figures in words.
	if n := strings.Count(p.Body, `<svg viewBox=`); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
	for _, want := range []string{
		`role="img" aria-labelledby="chart-logins-title chart-logins-desc"`,
		"Logins per hour from ", ": 3 logins in all, at most 3 logins",
		": 2 activations in all", ": 1 trial in all",
		": 4 sessions in all", // the sample: 3 key sessions and the trial's
		"Refusals by error code. INVALID_KEY: 2 sign-ins refused, 0 sessions ended.",
		"Devices by version. 1.2.0: 2; 1.3.0-beta.1: 1.",
	} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("charts lack %q", want)
		}
	}
	for _, bad := range []string{"NaN", "style=", "<script>"} {
		if strings.Contains(p.Body, bad) {
			t.Errorf("page contains %q", bad)
		}
	}

	// Other ranges are daily; an unknown range falls back to 7 days.
	p = s.get("/dashboard/apps/" + a.ID + "/analytics?range=90d").must(t)
	if !strings.Contains(p.Body, `<option value="90d" selected>`) || !strings.Contains(p.Body, "Logins per day from ") {
		t.Errorf("90 days: not daily")
	}
	p = s.get("/dashboard/apps/" + a.ID + "/analytics?range=" + url.QueryEscape("<x>")).must(t)
	if !strings.Contains(p.Body, `<option value="7d" selected>`) {
		t.Errorf("unknown range: not 7 days")
	}

	// An app without activity shows empty states, not empty charts.
	quiet := s.CreateApp("Quiet")
	s.Clock.Advance(time.Minute)
	p = s.get("/dashboard/apps/" + quiet.ID + "/analytics").must(t)
	if strings.Contains(p.Body, "<svg") || !p.Has("Logins: nothing in this range.") || !p.Has("Devices by version: no client checked for updates in this range.") ||
		!p.Has("This app has no keys yet.") {
		t.Errorf("quiet app: %s", p.Text())
	}
	// Someone else's or an unknown app: the API's refusal.
	if p := s.get("/dashboard/apps/nope/analytics"); p.Status == 200 {
		t.Errorf("unknown app: %d", p.Status)
	}
}
