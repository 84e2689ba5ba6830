package clientapi_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Trials: POST auth/trial.php (plain), the admin trial list (trials.php) and
// the conversion of a trial into a full key (keys.php?action=convert).
// Helpers start with tr so they do not collide with other test files.

const (
	trTrial  = "/api/auth/trial.php"
	trTrials = "/api/admin/trials.php"
)

// trKeyRE is the trial key format: TRIAL- and three groups of five
// Crockford base32 characters.
var trKeyRE = regexp.MustCompile(`^TRIAL-[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){2}$`)

var trSessionRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// trApp creates an app with trials on and no per-IP cap (every test client
// is 127.0.0.1), then applies settings over that.
func trApp(t testing.TB, s *kwtest.Server, name string, settings map[string]any) *kwtest.App {
	t.Helper()
	a := s.CreateApp(name)
	st := map[string]any{"trial_enabled": true, "trial_ip_limit": 0}
	for k, v := range settings {
		st[k] = v
	}
	a.SetSettings(t, st)
	return a
}

// trStart asks for a trial for hwid.
func trStart(a *kwtest.App, hwid string) *kwtest.Reply {
	a.S.T.Helper()
	return a.Plain(trTrial, map[string]any{"hwid": hwid})
}

// trStartFrom asks for a trial for hwid through a proxy that appended ip to
// X-Forwarded-For (the server must trust the proxy).
func trStartFrom(a *kwtest.App, hwid, xff string) *kwtest.Reply {
	a.S.T.Helper()
	h := http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}, "X-Forwarded-For": {xff}}
	b, err := json.Marshal(map[string]any{"hwid": hwid})
	if err != nil {
		a.S.T.Fatal(err)
	}
	return a.S.Do("POST", trTrial, h, b)
}

// trOK fails unless r is a plain 200 trial reply with message msg and
// returns its key and session token.
func trOK(t testing.TB, r *kwtest.Reply, msg string) (key, sid string) {
	t.Helper()
	if r.Sealed || r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("want a plain 200 trial reply, got %s", r)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if r.Body["message"] != msg {
		t.Fatalf("message = %#v, want %q", r.Body["message"], msg)
	}
	key, sid = r.Str("trial_key"), r.Str("session_id")
	if !trKeyRE.MatchString(key) {
		t.Fatalf("trial_key = %#v, want TRIAL-XXXXX-XXXXX-XXXXX", r.Body["trial_key"])
	}
	if r.Body["license_key"] != key {
		t.Fatalf("license_key = %#v, want the trial_key %q", r.Body["license_key"], key)
	}
	if !trSessionRE.MatchString(sid) {
		t.Fatalf("session_id = %#v, want 64 hex characters", r.Body["session_id"])
	}
	return key, sid
}

// trWant describes the trial a reply must describe.
type trWant struct {
	hwid       string
	started    time.Time // when the trial began (activation)
	length     time.Duration
	maxDevices int
	interval   int
	features   map[string]any
	appName    string
}

// trCheckShape checks every field of a trial reply against w.
func trCheckShape(t testing.TB, a *kwtest.App, r *kwtest.Reply, key string, w trWant) {
	t.Helper()
	now := a.S.Clock.Now()
	m := kwtest.Numbers(t, r.Raw)
	if got := kwtest.Int(t, "heartbeat_interval", m["heartbeat_interval"]); got != int64(w.interval) {
		t.Fatalf("heartbeat_interval = %d, want %d", got, w.interval)
	}
	exp := kwtest.WireTime(t, "expires_at", m["expires_at"])
	if want := w.started.Add(w.length); !exp.Equal(want) {
		t.Fatalf("expires_at = %v, want start + %v = %v", exp, w.length, want)
	}
	wantDays := int64(math.Ceil(exp.Sub(now).Hours() / 24))
	if got := kwtest.Int(t, "days_remaining", m["days_remaining"]); got != wantDays {
		t.Fatalf("days_remaining = %d, want %d", got, wantDays)
	}
	u, ok := m["user"].(map[string]any)
	if !ok {
		t.Fatalf("user = %#v, want an object", m["user"])
	}
	if u["status"] != "active" || u["key_type"] != "days" || u["license_key"] != key || u["hwid"] != w.hwid {
		t.Fatalf("user = %v, want active days key %s on %s", u, key, w.hwid)
	}
	if got := kwtest.Int(t, "user.max_devices", u["max_devices"]); got != int64(w.maxDevices) {
		t.Fatalf("user.max_devices = %d, want trial_max_devices %d", got, w.maxDevices)
	}
	if got, want := kwtest.Int(t, "user.duration", u["duration"]), int64(math.Ceil(w.length.Hours()/24)); got != want {
		t.Fatalf("user.duration = %d, want the trial length in days rounded up (%d)", got, want)
	}
	if u["expires_at"] != m["expires_at"] {
		t.Fatalf("user.expires_at = %#v, want %#v", u["expires_at"], m["expires_at"])
	}
	if got := kwtest.Int(t, "user.days_remaining", u["days_remaining"]); got != wantDays {
		t.Fatalf("user.days_remaining = %d, want %d", got, wantDays)
	}
	if act := kwtest.WireTime(t, "user.activated_at", u["activated_at"]); !act.Equal(w.started) {
		t.Fatalf("user.activated_at = %v, want %v", act, w.started)
	}
	app, ok := m["app"].(map[string]any)
	if !ok {
		t.Fatalf("app = %#v, want an object", m["app"])
	}
	if _, ok := app["version"].(string); !ok || app["name"] != w.appName {
		t.Fatalf("app = %v, want name %q and a string version", app, w.appName)
	}
	if _, ok := app["message"].(string); !ok {
		t.Fatalf("app.message = %#v, want a string", app["message"])
	}
	// features is compared after a plain decode (numbers as float64).
	var plain map[string]any
	if err := json.Unmarshal(r.Raw, &plain); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain["features"], w.features) {
		t.Fatalf("features = %#v, want trial_features %#v", plain["features"], w.features)
	}
}

// trLogout logs a session out and fails unless it succeeds.
func trLogout(t testing.TB, a *kwtest.App, sid, key string) {
	t.Helper()
	r := a.Env(kwtest.PathLogout, map[string]any{"session_id": sid, "license_key": key})
	if !r.Sealed {
		t.Fatalf("logout reply not enveloped: %s", r)
	}
	r.OK(t)
}

// trList returns one page of GET trials.php for the app.
func trList(t testing.TB, a *kwtest.App, query string) *kwtest.Reply {
	t.Helper()
	path := trTrials + "?app_id=" + url.QueryEscape(a.ID)
	if query != "" {
		path += "&" + query
	}
	return a.S.MustAdmin("GET", path, nil)
}

// trTrialOf returns the trials.php entry of hwid (first page), failing if absent.
func trTrialOf(t testing.TB, a *kwtest.App, hwid string) map[string]any {
	t.Helper()
	for _, tr := range trList(t, a, "limit=1000").List(t, "trials") {
		if tr["hwid"] == hwid {
			return tr
		}
	}
	t.Fatalf("no trial of %q listed", hwid)
	return nil
}

// trEvents returns the data of the app's trial.created events, oldest first.
func trEvents(t testing.TB, s *kwtest.Server, appID string) []map[string]any {
	t.Helper()
	return s.EventsOf(appID, "trial.created")
}

// trConvert posts keys.php?app_id=&action=convert.
func trConvert(a *kwtest.App, body map[string]any) *kwtest.Reply {
	a.S.T.Helper()
	return a.S.Admin("POST", "/api/admin/keys.php?app_id="+url.QueryEscape(a.ID)+"&action=convert", body)
}

// trLongSessions keeps sessions alive across the clock jumps of a test, so
// that heartbeats show the key's state rather than a session timeout.
func trLongSessions(c *config.Config) { c.SessionTimeout = 90 * 24 * time.Hour }

// A new app answers trial.php with a plain 403 TRIAL_DISABLED; an app that
// turns trials off again refuses even devices with a running trial.
func TestClientTrialDisabledByDefault(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("No Trials")
		if st := s.AppSettings(t, a.ID); st["trial_enabled"] != false {
			t.Fatalf("trial_enabled of a new app = %#v, want false", st["trial_enabled"])
		}
		r := trStart(a, "pc-1")
		r.PlainFail(t, 403, "TRIAL_DISABLED")
		if len(trList(t, a, "").List(t, "trials")) != 0 || len(trEvents(t, s, a.ID)) != 0 {
			t.Fatal("a refused trial was recorded")
		}

		a.SetSettings(t, map[string]any{"trial_enabled": true})
		_, sid := trOK(t, trStart(a, "pc-1"), "Trial started")
		a.SetSettings(t, map[string]any{"trial_enabled": false})
		trStart(a, "pc-1").PlainFail(t, 403, "TRIAL_DISABLED")
		trStart(a, "pc-2").PlainFail(t, 403, "TRIAL_DISABLED")
		// Turning trials off stops new ones; it does not kill a running one.
		a.BeatOK(t, sid, "")
	})
}

// The trial reply: key format, the key as both trial_key and license_key, a
// working session, expiry from the clock in hours or days, user, app and
// features blocks.
func TestClientTrialStartReplyShape(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, nil)
		cases := []struct {
			name     string
			settings map[string]any
			want     trWant
		}{
			{"5 hours", map[string]any{"trial_duration": 5, "trial_duration_unit": "hours", "trial_max_devices": 2,
				"trial_features": map[string]any{"pro": true, "tier": "trial", "seats": 2}, "heartbeat_interval": 45},
				trWant{length: 5 * time.Hour, maxDevices: 2, interval: 45,
					features: map[string]any{"pro": true, "tier": "trial", "seats": 2.0}}},
			{"3 days", map[string]any{"trial_duration": 3, "trial_duration_unit": "days"},
				trWant{length: 72 * time.Hour, maxDevices: 1, interval: 30, features: map[string]any{}}},
			{"defaults", nil, // 3 days, one device, no features
				trWant{length: 72 * time.Hour, maxDevices: 1, interval: 30, features: map[string]any{}}},
			{"30 hours", map[string]any{"trial_duration": 30, "trial_duration_unit": "hours", "trial_max_devices": 4,
				"trial_features": map[string]any{"export": false}},
				trWant{length: 30 * time.Hour, maxDevices: 4, interval: 30, features: map[string]any{"export": false}}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := clSub(t, srv)
				a := trApp(t, s, "Trial "+c.name, c.settings)
				s.Clock.Advance(time.Minute)
				w := c.want
				w.hwid, w.started, w.appName = "pc-"+c.name, s.Clock.Now(), "Trial "+c.name
				r := trStart(a, w.hwid)
				key, sid := trOK(t, r, "Trial started")
				trCheckShape(t, a, r, key, w)

				// The admin sees the same key: active, bound to the device,
				// with the session open.
				k := a.KeyView(t, key)
				if k["status"] != "active" || k["key_type"] != "days" || k["expires_at"] != r.Body["expires_at"] {
					t.Fatalf("admin view of the trial key = %v", k)
				}
				if d := a.Devices(t, key); !reflect.DeepEqual(d, []string{w.hwid}) {
					t.Fatalf("devices = %v, want [%s]", d, w.hwid)
				}
				if ss := a.Sessions(t, key); len(ss) != 1 || ss[0]["hwid"] != w.hwid {
					t.Fatalf("sessions = %v", ss)
				}

				// The session works like a login's: heartbeat, logout, then
				// SESSION_EXPIRED.
				s.Clock.Advance(30 * time.Second)
				a.BeatOK(t, sid, key)
				a.BeatOK(t, sid, "")
				trLogout(t, a, sid, key)
				a.Heartbeat(sid, key).Kill(t, "SESSION_EXPIRED")
				if ss := a.Sessions(t, key); len(ss) != 0 {
					t.Fatalf("sessions after logout = %v", ss)
				}
			})
		}

		// Two devices get two different keys and sessions.
		a := trApp(t, srv, "Two", nil)
		k1, s1 := trOK(t, trStart(a, "pc-a"), "Trial started")
		k2, s2 := trOK(t, trStart(a, "pc-b"), "Trial started")
		if k1 == k2 || s1 == s2 {
			t.Fatalf("two devices share key or session: %s/%s %s/%s", k1, s1, k2, s2)
		}
	})
}

// The same device asking again while its trial runs gets its key back with a
// new session ("Trial resumed"); the sessions share the trial's seats.
func TestClientTrialResumeSameDevice(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, trLongSessions)

		t.Run("one seat retires the first session", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Resume1", map[string]any{"trial_max_devices": 1})
			start := s.Clock.Now()
			r1 := trStart(a, "pc")
			key, sid1 := trOK(t, r1, "Trial started")

			s.Clock.Advance(time.Hour)
			r2 := trStart(a, "pc")
			key2, sid2 := trOK(t, r2, "Trial resumed")
			if key2 != key {
				t.Fatalf("resumed key %s, want the running trial %s", key2, key)
			}
			if sid2 == sid1 {
				t.Fatal("resume returned the old session_id")
			}
			// The trial is not extended by resuming.
			trCheckShape(t, a, r2, key, trWant{hwid: "pc", started: start, length: 72 * time.Hour, maxDevices: 1,
				interval: 30, features: map[string]any{}, appName: "Resume1"})
			a.Heartbeat(sid1, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, sid2, key)
			if ss := a.Sessions(t, key); len(ss) != 1 {
				t.Fatalf("live sessions = %v, want only the new one", ss)
			}

			// A third resume retires the second.
			s.Clock.Advance(time.Minute)
			_, sid3 := trOK(t, trStart(a, "pc"), "Trial resumed")
			a.Heartbeat(sid2, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, sid3, key)
		})

		t.Run("two seats keep both sessions", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Resume2", map[string]any{"trial_max_devices": 2})
			key, sid1 := trOK(t, trStart(a, "pc"), "Trial started")
			s.Clock.Advance(time.Minute)
			key2, sid2 := trOK(t, trStart(a, "pc"), "Trial resumed")
			if key2 != key || sid2 == sid1 {
				t.Fatalf("resume: key %s (want %s), session %s (first %s)", key2, key, sid2, sid1)
			}
			a.BeatOK(t, sid1, key)
			a.BeatOK(t, sid2, key)
			if ss := a.Sessions(t, key); len(ss) != 2 {
				t.Fatalf("live sessions = %v, want 2", ss)
			}
			// A third session exceeds the two seats: the oldest goes.
			s.Clock.Advance(time.Minute)
			_, sid3 := trOK(t, trStart(a, "pc"), "Trial resumed")
			a.Heartbeat(sid1, key).Kill(t, "SESSION_EXPIRED")
			a.BeatOK(t, sid2, key)
			a.BeatOK(t, sid3, key)
			if d := a.Devices(t, key); !reflect.DeepEqual(d, []string{"pc"}) {
				t.Fatalf("devices = %v, want [pc]", d)
			}
		})

		t.Run("resume after logout", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Resume3", nil)
			key, sid := trOK(t, trStart(a, "pc"), "Trial started")
			trLogout(t, a, sid, key)
			key2, sid2 := trOK(t, trStart(a, "pc"), "Trial resumed")
			if key2 != key {
				t.Fatalf("resumed key %s, want %s", key2, key)
			}
			a.BeatOK(t, sid2, key)
		})
	})
}

// A trial ends exactly at expires_at: its session's heartbeat answers EXPIRED
// and the device cannot get another trial (TRIAL_USED).
func TestClientTrialExpiry(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, trLongSessions)
		for _, c := range []struct {
			name     string
			settings map[string]any
			length   time.Duration
		}{
			{"hours", map[string]any{"trial_duration": 5, "trial_duration_unit": "hours"}, 5 * time.Hour},
			{"days", map[string]any{"trial_duration": 3, "trial_duration_unit": "days"}, 72 * time.Hour},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := clSub(t, srv)
				a := trApp(t, s, "Expiry "+c.name, c.settings)
				r := trStart(a, "pc")
				key, sid := trOK(t, r, "Trial started")
				exp := kwtest.WireTime(t, "expires_at", r.Body["expires_at"])
				if !exp.Equal(s.Clock.Now().Add(c.length)) {
					t.Fatalf("expires_at = %v, want now + %v", exp, c.length)
				}

				s.Clock.Set(exp.Add(-time.Second))
				a.BeatOK(t, sid, key)
				s.Clock.Set(exp)
				a.Heartbeat(sid, key).Kill(t, "EXPIRED")
				// The session is over for good.
				a.Heartbeat(sid, key).Kill(t, "EXPIRED")

				trStart(a, "pc").PlainFail(t, 403, "TRIAL_USED")
				s.Clock.Advance(30 * 24 * time.Hour)
				trStart(a, "pc").PlainFail(t, 403, "TRIAL_USED")
				// A login with the expired trial key is refused too.
				a.LoginReply(key, "pc").SealedFail(t, "EXPIRED")
				if tr := trTrialOf(t, a, "pc"); tr["status"] != "expired" || tr["license_key"] != key {
					t.Fatalf("listed trial = %v, want expired %s", tr, key)
				}
				// Another device still gets its own trial.
				k2, _ := trOK(t, trStart(a, "pc-other"), "Trial started")
				if k2 == key {
					t.Fatal("another device got the expired key")
				}
			})
		}
	})
}

// Trial keys are keys: a ban or pause kills the running trial session and
// refuses the device's trial requests with BANNED / PAUSED until lifted.
func TestClientTrialKillSwitch(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, nil)
		for _, c := range []struct{ action, undo, code string }{
			{"ban", "unban", "BANNED"},
			{"pause", "resume", "PAUSED"},
		} {
			t.Run(c.action, func(t *testing.T) {
				s := clSub(t, srv)
				a := trApp(t, s, "Kill "+c.action, nil)
				key, sid := trOK(t, trStart(a, "pc"), "Trial started")
				a.BeatOK(t, sid, key)

				a.MustKeyAction(t, c.action, key, map[string]any{"reason": "abuse"})
				a.Heartbeat(sid, key).Kill(t, c.code)
				trStart(a, "pc").PlainFail(t, 403, c.code)
				trStart(a, "pc").PlainFail(t, 403, c.code)
				if ss := a.Sessions(t, key); len(ss) != 0 {
					t.Fatalf("sessions of a stopped trial key = %v", ss)
				}
				// No second trial was handed out meanwhile.
				if n := len(trList(t, a, "").List(t, "trials")); n != 1 {
					t.Fatalf("%d trials listed, want 1", n)
				}

				// Lifted, the device resumes its trial.
				a.MustKeyAction(t, c.undo, key, nil)
				k2, sid2 := trOK(t, trStart(a, "pc"), "Trial resumed")
				if k2 != key {
					t.Fatalf("resumed key %s, want %s", k2, key)
				}
				a.BeatOK(t, sid2, key)
				// The old session stays dead.
				a.Heartbeat(sid, key).Kill(t, c.code)
			})
		}
	})
}

// Deleting a trial key ends its sessions, and the device still counts as
// having had its trial: TRIAL_USED, listed with license_key null.
func TestClientTrialDeletedKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Deleted", nil)
		key, sid := trOK(t, trStart(a, "pc"), "Trial started")
		other, _ := trOK(t, trStart(a, "pc-other"), "Trial started")
		before := trTrialOf(t, a, "pc")

		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": key})
		a.Heartbeat(sid, key).Kill(t, "SESSION_REVOKED")
		trStart(a, "pc").PlainFail(t, 403, "TRIAL_USED")
		trStart(a, "pc").PlainFail(t, 403, "TRIAL_USED")

		tr := trTrialOf(t, a, "pc")
		if tr["license_key"] != nil || tr["status"] != nil || tr["expires_at"] != nil {
			t.Fatalf("trial of a deleted key = %v, want license_key, status and expires_at null", tr)
		}
		if tr["id"] != before["id"] || tr["ip"] != before["ip"] || tr["created_at"] != before["created_at"] || tr["hwid"] != "pc" {
			t.Fatalf("trial after delete = %v, before %v", tr, before)
		}
		if n := len(trList(t, a, "").List(t, "trials")); n != 2 {
			t.Fatalf("%d trials listed, want 2", n)
		}
		// The other device's trial is untouched.
		if o := trTrialOf(t, a, "pc-other"); o["license_key"] != other || o["status"] != "active" {
			t.Fatalf("other trial = %v", o)
		}
	})
}

// trial_ip_limit caps new trials per client IP within trial_ip_window_hours;
// resumes and other IPs are not capped; 0 means no cap.
func TestClientTrialPerIPCap(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, func(c *config.Config) { c.TrustProxy = true })
		const ip1, ip2 = "203.0.113.7", "198.51.100.9"

		t.Run("limit 2 in 24 hours", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Capped", map[string]any{"trial_ip_limit": 2, "trial_ip_window_hours": 24})
			start := s.Clock.Now()
			k1, _ := trOK(t, trStartFrom(a, "h1", ip1), "Trial started")
			s.Clock.Advance(time.Minute)
			trOK(t, trStartFrom(a, "h2", ip1), "Trial started")
			trStartFrom(a, "h3", ip1).PlainFail(t, 403, "TRIAL_LIMIT")
			// Earlier X-Forwarded-For entries are the client's, not the
			// proxy's: they do not change the counted address.
			trStartFrom(a, "h3", "192.0.2.1, "+ip1).PlainFail(t, 403, "TRIAL_LIMIT")
			// A running trial resumes from the capped IP.
			k, _ := trOK(t, trStartFrom(a, "h1", ip1), "Trial resumed")
			if k != k1 {
				t.Fatalf("resumed %s, want %s", k, k1)
			}
			// Another IP is not capped, not even for the refused device.
			trOK(t, trStartFrom(a, "h3", ip2), "Trial started")
			if tr := trTrialOf(t, a, "h1"); tr["ip"] != ip1 {
				t.Fatalf("trial ip = %v, want the forwarded %s", tr["ip"], ip1)
			}
			if tr := trTrialOf(t, a, "h3"); tr["ip"] != ip2 {
				t.Fatalf("trial ip = %v, want %s", tr["ip"], ip2)
			}

			// The window slides: h1 and h2 count until 24 hours after each.
			s.Clock.Set(start.Add(24*time.Hour - time.Second))
			trStartFrom(a, "h4", ip1).PlainFail(t, 403, "TRIAL_LIMIT")
			s.Clock.Set(start.Add(24*time.Hour + time.Second)) // h1 left the window
			trOK(t, trStartFrom(a, "h4", ip1), "Trial started")
			trStartFrom(a, "h5", ip1).PlainFail(t, 403, "TRIAL_LIMIT")       // h2 and h4
			s.Clock.Set(start.Add(24*time.Hour + time.Minute + time.Second)) // h2 left too
			trOK(t, trStartFrom(a, "h5", ip1), "Trial started")
			trStartFrom(a, "h6", ip1).PlainFail(t, 403, "TRIAL_LIMIT") // h4 and h5
			if n := len(trList(t, a, "").List(t, "trials")); n != 5 {
				t.Fatalf("%d trials listed, want 5 (refusals record nothing)", n)
			}
		})

		t.Run("window of 1 hour", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Hourly", map[string]any{"trial_ip_limit": 1, "trial_ip_window_hours": 1})
			trOK(t, trStartFrom(a, "w1", ip1), "Trial started")
			s.Clock.Advance(time.Hour - time.Second)
			trStartFrom(a, "w2", ip1).PlainFail(t, 403, "TRIAL_LIMIT")
			s.Clock.Advance(2 * time.Second)
			trOK(t, trStartFrom(a, "w2", ip1), "Trial started")
		})

		t.Run("limit 0 is no cap", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Uncapped", map[string]any{"trial_ip_limit": 0})
			for _, h := range []string{"u1", "u2", "u3", "u4", "u5", "u6", "u7"} {
				trOK(t, trStartFrom(a, h, ip1), "Trial started")
			}
		})

		t.Run("default cap is 3", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.CreateApp("Default cap")
			a.SetSettings(t, map[string]any{"trial_enabled": true})
			for _, h := range []string{"d1", "d2", "d3"} {
				trOK(t, trStartFrom(a, h, ip1), "Trial started")
			}
			trStartFrom(a, "d4", ip1).PlainFail(t, 403, "TRIAL_LIMIT")
		})

		t.Run("caps are per app", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "App A", map[string]any{"trial_ip_limit": 1})
			b := trApp(t, s, "App B", map[string]any{"trial_ip_limit": 1})
			trOK(t, trStartFrom(a, "p1", ip1), "Trial started")
			trStartFrom(a, "p2", ip1).PlainFail(t, 403, "TRIAL_LIMIT")
			// The same device and IP get a trial of another app.
			trOK(t, trStartFrom(b, "p1", ip1), "Trial started")
		})
	})
}

// Bad input: hwid missing, empty, too long or not a string is 400
// MISSING_FIELDS; a bad secret 401; GET 405; maintenance a 403 MAINTENANCE.
// None of them records a trial.
func TestClientTrialBadInput(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Bad", nil)

		bodies := map[string]any{
			"no hwid":       map[string]any{},
			"other field":   map[string]any{"license_key": "x"},
			"empty hwid":    map[string]any{"hwid": ""},
			"null hwid":     map[string]any{"hwid": nil},
			"257 chars":     map[string]any{"hwid": strings.Repeat("h", 257)},
			"4 KiB":         map[string]any{"hwid": strings.Repeat("h", 4096)},
			"number":        map[string]any{"hwid": 12345},
			"bool":          map[string]any{"hwid": true},
			"array":         map[string]any{"hwid": []any{"pc"}},
			"object":        map[string]any{"hwid": map[string]any{"id": "pc"}},
			"NUL":           map[string]any{"hwid": "pc\x00"},
			"empty body":    "",
			"array body":    `["pc"]`,
			"invalid JSON":  `{"hwid":"pc"`,
			"string body":   `"pc"`,
			"null JSON":     `null`,
			"trailing junk": `{"hwid":"pc"} x`,
		}
		for name, body := range bodies {
			t.Run(name, func(t *testing.T) {
				clAppOn(t, a).Plain(trTrial, body).PlainFail(t, 400, "MISSING_FIELDS")
			})
		}
		if n := len(trList(t, a, "").List(t, "trials")); n != 0 {
			t.Fatalf("refused requests recorded %d trials", n)
		}

		// 256 characters is the longest hwid.
		long := strings.Repeat("h", 256)
		trOK(t, trStart(a, long), "Trial started")

		// The app secret is required.
		body := []byte(`{"hwid":"pc-secret"}`)
		for name, h := range map[string]http.Header{
			"missing": {"Content-Type": {"application/json"}},
			"wrong":   {"Content-Type": {"application/json"}, "X-App-Secret": {strings.Repeat("ab", 32)}},
			"blank":   {"Content-Type": {"application/json"}, "X-App-Secret": {"   "}},
		} {
			t.Run("secret "+name, func(t *testing.T) {
				clSub(t, s).Do("POST", trTrial, h, body).PlainFail(t, 401, "INVALID_APP")
			})
		}
		// Only POST.
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			r := s.Do(m, trTrial, http.Header{"X-App-Secret": {a.Secret}}, nil)
			kwtest.ExpectCode(t, r, 405, "METHOD_NOT_ALLOWED")
			if r.Header.Get("Allow") != "POST" {
				t.Fatalf("%s: Allow = %q, want POST", m, r.Header.Get("Allow"))
			}
		}

		// Maintenance refuses new and resumed trials with the app's message.
		_, sid := trOK(t, trStart(a, "pc-m"), "Trial started")
		a.SetSettings(t, map[string]any{"maintenance": true, "maintenance_message": "Back at noon"})
		for _, h := range []string{"pc-m", "pc-new"} {
			r := trStart(a, h)
			r.PlainFail(t, 403, "MAINTENANCE")
			if r.Body["message"] != "Back at noon" {
				t.Fatalf("maintenance message = %#v", r.Body["message"])
			}
		}
		a.Heartbeat(sid, "").Kill(t, "MAINTENANCE")
		a.SetSettings(t, map[string]any{"maintenance": false})
		trOK(t, trStart(a, "pc-new"), "Trial started")
		if n := len(trList(t, a, "").List(t, "trials")); n != 3 {
			t.Fatalf("%d trials, want 3 (256-char, pc-m, pc-new)", n)
		}
		if tr := trTrialOf(t, a, long); tr["hwid"] != long {
			t.Fatalf("listed hwid %v", tr["hwid"])
		}
	})
}

// trial.created is recorded once per new trial, with its data, and never for
// a resume or a refusal.
func TestClientTrialCreatedEvent(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Events", map[string]any{"trial_ip_limit": 2})
		other := trApp(t, s, "Other", nil)

		r1 := trStart(a, "pc-1")
		k1, _ := trOK(t, r1, "Trial started")
		trOK(t, trStart(a, "pc-1"), "Trial resumed")
		s.Clock.Advance(time.Minute)
		r2 := trStart(a, "pc-2")
		k2, _ := trOK(t, r2, "Trial started")
		trOK(t, trStart(a, "pc-2"), "Trial resumed")
		trOK(t, trStart(a, "pc-1"), "Trial resumed")
		trStart(a, "pc-3").PlainFail(t, 403, "TRIAL_LIMIT")
		trOK(t, trStart(other, "pc-1"), "Trial started")

		got := trEvents(t, s, a.ID)
		want := []map[string]any{
			{"app_id": a.ID, "license_key": k1, "hwid": "pc-1", "expires_at": r1.Body["expires_at"]},
			{"app_id": a.ID, "license_key": k2, "hwid": "pc-2", "expires_at": r2.Body["expires_at"]},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial.created events = %v\nwant %v", got, want)
		}
		if n := len(trEvents(t, s, other.ID)); n != 1 {
			t.Fatalf("other app has %d trial.created events, want 1", n)
		}

		// Expired, deleted, banned: refusals record nothing either.
		a.MustKeyAction(t, "ban", k2, nil)
		trStart(a, "pc-2").PlainFail(t, 403, "BANNED")
		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": k1})
		trStart(a, "pc-1").PlainFail(t, 403, "TRIAL_USED")
		if n := len(trEvents(t, s, a.ID)); n != 2 {
			t.Fatalf("%d trial.created events after refusals, want 2", n)
		}
	})
}

// GET trials.php lists an app's trials newest first, pages with cursor and
// limit, and refuses unknown apps, a missing app_id and missing tokens.
func TestAdminTrialsList(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Listed", nil)
		other := trApp(t, s, "Unlisted", nil)
		trOK(t, trStart(other, "other-pc"), "Trial started")

		if r := trList(t, a, ""); len(r.List(t, "trials")) != 0 || r.Body["next_cursor"] != nil {
			t.Fatalf("empty list = %s", r)
		}
		hwids := []string{"pc-0", "pc-1", "pc-2", "pc-3", "pc-4"}
		keys := map[string]string{}
		created := map[string]string{}
		expires := map[string]string{}
		for _, h := range hwids {
			r := trStart(a, h)
			keys[h], _ = trOK(t, r, "Trial started")
			created[h] = s.Clock.Now().UTC().Format("2006-01-02T15:04:05Z")
			expires[h] = r.Str("expires_at")
			s.Clock.Advance(time.Minute)
		}

		all := trList(t, a, "").List(t, "trials")
		if len(all) != len(hwids) {
			t.Fatalf("%d trials listed, want %d: %v", len(all), len(hwids), all)
		}
		var lastID float64 = math.MaxFloat64
		for i, tr := range all {
			h := hwids[len(hwids)-1-i] // newest first
			id, ok := tr["id"].(float64)
			if !ok || id <= 0 || id >= lastID {
				t.Fatalf("trial %d id = %#v, want positive and decreasing", i, tr["id"])
			}
			lastID = id
			want := map[string]any{"id": id, "hwid": h, "ip": "127.0.0.1", "created_at": created[h],
				"license_key": keys[h], "status": "active", "expires_at": expires[h]}
			if !reflect.DeepEqual(tr, want) {
				t.Fatalf("trial %d = %v\nwant %v", i, tr, want)
			}
		}

		// Pages of two: 2, 2, 1, the last with next_cursor null.
		var paged []string
		cursor := ""
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatal("paging does not end")
			}
			q := "limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := trList(t, a, q)
			items := r.List(t, "trials")
			for _, tr := range items {
				paged = append(paged, tr["hwid"].(string))
			}
			if r.Body["next_cursor"] == nil {
				if page != 2 || len(items) != 1 {
					t.Fatalf("last page %d has %d trials, want page 2 with 1", page, len(items))
				}
				break
			}
			if len(items) != 2 {
				t.Fatalf("page %d has %d trials and a next_cursor, want 2", page, len(items))
			}
			c, ok := r.Body["next_cursor"].(string)
			if !ok || c == "" {
				t.Fatalf("next_cursor = %#v, want a string", r.Body["next_cursor"])
			}
			cursor = c
		}
		if want := []string{"pc-4", "pc-3", "pc-2", "pc-1", "pc-0"}; !reflect.DeepEqual(paged, want) {
			t.Fatalf("paged hwids = %v, want %v", paged, want)
		}
		// A page that is not full is the last one.
		if r := trList(t, a, "limit=10"); len(r.List(t, "trials")) != 5 || r.Body["next_cursor"] != nil {
			t.Fatalf("limit 10 = %s", r)
		}

		// Refusals.
		s.Admin("GET", trTrials+"?app_id=nope", nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", trTrials, nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", trTrials+"?app_id=", nil).JSONFail(t, 400, "MISSING_FIELDS")
		for _, q := range []string{"cursor=abc", "cursor=-1", "limit=-2", "limit=x"} {
			s.Admin("GET", trTrials+"?app_id="+a.ID+"&"+q, nil).JSONFail(t, 400, "MISSING_FIELDS")
		}
		s.Do("GET", trTrials+"?app_id="+a.ID, nil, nil).JSONFail(t, 401, "UNAUTHORIZED")
		s.Do("GET", trTrials+"?app_id="+a.ID, kwtest.Bearer("not-a-token"), nil).JSONFail(t, 401, "UNAUTHORIZED")
		r := s.Admin("POST", trTrials+"?app_id="+a.ID, nil)
		kwtest.ExpectCode(t, r, 405, "METHOD_NOT_ALLOWED")
	})
}

// Out-of-range trial settings are refused with 400 MISSING_FIELDS and change
// nothing.
func TestAdminTrialSettingsInvalid(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Settings", map[string]any{"trial_duration": 5, "trial_duration_unit": "hours",
			"trial_features": map[string]any{"pro": true}, "trial_ip_limit": 2})
		path := "/api/admin/apps.php?app_id=" + a.ID
		before := s.AppView(t, a.ID)
		audits := len(s.Audit(t, "action=app.update"))
		s.Clock.Advance(time.Minute)

		cases := map[string]string{
			"unit weeks":            `{"trial_duration_unit":"weeks"}`,
			"unit empty":            `{"settings":{"trial_duration_unit":""}}`,
			"unit upper case":       `{"trial_duration_unit":"DAYS"}`,
			"unit number":           `{"trial_duration_unit":1}`,
			"duration 0":            `{"trial_duration":0}`,
			"duration negative":     `{"settings":{"trial_duration":-3}}`,
			"duration string":       `{"trial_duration":"3"}`,
			"duration fraction":     `{"trial_duration":1.5}`,
			"duration over 10y":     `{"trial_duration":3651,"trial_duration_unit":"days"}`,
			"hours over 10y":        `{"trial_duration":87601,"trial_duration_unit":"hours"}`,
			"max devices 0":         `{"trial_max_devices":0}`,
			"max devices too many":  `{"trial_max_devices":10001}`,
			"ip limit negative":     `{"trial_ip_limit":-1}`,
			"ip limit string":       `{"trial_ip_limit":"2"}`,
			"ip window 0":           `{"trial_ip_window_hours":0}`,
			"ip window over a year": `{"trial_ip_window_hours":8761}`,
			"features array":        `{"trial_features":["pro"]}`,
			"features string":       `{"trial_features":"{}"}`,
			"features number":       `{"trial_features":5}`,
			"features nested":       `{"trial_features":{"pro":{"level":2}}}`,
			"features list value":   `{"trial_features":{"pro":[true]}}`,
			"features empty name":   `{"trial_features":{"":true}}`,
			"enabled string":        `{"trial_enabled":"yes"}`,
			"valid then invalid":    `{"trial_duration":7,"trial_duration_unit":"fortnights"}`,
			"unknown trial setting": `{"trial_length":3}`,
		}
		for name, body := range cases {
			t.Run(name, func(t *testing.T) {
				s := clSub(t, s)
				s.Do("PUT", path, kwtest.Bearer(s.AdminToken()), []byte(body)).JSONFail(t, 400, "MISSING_FIELDS")
			})
		}
		if after := s.AppView(t, a.ID); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused edits changed the app:\nbefore %v\nafter  %v", before, after)
		}
		if n := len(s.Audit(t, "action=app.update")); n != audits {
			t.Fatalf("refused edits were audited: %d app.update entries, want %d", n, audits)
		}
		// Trials still follow the unchanged settings.
		start := s.Clock.Now()
		r := trStart(a, "pc")
		key, _ := trOK(t, r, "Trial started")
		trCheckShape(t, a, r, key, trWant{hwid: "pc", started: start, length: 5 * time.Hour, maxDevices: 1, interval: 30,
			features: map[string]any{"pro": true}, appName: "Settings"})

		// The bounds themselves are accepted.
		for _, body := range []map[string]any{
			{"trial_duration": 3650, "trial_duration_unit": "days"},
			{"trial_duration": 87600, "trial_duration_unit": "hours"},
			{"trial_ip_limit": 0, "trial_ip_window_hours": 8760, "trial_max_devices": 10000},
			{"trial_features": nil},
		} {
			s.MustAdmin("PUT", path, body)
		}
		if st := s.AppSettings(t, a.ID); !reflect.DeepEqual(st["trial_features"], map[string]any{}) {
			t.Fatalf("trial_features null stored as %#v, want {}", st["trial_features"])
		}
	})
}

// Converting a running trial into a days key keeps the string and the
// session, and counts the days from now.
func TestAdminConvertTrialDays(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, trLongSessions)
		a := trApp(t, s, "Convert", nil) // 3 days, one device
		key, sid := trOK(t, trStart(a, "pc"), "Trial started")
		s.Clock.Advance(26 * time.Hour)
		a.BeatOK(t, sid, key)

		at := s.Clock.Now()
		r := trConvert(a, map[string]any{"license_key": key, "key_type": "days", "duration_value": 30})
		r.OK(t)
		k := r.Obj("key")
		if k["license_key"] != key || k["key_type"] != "days" || k["status"] != "active" {
			t.Fatalf("converted key = %v", k)
		}
		if kwtest.Num(t, "duration", k["duration"]) != 30 || kwtest.Num(t, "max_devices", k["max_devices"]) != 1 ||
			kwtest.Num(t, "days_remaining", k["days_remaining"]) != 30 {
			t.Fatalf("converted key = %v, want duration 30, the trial's one seat, 30 days left", k)
		}
		if exp := kwtest.WireTime(t, "expires_at", k["expires_at"]); !exp.Equal(at.Add(30 * 24 * time.Hour)) {
			t.Fatalf("expires_at = %v, want now + 30 days (%v)", exp, at.Add(30*24*time.Hour))
		}
		stored := a.KeyView(t, key)
		for _, f := range []string{"key_type", "duration", "expires_at", "max_devices", "status", "note"} {
			if !reflect.DeepEqual(stored[f], k[f]) {
				t.Fatalf("stored %s = %#v, the convert reply said %#v", f, stored[f], k[f])
			}
		}
		// The running session keeps beating, past the old trial end too.
		a.BeatOK(t, sid, key)
		s.Clock.Advance(3 * 24 * time.Hour)
		a.BeatOK(t, sid, key)
		if d := a.Devices(t, key); !reflect.DeepEqual(d, []string{"pc"}) {
			t.Fatalf("devices = %v, want [pc]", d)
		}
		// It ends 30 days after the conversion.
		s.Clock.Set(at.Add(30*24*time.Hour - time.Second))
		a.BeatOK(t, sid, key)
		s.Clock.Set(at.Add(30 * 24 * time.Hour))
		a.Heartbeat(sid, key).Kill(t, "EXPIRED")

		// The conversion is audited.
		var found bool
		for _, e := range s.Audit(t, "action=key.convert&app_id="+a.ID) {
			if e["action"] == "key.convert" && e["target"] == key && e["app_id"] == a.ID {
				d, _ := e["details"].(map[string]any)
				if d["key_type"] != "days" || d["duration"] != 30.0 {
					t.Fatalf("key.convert details = %v", e["details"])
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("no key.convert audit entry for %s", key)
		}
		// The device still had its trial.
		trStart(a, "pc").PlainFail(t, 403, "TRIAL_USED")
	})
}

// An expired trial becomes active again on conversion; lifetime keys never
// expire; max_devices replaces the trial's seats.
func TestAdminConvertTrialExpiredLifetimeSeats(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Boot(t, engine, trLongSessions)

		t.Run("expired trial", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Expired", map[string]any{"trial_duration": 5, "trial_duration_unit": "hours"})
			key, sid := trOK(t, trStart(a, "pc"), "Trial started")
			s.Clock.Advance(6 * time.Hour)
			a.Heartbeat(sid, key).Kill(t, "EXPIRED")
			a.LoginReply(key, "pc").SealedFail(t, "EXPIRED")

			at := s.Clock.Now()
			r := trConvert(a, map[string]any{"license_key": key, "key_type": "days", "duration_value": 7})
			r.OK(t)
			k := r.Obj("key")
			if k["status"] != "active" || k["license_key"] != key {
				t.Fatalf("converted expired trial = %v, want active", k)
			}
			if exp := kwtest.WireTime(t, "expires_at", k["expires_at"]); !exp.Equal(at.Add(7 * 24 * time.Hour)) {
				t.Fatalf("expires_at = %v, want now + 7 days", exp)
			}
			// The killed session stays dead; a fresh login works.
			a.Heartbeat(sid, key).Kill(t, "EXPIRED")
			sid2 := a.Login(key, "pc")
			s.Clock.Advance(30 * time.Second)
			a.BeatOK(t, sid2, key)
			// The binding stayed: another device is still refused.
			a.LoginReply(key, "pc-2").SealedFail(t, "HWID_MISMATCH")
		})

		t.Run("lifetime", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Lifetime", nil)
			key, sid := trOK(t, trStart(a, "pc"), "Trial started")
			r := trConvert(a, map[string]any{"license_key": key, "key_type": "lifetime"})
			r.OK(t)
			k := r.Obj("key")
			if k["key_type"] != "lifetime" || k["expires_at"] != nil || k["days_remaining"] != nil || k["status"] != "active" {
				t.Fatalf("lifetime conversion = %v, want expires_at and days_remaining null", k)
			}
			if kwtest.Num(t, "duration", k["duration"]) != 0 {
				t.Fatalf("duration = %v, want 0", k["duration"])
			}
			// Years later (beating now and then) it still runs.
			for i := 0; i < 25; i++ {
				s.Clock.Advance(80 * 24 * time.Hour)
				a.BeatOK(t, sid, key)
			}
			// The stored key is a lifetime key, as the admin and the client
			// see it.
			if v := a.KeyView(t, key); v["key_type"] != "lifetime" || v["expires_at"] != nil || v["status"] != "active" {
				t.Fatalf("stored key after a lifetime conversion = %v, want key_type lifetime, active, no expiry", v)
			}
			cr := a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": key})
			cr.OK(t)
			if ck := cr.Obj("key"); ck["key_type"] != "lifetime" || ck["expires_at"] != nil {
				t.Fatalf("check-key after a lifetime conversion = %v, want key_type lifetime", ck)
			}
		})

		t.Run("max_devices replaces seats", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Seats", nil) // one seat
			key, sid := trOK(t, trStart(a, "pc-1"), "Trial started")
			a.LoginReply(key, "pc-2").SealedFail(t, "HWID_MISMATCH")
			r := trConvert(a, map[string]any{"license_key": key, "key_type": "days", "duration_value": 30, "max_devices": 3})
			r.OK(t)
			if kwtest.Num(t, "max_devices", r.Obj("key")["max_devices"]) != 3 {
				t.Fatalf("max_devices = %v, want 3", r.Obj("key")["max_devices"])
			}
			s2 := a.Login(key, "pc-2")
			s3 := a.Login(key, "pc-3")
			a.LoginReply(key, "pc-4").SealedFail(t, "DEVICE_LIMIT")
			for _, id := range []string{sid, s2, s3} {
				a.BeatOK(t, id, key)
			}
			// Without max_devices the seats stay.
			key2, _ := trOK(t, trStart(a, "pc-9"), "Trial started")
			r = trConvert(a, map[string]any{"license_key": key2, "key_type": "lifetime"})
			r.OK(t)
			if kwtest.Num(t, "max_devices", r.Obj("key")["max_devices"]) != 1 {
				t.Fatalf("max_devices = %v, want the trial's 1", r.Obj("key")["max_devices"])
			}
		})

		t.Run("paused trial stays paused", func(t *testing.T) {
			s := clSub(t, srv)
			a := trApp(t, s, "Paused", nil)
			key, _ := trOK(t, trStart(a, "pc"), "Trial started")
			a.MustKeyAction(t, "pause", key, nil)
			r := trConvert(a, map[string]any{"license_key": key, "key_type": "lifetime"})
			r.OK(t)
			if r.Obj("key")["status"] != "paused" {
				t.Fatalf("converted paused trial = %v, want still paused", r.Obj("key"))
			}
		})
	})
}

// Convert refuses non-trial and banned keys (409), bad input (400) and
// unknown keys (404), changing nothing.
func TestAdminConvertTrialRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Refusals", nil)
		trialKey, _ := trOK(t, trStart(a, "pc"), "Trial started")
		banned, _ := trOK(t, trStart(a, "pc-banned"), "Trial started")
		a.MustKeyAction(t, "ban", banned, nil)
		normal := a.GenerateKeys(1, "days", 10, 1)[0]
		lifetime := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		other := trApp(t, s, "Other", nil)
		otherTrial, _ := trOK(t, trStart(other, "pc"), "Trial started")

		snapshot := func() map[string]any {
			out := map[string]any{}
			for _, k := range []string{trialKey, banned, normal, lifetime} {
				out[k] = a.KeyView(t, k)
			}
			out[otherTrial] = other.KeyView(t, otherTrial)
			return out
		}
		before := snapshot()
		audits := len(s.Audit(t, "action=key.convert"))

		days30 := func(k string) map[string]any {
			return map[string]any{"license_key": k, "key_type": "days", "duration_value": 30}
		}
		cases := []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"generated days key", days30(normal), 409, "CONFLICT"},
			{"generated lifetime key", map[string]any{"license_key": lifetime, "key_type": "lifetime"}, 409, "CONFLICT"},
			{"banned trial", days30(banned), 409, "CONFLICT"},
			{"unknown key", days30("TRIAL-AAAAA-BBBBB-CCCCC"), 404, "NOT_FOUND"},
			{"other app's trial", days30(otherTrial), 404, "NOT_FOUND"},
			{"no license_key", map[string]any{"key_type": "days", "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"blank license_key", map[string]any{"license_key": "  ", "key_type": "days", "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"no key_type", map[string]any{"license_key": trialKey, "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"key_type weeks", map[string]any{"license_key": trialKey, "key_type": "weeks", "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"key_type number", map[string]any{"license_key": trialKey, "key_type": 1, "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"days without duration", map[string]any{"license_key": trialKey, "key_type": "days"}, 400, "MISSING_FIELDS"},
			{"days duration 0", map[string]any{"license_key": trialKey, "key_type": "days", "duration_value": 0}, 400, "MISSING_FIELDS"},
			{"days duration negative", map[string]any{"license_key": trialKey, "key_type": "days", "duration_value": -5}, 400, "MISSING_FIELDS"},
			{"days duration too long", map[string]any{"license_key": trialKey, "key_type": "days", "duration_value": 36501}, 400, "MISSING_FIELDS"},
			{"days duration not a number", map[string]any{"license_key": trialKey, "key_type": "days", "duration_value": "thirty"}, 400, "MISSING_FIELDS"},
			{"days duration fraction", map[string]any{"license_key": trialKey, "key_type": "days", "duration_value": 1.5}, 400, "MISSING_FIELDS"},
			{"lifetime with duration", map[string]any{"license_key": trialKey, "key_type": "lifetime", "duration_value": 30}, 400, "MISSING_FIELDS"},
			{"max_devices 0", map[string]any{"license_key": trialKey, "key_type": "lifetime", "max_devices": 0}, 400, "MISSING_FIELDS"},
			{"max_devices negative", map[string]any{"license_key": trialKey, "key_type": "lifetime", "max_devices": -1}, 400, "MISSING_FIELDS"},
			{"max_devices too many", map[string]any{"license_key": trialKey, "key_type": "lifetime", "max_devices": 10001}, 400, "MISSING_FIELDS"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				trConvert(clAppOn(t, a), c.body).JSONFail(t, c.status, c.code)
			})
		}
		// Unknown and missing apps.
		s.Admin("POST", "/api/admin/keys.php?app_id=nope&action=convert", days30(trialKey)).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("POST", "/api/admin/keys.php?action=convert", days30(trialKey)).JSONFail(t, 400, "MISSING_FIELDS")
		s.Do("POST", "/api/admin/keys.php?app_id="+a.ID+"&action=convert", http.Header{"Content-Type": {"application/json"}},
			kwtest.JSON(t, days30(trialKey))).JSONFail(t,
			401, "UNAUTHORIZED")

		if after := snapshot(); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused conversions changed keys:\nbefore %v\nafter  %v", before, after)
		}
		if n := len(s.Audit(t, "action=key.convert")); n != audits {
			t.Fatalf("refused conversions were audited: %d key.convert entries, want %d", n, audits)
		}

		// Unbanned, the trial converts; a converted key converts again (it
		// is still a trial key by its string).
		a.MustKeyAction(t, "unban", banned, nil)
		trConvert(a, days30(banned)).OK(t)
		// app_id and the action may also come from the body / query mix.
		r := s.Admin("POST", "/api/admin/keys.php?action=convert", map[string]any{"app_id": a.ID, "license_key": " " + trialKey + " ",
			"key_type": "lifetime"})
		r.OK(t)
		if r.Obj("key")["license_key"] != trialKey {
			t.Fatalf("converted %v, want %s", r.Obj("key")["license_key"], trialKey)
		}
	})
}

// A generated key is not a trial key even when the app's key_prefix makes
// it start with "TRIAL-": converting it is a CONFLICT like any other key.
func TestAdminConvertTrialPrefixedNonTrialKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := trApp(t, s, "Prefixed", map[string]any{"key_prefix": "TRIAL"})
		k := a.GenerateKeys(1, "days", 10, 1)[0]
		if !strings.HasPrefix(k, "TRIAL-") {
			t.Fatalf("generated %s, want the TRIAL- prefix", k)
		}
		before := a.KeyView(t, k)
		trConvert(a, map[string]any{"license_key": k, "key_type": "lifetime"}).JSONFail(t, 409, "CONFLICT")
		if after := a.KeyView(t, k); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused conversion changed the key:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// trPost sends one plain trial request from a goroutine; it reports errors
// instead of failing the test.
func trPost(a *kwtest.App, hwid, xff string) (status int, body map[string]any, err error) {
	b, _ := json.Marshal(map[string]any{"hwid": hwid})
	req, err := http.NewRequest("POST", a.S.URL+trTrial, strings.NewReader(string(b)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-App-Secret", a.Secret)
	req.Header.Set("Content-Type", "application/json")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, err
}

// Concurrent trial requests: one device gets exactly one trial (one key, one
// trial.created), and the per-IP cap holds under a burst of new devices.
func TestClientTrialConcurrent(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.TrustProxy = true })
		const n = 12
		type result struct {
			status int
			body   map[string]any
			err    error
		}
		burst := func(a *kwtest.App, hwid func(i int) string) []result {
			out := make([]result, n)
			done := make(chan struct{})
			for i := range n {
				go func() {
					defer func() { done <- struct{}{} }()
					st, b, err := trPost(a, hwid(i), "203.0.113.50")
					out[i] = result{st, b, err}
				}()
			}
			for range n {
				<-done
			}
			return out
		}

		t.Run("same device", func(t *testing.T) {
			a := trApp(t, clSub(t, s), "Burst device", nil)
			res := burst(a, func(int) string { return "pc" })
			started, keys := 0, map[any]bool{}
			for _, r := range res {
				if r.err != nil || r.status != 200 || r.body["success"] != true {
					t.Fatalf("concurrent trial: %d %v %v", r.status, r.body, r.err)
				}
				if r.body["message"] == "Trial started" {
					started++
				} else if r.body["message"] != "Trial resumed" {
					t.Fatalf("message %v", r.body["message"])
				}
				keys[r.body["trial_key"]] = true
			}
			if started != 1 || len(keys) != 1 {
				t.Fatalf("%d replies said Trial started and %d keys were handed out, want 1 and 1", started, len(keys))
			}
			if ev := trEvents(t, s, a.ID); len(ev) != 1 {
				t.Fatalf("%d trial.created events, want 1", len(ev))
			}
			if tr := trList(t, clAppOn(t, a), "").List(t, "trials"); len(tr) != 1 {
				t.Fatalf("%d trials listed, want 1", len(tr))
			}
			// One seat: exactly one of the sessions is still live.
			for k := range keys {
				if ss := clAppOn(t, a).Sessions(t, k.(string)); len(ss) != 1 {
					t.Fatalf("%d live sessions on a one-seat trial, want 1", len(ss))
				}
			}
		})

		t.Run("cap under a burst", func(t *testing.T) {
			a := trApp(t, clSub(t, s), "Burst cap", map[string]any{"trial_ip_limit": 3})
			res := burst(a, func(i int) string { return "dev-" + string(rune('a'+i)) })
			ok, limited := 0, 0
			for _, r := range res {
				switch {
				case r.err != nil:
					t.Fatalf("concurrent trial: %v", r.err)
				case r.status == 200 && r.body["success"] == true:
					ok++
				case r.status == 403 && r.body["error_code"] == "TRIAL_LIMIT":
					limited++
				default:
					t.Fatalf("concurrent trial: %d %v", r.status, r.body)
				}
			}
			if ok != 3 || limited != n-3 {
				t.Fatalf("%d trials started and %d refused, want 3 and %d", ok, limited, n-3)
			}
			if ev := trEvents(t, s, a.ID); len(ev) != 3 {
				t.Fatalf("%d trial.created events, want 3", len(ev))
			}
		})
	})
}
