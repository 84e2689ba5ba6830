package adminapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// anSum adds up a series of the analytics reply.
func anSum(t *testing.T, rep map[string]any, name string) int {
	t.Helper()
	list, ok := rep[name].([]any)
	if !ok {
		t.Fatalf("analytics has no series %s: %v", name, rep)
	}
	n := 0
	for _, p := range list {
		n += int(p.(map[string]any)["n"].(float64))
	}
	return n
}

// Analytics over real HTTP: what clients do is counted (logins, refusals by
// code, activations, trials, kill codes, logouts), sampled live sessions
// make the active series, keys are counted by status and checking clients by
// version — per app, in the asked range.
func TestAdminAnalytics(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		ctx := context.Background()
		a := s.CreateApp("Charts")
		other := s.CreateApp("Elsewhere")
		a.SetSettings(t, map[string]any{"trial_enabled": true})
		keys := a.GenerateKeys(4, "lifetime", 0, 2)
		sid := a.Login(keys[0], "pc-1")
		a.Login(keys[0], "pc-2") // a second device: a login, not an activation
		a.Login(keys[1], "pc-3")
		other.Login(other.GenerateKeys(1, "lifetime", 0, 1)[0], "pc-x")
		for range 2 {
			kwtest.ExpectCode(t, a.Env("/api/auth/login.php", map[string]any{"license_key": "NOPE-NOPE", "hwid": "pc-9"}), 200, "INVALID_KEY")
		}
		a.Plain("/api/auth/trial.php", map[string]any{"hwid": "trial-pc"}).OK(t)
		a.Plain("/api/auth/trial.php", map[string]any{"hwid": "trial-pc"}).OK(t) // resumed: not a new trial
		if err := s.Analytics.Sample(ctx, s.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		a.KeyAction("ban", keys[1], nil)
		s.Clock.Advance(time.Minute)
		a.Login(keys[2], "pc-4")
		a.Heartbeat(sid, keys[0]).OK(t)
		a.UpdateCheck(t, map[string]any{"v": "1.2.0", "hwid": "pc-1"})
		a.UpdateCheck(t, map[string]any{"v": "1.2.0", "hwid": "pc-2"})
		a.UpdateCheck(t, map[string]any{"v": "1.3.0", "hwid": "pc-3"})
		if err := s.Usage.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s.Updates.FlushChecks(ctx)

		from := s.Clock.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
		to := s.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		rep := s.MustAdmin("GET", "/api/admin/analytics.php?app_id="+a.ID+"&from="+from+"&to="+to+"&step=hour", nil).Obj("analytics")
		if n := len(rep["logins"].([]any)); rep["step"] != "hour" || n < 3 || n > 4 { // widened to whole hours
			t.Fatalf("hourly series over 3 hours: step %v, %d points", rep["step"], n)
		}
		for name, want := range map[string]int{"logins": 4, "activations": 3, "trials": 1, "logouts": 0} {
			if got := anSum(t, rep, name); got != want {
				t.Errorf("%s: %d, want %d", name, got, want)
			}
		}
		if f := rep["login_failures"].(map[string]any); f["INVALID_KEY"] != 2.0 || len(f) != 1 {
			t.Errorf("login failures %v, want INVALID_KEY 2", f)
		}
		if got := anSum(t, rep, "active_sessions"); got != 4 { // 3 key sessions and the trial's, sampled
			t.Errorf("sampled active sessions %d, want 4", got)
		}
		if rep["active_now"] != 4.0 { // the banned key's session ended; pc-4 logged in
			t.Errorf("active now %v, want 4", rep["active_now"])
		}
		ks := rep["keys_by_status"].(map[string]any)
		if ks["banned"] != 1.0 || ks["active"] != 3.0 || ks["unused"] != 1.0 {
			t.Errorf("keys by status %v", ks)
		}
		vs := rep["versions"].([]any)
		if len(vs) != 2 || vs[0].(map[string]any)["version"] != "1.2.0" || vs[0].(map[string]any)["devices"] != 2.0 {
			t.Errorf("versions %v, want 1.2.0 on 2 devices first", vs)
		}

		// The killed session's next heartbeat and a logout are counted too.
		s4 := a.Login(keys[3], "pc-5")
		a.KeyAction("ban", keys[3], nil)
		kwtest.ExpectCode(t, a.Heartbeat(s4, keys[3]), 200, "BANNED")
		a.Env("/api/auth/logout.php", map[string]any{"session_id": sid}).OK(t)
		s.Usage.Flush(ctx)
		rep = s.MustAdmin("GET", "/api/admin/analytics.php?app_id="+a.ID+"&from="+from+"&to="+to, nil).Obj("analytics")
		if r := rep["heartbeat_refusals"].(map[string]any); r["BANNED"] != 1.0 {
			t.Errorf("heartbeat refusals %v, want BANNED 1", r)
		}
		if got := anSum(t, rep, "logouts"); got != 1 {
			t.Errorf("logouts %d, want 1", got)
		}

		// The default range is the last week, daily.
		rep = s.MustAdmin("GET", "/api/admin/analytics.php?app_id="+a.ID, nil).Obj("analytics")
		if rep["step"] != "day" || len(rep["logins"].([]any)) < 7 {
			t.Errorf("default report: step %v, %d points", rep["step"], len(rep["logins"].([]any)))
		}
		s.Admin("GET", "/api/admin/analytics.php?app_id="+a.ID+"&step=minute", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", "/api/admin/analytics.php?app_id="+a.ID+"&from=yesterday", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", "/api/admin/analytics.php?app_id="+a.ID+"&from="+to+"&to="+from, nil).JSONFail(t, 400, "MISSING_FIELDS")
	})
}
