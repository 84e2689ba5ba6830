package adminapi_test

import (
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Keys are XXXXX-XXXXX-XXXXX-XXXXX over Crockford's base32 (no I, L, O, U).
var admKeyRE = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$`)

func admGenerate(s *kwtest.Server, body map[string]any) *kwtest.Reply {
	s.T.Helper()
	return s.Admin("POST", "/api/admin/keys.php", body)
}

// Generation refuses counts outside 1..10000 and bad key types, durations,
// seats and features with 400 MISSING_FIELDS, creating nothing.
func TestAdminGenerateKeysRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Gen")
		base := func(extra map[string]any) map[string]any {
			b := map[string]any{"app_id": app.ID, "count": 1, "key_type": "days", "duration_value": 30}
			for k, v := range extra {
				if v == nil {
					delete(b, k)
				} else {
					b[k] = v
				}
			}
			return b
		}
		cases := map[string]map[string]any{
			"count 0":                   base(map[string]any{"count": 0}),
			"count 10001":               base(map[string]any{"count": 10001}),
			"count negative":            base(map[string]any{"count": -5}),
			"count missing":             base(map[string]any{"count": nil}),
			"count not a number":        base(map[string]any{"count": "many"}),
			"count fraction":            base(map[string]any{"count": 1.5}),
			"key_type missing":          base(map[string]any{"key_type": nil}),
			"key_type unknown":          base(map[string]any{"key_type": "weeks"}),
			"days without duration":     base(map[string]any{"duration_value": nil}),
			"days with duration 0":      base(map[string]any{"duration_value": 0}),
			"days with negative":        base(map[string]any{"duration_value": -1}),
			"days with huge duration":   base(map[string]any{"duration_value": 36501}),
			"lifetime with duration":    base(map[string]any{"key_type": "lifetime", "duration_value": 30}),
			"max_devices negative":      base(map[string]any{"max_devices": -1}),
			"max_devices zero":          base(map[string]any{"max_devices": 0}),
			"max_devices too many":      base(map[string]any{"max_devices": 10001}),
			"features not an object":    base(map[string]any{"features": []any{"pro"}}),
			"features nested value":     base(map[string]any{"features": map[string]any{"pro": map[string]any{"x": 1}}}),
			"note too long":             base(map[string]any{"note": strings.Repeat("n", 1001)}),
			"note not a string":         base(map[string]any{"note": 7}),
			"app_id missing":            base(map[string]any{"app_id": nil}),
			"duration_value not number": base(map[string]any{"duration_value": "thirty"}),
		}
		for name, body := range cases {
			t.Run(name, func(t *testing.T) {
				admGenerate(s, body).JSONFail(t, 400, "MISSING_FIELDS")
			})
		}
		r := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID, nil)
		if keys := r.List(t, "keys"); len(keys) != 0 {
			t.Fatalf("refused generations created %d keys", len(keys))
		}
		if n := len(s.Audit(t, "action=key.generate")); n != 0 {
			t.Fatalf("refused generations were audited: %d", n)
		}
	})
}

// A batch has the asked count of distinct keys in the documented format,
// unused, with the given type, duration, seats (default 1), note and features.
func TestAdminGenerateKeysShape(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Shapes")
		r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 300, "key_type": "days",
			"duration_value": 30, "note": "batch A, \"spring\"", "features": map[string]any{"pro": true, "seats": 3, "tier": "gold"}})
		keys := r.List(t, "keys")
		if len(keys) != 300 {
			t.Fatalf("got %d keys, want 300", len(keys))
		}
		seen := map[string]bool{}
		for _, k := range keys {
			lk := k["license_key"].(string)
			if !admKeyRE.MatchString(lk) {
				t.Fatalf("key %q does not match XXXXX-XXXXX-XXXXX-XXXXX over the unambiguous alphabet", lk)
			}
			if strings.ContainsAny(lk, "ILOUilou") {
				t.Fatalf("key %q has an ambiguous character", lk)
			}
			if seen[lk] {
				t.Fatalf("duplicate key %q", lk)
			}
			seen[lk] = true
			if k["status"] != "unused" || k["key_type"] != "days" || k["duration"] != 30.0 || k["max_devices"] != 1.0 ||
				k["activated_at"] != nil || k["expires_at"] != nil || k["days_remaining"] != nil || k["note"] != "batch A, \"spring\"" {
				t.Fatalf("key view: %v", k)
			}
			f, _ := k["features"].(map[string]any)
			if f["pro"] != true || f["seats"] != 3.0 || f["tier"] != "gold" {
				t.Fatalf("features: %v", k["features"])
			}
		}
		// The keys exist for the client API.
		cr := admCheckKey(s, app.Secret, keys[0]["license_key"].(string))
		if cr.Body["valid"] != true || cr.Obj("key")["status"] != "unused" {
			t.Fatalf("check-key of a new key: %s", cr)
		}

		one := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 4})
		k := one.List(t, "keys")[0]
		if k["key_type"] != "lifetime" || k["duration"] != 0.0 || k["max_devices"] != 4.0 || seen[k["license_key"].(string)] {
			t.Fatalf("lifetime key: %v", k)
		}
		if f, ok := k["features"].(map[string]any); !ok || len(f) != 0 {
			t.Fatalf("features without any given = %v, want {}", k["features"])
		}
		// lifetime with an explicit duration_value of 0 is the same as none.
		r0 := admGenerate(s, map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "duration_value": 0})
		if r0.Status != 200 {
			t.Fatalf("lifetime with duration_value 0: %s", r0)
		}
	})
}

// The largest batch, 10000 keys, is generated in one request.
func TestAdminGenerateMaxBatch(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Bulk")
		keys := app.GenerateKeys(10000, "lifetime", 0, 1)
		if len(keys) != 10000 {
			t.Fatalf("got %d keys", len(keys))
		}
		seen := make(map[string]bool, len(keys))
		for _, k := range keys {
			if seen[k] || !admKeyRE.MatchString(k) {
				t.Fatalf("bad or duplicate key %q", k)
			}
			seen[k] = true
		}
		// All were stored: the first and the last answer check-key.
		for _, k := range []string{keys[0], keys[9999]} {
			if r := admCheckKey(s, app.Secret, k); r.Body["valid"] != true {
				t.Fatalf("check-key %s: %s", k, r)
			}
		}
	})
}

// admListAll walks every page of a key listing with the given filter query.
func admListAll(t *testing.T, s *kwtest.Server, appID, query string, limit int) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		v := url.Values{"app_id": {appID}}
		if limit > 0 {
			v.Set("limit", strconv.Itoa(limit))
		}
		if query != "" {
			q, _ := url.ParseQuery(query)
			for k, vs := range q {
				v[k] = vs
			}
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		r := s.MustAdmin("GET", "/api/admin/keys.php?"+v.Encode(), nil)
		page := r.List(t, "keys")
		if limit > 0 && len(page) > limit {
			t.Fatalf("page of %d keys exceeds limit %d", len(page), limit)
		}
		out = append(out, page...)
		next, isStr := r.Body["next_cursor"].(string)
		if !isStr {
			if r.Body["next_cursor"] != nil {
				t.Fatalf("next_cursor %v is neither a string nor null", r.Body["next_cursor"])
			}
			return out
		}
		if next == cursor {
			t.Fatalf("cursor %q does not advance", next)
		}
		cursor = next
	}
}

// Walking the cursor pages lists every key exactly once, in a stable order,
// whatever the page size; bad cursors and limits are 400.
func TestAdminListKeysPagination(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Pages")
		other := s.CreateApp("Other")
		other.GenerateKeys(7, "lifetime", 0, 1)
		want := map[string]bool{}
		for _, k := range app.GenerateKeys(250, "days", 10, 1) {
			want[k] = true
		}
		for _, limit := range []int{0, 1, 40, 50, 125, 250, 1000} {
			got := admListAll(t, s, app.ID, "", limit)
			if len(got) != len(want) {
				t.Fatalf("limit %d: listed %d keys, want %d", limit, len(got), len(want))
			}
			seen := map[string]bool{}
			for _, k := range got {
				lk := k["license_key"].(string)
				if !want[lk] {
					t.Fatalf("limit %d: listed key %q not of this app", limit, lk)
				}
				if seen[lk] {
					t.Fatalf("limit %d: key %q listed twice", limit, lk)
				}
				seen[lk] = true
			}
		}
		// Without a limit a page holds 100 keys and points to the next.
		r := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID, nil)
		if n := len(r.List(t, "keys")); n != 100 {
			t.Fatalf("default page has %d keys, want 100", n)
		}
		if c, _ := r.Body["next_cursor"].(string); c == "" {
			t.Fatalf("default page has no next_cursor: %v", r.Body["next_cursor"])
		}
		for _, q := range []string{"cursor=-1", "cursor=abc", "limit=-3", "limit=ten", "status=deleted", "action=import"} {
			s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&"+q, nil).JSONFail(t, 400, "MISSING_FIELDS")
		}
	})
}

// status filters by effective status (an active key past its expiry is
// expired) and q matches the key string or note, case-insensitively and
// literally.
func TestAdminListKeysFilters(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// The clock moves 25 h; the admin token must outlive that.
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.TokenTTL = 72 * time.Hour }})
		app := s.CreateApp("Filters")
		keys := app.GenerateKeys(8, "days", 30, 1)
		short := app.GenerateKeys(1, "days", 1, 1)[0]
		noted := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 2,
			"key_type": "lifetime", "note": "Reseller ACME 100%_off"}).List(t,
			"keys")

		for _, k := range keys[:4] {
			app.Login(k, "pc-"+k)
		}
		app.Login(short, "pc-short")
		for action, k := range map[string]string{"ban": keys[0], "pause": keys[1]} {
			if r := app.KeyAction(action, k, nil); r.Status != 200 {
				t.Fatalf("%s: %s", action, r)
			}
		}
		app.KeyAction("ban", keys[7], nil) // banned before ever being used
		s.Clock.Advance(25 * time.Hour)    // short has expired; its stored status is still active

		set := func(list []map[string]any) map[string]bool {
			m := map[string]bool{}
			for _, k := range list {
				m[k["license_key"].(string)] = true
			}
			return m
		}
		expect := map[string][]string{
			"active":  {keys[2], keys[3]},
			"banned":  {keys[0], keys[7]},
			"paused":  {keys[1]},
			"expired": {short},
			"unused":  {keys[4], keys[5], keys[6], noted[0]["license_key"].(string), noted[1]["license_key"].(string)},
		}
		for status, want := range expect {
			got := admListAll(t, s, app.ID, "status="+status, 2)
			gs := set(got)
			if len(got) != len(want) {
				t.Errorf("status=%s: %d keys, want %d", status, len(got), len(want))
			}
			for _, k := range want {
				if !gs[k] {
					t.Errorf("status=%s lacks %s", status, k)
				}
			}
			for _, k := range got {
				if k["status"] != status {
					t.Errorf("status=%s lists a key whose status is %v", status, k["status"])
				}
			}
		}

		// q: a fragment of the key in lower case, the note, and % and _ as
		// literal characters.
		frag := strings.ToLower(keys[5][6:11])
		got := set(admListAll(t, s, app.ID, "q="+url.QueryEscape(frag), 0))
		if !got[keys[5]] {
			t.Errorf("q=%s does not find %s", frag, keys[5])
		}
		for k := range got {
			if !strings.Contains(strings.ToLower(k), frag) {
				t.Errorf("q=%s found unrelated key %s", frag, k)
			}
		}
		if got := admListAll(t, s, app.ID, "q=acme", 0); len(got) != 2 {
			t.Errorf("q=acme (note) found %d keys, want 2", len(got))
		}
		if got := admListAll(t, s, app.ID, "q="+url.QueryEscape("100%_off"), 0); len(got) != 2 {
			t.Errorf("q=100%%_off found %d keys, want 2", len(got))
		}
		if got := admListAll(t, s, app.ID, "q="+url.QueryEscape("%"), 0); len(got) != 2 {
			t.Errorf("q=%% is a wildcard: found %d keys, want the 2 whose note has a %%", len(got))
		}
		if got := admListAll(t, s, app.ID, "q=_", 0); len(got) != 2 {
			t.Errorf("q=_ is a wildcard: found %d keys, want 2", len(got))
		}
		if got := admListAll(t, s, app.ID, "status=unused&q=acme", 0); len(got) != 2 {
			t.Errorf("status and q combined: %d keys, want 2", len(got))
		}
		if got := admListAll(t, s, app.ID, "status=active&q=acme", 0); len(got) != 0 {
			t.Errorf("status=active&q=acme: %d keys, want 0", len(got))
		}
	})
}

// One key's view lists its bound devices and open sessions.
func TestAdminGetKeyWithDevicesAndSessions(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Detail")
		key := app.GenerateKeys(1, "days", 30, 3)[0]
		unused := app.GenerateKeys(1, "days", 30, 3)[0]
		s1 := app.Login(key, "pc-a")
		s.Clock.Advance(time.Minute)
		app.Login(key, "pc-b")
		app.Env("/api/auth/logout.php", map[string]any{"session_id": s1})

		k := app.KeyView(t, key)
		if k["license_key"] != key || k["status"] != "active" || k["activated_at"] == nil || k["expires_at"] == nil {
			t.Fatalf("key view: %v", k)
		}
		devices, _ := k["devices"].([]any)
		if len(devices) != 2 {
			t.Fatalf("devices: %v, want pc-a and pc-b", k["devices"])
		}
		hw := map[any]bool{}
		for _, d := range devices {
			dm := d.(map[string]any)
			hw[dm["hwid"]] = true
			if dm["first_seen_at"] == nil || dm["last_seen_at"] == nil {
				t.Errorf("device without times: %v", dm)
			}
		}
		if !hw["pc-a"] || !hw["pc-b"] {
			t.Fatalf("devices: %v", devices)
		}
		sessions, _ := k["sessions"].([]any)
		if len(sessions) != 1 {
			t.Fatalf("open sessions: %v, want only pc-b's (pc-a logged out)", k["sessions"])
		}
		sm := sessions[0].(map[string]any)
		if sm["hwid"] != "pc-b" || sm["license_key"] != key || sm["ip"] != "127.0.0.1" || sm["id"] == "" {
			t.Fatalf("session view: %v", sm)
		}

		u := app.KeyView(t, unused)
		if d, _ := u["devices"].([]any); len(d) != 0 || u["status"] != "unused" {
			t.Fatalf("unused key: %v", u)
		}
		if ss, ok := u["sessions"].([]any); !ok || len(ss) != 0 {
			t.Fatalf("unused key sessions %v, want []", u["sessions"])
		}
		s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key=ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", nil).JSONFail(t, 404, "NOT_FOUND")
		// A key of another app is not found through this app.
		other := s.CreateApp("Other")
		s.Admin("GET", "/api/admin/keys.php?app_id="+other.ID+"&license_key="+key, nil).JSONFail(t, 404, "NOT_FOUND")
	})
}

// PUT edits seats, note and features; the client sees them on the next login.
func TestAdminUpdateKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Edit")
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		app.Login(key, "pc-1")
		r := s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key,
			"max_devices": 2, "note": "VIP", "features": map[string]any{"export": true, "level": 2}})
		k := r.Obj("key")
		if k["max_devices"] != 2.0 || k["note"] != "VIP" || k["features"].(map[string]any)["level"] != 2.0 {
			t.Fatalf("PUT reply: %v", k)
		}
		lr := app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "pc-2"})
		if lr.Body["success"] != true {
			t.Fatalf("second device after raising max_devices: %v", lr.Body)
		}
		if f := lr.Obj("features"); f["export"] != true || f["level"] != 2.0 {
			t.Fatalf("login features: %v", lr.Body["features"])
		}
		// A partial edit keeps the other fields; an empty note clears it.
		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key, "note": ""})
		k = app.KeyView(t, key)
		if k["note"] != "" || k["max_devices"] != 2.0 || k["features"].(map[string]any)["export"] != true {
			t.Fatalf("after partial edit: %v", k)
		}

		before := app.KeyView(t, key)
		for name, body := range map[string]map[string]any{
			"max_devices 0":      {"max_devices": 0},
			"max_devices string": {"max_devices": "lots"},
			"features array":     {"features": []int{1}},
			"note number":        {"note": 3},
			"note too long":      {"note": strings.Repeat("x", 1001)},
		} {
			body["app_id"], body["license_key"] = app.ID, key
			t.Run(name, func(t *testing.T) { s.Admin("PUT", "/api/admin/keys.php", body).JSONFail(t, 400, "MISSING_FIELDS") })
		}
		if after := app.KeyView(t, key); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused edits changed the key:\n%v\n%v", before, after)
		}
		s.Admin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", "note": "x"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "note": "x"}).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// DELETE removes a key: its live session is revoked, the client no longer
// knows it, and a second delete is 404.
func TestAdminDeleteKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Delete")
		keys := app.GenerateKeys(2, "days", 30, 1)
		sid := app.Login(keys[0], "pc-1")
		r := s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": keys[0]})
		if r.Str("message") == "" {
			t.Errorf("delete reply without message: %s", r)
		}
		kwtest.ExpectCode(t, app.Heartbeat(sid, keys[0]), 200, "SESSION_REVOKED")
		admCheckKey(s, app.Secret, keys[0]).JSONFail(t, 401, "INVALID_KEY")
		s.Admin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+keys[0], nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": keys[0]}).JSONFail(t, 404, "NOT_FOUND")
		// Query parameters work as well as the body.
		s.MustAdmin("DELETE", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+keys[1], nil)
		if left := admListAll(t, s, app.ID, "", 0); len(left) != 0 {
			t.Fatalf("keys left: %v", left)
		}
	})
}
