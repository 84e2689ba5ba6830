package dashboard_test

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// keysAPI returns the key as the admin API shows it, or nil when it is gone.
func keysAPI(s *site, app *kwtest.App, key string) map[string]any {
	s.t.Helper()
	r := s.Admin("GET", "/api/admin/keys.php?app_id="+url.QueryEscape(app.ID)+"&license_key="+url.QueryEscape(key), nil)
	if r.Status == 404 {
		return nil
	}
	if r.Status != 200 {
		s.t.Fatalf("get key %s: %s", key, r)
	}
	return r.Obj("key")
}

// keysAll lists every key string of the app through the admin API (q filters).
func keysAll(s *site, app *kwtest.App, q string) []string {
	s.t.Helper()
	r := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+url.QueryEscape(app.ID)+"&limit=1000&q="+url.QueryEscape(q), nil)
	var out []string
	for _, k := range r.Body["keys"].([]any) {
		out = append(out, k.(map[string]any)["license_key"].(string))
	}
	return out
}

func keysPath(app *kwtest.App, rest string) string {
	p := "/dashboard/apps/" + url.PathEscape(app.ID) + "/keys"
	if rest != "" {
		p += "/" + rest
	}
	return p
}

func keysSetup(t *testing.T) (*site, *kwtest.App) {
	s := newSite(t)
	s.signIn()
	return s, s.CreateApp("Keys app")
}

func TestKeysListFilters(t *testing.T) {
	s, app := keysSetup(t)
	keys := app.GenerateKeys(3, "days", 30, 1)
	app.KeyAction("ban", keys[0], nil)
	s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": keys[1], "note": "reseller Bob"})

	p := s.get(keysPath(app, "")).must(t)
	for _, k := range keys {
		if !p.Has(k) {
			t.Errorf("list lacks %s", k)
		}
		if !strings.Contains(p.Body, `href="`+keysPath(app, k)+`"`) {
			t.Errorf("list does not link %s to its page", k)
		}
	}
	p = s.get(keysPath(app, "") + "?status=banned").must(t)
	if !p.Has(keys[0]) || p.Has(keys[1]) || p.Has(keys[2]) {
		t.Errorf("status=banned should show only %s: %s", keys[0], p.Text())
	}
	p = s.get(keysPath(app, "") + "?status=unused").must(t)
	if p.Has(keys[0]) || !p.Has(keys[1]) || !p.Has(keys[2]) {
		t.Errorf("status=unused should hide the banned key: %s", p.Text())
	}
	p = s.get(keysPath(app, "") + "?q=bob").must(t)
	if !p.Has(keys[1]) || p.Has(keys[0]) || p.Has(keys[2]) || !p.Has("reseller Bob") {
		t.Errorf("note search should find only %s: %s", keys[1], p.Text())
	}
	p = s.get(keysPath(app, "") + "?q=" + url.QueryEscape(keys[2][:11])).must(t)
	if !p.Has(keys[2]) {
		t.Errorf("key search should find %s", keys[2])
	}
	if p := s.get(keysPath(app, "") + "?status=nonsense"); p.Status != 400 || !p.Has("status") {
		t.Errorf("bad status: %d %s", p.Status, p.Text())
	}
	// By device: the key a client signed in with on that HWID, and only it.
	app.Login(keys[2], "PC-Filter-1")
	p = s.get(keysPath(app, "") + "?hwid=PC-Filter-1").must(t)
	if !p.Has(keys[2]) || p.Has(keys[0]) || p.Has(keys[1]) {
		t.Errorf("hwid filter should find only %s: %s", keys[2], p.Text())
	}
	if p = s.get(keysPath(app, "") + "?hwid=PC-Filter"); p.Has(keys[2]) {
		t.Error("the device filter matches part of an HWID; it should match it whole")
	}
	// By type.
	life := app.GenerateKeys(1, "lifetime", 0, 1)
	p = s.get(keysPath(app, "") + "?key_type=lifetime").must(t)
	if !p.Has(life[0]) || p.Has(keys[0]) || p.Has(keys[1]) || p.Has(keys[2]) {
		t.Errorf("key_type=lifetime should show only %s: %s", life[0], p.Text())
	}
	if p := s.get(keysPath(app, "") + "?key_type=forever"); p.Status != 400 || !p.Has("key_type") {
		t.Errorf("bad type: %d %s", p.Status, p.Text())
	}

	// Paging: 27 keys at 25 a page.
	more := app.GenerateKeys(23, "lifetime", 0, 1)
	p = s.get(keysPath(app, "") + "?limit=25").must(t)
	m := regexp.MustCompile(`href="([^"]*cursor=[^"]*)">Next page`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no next page link with 27 keys at 25 a page")
	}
	if p.Has(more[len(more)-1]) || !p.Has(keys[0]) {
		t.Errorf("first page should hold the first 25 keys")
	}
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	p = s.get(next).must(t)
	if !p.Has(more[len(more)-1]) || !p.Has(more[len(more)-2]) || p.Has(keys[0]) || strings.Contains(p.Body, "Next page") {
		t.Errorf("second page should hold the last 2 keys only: %s", p.Text())
	}
}

func TestKeysGenerateAndDownload(t *testing.T) {
	s, app := keysSetup(t)
	s.get(keysPath(app, "")).must(t)
	p := s.post(keysPath(app, "generate"), url.Values{"count": {"3"}, "key_type": {"days"}, "duration_value": {"7"},
		"max_devices": {"2"}, "note": {"batch A"}, "features": {`{"pro": true}`}}).must(t)
	made := keysAll(s, app, "")
	if len(made) != 3 {
		t.Fatalf("generated %d keys, want 3", len(made))
	}
	for _, k := range made {
		if !p.Has(k) {
			t.Errorf("generated page lacks %s", k)
		}
		v := keysAPI(s, app, k)
		if v["key_type"] != "days" || v["duration"] != 7.0 || v["max_devices"] != 2.0 || v["note"] != "batch A" {
			t.Errorf("key %s: %v", k, v)
		}
		if f, _ := v["features"].(map[string]any); f["pro"] != true {
			t.Errorf("key %s features: %v", k, v["features"])
		}
	}
	if !strings.Contains(p.Body, "Download CSV") || !strings.Contains(p.Body, "Download TXT") {
		t.Fatalf("no download buttons")
	}
	// The download forms carry exactly the generated keys.
	m := regexp.MustCompile(`name="keys" value="([^"]*)"`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no keys field in the download form")
	}
	posted := strings.Fields(strings.ReplaceAll(m[1], "&#10;", "\n"))
	if strings.Join(posted, ",") != strings.Join(made, ",") {
		t.Fatalf("download form keys %v, want %v", posted, made)
	}

	d := s.post(keysPath(app, "download"), url.Values{"format": {"csv"}, "keys": {strings.Join(posted, "\n")}}).must(t)
	if cd := d.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".csv") {
		t.Errorf("CSV Content-Disposition %q", cd)
	}
	if ct := d.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("CSV Content-Type %q", ct)
	}
	if want := "key\n" + strings.Join(made, "\n") + "\n"; d.Body != want {
		t.Errorf("CSV body %q, want %q", d.Body, want)
	}
	d = s.post(keysPath(app, "download"), url.Values{"format": {"txt"}, "keys": {strings.Join(posted, "\n")}}).must(t)
	if cd := d.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".txt") {
		t.Errorf("TXT Content-Disposition %q", cd)
	}
	if ct := d.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("TXT Content-Type %q", ct)
	}
	if want := strings.Join(made, "\n") + "\n"; d.Body != want {
		t.Errorf("TXT body %q, want %q", d.Body, want)
	}

	// Junk is refused, never reflected.
	many := make([]string, 10001)
	for i := range many {
		many[i] = "K" + strconv.Itoa(i)
	}
	for name, form := range map[string]url.Values{
		"html":      {"format": {"txt"}, "keys": {"<script>alert(1)</script>"}},
		"formula":   {"format": {"csv"}, "keys": {made[0] + "\n=HYPERLINK(\"x\")"}},
		"empty":     {"format": {"txt"}, "keys": {""}},
		"format":    {"format": {"html"}, "keys": {made[0]}},
		"too many":  {"format": {"txt"}, "keys": {strings.Join(many, "\n")}},
		"long":      {"format": {"txt"}, "keys": {strings.Repeat("A", 129)}},
		"dot first": {"format": {"txt"}, "keys": {".." + made[0]}},
	} {
		d := s.post(keysPath(app, "download"), form)
		if d.Status != 400 || d.Header.Get("Content-Disposition") != "" || strings.Contains(d.Body, "<script>alert") {
			t.Errorf("%s: download answered %d %q", name, d.Status, d.Header.Get("Content-Disposition"))
		}
	}
	// Without the CSRF token nothing is served.
	if d := s.post(keysPath(app, "download"), url.Values{"csrf": {"x"}, "format": {"txt"}, "keys": {made[0]}}); d.Status != 403 {
		t.Errorf("download without CSRF: %d", d.Status)
	}
}

func TestKeysGenerateRefused(t *testing.T) {
	s, app := keysSetup(t)
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"count": {"abc"}, "key_type": {"days"}, "duration_value": {"7"}}, "Number of keys: enter a whole number."},
		{url.Values{"count": {""}, "key_type": {"days"}, "duration_value": {"7"}}, "Number of keys"},
		{url.Values{"count": {"0"}, "key_type": {"days"}, "duration_value": {"7"}}, "Invalid field count: must be 1 to 10000. (MISSING_FIELDS)"},
		{url.Values{"count": {"2"}, "key_type": {"days"}, "duration_value": {"x"}}, "Duration (days): enter a whole number."},
		{url.Values{"count": {"2"}, "key_type": {"weeks"}, "duration_value": {"7"}}, "key_type"},
		{url.Values{"count": {"2"}, "key_type": {"days"}, "duration_value": {"7"}, "max_devices": {"0"}}, "max_devices"},
		{url.Values{"count": {"2"}, "key_type": {"days"}, "duration_value": {"7"}, "features": {"[1,2]"}}, "Features: enter a JSON object"},
	} {
		s.get(keysPath(app, "")).must(t)
		p := s.post(keysPath(app, "generate"), c.form).must(t)
		if p.URL != keysPath(app, "") || !strings.Contains(p.flash(), c.want) {
			t.Errorf("%v: at %s flash %q, want %q", c.form, p.URL, p.flash(), c.want)
		}
		if n := len(keysAll(s, app, "")); n != 0 {
			t.Fatalf("%v created %d keys", c.form, n)
		}
	}
}

func TestKeysPageDevicesSessionsHistory(t *testing.T) {
	s, app := keysSetup(t)
	key := app.GenerateKeys(1, "days", 30, 2)[0]
	sid := app.Login(key, "HWID-ALPHA-1")

	ss := keysAPI(s, app, key)["sessions"].([]any)
	if len(ss) != 1 {
		t.Fatalf("sessions: %v", ss)
	}
	listed := ss[0].(map[string]any)["id"].(string)
	p := s.get(keysPath(app, key)).must(t)
	for _, want := range []string{key, "HWID-ALPHA-1", listed, "127.0.0.1", "Live sessions", "active", "Devices allowed", "No recorded action"} {
		if !p.Has(want) {
			t.Errorf("key page lacks %q: %s", want, p.Text())
		}
	}
	// The session's revoke button works.
	p = s.post(keysPath(app, key+"/action"), url.Values{"action": {"revoke-session"}, "session_id": {listed}}).must(t)
	if p.flash() != "Session revoked." {
		t.Errorf("flash %q", p.flash())
	}
	if r := app.Heartbeat(sid, key); r.Body["error_code"] != "SESSION_REVOKED" {
		t.Errorf("heartbeat after revoke: %v", r.Body)
	}
	if p.Has(listed) || !p.Has("No live session.") {
		t.Errorf("revoked session still listed")
	}
	// An action shows up in the history.
	s.post(keysPath(app, key+"/action"), url.Values{"action": {"pause"}}).must(t)
	p = s.get(keysPath(app, key)).must(t)
	if !p.Has("key.pause") || !p.Has("admin") {
		t.Errorf("history lacks the pause: %s", p.Text())
	}
	// Editing note, seats and features.
	p = s.post(keysPath(app, key+"/action"), url.Values{"action": {"update"}, "note": {"VIP customer"}, "max_devices": {"4"},
		"features": {`{"tier": "gold", "seats": 3}`}}).must(t)
	if p.flash() != "Key saved." {
		t.Errorf("flash %q", p.flash())
	}
	v := keysAPI(s, app, key)
	f, _ := v["features"].(map[string]any)
	if v["note"] != "VIP customer" || v["max_devices"] != 4.0 || f["tier"] != "gold" || f["seats"] != 3.0 {
		t.Errorf("after edit: %v", v)
	}
	if !p.Has("VIP customer") || !p.Has("gold") || !p.Has("key.update") {
		t.Errorf("edit not shown: %s", p.Text())
	}
	// A refused edit changes nothing.
	p = s.post(keysPath(app, key+"/action"), url.Values{"action": {"update"}, "note": {"other"}, "max_devices": {"lots"}}).must(t)
	if !strings.Contains(p.flash(), "Devices allowed: enter a whole number.") || keysAPI(s, app, key)["note"] != "VIP customer" {
		t.Errorf("bad seats: flash %q", p.flash())
	}
	if p := s.get(keysPath(app, "NOPE-NOPE")); p.Status != 404 {
		t.Errorf("unknown key page: %d", p.Status)
	}
}

func TestKeysActions(t *testing.T) {
	s, app := keysSetup(t)
	keys := app.GenerateKeys(2, "days", 30, 1)
	key := keys[0]
	act := func(action string, extra ...string) *webPage {
		t.Helper()
		s.get(keysPath(app, key)).must(t)
		f := url.Values{"action": {action}, "confirm": {"yes"}}
		for i := 0; i+1 < len(extra); i += 2 {
			f.Set(extra[i], extra[i+1])
		}
		return s.post(keysPath(app, key+"/action"), f).must(t)
	}
	status := func() any { return keysAPI(s, app, key)["status"] }
	login := func(k, hwid string) any {
		r := app.Env("/api/auth/login.php", map[string]any{"license_key": k, "hwid": hwid})
		if r.Body["success"] == true {
			return "ok"
		}
		return r.Body["error_code"]
	}

	if p := act("ban", "reason", "chargeback"); p.flash() != "Key banned." || status() != "banned" {
		t.Fatalf("ban: %q %v", p.flash(), status())
	}
	if got := login(key, "H1"); got != "BANNED" {
		t.Errorf("login of a banned key: %v", got)
	}
	if p := act("ban"); !p.Has("Unban") {
		t.Errorf("banned key page offers no unban")
	}
	if act("unban"); status() != "unused" {
		t.Errorf("unban: %v", status())
	}
	if p := act("unban"); !strings.Contains(p.flash(), "not banned") {
		t.Errorf("second unban: %q", p.flash())
	}
	if got := login(key, "H1"); got != "ok" {
		t.Errorf("login after unban: %v", got)
	}
	if act("pause"); status() != "paused" {
		t.Errorf("pause: %v", status())
	}
	if got := login(key, "H1"); got != "PAUSED" {
		t.Errorf("login of a paused key: %v", got)
	}
	if act("resume"); status() != "active" {
		t.Errorf("resume: %v", status())
	}
	before := keysAPI(s, app, key)["days_remaining"].(float64)
	if p := act("extend", "days", "10"); p.flash() != "Key extended." || keysAPI(s, app, key)["days_remaining"].(float64) != before+10 {
		t.Errorf("extend: %q %v → %v", p.flash(), before, keysAPI(s, app, key)["days_remaining"])
	}
	if p := act("extend", "days", "ten"); !strings.Contains(p.flash(), "Days: enter a whole number.") {
		t.Errorf("extend ten: %q", p.flash())
	}
	if p := act("extend", "days", "0"); !strings.Contains(p.flash(), "days") || keysAPI(s, app, key)["days_remaining"].(float64) != before+10 {
		t.Errorf("extend 0: %q", p.flash())
	}
	if got := login(key, "H2"); got != "HWID_MISMATCH" {
		t.Errorf("second device before reset: %v", got)
	}
	if act("reset-hwid"); len(keysAPI(s, app, key)["devices"].([]any)) != 0 {
		t.Errorf("reset-hwid left devices")
	}
	if got := login(key, "H2"); got != "ok" {
		t.Errorf("new device after reset: %v", got)
	}
	p := act("rotate")
	nk := regexp.MustCompile(`The new key is (\S+);`).FindStringSubmatch(p.flash())
	if nk == nil || nk[1] == key || p.URL != keysPath(app, nk[1]) || !p.Has(nk[1]) {
		t.Fatalf("rotate: at %s flash %q", p.URL, p.flash())
	}
	if keysAPI(s, app, key) != nil || keysAPI(s, app, nk[1]) == nil {
		t.Errorf("rotate: old key still there or new one missing")
	}
	// The new key's history goes on from the old string's: the rotation and
	// what was done before it (under the old string) are listed.
	if hist := p.Text()[strings.Index(p.Text(), "History"):]; !strings.Contains(hist, "key.rotate") || !strings.Contains(hist, "key.extend") {
		t.Errorf("the rotated key's history lacks the entries under its old string: %s", hist)
	}
	if got := login(key, "H2"); got == "ok" {
		t.Errorf("old key still logs in")
	}
	if got := login(nk[1], "H2"); got != "ok" {
		t.Errorf("new key login: %v", got)
	}
	key = nk[1]
	p = act("delete")
	if p.URL != keysPath(app, "") || !strings.Contains(p.flash(), "deleted") || keysAPI(s, app, key) != nil {
		t.Errorf("delete: at %s flash %q", p.URL, p.flash())
	}
	if keysAPI(s, app, keys[1]) == nil {
		t.Errorf("delete removed another key")
	}
	if p := s.post(keysPath(app, keys[1]+"/action"), url.Values{"action": {"explode"}}).must(t); !strings.Contains(p.flash(), "Unknown action") {
		t.Errorf("unknown action: %q", p.flash())
	}
}

func TestKeysDestructiveNeedConfirm(t *testing.T) {
	s, app := keysSetup(t)
	key := app.GenerateKeys(1, "days", 30, 1)[0]
	app.Login(key, "HWID-Z")
	page := s.get(keysPath(app, key)).must(t)
	for _, a := range []string{"ban", "reset-hwid", "rotate", "delete", "revoke-sessions"} {
		if !strings.Contains(page.Body, `name="action" value="`+a+`"`) {
			t.Errorf("%s: no form on the key page", a)
		}
		s.get(keysPath(app, key)).must(t)
		p := s.post(keysPath(app, key+"/action"), url.Values{"action": {a}, "back": {keysPath(app, key)}}).must(t)
		if !strings.Contains(p.Body, `name="confirm" value="yes"`) || !strings.Contains(p.Body, `name="action" value="`+a+`"`) || !p.Has("Confirm") {
			t.Errorf("%s without confirm: no confirmation page: %s", a, p.Text())
		}
		v := keysAPI(s, app, key)
		if v == nil || v["status"] != "active" || len(v["devices"].([]any)) != 1 || len(v["sessions"].([]any)) != 1 {
			t.Fatalf("%s without confirm changed the key: %v", a, v)
		}
	}
	// Each destructive button asks in the browser too.
	for _, q := range []string{"Ban this key?", "Reset this key's devices?", "Rotate this key?", "Delete this key for good?"} {
		if !strings.Contains(page.Body, `data-confirm="`+strings.ReplaceAll(q, "'", "&#39;")) {
			t.Errorf("no data-confirm %q", q)
		}
	}
}

func TestKeysBulk(t *testing.T) {
	s, app := keysSetup(t)
	s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 2, "key_type": "days", "duration_value": 5, "note": "bulkme"})
	others := app.GenerateKeys(3, "days", 30, 1)
	marked := keysAll(s, app, "bulkme")

	s.get(keysPath(app, "")).must(t)
	p := s.post(keysPath(app, "bulk"), url.Values{"op": {"ban"}, "q": {"bulkme"}}).must(t)
	if !p.Has("This will ban 2 keys") || !strings.Contains(p.Body, `name="expect" value="2"`) {
		t.Fatalf("dry run page: %s", p.Text())
	}
	for _, k := range marked {
		if keysAPI(s, app, k)["status"] != "unused" {
			t.Fatalf("dry run changed %s", k)
		}
	}
	p = s.post(keysPath(app, "bulk"), url.Values{"op": {"ban"}, "q": {"bulkme"}, "expect": {"2"}, "confirm": {"yes"}}).must(t)
	if p.URL != keysPath(app, "") || p.flash() != "Banned 2 of 2 keys." {
		t.Errorf("bulk ban: at %s flash %q", p.URL, p.flash())
	}
	for _, k := range marked {
		if keysAPI(s, app, k)["status"] != "banned" {
			t.Errorf("%s not banned", k)
		}
	}
	for _, k := range others {
		if keysAPI(s, app, k)["status"] != "unused" {
			t.Errorf("%s banned though outside the filter", k)
		}
	}

	// Extend by type and status; the count moves between dry run and run.
	p = s.post(keysPath(app, "bulk"), url.Values{"op": {"extend"}, "days": {"5"}, "status": {"unused"}, "key_type": {"days"}}).must(t)
	if !p.Has("This will extend 3 keys by 5 days") {
		t.Fatalf("extend dry run: %s", p.Text())
	}
	extra := app.GenerateKeys(1, "days", 30, 1)[0]
	p = s.post(keysPath(app, "bulk"), url.Values{"op": {"extend"}, "days": {"5"}, "status": {"unused"}, "key_type": {"days"}, "expect": {"3"}, "confirm": {"yes"}}).must(t)
	if !p.Has("COUNT_CHANGED") || !p.Has("This will extend 4 keys") || !strings.Contains(p.Body, `name="expect" value="4"`) {
		t.Fatalf("count changed: %s", p.Text())
	}
	for _, k := range append(others, extra) {
		if keysAPI(s, app, k)["duration"] != 30.0 {
			t.Fatalf("COUNT_CHANGED run extended %s", k)
		}
	}
	p = s.post(keysPath(app, "bulk"), url.Values{"op": {"extend"}, "days": {"5"}, "status": {"unused"}, "key_type": {"days"}, "expect": {"4"}, "confirm": {"yes"}}).must(t)
	if p.flash() != "Extended 4 of 4 keys." || keysAPI(s, app, extra)["duration"] != 35.0 {
		t.Errorf("extend: %q", p.flash())
	}

	// Bad input: a message and nothing changes.
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"op": {"extend"}, "days": {"abc"}}, "Days: enter a whole number."},
		{url.Values{"op": {"extend"}, "days": {"0"}}, "Invalid field days"},
		{url.Values{"op": {"explode"}}, "Choose what to do"},
		{url.Values{"op": {"ban"}, "created_after": {"yesterday"}}, "Created after: enter a date"},
		{url.Values{"op": {"ban"}, "status": {"weird"}}, "Invalid field status"},
	} {
		p := s.post(keysPath(app, "bulk"), c.form).must(t)
		if p.URL != keysPath(app, "") || !strings.Contains(p.flash(), c.want) {
			t.Errorf("%v: flash %q, want %q", c.form, p.flash(), c.want)
		}
	}
	// Delete by date: everything created before tomorrow.
	tomorrow := s.Clock.Now().AddDate(0, 0, 1).Format("2006-01-02")
	p = s.post(keysPath(app, "bulk"), url.Values{"op": {"delete"}, "created_before": {tomorrow}}).must(t)
	if !p.Has("This will delete 6 keys") {
		t.Fatalf("delete dry run: %s", p.Text())
	}
	if n := len(keysAll(s, app, "")); n != 6 {
		t.Fatalf("dry run deleted: %d keys left", n)
	}
	s.post(keysPath(app, "bulk"), url.Values{"op": {"delete"}, "created_before": {tomorrow}, "expect": {"6"}, "confirm": {"yes"}}).must(t)
	if n := len(keysAll(s, app, "")); n != 0 {
		t.Errorf("bulk delete left %d keys", n)
	}
}
