package adminapi_test

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

var (
	admSecretRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	admUUIDRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// admCheckKey asks check-key with a plain body and the given secret.
func admCheckKey(s *kwtest.Server, secret, key string) *kwtest.Reply {
	s.T.Helper()
	return s.Do("POST", "/api/auth/check-key.php", http.Header{"X-App-Secret": {secret}, "Content-Type": {"application/json"}},
		kwtest.JSON(s.T, map[string]string{"license_key": key}))
}

// Creating an app returns its id, name, version, default settings and a
// fresh 64-character lowercase hex secret, different for every app; the list
// and the single view never show secrets.
func TestAdminCreateApp(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		r := s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"name": "  Photo Tool  ", "version": "2.3.1"})
		app := r.Obj("app")
		if !admUUIDRE.MatchString(app["app_id"].(string)) {
			t.Errorf("app_id %v is not a UUID", app["app_id"])
		}
		if app["name"] != "Photo Tool" || app["version"] != "2.3.1" {
			t.Errorf("name/version %q/%q, want trimmed Photo Tool/2.3.1", app["name"], app["version"])
		}
		secret, _ := app["secret"].(string)
		if !admSecretRE.MatchString(secret) {
			t.Fatalf("secret %q is not 64 lowercase hex characters", secret)
		}
		st, _ := app["settings"].(map[string]any)
		want := map[string]any{"heartbeat_interval": 30.0, "maintenance": false, "self_reset_enabled": true,
			"self_reset_cooldown_hours": 12.0, "login_message": "", "download_url": "", "key_prefix": ""}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("default setting %s = %v, want %v", k, st[k], v)
			}
		}
		if m, _ := st["maintenance_message"].(string); m == "" {
			t.Errorf("default maintenance_message is empty")
		}

		// Version is optional.
		r2 := s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"name": "Second"})
		app2 := r2.Obj("app")
		secret2 := app2["secret"].(string)
		if !admSecretRE.MatchString(secret2) || secret2 == secret || app2["app_id"] == app["app_id"] {
			t.Fatalf("second app: id %v secret %q not fresh", app2["app_id"], secret2)
		}
		if app2["version"] != "" {
			t.Errorf("version without one given = %v, want empty", app2["version"])
		}

		// Both secrets identify their app on the client API: an unknown key
		// is INVALID_KEY, not INVALID_APP.
		for _, sec := range []string{secret, secret2} {
			admCheckKey(s, sec, "AAAAA-AAAAA-AAAAA-AAAAA").JSONFail(t, 401, "INVALID_KEY")
		}

		apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps")
		if len(apps) != 2 {
			t.Fatalf("list has %d apps, want 2: %v", len(apps), apps)
		}
		ids := map[any]bool{}
		for _, a := range apps {
			ids[a["app_id"]] = true
			if _, has := a["secret"]; has {
				t.Errorf("list shows a secret: %v", a)
			}
			if _, has := a["settings"].(map[string]any); !has {
				t.Errorf("list entry has no settings: %v", a)
			}
		}
		if !ids[app["app_id"]] || !ids[app2["app_id"]] {
			t.Fatalf("list %v lacks a created app", apps)
		}
		one := s.AppView(t, app["app_id"].(string))
		if _, has := one["secret"]; has || one["name"] != "Photo Tool" {
			t.Fatalf("single view: %v", one)
		}
	})
}

// Invalid creations are refused with 400 and create nothing.
func TestAdminCreateAppInvalid(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	for name, body := range map[string]string{
		"no name":        `{"version":"1"}`,
		"blank name":     `{"name":"   "}`,
		"numeric name":   `{"name":12}`,
		"numeric vers":   `{"name":"A","version":1.2}`,
		"long name":      `{"name":"` + strings.Repeat("n", 201) + `"}`,
		"long version":   `{"name":"A","version":"` + strings.Repeat("1", 65) + `"}`,
		"invalid JSON":   `{"name":`,
		"array body":     `[{"name":"A"}]`,
		"unknown action": `{"name":"A"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := "/api/admin/apps.php"
			if name == "unknown action" {
				path += "?action=clone"
			}
			r := s.Do("POST", path, kwtest.Bearer(s.AdminToken()), []byte(body))
			r.JSONFail(t, 400, "MISSING_FIELDS")
		})
	}
	if apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps"); len(apps) != 0 {
		t.Fatalf("refused creations left apps: %v", apps)
	}
}

// PUT edits name, version and every setting, sent inside "settings" or at
// the top level; each value reads back.
func TestAdminUpdateAppFields(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Editor")
		path := "/api/admin/apps.php?app_id=" + app.ID
		s.Clock.Advance(time.Minute)
		r := s.MustAdmin("PUT", path, map[string]any{"name": "Editor Pro", "version": "3.0.0",
			"settings": map[string]any{"heartbeat_interval": 45, "maintenance_message": "Back at noon",
				"login_message": "Welcome back", "download_url": "https://example.com/dl", "self_reset_enabled": false,
				"self_reset_cooldown_hours": 48, "key_prefix": "EDT"}})
		got := r.Obj("app")
		if _, has := got["secret"]; has {
			t.Errorf("PUT reply shows the secret")
		}
		if got["updated_at"] == got["created_at"] {
			t.Errorf("updated_at %v not moved by PUT", got["updated_at"])
		}
		// Top-level settings next to a settings object, and a partial patch
		// that keeps the others.
		s.MustAdmin("PUT", path, map[string]any{"maintenance": true})
		a := s.AppView(t, app.ID)
		st := a["settings"].(map[string]any)
		want := map[string]any{"heartbeat_interval": 45.0, "maintenance": true, "maintenance_message": "Back at noon",
			"login_message": "Welcome back", "download_url": "https://example.com/dl", "self_reset_enabled": false,
			"self_reset_cooldown_hours": 48.0, "key_prefix": "EDT"}
		if a["name"] != "Editor Pro" || a["version"] != "3.0.0" {
			t.Errorf("name/version = %v/%v", a["name"], a["version"])
		}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("setting %s = %v, want %v", k, st[k], v)
			}
		}
		// The app_id may also travel in the body.
		s.MustAdmin("PUT", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "maintenance": false, "version": ""})
		a = s.AppView(t, app.ID)
		if a["settings"].(map[string]any)["maintenance"] != false || a["version"] != "" || a["name"] != "Editor Pro" {
			t.Fatalf("PUT with app_id in body: %v", a)
		}
	})
}

// The settings change what the client API does: heartbeat_interval and
// login_message appear in the login reply; maintenance refuses logins and
// ends sessions with MAINTENANCE and its message.
func TestAdminAppSettingsReachClients(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Live")
		path := "/api/admin/apps.php?app_id=" + app.ID
		key := app.GenerateKeys(1, "days", 30, 3)[0]
		s.MustAdmin("PUT", path, map[string]any{"heartbeat_interval": 90, "login_message": "Hello <b>world</b>"})

		r := app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-1"})
		if r.Body["success"] != true {
			t.Fatalf("login: %v", r.Body)
		}
		if r.Body["heartbeat_interval"] != 90.0 {
			t.Errorf("heartbeat_interval %v, want 90", r.Body["heartbeat_interval"])
		}
		if m := r.Obj("app")["message"]; m != "Hello <b>world</b>" {
			t.Errorf("login app.message %v, want the login_message", m)
		}
		sid := r.Str("session_id")

		s.MustAdmin("PUT", path, map[string]any{"maintenance": true, "maintenance_message": "Upgrading, back soon"})
		hb := app.Heartbeat(sid, key)
		kwtest.ExpectCode(t, hb, 200, "MAINTENANCE")
		if hb.Str("message") != "Upgrading, back soon" {
			t.Errorf("maintenance heartbeat message %q", hb.Str("message"))
		}
		lr := app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-1"})
		kwtest.ExpectCode(t, lr, 200, "MAINTENANCE")
		if lr.Str("message") != "Upgrading, back soon" {
			t.Errorf("maintenance login message %q", lr.Str("message"))
		}

		s.MustAdmin("PUT", path, map[string]any{"maintenance": false})
		sid2 := app.Login(key, "pc-1")
		if hb := app.Heartbeat(sid2, key); hb.Body["success"] != true {
			t.Fatalf("heartbeat after maintenance: %v", hb.Body)
		}
		// The session ended by maintenance stays ended.
		kwtest.ExpectCode(t, app.Heartbeat(sid, key), 200, "MAINTENANCE")
	})
}

// self_reset_enabled and self_reset_cooldown_hours govern the customer's
// self-service device reset; key_prefix prefixes newly generated keys.
func TestAdminAppSelfResetAndPrefixSettings(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Reset")
	path := "/api/admin/apps.php?app_id=" + app.ID
	key := app.GenerateKeys(1, "days", 30, 1)[0]
	app.Login(key, "pc-1")

	s.MustAdmin("PUT", path, map[string]any{"self_reset_enabled": false})
	app.Plain("/api/customer/reset-hwid.php", map[string]any{"key": key}).JSONFail(t, 403, "SELF_RESET_DISABLED")

	s.MustAdmin("PUT", path, map[string]any{"self_reset_enabled": true, "self_reset_cooldown_hours": 3})
	r := app.Plain("/api/customer/reset-hwid.php", map[string]any{"key": key})
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("self reset: %s", r)
	}
	if want := license.Timestamp(s.Clock.Now().Add(3 * time.Hour)); r.Str("next_reset_at") != want {
		t.Errorf("next_reset_at %q, want now+3h %q", r.Str("next_reset_at"), want)
	}

	s.MustAdmin("PUT", path, map[string]any{"key_prefix": "ACME"})
	for _, k := range app.GenerateKeys(5, "lifetime", 0, 1) {
		if !regexp.MustCompile(`^ACME-[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$`).MatchString(k) {
			t.Errorf("key %q does not carry the ACME- prefix", k)
		}
	}
}

// Bad edits are 400 JSON errors and leave the app exactly as it was.
func TestAdminUpdateAppInvalid(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Stable")
		path := "/api/admin/apps.php?app_id=" + app.ID
		before := s.AppView(t, app.ID)
		s.Clock.Advance(time.Minute) // a wrongly applied edit would move updated_at
		tooBig := append([]byte(`{"login_message":"x",`), bytes.Repeat([]byte(" "), 1<<20)...)
		tooBig = append(tooBig, []byte(`"name":"Huge"}`)...)
		cases := map[string]struct {
			body   []byte
			status int
			code   string
		}{
			"negative heartbeat":   {[]byte(`{"heartbeat_interval":-5}`), 400, "MISSING_FIELDS"},
			"zero heartbeat":       {[]byte(`{"settings":{"heartbeat_interval":0}}`), 400, "MISSING_FIELDS"},
			"heartbeat too large":  {[]byte(`{"heartbeat_interval":3601}`), 400, "MISSING_FIELDS"},
			"heartbeat as string":  {[]byte(`{"heartbeat_interval":"60"}`), 400, "MISSING_FIELDS"},
			"heartbeat fraction":   {[]byte(`{"heartbeat_interval":30.5}`), 400, "MISSING_FIELDS"},
			"maintenance string":   {[]byte(`{"maintenance":"yes"}`), 400, "MISSING_FIELDS"},
			"self reset number":    {[]byte(`{"self_reset_enabled":1}`), 400, "MISSING_FIELDS"},
			"negative cooldown":    {[]byte(`{"self_reset_cooldown_hours":-1}`), 400, "MISSING_FIELDS"},
			"lowercase prefix":     {[]byte(`{"key_prefix":"acme"}`), 400, "MISSING_FIELDS"},
			"long login message":   {[]byte(`{"login_message":"` + strings.Repeat("m", 1001) + `"}`), 400, "MISSING_FIELDS"},
			"long download url":    {[]byte(`{"download_url":"https://x/` + strings.Repeat("d", 2048) + `"}`), 400, "MISSING_FIELDS"},
			"unknown setting":      {[]byte(`{"colour":"blue"}`), 400, "MISSING_FIELDS"},
			"unknown in settings":  {[]byte(`{"settings":{"colour":"blue"}}`), 400, "MISSING_FIELDS"},
			"settings not object":  {[]byte(`{"settings":[1,2]}`), 400, "MISSING_FIELDS"},
			"name number":          {[]byte(`{"name":5}`), 400, "MISSING_FIELDS"},
			"name blank":           {[]byte(`{"name":"  "}`), 400, "MISSING_FIELDS"},
			"valid then invalid":   {[]byte(`{"name":"Renamed","heartbeat_interval":-1}`), 400, "MISSING_FIELDS"},
			"invalid JSON":         {[]byte(`{"name":"Renamed"`), 400, "MISSING_FIELDS"},
			"body over 1 MiB":      {tooBig, 400, "BODY_TOO_LARGE"},
			"secret not editable":  {[]byte(`{"secret":"` + strings.Repeat("a", 64) + `"}`), 400, "MISSING_FIELDS"},
			"created_at not known": {[]byte(`{"created_at":"2020-01-01T00:00:00Z"}`), 400, "MISSING_FIELDS"},
		}
		for name, c := range cases {
			t.Run(name, func(t *testing.T) {
				s.Do("PUT", path, kwtest.Bearer(s.AdminToken()), c.body).JSONFail(t, c.status, c.code)
			})
		}
		if after := s.AppView(t, app.ID); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused edits changed the app:\nbefore %v\nafter  %v", before, after)
		}
		if n := len(s.Audit(t, "action=app.update")); n != 0 {
			t.Fatalf("refused edits were audited (%d app.update entries)", n)
		}
		// The old secret still works: nothing about the app moved.
		admCheckKey(s, app.Secret, "AAAAA-AAAAA-AAAAA-AAAAA").JSONFail(t, 401, "INVALID_KEY")
	})
}

// The admin body limit is 1 MiB: a body of exactly 1 MiB is read.
func TestAdminBodyOfExactlyOneMiBIsAccepted(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	app := s.CreateApp("Edge")
	body := []byte(`{"name":"Edge 2"}`)
	body = append(body, bytes.Repeat([]byte(" "), 1<<20-len(body))...)
	r := s.Do("PUT", "/api/admin/apps.php?app_id="+app.ID, kwtest.Bearer(s.AdminToken()), body)
	if r.Status != 200 || r.Obj("app")["name"] != "Edge 2" {
		t.Fatalf("1 MiB body: %s", r)
	}
}

// Regenerating the secret gives a new 64-hex secret; the old one stops
// working at once on the client API and the new one works, with the app's
// keys intact.
func TestAdminRegenerateSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Rotating")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		// Warm the app cache with the old secret.
		if r := admCheckKey(s, app.Secret, key); r.Body["valid"] != true {
			t.Fatalf("check-key before: %s", r)
		}
		r := s.MustAdmin("POST", "/api/admin/apps.php?app_id="+app.ID+"&action=regenerate-secret", nil)
		got := r.Obj("app")
		fresh, _ := got["secret"].(string)
		if !admSecretRE.MatchString(fresh) || fresh == app.Secret || got["app_id"] != app.ID {
			t.Fatalf("regenerate reply: %v", got)
		}
		admCheckKey(s, app.Secret, key).JSONFail(t, 401, "INVALID_APP")
		if r := admCheckKey(s, fresh, key); r.Status != 200 || r.Body["valid"] != true {
			t.Fatalf("check-key with new secret: %s", r)
		}
		newApp := s.NewApp(app.ID, fresh)
		newApp.Login(key, "pc-1")
		old := app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-1"})
		old.JSONFail(t, 401, "INVALID_APP")

		// app_id in the body works too; unknown apps are 404.
		r2 := s.MustAdmin("POST", "/api/admin/apps.php?action=regenerate-secret", map[string]any{"app_id": app.ID})
		if r2.Obj("app")["secret"] == fresh {
			t.Fatalf("second regeneration kept the secret")
		}
		s.Admin("POST", "/api/admin/apps.php?action=regenerate-secret&app_id=00000000-0000-4000-8000-000000000000", nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("POST", "/api/admin/apps.php?action=regenerate-secret", nil).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// Deleting an app removes it with its keys: its secret stops working, its
// views answer 404, and other apps are untouched.
func TestAdminDeleteApp(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		doomed := s.CreateApp("Doomed")
		keep := s.CreateApp("Keep")
		dk := doomed.GenerateKeys(3, "days", 10, 1)
		kk := keep.GenerateKeys(1, "days", 10, 1)[0]
		doomed.Login(dk[0], "pc-1")
		admCheckKey(s, doomed.Secret, dk[1]) // cache the app

		r := s.MustAdmin("DELETE", "/api/admin/apps.php?app_id="+doomed.ID, nil)
		if r.Str("message") == "" {
			t.Errorf("delete reply has no message: %s", r)
		}
		admCheckKey(s, doomed.Secret, dk[1]).JSONFail(t, 401, "INVALID_APP")
		s.Admin("GET", "/api/admin/apps.php?app_id="+doomed.ID, nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", "/api/admin/keys.php?app_id="+doomed.ID, nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", "/api/admin/apps.php?app_id="+doomed.ID, nil).JSONFail(t, 404, "NOT_FOUND")
		keys, _, err := s.License.ListKeys(context.Background(), license.KeyFilter{AppID: doomed.ID})
		if err != nil || len(keys) != 0 {
			t.Fatalf("keys of the deleted app remain: %d (%v)", len(keys), err)
		}
		// Its keys are not valid for another app either.
		admCheckKey(s, keep.Secret, dk[1]).JSONFail(t, 401, "INVALID_KEY")

		apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps")
		if len(apps) != 1 || apps[0]["app_id"] != keep.ID {
			t.Fatalf("apps after delete: %v", apps)
		}
		if r := admCheckKey(s, keep.Secret, kk); r.Body["valid"] != true {
			t.Fatalf("other app's key: %s", r)
		}
	})
}

// Every app operation on an unknown app_id answers 404 NOT_FOUND; a missing
// app_id is 400 MISSING_FIELDS.
func TestAdminUnknownApp(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		const ghost = "00000000-0000-4000-8000-000000000000"
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/admin/apps.php?app_id=" + ghost, nil},
			{"PUT", "/api/admin/apps.php?app_id=" + ghost, map[string]any{"name": "X"}},
			{"DELETE", "/api/admin/apps.php?app_id=" + ghost, nil},
			{"POST", "/api/admin/apps.php?action=regenerate-secret&app_id=" + ghost, nil},
			{"GET", "/api/admin/keys.php?app_id=" + ghost, nil},
			{"GET", "/api/admin/keys.php?action=export&app_id=" + ghost, nil},
			{"POST", "/api/admin/keys.php", map[string]any{"app_id": ghost, "count": 1, "key_type": "lifetime"}},
			{"GET", "/api/admin/sessions.php?app_id=" + ghost, nil},
			{"GET", "/api/admin/apps.php?app_id=not-a-uuid", nil},
		} {
			s.Admin(c.method, c.path, c.body).JSONFail(t, 404, "NOT_FOUND")
		}
		for _, c := range []struct{ method, path string }{
			{"PUT", "/api/admin/apps.php"},
			{"DELETE", "/api/admin/apps.php"},
			{"GET", "/api/admin/keys.php"},
			{"GET", "/api/admin/sessions.php"},
		} {
			s.Admin(c.method, c.path, nil).JSONFail(t, 400, "MISSING_FIELDS")
		}
	})
}
