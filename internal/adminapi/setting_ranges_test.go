package adminapi_test

import (
	"fmt"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// Every whole-number app setting out of its range is refused with
// MISSING_FIELDS (the code shipped dashboards and scripts know) and a
// message naming the setting and its allowed range; a value of the wrong type
// names the range too; both ends of each range are accepted.
func TestSettingRangesNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		min, max int
		allowed  string
	}{
		{"heartbeat_interval", 5, 3600, "5 to 3600 seconds"},
		{"self_reset_cooldown_hours", 0, 8760, "0 to 8760 hours"},
		{"reset_auto_approve_days", 0, 3650, "0 (off) to 3650 days"},
		{"trial_max_devices", 1, 10000, "1 to 10000"},
		{"trial_ip_limit", 0, 100000, "0 (no cap) to 100000"},
		{"trial_ip_window_hours", 1, 8760, "1 to 8760 hours"},
		{"account_signup_days", 0, 36500, "0 to 36500 days"},
		{"account_max_devices", 1, 10000, "1 to 10000"},
		{"account_password_min_length", 6, 72, "6 to 72 characters"},
		{"leak_max_hwids", 0, 100000, "0 (off) to 100000"},
		{"leak_max_ips", 0, 100000, "0 (off) to 100000"},
		{"leak_window_hours", 1, 8760, "1 to 8760 hours"},
		{"suspicious_invalid_keys", 0, 1000000, "0 (off) to 1000000"},
		{"suspicious_envelope_failures", 0, 1000000, "0 (off) to 1000000"},
		{"suspicious_trials", 0, 1000000, "0 (off) to 1000000"},
		{"suspicious_window_minutes", 1, 10080, "1 to 10080 minutes"},
		{"offline_ttl_hours", 1, 8760, "1 to 8760 hours"},
	}
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Ranges")
		put := func(settings map[string]any) *kwtest.Reply {
			return s.Admin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": settings})
		}
		expect := func(r *kwtest.Reply, msg string) {
			t.Helper()
			if r.Status != 400 || r.Str("error_code") != "MISSING_FIELDS" || r.Str("message") != msg {
				t.Errorf("got %s\nwant 400 MISSING_FIELDS %q", r, msg)
			}
		}
		for _, c := range cases {
			for _, v := range []int{c.min - 1, c.max + 1} {
				expect(put(map[string]any{c.name: v}), fmt.Sprintf("Invalid field %s: %d is out of range; allowed: %s.", c.name, v, c.allowed))
			}
			expect(put(map[string]any{c.name: "2"}), fmt.Sprintf("Invalid setting %s: must be a whole number, %s.", c.name, c.allowed))
			expect(put(map[string]any{c.name: 2.5}), fmt.Sprintf("Invalid setting %s: must be a whole number, %s.", c.name, c.allowed))
			for _, v := range []int{c.min, c.max} {
				if r := put(map[string]any{c.name: v}); r.Status != 200 || r.Obj("app")["settings"].(map[string]any)[c.name] != float64(v) {
					t.Errorf("%s = %d: %s", c.name, v, r)
				}
			}
		}
		// Top-level settings are checked alike.
		expect(s.Admin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"heartbeat_interval": 2}),
			"Invalid field heartbeat_interval: 2 is out of range; allowed: 5 to 3600 seconds.")
		// trial_duration's range depends on its unit.
		const trial = "allowed: 1 to 87600 hours or 1 to 3650 days (ten years)."
		expect(put(map[string]any{"trial_duration": 0}), "Invalid field trial_duration: 0 days is out of range; "+trial)
		expect(put(map[string]any{"trial_duration": 3651, "trial_duration_unit": "days"}), "Invalid field trial_duration: 3651 days is out of range; "+trial)
		expect(put(map[string]any{"trial_duration": 87601, "trial_duration_unit": "hours"}), "Invalid field trial_duration: 87601 hours is out of range; "+trial)
		expect(put(map[string]any{"trial_duration": "x"}), "Invalid setting trial_duration: must be a whole number, 1 to 87600 hours or 1 to 3650 days (ten years).")
		if r := put(map[string]any{"trial_duration": 87600, "trial_duration_unit": "hours"}); r.Status != 200 {
			t.Errorf("trial_duration 87600 hours: %s", r)
		}
		// The messages are named apart.
		long := make([]byte, 1001)
		for i := range long {
			long[i] = 'a'
		}
		expect(put(map[string]any{"login_message": string(long)}), "Invalid field login_message: must be at most 1000 characters.")
		expect(put(map[string]any{"maintenance_message": string(long)}), "Invalid field maintenance_message: must be at most 1000 characters.")
	})
}
