package clientapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/seal"
)

// upstreamProxy is a small real reverse proxy in front of the upstream
// keyward: it counts the lookups of each key string that reach it, and
// can play an upstream that hangs (down) or answers 503.
type upstreamProxy struct {
	*httptest.Server
	mu      sync.Mutex
	lookups map[string]int
	auth    map[string]bool // Authorization headers seen
	hang    atomic.Bool
	fail    atomic.Bool
	// pair holds each key lookup until a second one for the same key
	// arrives (or a second passes), so two processes get their answers
	// at the same moment and race to insert.
	pair  atomic.Bool
	gates map[string]chan struct{}
}

func newUpstreamProxy(t *testing.T, target string) *upstreamProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &upstreamProxy{lookups: map[string]int{}, auth: map[string]bool{}, gates: map[string]chan struct{}{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if k := r.URL.Query().Get("license_key"); k != "" {
			p.lookups[k]++
		}
		p.auth[r.Header.Get("Authorization")] = true
		var gate chan struct{}
		if k := r.URL.Query().Get("license_key"); k != "" && p.pair.Load() {
			if g, ok := p.gates[k]; ok {
				close(g) // the second lookup releases the first
				delete(p.gates, k)
			} else {
				gate = make(chan struct{})
				p.gates[k] = gate
			}
		}
		p.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-time.After(time.Second):
			}
		}
		switch {
		case p.hang.Load():
			<-r.Context().Done() // an upstream that never answers
			return
		case p.fail.Load():
			http.Error(w, `{"success":false,"error_code":"SERVER_ERROR"}`, http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *upstreamProxy) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookups[key]
}

// keyInfo is a login or check-key reply without what differs between two
// servers by nature (the session token).
func keyInfo(r *kwtest.Reply) map[string]any {
	out := map[string]any{}
	for k, v := range r.Body {
		if k != "session_id" {
			out[k] = v
		}
	}
	return out
}

// Lazy migration end to end, with a second keyward process playing the
// service the app is leaving (issue 24, item 3): unknown keys are fetched
// from it through its admin API, imported with their status, expiry and
// devices, audited, and answered exactly as the upstream answers them;
// unknown-everywhere keys are INVALID_KEY and cached; an upstream that
// hangs or is gone never refuses a known key and costs an unknown key at
// most the timeout; the token is never shown or logged; the switch stops
// lookups.
func TestUpstreamLazyMigration(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		clock := kwtest.NewClock()
		up := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock})
		hosted := up.CreateApp("Product") // the same app on both sides
		active := hosted.GenerateKeys(1, "days", 30, 1)[0]
		hosted.Login(active, "dev-1")
		banned := hosted.GenerateKeys(1, "days", 30, 1)[0]
		if r := hosted.KeyAction("ban", banned, map[string]any{"reason": "chargeback"}); r.Status != 200 {
			t.Fatalf("ban: %s", r)
		}
		later := hosted.GenerateKeys(1, "days", 7, 2)[0]
		hosted.Login(later, "dev-9")
		spare := hosted.GenerateKeys(6, "lifetime", 0, 3)
		token := up.MintToken(t, up.AdminToken(), "migration")["token"].(string)
		proxy := newUpstreamProxy(t, up.URL)

		var logs kwtest.LogBuffer
		a := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock, Log: slog.New(slog.NewTextHandler(&logs, nil)),
			Configure: func(c *config.Config) {
				c.WebhookAllowNetworks = "127.0.0.0/8" // the upstream proxy listens on loopback
				c.UpstreamTimeout = 400 * time.Millisecond
			}})
		app := a.CreateApp("Product")
		q := "/api/admin/apps.php?app_id=" + app.ID
		var replies []string // every admin reply of A, searched for the token at the end
		put := func(body map[string]any) *kwtest.Reply {
			r := a.Admin("PUT", q, body)
			replies = append(replies, string(r.Raw))
			return r
		}
		r := put(map[string]any{"settings": map[string]any{"upstream_url": proxy.URL, "upstream_app_id": hosted.ID,
			"upstream_token": token, "upstream_enabled": true}})
		if r.Status != 200 {
			t.Fatalf("configure upstream: %s", r)
		}
		st := a.AppSettings(t, app.ID)
		if st["upstream_token_set"] != true || st["upstream_enabled"] != true || st["upstream_url"] != proxy.URL || st["upstream_app_id"] != hosted.ID {
			t.Fatalf("settings after PUT: %v", st)
		}
		if _, ok := st["upstream_token"]; ok {
			t.Fatalf("settings show upstream_token: %v", st)
		}
		var sealed string
		if err := a.RawDB(t).QueryRow(rebind(a, `SELECT upstream_token FROM apps WHERE id = ?`), app.ID).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if !seal.IsSealed(sealed) || strings.Contains(sealed, token) {
			t.Fatalf("apps.upstream_token is not sealed: %q", sealed)
		}

		// A key only the upstream has: imported with its state and device,
		// and the login answered as the upstream answers it.
		want := hosted.Env("/api/auth/login.php", map[string]any{"license_key": active, "hwid": "dev-1"})
		got := app.Env("/api/auth/login.php", map[string]any{"license_key": active, "hwid": "dev-1"})
		if got.Body["success"] != true || !reflect.DeepEqual(keyInfo(got), keyInfo(want)) {
			t.Fatalf("login of an upstream key:\n got %v\nwant %v", got.Body, want.Body)
		}
		detail := a.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+active, nil).Obj("key")
		upDetail := up.MustAdmin("GET", "/api/admin/keys.php?app_id="+hosted.ID+"&license_key="+active, nil).Obj("key")
		for _, f := range []string{"status", "key_type", "duration", "max_devices", "activated_at", "expires_at", "note", "features"} {
			if !reflect.DeepEqual(detail[f], upDetail[f]) {
				t.Errorf("imported %s = %v, upstream has %v", f, detail[f], upDetail[f])
			}
		}
		if devs, _ := detail["devices"].([]any); len(devs) != 1 || devs[0].(map[string]any)["hwid"] != "dev-1" {
			t.Errorf("imported devices: %v", detail["devices"])
		}
		// Same binding rules: another device is refused as the upstream refuses it.
		want = hosted.Env("/api/auth/login.php", map[string]any{"license_key": active, "hwid": "dev-2"})
		got = app.Env("/api/auth/login.php", map[string]any{"license_key": active, "hwid": "dev-2"})
		if got.Body["success"] != false || got.Body["error_code"] != want.Body["error_code"] || got.Body["error_code"] != "HWID_MISMATCH" {
			t.Errorf("second device: got %v, upstream %v", got.Body, want.Body)
		}
		if n := proxy.count(active); n != 1 {
			t.Errorf("the upstream was asked %d times for %s, want 1 (a known key never asks)", n, active)
		}
		if !proxy.auth["Bearer "+token] || len(proxy.auth) != 1 {
			t.Errorf("upstream saw Authorization %v", proxy.auth)
		}
		entries := a.MustAdmin("GET", "/api/admin/audit.php?app_id="+app.ID+"&limit=100", nil)
		replies = append(replies, string(entries.Raw))
		imports := 0
		for _, e := range entries.Body["entries"].([]any) {
			e := e.(map[string]any)
			if e["action"] == "key.upstream_import" && e["target"] == active {
				imports++
				if actor := e["actor"].(map[string]any); actor["kind"] != "system" || actor["name"] != "upstream" {
					t.Errorf("import audited by %v", actor)
				}
			}
		}
		if imports != 1 {
			t.Errorf("%d key.upstream_import entries for %s, want 1", imports, active)
		}

		// A banned upstream key is imported banned and refused with its code.
		want = hosted.Env("/api/auth/login.php", map[string]any{"license_key": banned, "hwid": "dev-3"})
		got = app.Env("/api/auth/login.php", map[string]any{"license_key": banned, "hwid": "dev-3"})
		if got.Body["error_code"] != "BANNED" || !reflect.DeepEqual(keyInfo(got), keyInfo(want)) {
			t.Errorf("banned upstream key: got %v, upstream %v", got.Body, want.Body)
		}
		if d := a.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+banned, nil).Obj("key"); d["status"] != "banned" {
			t.Errorf("banned key imported as %v", d["status"])
		}

		// check-key imports too, and the expiry comes along: past it, the
		// key is EXPIRED here as there.
		want = hosted.Env("/api/auth/check-key.php", map[string]any{"license_key": later})
		got = app.Env("/api/auth/check-key.php", map[string]any{"license_key": later})
		if got.Body["success"] != true || !reflect.DeepEqual(keyInfo(got), keyInfo(want)) {
			t.Errorf("check-key of an upstream key:\n got %v\nwant %v", got.Body, want.Body)
		}
		app.Login(later, "dev-9")
		clock.Advance(8 * 24 * time.Hour)
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": later, "hwid": "dev-9"}), 200, "EXPIRED")
		clock.Advance(-8 * 24 * time.Hour)

		// A key neither knows: INVALID_KEY, and the second try does not reach the upstream.
		for range 2 {
			kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": "NOWHERE-1234", "hwid": "dev-1"}), 200, "INVALID_KEY")
		}
		if n := proxy.count("NOWHERE-1234"); n != 1 {
			t.Errorf("unknown key reached the upstream %d times, want 1 (negative cache)", n)
		}

		// Concurrent first logins of one key: one upstream request, one key.
		var wg sync.WaitGroup
		var ok atomic.Int32
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := app.Env("/api/auth/login.php", map[string]any{"license_key": spare[0], "hwid": "dev-" + string(rune('a'+i%3))})
				if r.Body["success"] == true {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 6 {
			t.Errorf("%d of 6 concurrent first logins succeeded", ok.Load())
		}
		if n := proxy.count(spare[0]); n != 1 {
			t.Errorf("concurrent logins asked the upstream %d times, want 1", n)
		}
		if keys := a.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&q="+spare[0], nil).Body["keys"].([]any); len(keys) != 1 {
			t.Errorf("%d keys %s after concurrent imports", len(keys), spare[0])
		}

		// The progress count: the upstream lists nine keys, four are
		// imported, five still to come.
		status := a.MustAdmin("GET", q+"&action=upstream-status", nil)
		replies = append(replies, string(status.Raw))
		if status.Body["upstream_keys"] != float64(9) || status.Body["remaining"] != float64(5) || status.Body["imported"] != float64(4) ||
			status.Body["complete"] != true || status.Body["enabled"] != true {
			t.Errorf("upstream-status: %s", status)
		}

		// An upstream that hangs: known keys are served, an unknown one is
		// INVALID_KEY within the timeout (not the hang).
		proxy.hang.Store(true)
		app.Login(active, "dev-1")
		start := time.Now()
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": spare[1], "hwid": "dev-1"}), 200, "INVALID_KEY")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("an unknown key waited %v for a hanging upstream (timeout 400ms)", d)
		}
		proxy.hang.Store(false)
		// 5xx: INVALID_KEY too.
		proxy.fail.Store(true)
		kwtest.ExpectCode(t, app.Env("/api/auth/check-key.php", map[string]any{"license_key": spare[2]}), 200, "INVALID_KEY")
		proxy.fail.Store(false)
		// Gone altogether.
		proxy.Close()
		app.Login(active, "dev-1")
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": spare[3], "hwid": "dev-1"}), 200, "INVALID_KEY")
		if !strings.Contains(logs.String(), "upstream lookup failed") {
			t.Errorf("no log line for the failed lookups")
		}
		rec := httptest.NewRecorder()
		a.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range []string{`keyward_upstream_lookups_total{outcome="imported"} 4`, `keyward_upstream_lookups_total{outcome="not_found"} 1`,
			`keyward_upstream_lookups_total{outcome="error"} 3`} {
			if !strings.Contains(rec.Body.String(), line) {
				t.Errorf("metrics lack %s", line)
			}
		}

		// Switched off: no lookup at all.
		before := proxy.count(spare[4])
		if r := put(map[string]any{"upstream_enabled": false}); r.Status != 200 {
			t.Fatalf("switch off: %s", r)
		}
		kwtest.ExpectCode(t, app.Env("/api/auth/login.php", map[string]any{"license_key": spare[4], "hwid": "dev-1"}), 200, "INVALID_KEY")
		if n := proxy.count(spare[4]); n != before {
			t.Errorf("a switched-off upstream was asked for %s", spare[4])
		}

		replies = append(replies, string(a.MustAdmin("GET", q, nil).Raw), string(a.MustAdmin("GET", "/api/admin/apps.php", nil).Raw),
			string(a.MustAdmin("GET", "/api/admin/audit.php?limit=1000", nil).Raw))
		for _, r := range replies {
			if strings.Contains(r, token) {
				t.Errorf("a reply shows the upstream token: %s", r)
			}
		}
		if strings.Contains(logs.String(), token) {
			t.Errorf("the log shows the upstream token")
		}
		if strings.Contains(logs.String(), spare[1]) {
			t.Errorf("the log names the key string of a failed lookup")
		}
	})
}

// rebind writes a query's placeholders for s's engine.
func rebind(s *kwtest.Server, q string) string {
	if s.DatabaseURL == "" {
		return q
	}
	n := 0
	var b strings.Builder
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + string(rune('0'+n)))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// The upstream settings are checked at save (scheme, user info, the address
// guard on IP literals, completeness), changed by owners only, the token is
// write-only (upstream_token_set is ignored when sent; null removes it),
// and upstream-status needs the admin role.
func TestUpstreamSettings(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine}) // allows 127.0.0.0/8 and ::1 only
		app := s.CreateApp("Settings")
		q := "/api/admin/apps.php?app_id=" + app.ID
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"upstream_url": "ftp://hosted.example.com"}, "upstream_url"},
			{map[string]any{"upstream_url": "https://user:pw@hosted.example.com"}, "upstream_url"},
			{map[string]any{"upstream_url": "https://hosted.example.com/api"}, "upstream_url"},
			{map[string]any{"upstream_url": "https://hosted.example.com/?x=1"}, "upstream_url"},
			{map[string]any{"upstream_url": "http://10.0.0.1"}, "upstream_url"},
			{map[string]any{"upstream_url": "http://169.254.169.254"}, "upstream_url"},
			{map[string]any{"upstream_url": "http://[fd00::1]:8080"}, "upstream_url"},
			{map[string]any{"upstream_token": 12}, "upstream_token"},
			{map[string]any{"upstream_token": "a b"}, "upstream_token"},
			{map[string]any{"upstream_enabled": true, "upstream_url": "https://hosted.example.com", "upstream_app_id": "x"}, "upstream_enabled"},
		} {
			r := s.Admin("PUT", q, c.body)
			kwtest.ExpectCode(t, r, 400, "MISSING_FIELDS")
			if !strings.Contains(r.Str("message"), c.field) {
				t.Errorf("%v: message %q does not name %s", c.body, r.Str("message"), c.field)
			}
		}
		ok := map[string]any{"upstream_url": "https://hosted.example.com/", "upstream_app_id": "app-1",
			"upstream_token": "kw_pat_secret", "upstream_enabled": true, "upstream_token_set": false}
		if r := s.Admin("PUT", q, ok); r.Status != 200 || r.Obj("app")["settings"].(map[string]any)["upstream_token_set"] != true {
			t.Fatalf("owner saves the upstream: %s", r)
		}
		if r := s.Admin("PUT", q, map[string]any{"upstream_url": "http://127.0.0.1:9"}); r.Status != 200 {
			t.Errorf("a loopback upstream inside --webhook-allow-networks: %s", r)
		}

		// An admin (manage) may save other settings, sending the upstream
		// ones back unchanged, but not change them.
		adm := s.AddMember(app.ID, "ada", "ada's long password", "admin")
		st := s.AppSettings(t, app.ID)
		st["login_message"] = "hello"
		if r := s.AdminAs(adm, "PUT", q, map[string]any{"settings": st}); r.Status != 200 {
			t.Errorf("admin saves the settings read back: %s", r)
		}
		kwtest.ExpectCode(t, s.AdminAs(adm, "PUT", q, map[string]any{"upstream_enabled": false}), 403, "FORBIDDEN")
		kwtest.ExpectCode(t, s.AdminAs(adm, "PUT", q, map[string]any{"upstream_token": "other"}), 403, "FORBIDDEN")
		if r := s.AdminAs(adm, "GET", q+"&action=upstream-status", nil); r.Status != 200 || r.Str("error") == "" || r.Body["complete"] != false {
			t.Errorf("upstream-status with an unreachable upstream: %s", r)
		}
		viewer := s.AddMember(app.ID, "val", "val's long password", "viewer")
		kwtest.ExpectCode(t, s.AdminAs(viewer, "GET", q+"&action=upstream-status", nil), 403, "FORBIDDEN")
		kwtest.ExpectCode(t, s.Admin("GET", q+"&action=nope", nil), 400, "MISSING_FIELDS")

		// null removes the token, which turning on then needs.
		kwtest.ExpectCode(t, s.Admin("PUT", q, map[string]any{"upstream_token": nil}), 400, "MISSING_FIELDS") // still enabled
		if r := s.Admin("PUT", q, map[string]any{"upstream_token": nil, "upstream_enabled": false}); r.Status != 200 ||
			r.Obj("app")["settings"].(map[string]any)["upstream_token_set"] != false {
			t.Errorf("token removed: %s", r)
		}
	})
}

// Two keyward processes on one database importing the same upstream key at
// once: every login succeeds, the key is inserted once (the loser of the
// unique constraint reads the winner's), audited once and counted once.
// A flood of unknown key strings (each a new one to ask about) reaches the
// upstream at most UpstreamConcurrency at a time per process: with the
// upstream holding every lookup, exactly that many arrive and no more
// until it answers; then every request gets INVALID_KEY. The bound is per
// process and the same code on both engines, so SQLite shows it.
func TestUpstreamLookupsBounded(t *testing.T) {
	t.Parallel()
	var arrived atomic.Int64
	gate := make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-gate
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"success":false,"error_code":"NOT_FOUND","message":"Key not found."}`))
	}))
	t.Cleanup(held.Close)
	a := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) {
		c.WebhookAllowNetworks = "127.0.0.0/8"
		c.UpstreamTimeout = 30 * time.Second // nothing times out: the upstream answers when the test says
	}})
	app := a.CreateApp("Product")
	a.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"upstream_url": held.URL, "upstream_app_id": "hosted",
		"upstream_token": "tok", "upstream_enabled": true})
	const n = 2*license.UpstreamConcurrency + 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := app.Env("/api/auth/login.php", map[string]any{"license_key": fmt.Sprintf("FLOOD-%05d", i), "hwid": "dev-1"})
			if r.Body["error_code"] != "INVALID_KEY" {
				t.Errorf("login %d: %v", i, r.Body)
			}
		}()
	}
	waitFor := func(what string, ok func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s (%d lookups arrived)", what, arrived.Load())
			}
		}
	}
	waitFor("the bound's worth of lookups", func() bool { return arrived.Load() >= license.UpstreamConcurrency })
	// Every other request is inside keyward by now or soon; none may reach
	// the upstream while the first ones are held. Without the bound all n
	// arrive within milliseconds.
	time.Sleep(300 * time.Millisecond)
	if got := arrived.Load(); got != license.UpstreamConcurrency {
		t.Errorf("%d lookups reached the upstream at once, want exactly the bound %d", got, license.UpstreamConcurrency)
	}
	close(gate)
	wg.Wait()
	if got := arrived.Load(); got != n {
		t.Errorf("%d keys were asked about, want %d (a waiting lookup still goes)", got, n)
	}
}

func TestUpstreamImportAcrossProcesses(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		clock := kwtest.NewClock()
		up := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock})
		hosted := up.CreateApp("Product")
		keys := hosted.GenerateKeys(3, "lifetime", 0, 4)
		token := up.MintToken(t, up.AdminToken(), "migration")["token"].(string)
		proxy := newUpstreamProxy(t, up.URL)
		proxy.pair.Store(true)

		a1 := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock})
		a2 := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock, DataDir: a1.DataDir, DatabaseURL: a1.DatabaseURL})
		app := a1.CreateApp("Product")
		a1.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"upstream_url": proxy.URL, "upstream_app_id": hosted.ID,
			"upstream_token": token, "upstream_enabled": true})
		clients := []*kwtest.App{app, a2.NewApp(app.ID, app.Secret)}
		for _, key := range keys {
			var wg sync.WaitGroup
			var ok atomic.Int32
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := clients[i%2].Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": "dev-" + string(rune('a'+i%4))})
					if r.Body["success"] == true {
						ok.Add(1)
					} else {
						t.Errorf("login %d of %s: %v", i, key, r.Body)
					}
				}()
			}
			wg.Wait()
			if n := proxy.count(key); n < 1 || n > 2 {
				t.Errorf("%s: %d upstream lookups from two processes", key, n)
			}
			if list := a1.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&q="+key, nil).Body["keys"].([]any); len(list) != 1 {
				t.Errorf("%s: %d keys", key, len(list))
			}
		}
		imports := 0
		for _, e := range a1.MustAdmin("GET", "/api/admin/audit.php?app_id="+app.ID+"&limit=100", nil).Body["entries"].([]any) {
			if e.(map[string]any)["action"] == "key.upstream_import" {
				imports++
			}
		}
		st := a1.MustAdmin("GET", "/api/admin/apps.php?app_id="+app.ID+"&action=upstream-status", nil)
		if imports != len(keys) || st.Body["imported"] != float64(len(keys)) || st.Body["remaining"] != float64(0) {
			t.Errorf("%d import entries, status %s; want %d imports, none remaining", imports, st, len(keys))
		}
	})
}
