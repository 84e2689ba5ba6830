package adminapi_test

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// admAct applies action and fails unless it succeeds; it returns the key view.
func admAct(t *testing.T, a *kwtest.App, action, key string, extra map[string]any) map[string]any {
	t.Helper()
	r := a.KeyAction(action, key, extra)
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("%s %s: %s", action, key, r)
	}
	return r.Obj("key")
}

// ban ends live sessions (next heartbeat BANNED) and refuses logins; unban
// restores active, or unused for a never-activated key; banning twice is
// harmless and unbanning a key that is not banned is a CONFLICT.
func TestAdminBanUnban(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Ban")
		keys := app.GenerateKeys(2, "days", 30, 1)
		key, fresh := keys[0], keys[1]
		sid := app.Login(key, "pc-1")

		if k := admAct(t, app, "ban", key, map[string]any{"reason": "chargeback"}); k["status"] != "banned" {
			t.Fatalf("after ban: %v", k)
		}
		kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "BANNED")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-1"}), 200, "BANNED")
		if r := admCheckKey(s, app.Secret, key); r.Body["valid"] != false || r.Obj("key")["status"] != "banned" {
			t.Fatalf("check-key of banned key: %s", r)
		}
		if k := admAct(t, app, "ban", key, nil); k["status"] != "banned" {
			t.Fatalf("second ban: %v", k)
		}
		if k := admAct(t, app, "unban", key, nil); k["status"] != "active" {
			t.Fatalf("after unban: %v", k)
		}
		app.KeyAction("unban", key, nil).JSONFail(t, 409, "CONFLICT")
		sid2 := app.Login(key, "pc-1")
		if r := app.Heartbeat(sid2, key); r.Body["success"] != true {
			t.Fatalf("heartbeat after unban: %v", r.Body)
		}
		// The session ended by the ban stays ended.
		kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "BANNED")

		admAct(t, app, "ban", fresh, nil)
		if k := admAct(t, app, "unban", fresh, nil); k["status"] != "unused" || k["activated_at"] != nil {
			t.Fatalf("unban of a never-used key: %v", k)
		}
		// The ban's reason is in the audit log.
		e := s.Audit(t, "action=key.ban")
		// (Newest first: fresh's ban, the repeated ban of key, the first ban.)
		if len(e) != 3 || e[2]["target"] != key || e[2]["details"].(map[string]any)["reason"] != "chargeback" || e[0]["target"] != fresh {
			t.Fatalf("key.ban audit: %v", e)
		}
	})
}

// pause ends sessions with PAUSED and refuses logins until resume; pausing a
// banned key and resuming a key that is not paused are CONFLICTs.
func TestAdminPauseResume(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Pause")
		keys := app.GenerateKeys(3, "days", 30, 1)
		key := keys[0]
		sid := app.Login(key, "pc-1")
		app.KeyAction("resume", key, nil).JSONFail(t, 409, "CONFLICT")

		if k := admAct(t, app, "pause", key, nil); k["status"] != "paused" {
			t.Fatalf("after pause: %v", k)
		}
		kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "PAUSED")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-1"}), 200, "PAUSED")
		admAct(t, app, "pause", key, nil) // idempotent
		if k := admAct(t, app, "resume", key, nil); k["status"] != "active" {
			t.Fatalf("after resume: %v", k)
		}
		app.Login(key, "pc-1")

		// An unused key pauses and resumes back to unused.
		admAct(t, app, "pause", keys[1], nil)
		if k := admAct(t, app, "resume", keys[1], nil); k["status"] != "unused" {
			t.Fatalf("resume of an unused key: %v", k)
		}
		// A banned key cannot be paused; a paused key can be banned.
		admAct(t, app, "ban", keys[1], nil)
		app.KeyAction("pause", keys[1], nil).JSONFail(t, 409, "CONFLICT")
		admAct(t, app, "pause", keys[2], nil)
		if k := admAct(t, app, "ban", keys[2], nil); k["status"] != "banned" {
			t.Fatalf("ban of a paused key: %v", k)
		}
		app.KeyAction("resume", keys[2], nil).JSONFail(t, 409, "CONFLICT")
	})
}

// extend adds days to an active key's expiry (from now when it already
// passed, making it active again) or to an unused key's duration; lifetime
// keys refuse, and days must be 1..36500.
func TestAdminExtend(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.TokenTTL = 30 * 24 * time.Hour }})
		app := s.CreateApp("Extend")
		keys := app.GenerateKeys(2, "days", 10, 1)
		life := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		active, unused := keys[0], keys[1]
		start := s.Clock.Now()
		app.Login(active, "pc-1")

		k := admAct(t, app, "extend", active, map[string]any{"days": 5})
		if want := license.Timestamp(start.Add(15 * 24 * time.Hour)); k["expires_at"] != want || k["duration"] != 15.0 || k["days_remaining"] != 15.0 {
			t.Fatalf("after extend by 5: %v, want expires_at %s", k, want)
		}
		if k := admAct(t, app, "extend", unused, map[string]any{"days": 7}); k["duration"] != 17.0 || k["expires_at"] != nil || k["status"] != "unused" {
			t.Fatalf("extend unused: %v", k)
		}

		// Let the active key expire; extend counts from now.
		s.Clock.Advance(20 * 24 * time.Hour)
		sid := app.Env("/api/auth/login.php", map[string]any{"license_key": active, "hwid": "pc-1"})
		kwtest.ExpectCode(t, sid, 200, "EXPIRED")
		if k := app.KeyView(t, active); k["status"] != "expired" {
			t.Fatalf("status after expiry: %v", k["status"])
		}
		k = admAct(t, app, "extend", active, map[string]any{"days": 3})
		if want := license.Timestamp(s.Clock.Now().Add(3 * 24 * time.Hour)); k["expires_at"] != want || k["status"] != "active" {
			t.Fatalf("extend of expired key: %v, want active until %s", k, want)
		}
		app.Login(active, "pc-1")

		app.KeyAction("extend", life, map[string]any{"days": 5}).JSONFail(t, 409, "CONFLICT")
		for _, extra := range []map[string]any{nil, {"days": 0}, {"days": -2}, {"days": 36501}, {"days": "ten"}} {
			app.KeyAction("extend", active, extra).JSONFail(t, 400, "MISSING_FIELDS")
		}
		if k := app.KeyView(t, active); k["expires_at"] != license.Timestamp(s.Clock.Now().Add(3*24*time.Hour)) {
			t.Fatalf("refused extends moved the expiry: %v", k["expires_at"])
		}
	})
}

// reset-hwid unbinds every device and ends sessions with HWID_RESET; the
// status is unchanged and a new device can log in.
func TestAdminResetHWID(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Reset")
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		sid := app.Login(key, "pc-old")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-new"}), 200, "HWID_MISMATCH")

		if k := admAct(t, app, "reset-hwid", key, nil); k["status"] != "active" {
			t.Fatalf("status after reset: %v", k)
		}
		if d, _ := app.KeyView(t, key)["devices"].([]any); len(d) != 0 {
			t.Fatalf("devices after reset: %v", d)
		}
		kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "HWID_RESET")
		sid2 := app.Login(key, "pc-new")
		if r := app.Heartbeat(sid2, key); r.Body["success"] != true {
			t.Fatalf("heartbeat on the new device: %v", r.Body)
		}
	})
}

// rotate gives the key a new string: the old one stops working, its session
// is revoked, the new one logs in on the bound device; devices are kept.
func TestAdminRotate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Rotate")
		old := app.GenerateKeys(1, "days", 30, 1)[0]
		sid := app.Login(old, "pc-1")
		k := admAct(t, app, "rotate", old, nil)
		nk, _ := k["license_key"].(string)
		if nk == old || !admKeyRE.MatchString(nk) || k["status"] != "active" {
			t.Fatalf("rotate reply: %v", k)
		}
		admCheckKey(s, app.Secret, old).JSONFail(t, 401, "INVALID_KEY")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": old, "hwid": "pc-1"}), 200, "INVALID_KEY")
		kwtest.ExpectCode(t, app.Heartbeat(sid, ""), 200, "SESSION_REVOKED")
		s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+old, nil).JSONFail(t, 404, "NOT_FOUND")
		nd := app.KeyView(t, nk)
		if d, _ := nd["devices"].([]any); len(d) != 1 {
			t.Fatalf("devices after rotate: %v", nd["devices"])
		}
		sid2 := app.Login(nk, "pc-1")
		if r := app.Heartbeat(sid2, nk); r.Body["success"] != true {
			t.Fatalf("heartbeat with rotated key: %v", r.Body)
		}
		// The audit entry names the old key as the target and the new one in details.
		e := s.Audit(t, "action=key.rotate")
		if len(e) != 1 || e[0]["target"] != old || e[0]["details"].(map[string]any)["new_license_key"] != nk {
			t.Fatalf("key.rotate audit: %v", e)
		}

		// With a key prefix, the rotated key keeps it.
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"key_prefix": "RT"})
		if k := admAct(t, app, "rotate", nk, nil); !strings.HasPrefix(k["license_key"].(string), "RT-") {
			t.Fatalf("rotated key without the app prefix: %v", k["license_key"])
		}
	})
}

// Actions on a missing or unknown key, with an unknown action or without a
// key, are refused without side effects.
func TestAdminKeyActionRefusals(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Refuse")
	key := app.GenerateKeys(1, "days", 30, 1)[0]
	for _, a := range []string{"ban", "unban", "pause", "resume", "reset-hwid", "rotate"} {
		app.KeyAction(a, "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", nil).JSONFail(t, 404, "NOT_FOUND")
	}
	app.KeyAction("extend", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", map[string]any{"days": 1}).JSONFail(t, 404, "NOT_FOUND")
	app.KeyAction("destroy", key, nil).JSONFail(t, 400, "MISSING_FIELDS")
	s.Admin("POST", "/api/admin/keys.php?action=ban", map[string]any{"app_id": app.ID}).JSONFail(t, 400, "MISSING_FIELDS")
	app.KeyAction("ban", key, map[string]any{"reason": 5}).JSONFail(t, 400, "MISSING_FIELDS")
	if k := app.KeyView(t, key); k["status"] != "unused" {
		t.Fatalf("refused actions changed the key: %v", k)
	}
}

// export streams every key of the app as CSV with a fixed header, across
// internal pages of 1000, with quoting for notes and features.
func TestAdminExportCSV(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Export")
		other := s.CreateApp("Other")
		other.GenerateKeys(3, "lifetime", 0, 1)
		bulk := app.GenerateKeys(1001, "lifetime", 0, 1)
		special := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1,
			"key_type": "days", "duration_value": 30, "max_devices": 2, "note": "line1\nsaid \"hi\", ok",
			"features": map[string]any{"pro": true}}).List(t,

			"keys")[0]["license_key"].(string)
		app.Login(special, "pc-a")
		app.Login(special, "pc-b")
		admAct(t, app, "ban", bulk[0], nil)

		r := s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&action=export", nil)
		if r.Status != 200 {
			t.Fatalf("export: %d %s", r.Status, r.Raw[:min(len(r.Raw), 300)])
		}
		if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, app.ID) {
			t.Errorf("Content-Disposition %q", cd)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
		if err != nil {
			t.Fatalf("export is not CSV: %v", err)
		}
		header := "license_key,status,key_type,duration,max_devices,activated_at,expires_at,note,features,hwids,created_at,floating"
		if got := strings.Join(rows[0], ","); got != header {
			t.Fatalf("header %q, want %q", got, header)
		}
		if len(rows) != 1+1002 {
			t.Fatalf("%d data rows, want 1002", len(rows)-1)
		}
		by := map[string][]string{}
		for _, row := range rows[1:] {
			if _, dup := by[row[0]]; dup {
				t.Fatalf("key %s exported twice", row[0])
			}
			by[row[0]] = row
		}
		for _, k := range bulk {
			if by[k] == nil {
				t.Fatalf("key %s missing from export", k)
			}
		}
		if row := by[bulk[0]]; row[1] != "banned" || row[2] != "lifetime" || row[5] != "" || row[6] != "" {
			t.Errorf("banned key row: %q", row)
		}
		row := by[special]
		now := license.Timestamp(s.Clock.Now())
		if row[1] != "active" || row[2] != "days" || row[3] != "30" || row[4] != "2" || row[5] != now ||
			row[6] != license.Timestamp(s.Clock.Now().Add(30*24*time.Hour)) || row[7] != "line1\nsaid \"hi\", ok" || row[10] != now ||
			row[11] != "false" {
			t.Errorf("special key row: %q", row)
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(row[8]), &f); err != nil || f["pro"] != true {
			t.Errorf("features cell %q", row[8])
		}
		if hw := strings.Split(row[9], ";"); len(hw) != 2 || !(hw[0] == "pc-a" && hw[1] == "pc-b" || hw[0] == "pc-b" && hw[1] == "pc-a") {
			t.Errorf("hwids cell %q", row[9])
		}

		// An app without keys exports only the header.
		empty := s.CreateApp("Empty")
		er := s.Admin("GET", "/api/admin/keys.php?action=export&app_id="+empty.ID, nil)
		if strings.TrimSpace(string(er.Raw)) != header {
			t.Fatalf("empty export %q", er.Raw)
		}
	})
}
