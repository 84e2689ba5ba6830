package clientapi_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// abDetections lists an app's detections of kind ("" for all).
func abDetections(t testing.TB, a *kwtest.App, kind string) []map[string]any {
	t.Helper()
	return a.S.MustAdmin("GET", "/api/admin/detections.php?app_id="+a.ID+"&kind="+kind, nil).List(t, "detections")
}

// A key used from more devices than leak_max_hwids within the window is
// reported once per window (event and detection), and paused when the
// owner chose "pause": its session dies with PAUSED.
func TestAbuseLeakPause(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Leak")
		a.SetSettings(t, map[string]any{"leak_max_hwids": 2, "leak_window_hours": 24, "leak_action": "pause"})
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sid := a.Login(key, "owner-pc")
		a.LoginReply(key, "copy-1").SealedFail(t, "HWID_MISMATCH")
		if n := len(abDetections(t, a, "")); n != 0 {
			t.Fatalf("%d detections at 2 devices (the limit)", n)
		}
		a.LoginReply(key, "copy-2").SealedFail(t, "HWID_MISMATCH") // the third device
		ds := abDetections(t, a, "key.suspected_leak")
		if len(ds) != 1 || ds[0]["subject"] != key {
			t.Fatalf("detections %v", ds)
		}
		evs := s.EventsOf(a.ID, "key.suspected_leak")
		if len(evs) != 1 || evs[0]["license_key"] != key || evs[0]["hwids"] != float64(3) || evs[0]["action"] != "pause" {
			t.Fatalf("key.suspected_leak events %v", evs)
		}
		if st := a.KeyView(t, key)["status"]; st != "paused" {
			t.Fatalf("status after a suspected leak with action pause = %v", st)
		}
		a.Heartbeat(sid, key).Kill(t, "PAUSED")

		// More devices in the same window: no second report.
		a.LoginReply(key, "copy-3")
		if n := len(s.EventsOf(a.ID, "key.suspected_leak")); n != 1 {
			t.Fatalf("%d reports within one window", n)
		}
	})
}

// With leak_action "none" the key is reported and left alone; a key within
// its devices is never reported; 0 turns the watch off.
func TestAbuseLeakReportOnly(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("LeakNone")
		a.SetSettings(t, map[string]any{"leak_max_hwids": 1})
		shared := a.GenerateKeys(1, "lifetime", 0, 3)[0]
		for _, pc := range []string{"a", "b"} {
			a.Login(shared, pc)
		}
		if st := a.KeyView(t, shared)["status"]; st != "active" {
			t.Fatalf("status with action none = %v", st)
		}
		if evs := s.EventsOf(a.ID, "key.suspected_leak"); len(evs) != 1 || evs[0]["action"] != "none" {
			t.Fatalf("events %v", evs)
		}
		a.SetSettings(t, map[string]any{"leak_max_hwids": 0})
		other := a.GenerateKeys(1, "lifetime", 0, 5)[0]
		for _, pc := range []string{"a", "b", "c", "d"} {
			a.Login(other, pc)
		}
		if n := len(s.EventsOf(a.ID, "key.suspected_leak")); n != 1 {
			t.Fatalf("%d reports with the watch off", n)
		}
	})
}

// Bursts from one address — invalid keys, rejected envelopes, new trials —
// are reported once per window as suspicious_activity, and again in the
// next window.
func TestAbuseBursts(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Bursts")
		a.SetSettings(t, map[string]any{"suspicious_invalid_keys": 3, "suspicious_envelope_failures": 2, "suspicious_trials": 2,
			"suspicious_window_minutes": 10, "trial_enabled": true, "trial_ip_limit": 0})

		reasons := func() map[string]int {
			out := map[string]int{}
			for _, e := range s.EventsOf(a.ID, "suspicious_activity") {
				out[e["reason"].(string)]++
				if e["ip"] != "127.0.0.1" {
					t.Fatalf("suspicious_activity ip %v", e["ip"])
				}
			}
			return out
		}
		guess := func(n int) {
			for range n {
				a.LoginReply("AAAAA-BBBBB-CCCCC-DDDDD", "pc").SealedFail(t, "INVALID_KEY")
			}
		}
		guess(2)
		if r := reasons(); r["invalid_keys"] != 0 {
			t.Fatalf("reported below the threshold: %v", r)
		}
		guess(1)
		guess(5) // still inside the quiet window
		if r := reasons(); r["invalid_keys"] != 1 {
			t.Fatalf("invalid key reports %v, want 1", r)
		}
		s.Clock.Advance(11 * time.Minute)
		guess(3)
		if r := reasons(); r["invalid_keys"] != 2 {
			t.Fatalf("invalid key reports after the window %v, want 2", r)
		}

		for range 2 { // an envelope with a broken MAC
			env := a.Seal(map[string]any{"license_key": "x"})
			mac := []byte(env.S) // change the first hex digit of the MAC (a fixed "00" would leave 1 MAC in 256 intact)
			if mac[0] == '0' {
				mac[0] = '1'
			} else {
				mac[0] = '0'
			}
			env.S = string(mac)
			s.Do("POST", kwtest.PathLogin, kwtest.AppHeader(a.Secret), env.Marshal())
		}
		for _, hw := range []string{"farm-1", "farm-2"} {
			if r := a.Plain("/api/auth/trial.php", map[string]any{"hwid": hw}); r.Status != 200 {
				t.Fatalf("trial: %s", r)
			}
		}
		if r := reasons(); r["envelope_failures"] != 1 || r["trial_farming"] != 1 {
			t.Fatalf("reports %v", r)
		}
		if ds := abDetections(t, a, "suspicious_activity"); len(ds) != 4 || ds[0]["subject"] != "127.0.0.1" {
			t.Fatalf("detections %v", ds)
		}
	})
}

// detections.php refuses a bad kind and an unknown app; the settings
// refuse a bad leak_action or threshold.
func TestAbuseAdminValidation(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", nil)
	a := s.CreateApp("Valid")
	kwtest.ExpectCode(t, s.Admin("GET", "/api/admin/detections.php?app_id="+a.ID+"&kind=nope", nil), 400, "MISSING_FIELDS")
	kwtest.ExpectCode(t, s.Admin("GET", "/api/admin/detections.php?app_id=missing", nil), 404, "NOT_FOUND")
	for _, bad := range []map[string]any{{"leak_action": "delete"}, {"leak_max_hwids": -1}, {"suspicious_window_minutes": 0},
		{"leak_window_hours": 9000}} {
		r := s.Admin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": bad})
		kwtest.ExpectCode(t, r, 400, "MISSING_FIELDS")
	}
}

// With leak_action "rotate" a suspected leak gives the key a new string and
// keeps only its first device: that device's session and its logins with
// the old string keep working, the new string works from it too, and every
// other device — with either string — is out.
func TestAbuseLeakRotate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Rotate")
		a.SetSettings(t, map[string]any{"leak_max_hwids": 2, "leak_action": "rotate"})
		old := a.GenerateKeys(1, "lifetime", 0, 2)[0]
		ownerSid := a.Login(old, "owner-pc")
		s.Clock.Advance(time.Second)
		leakSid := a.Login(old, "leaker-1") // takes the second seat
		a.LoginReply(old, "leaker-2").SealedFail(t, "DEVICE_LIMIT")

		evs := s.EventsOf(a.ID, "key.rotated")
		if len(evs) != 1 || evs[0]["old_license_key"] != old || evs[0]["kept_hwid"] != "owner-pc" {
			t.Fatalf("key.rotated events %v", evs)
		}
		fresh := evs[0]["license_key"].(string)
		if fresh == old || fresh == "" {
			t.Fatalf("new string %q", fresh)
		}
		a.BeatOK(t, ownerSid, old) // the owner's running session, old string
		a.Heartbeat(leakSid, old).Kill(t, "SESSION_REVOKED")
		if got := a.Devices(t, fresh); len(got) != 1 || got[0] != "owner-pc" {
			t.Fatalf("devices after rotation %v", got)
		}
		a.Login(old, "owner-pc")   // old string, kept device
		a.Login(fresh, "owner-pc") // new string, kept device
		a.LoginReply(old, "leaker-1").SealedFail(t, "INVALID_KEY")
		a.LoginReply(old, "leaker-3").SealedFail(t, "INVALID_KEY")
	})
}
