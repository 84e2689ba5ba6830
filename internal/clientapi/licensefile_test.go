package clientapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/licensefile"
)

// License files over HTTP (issue 23, items 1, 2, 4 and 5): the online
// route auth/license-file.php, borrowed seats of floating keys, air-gapped
// activation through the customer portal and the admin API, revocation.

// TestLicenseFileOnline: auth/license-file.php answers OFFLINE_DISABLED
// while the app has offline use off; then a file that verifies with the
// served public key for that app and device, valid until now + the TTL
// (capped at the license's own expiry), activating the key and binding the
// device as a login does — the same device limit, BANNED and INVALID_KEY
// refusals; license_file.issued events, the metric, the key detail's
// listing; a revoked file's device gets no new file (LICENSE_FILE_REVOKED)
// but still logs in.
func TestLicenseFileOnline(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Offline")
		keys := app.GenerateKeys(3, "days", 30, 2)
		key, short, banned := keys[0], keys[1], keys[2]

		kwtest.ExpectCode(t, app.FileRequest(key, "hw-a"), 200, "OFFLINE_DISABLED")
		app.OfflineOn(t, 48)

		now := s.Clock.Now()
		f, r := app.MustFile(t, key, "hw-a")
		c := f.Claims
		if !c.ValidUntil.Equal(now.Add(48*time.Hour)) || !c.IssuedAt.Equal(now) || c.Status != "active" || c.KeyType != "days" ||
			c.KeySHA256 != licensefile.KeySHA256(key) || c.Floating || c.ExpiresAt == nil || !c.ExpiresAt.Equal(now.Add(30*24*time.Hour)) {
			t.Fatalf("claims %+v", c)
		}
		if r.Body["floating"] != false || r.Body["session_id"] != nil {
			t.Fatalf("a non-floating file carries a borrow: %v", r.Body)
		}
		if strings.Contains(r.Str("license_file"), key) {
			t.Fatalf("the file carries the key string")
		}
		d := app.KeyView(t, key)
		if d["status"] != "active" || len(d["devices"].([]any)) != 1 {
			t.Fatalf("key after the file: %v", d)
		}
		// Another device fills the second slot; a third is refused as a
		// login is.
		app.MustFile(t, key, "hw-b")
		kwtest.ExpectCode(t, app.FileRequest(key, "hw-c"), 200, "DEVICE_LIMIT")
		kwtest.ExpectCode(t, app.LoginReply(key, "hw-c"), 200, "DEVICE_LIMIT")
		// The same device again: a fresh file.
		app.MustFile(t, key, "hw-a")

		// A license expiring before the TTL caps the file.
		s.Clock.Advance(time.Minute)
		app.KeyAction("extend", short, map[string]any{"days": 0})
		short1 := app.GenerateKeys(1, "days", 1, 1)[0]
		f1, _ := app.MustFile(t, short1, "hw-s")
		if f1.Claims.ExpiresAt == nil || !f1.Claims.ValidUntil.Equal(*f1.Claims.ExpiresAt) || !f1.Claims.ValidUntil.Equal(s.Clock.Now().Add(24*time.Hour)) {
			t.Fatalf("file of a one-day key: valid_until %s, expires %v", f1.Claims.ValidUntil, f1.Claims.ExpiresAt)
		}

		app.KeyAction("ban", banned, nil)
		kwtest.ExpectCode(t, app.FileRequest(banned, "hw-a"), 200, "BANNED")
		kwtest.ExpectCode(t, app.FileRequest("NOT-A-KEY", "hw-a"), 200, "INVALID_KEY")
		kwtest.ExpectCode(t, app.Env("/api/auth/license-file.php", map[string]any{"license_key": key}), 200, "MISSING_FIELDS")

		if evs := s.EventsOf(app.ID, "license_file.issued"); len(evs) != 4 {
			t.Fatalf("%d license_file.issued events, want 4", len(evs))
		} else if e := evs[0]; e["license_key"] != key || e["hwid"] != "hw-a" || e["source"] != "online" || e["file_id"] != c.FileID {
			t.Fatalf("license_file.issued data %v", e)
		}
		rec := httptest.NewRecorder()
		s.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), `keyward_license_files_issued_total{source="online"} 4`) {
			t.Fatalf("metrics lack keyward_license_files_issued_total{source=\"online\"} 4")
		}

		files := app.KeyFiles(t, key)
		if len(files) != 3 || files[2]["id"] != c.FileID || files[2]["hwid"] != "hw-a" || files[2]["source"] != "online" ||
			files[2]["revoked_at"] != nil || files[2]["returned_at"] != nil || files[2]["kid"] != c.Kid {
			t.Fatalf("key detail license_files %v", files)
		}

		// Revoke the newest file of hw-a: no new file for it, login still works.
		rv := s.MustAdmin("POST", "/api/admin/keys.php?action=revoke-license-file&app_id="+app.ID, map[string]any{"id": files[0]["id"]})
		if rv.Obj("file")["revoked_at"] == nil {
			t.Fatalf("revoke reply %s", rv)
		}
		kwtest.ExpectCode(t, app.FileRequest(key, "hw-a"), 200, "LICENSE_FILE_REVOKED")
		app.Login(key, "hw-a")
		app.MustFile(t, key, "hw-b") // another device is not affected
		if r := s.Admin("POST", "/api/admin/keys.php?action=revoke-license-file&app_id="+app.ID, map[string]any{"id": "nope"}); r.Status != 404 {
			t.Fatalf("revoking an unknown file: %s", r)
		}
		if entries := auditActions(t, s, app.ID); entries["license_file.issue"] != 5 || entries["license_file.revoke"] != 1 {
			t.Fatalf("audit actions %v", entries)
		}
	})
}

// auditActions counts the app's audit entries by action.
func auditActions(t *testing.T, s *kwtest.Server, appID string) map[string]int {
	t.Helper()
	r := s.MustAdmin("GET", "/api/admin/audit.php?app_id="+appID+"&limit=500", nil)
	out := map[string]int{}
	for _, e := range r.Body["entries"].([]any) {
		out[e.(map[string]any)["action"].(string)]++
	}
	return out
}

// TestLicenseFileBorrowedSeat: a floating key's license file is a borrowed
// seat. With 3 seats and one borrowed, 2 other machines log in and the
// next is refused DEVICE_LIMIT; the borrowing machine's own login uses its
// seat; returning the file ({session_id, return: true}) frees it at once;
// a file past its valid_until frees its seat too (injected clock); a
// borrow when every seat is held is refused like a login.
func TestLicenseFileBorrowedSeat(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Floating offline")
		app.OfflineOn(t, 1)
		key := app.FloatingKey(t, 3)

		f, r := app.MustFile(t, key, "laptop")
		borrow := r.Str("session_id")
		if r.Body["floating"] != true || borrow == "" || f.Claims.BorrowID != borrow || !f.Claims.Floating {
			t.Fatalf("borrow reply %v, claims %+v", r.Body, f.Claims)
		}
		app.Login(key, "m-1")
		app.Login(key, "m-2")
		app.LoginReply(key, "m-3").SeatsFull(t, 3)
		seatsShown := func(inUse, borrowed int) {
			t.Helper()
			d := app.KeyView(t, key)
			if d["seats_in_use"] != float64(inUse) || d["borrowed_seats"] != float64(borrowed) {
				t.Fatalf("key detail seats_in_use %v borrowed_seats %v, want %d and %d", d["seats_in_use"], d["borrowed_seats"], inUse, borrowed)
			}
		}
		seatsShown(3, 1)
		app.Login(key, "laptop") // its own borrowed seat
		seatsShown(3, 0)
		app.FileRequest(key, "m-3").SeatsFull(t, 3)

		ret := app.Env("/api/auth/license-file.php", map[string]any{"session_id": borrow, "return": true})
		if ret.Body["success"] != true {
			t.Fatalf("return: %s", ret)
		}
		// laptop still has its live session: its seat is held by that.
		app.LoginReply(key, "m-3").SeatsFull(t, 3)
		app.Env("/api/auth/logout.php", map[string]any{"session_id": app.Login(key, "laptop")})
		app.Login(key, "m-3")
		if files := app.KeyFiles(t, key); len(files) != 1 || files[0]["returned_at"] == nil || files[0]["floating"] != true {
			t.Fatalf("key detail after return %v", files)
		}
		// Returning twice is fine; an unknown borrow is NOT_FOUND.
		if r := app.Env("/api/auth/license-file.php", map[string]any{"session_id": borrow, "return": true}); r.Body["success"] != true {
			t.Fatalf("second return: %s", r)
		}
		kwtest.ExpectCode(t, app.Env("/api/auth/license-file.php", map[string]any{"session_id": "nope", "return": true}), 200, "NOT_FOUND")

		// One seat, borrowed: held until valid_until (1 h), then free.
		one := app.FloatingKey(t, 1)
		app.MustFile(t, one, "away")
		kwtest.ExpectCode(t, app.LoginReply(one, "desk"), 200, "DEVICE_LIMIT")
		s.Clock.Advance(time.Hour - time.Second)
		kwtest.ExpectCode(t, app.LoginReply(one, "desk"), 200, "DEVICE_LIMIT")
		s.Clock.Advance(time.Second)
		app.Login(one, "desk")
		if evs := s.EventsOf(app.ID, "seat.denied"); len(evs) != 5 {
			t.Fatalf("%d seat.denied events, want 5", len(evs))
		}
	})
}

// makeRequest is an air-gapped machine's activation request.
func makeRequest(t *testing.T, app *kwtest.App, secret, key, hwid string) (string, *licensefile.Request) {
	t.Helper()
	req, err := licensefile.NewRequest(app.ID, key, hwid, app.S.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	text, err := licensefile.MakeRequest(req, secret)
	if err != nil {
		t.Fatal(err)
	}
	return text, req
}

func customerToken(t *testing.T, s *kwtest.Server, appID, key string) string {
	t.Helper()
	r := s.Do("POST", "/api/customer/login.php", http.Header{"Content-Type": {"application/json"}},
		[]byte(`{"app_id":"`+appID+`","license_key":"`+key+`"}`))
	if r.Status != 200 || r.Str("token") == "" {
		t.Fatalf("customer login: %s", r)
	}
	return r.Str("token")
}

func portalActivate(s *kwtest.Server, token, text string) *kwtest.Reply {
	b, _ := json.Marshal(map[string]any{"request": text})
	return s.Do("POST", "/api/customer/offline-activate.php", http.Header{"Content-Type": {"application/json"},
		"Authorization": {"Bearer " + token}}, b)
}

// TestOfflineActivate: an air-gapped machine's activation request turns
// into a license file through the customer portal (the token's key only)
// and the admin API (any key of the app); the file verifies for that device
// and carries the nonce; the device is bound and counted as a login's (a
// one-device key refuses a second machine with HWID_MISMATCH, online and
// offline alike); the same request again answers the same file; a request
// not MACed with the app secret (edited) is refused; a nonce reused for
// another device, even MACed with the secret, is refused CONFLICT; a
// request for another app or key is FORBIDDEN; offline off answers
// OFFLINE_DISABLED.
func TestOfflineActivate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Factory")
		other := s.CreateApp("Other")
		keys := app.GenerateKeys(3, "lifetime", 0, 1)
		key, key2, key3 := keys[0], keys[1], keys[2]
		tok := customerToken(t, s, app.ID, key)

		text, req := makeRequest(t, app, app.Secret, key, "press-01")
		if r := portalActivate(s, tok, text); r.Status != 403 || r.Str("error_code") != "OFFLINE_DISABLED" {
			t.Fatalf("offline off: %s", r)
		}
		app.OfflineOn(t, 24*365)

		r := portalActivate(s, tok, text)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("portal offline-activate: %s", r)
		}
		f := app.CheckFile(t, r, "press-01")
		if f.Claims.Nonce != req.Nonce || f.Claims.Status != "active" {
			t.Fatalf("claims %+v", f.Claims)
		}
		if d := app.KeyView(t, key); d["status"] != "active" || len(d["devices"].([]any)) != 1 {
			t.Fatalf("key after offline activation %v", d)
		}
		// The same request again: the same file, nothing new.
		if again := portalActivate(s, tok, text); again.Status != 200 || again.Str("license_file") != r.Str("license_file") {
			t.Fatalf("repeated request: %s", again)
		}
		if n := len(s.EventsOf(app.ID, "license_file.issued")); n != 1 {
			t.Fatalf("%d license_file.issued events after a repeated request, want 1", n)
		}
		// The key is bound: another machine is refused, offline and online.
		text2, _ := makeRequest(t, app, app.Secret, key, "press-02")
		if r := portalActivate(s, tok, text2); r.Status != 403 || r.Str("error_code") != "HWID_MISMATCH" {
			t.Fatalf("second device: %s", r)
		}
		kwtest.ExpectCode(t, app.LoginReply(key, "press-02"), 200, "HWID_MISMATCH")
		app.Login(key, "press-01")

		// Edited on the way (not MACed with the app secret): refused.
		forged := *req
		forged.HWID = "press-03"
		ftext, err := licensefile.MakeRequest(&forged, "not-the-secret")
		if err != nil {
			t.Fatal(err)
		}
		if r := portalActivate(s, tok, ftext); r.Status != 400 || r.Str("error_code") != "MISSING_FIELDS" ||
			!strings.Contains(r.Str("message"), "secret") {
			t.Fatalf("tampered request: %s", r)
		}
		// The nonce reused for another device, MACed with the secret: the
		// nonce never makes a second file.
		ftext, err = licensefile.MakeRequest(&forged, app.Secret)
		if err != nil {
			t.Fatal(err)
		}
		r3 := s.Admin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": ftext})
		if r3.Status != 409 || r3.Str("error_code") != "CONFLICT" {
			t.Fatalf("nonce replayed to another device: %s", r3)
		}
		// The token's key only; the app's only.
		t2, _ := makeRequest(t, app, app.Secret, key2, "lathe-01")
		if r := portalActivate(s, tok, t2); r.Status != 403 || r.Str("error_code") != "FORBIDDEN" {
			t.Fatalf("another key through the portal: %s", r)
		}
		if r := portalActivate(s, tok, "garbage"); r.Status != 400 || r.Str("error_code") != "MISSING_FIELDS" {
			t.Fatalf("garbage request: %s", r)
		}
		tOther, _ := makeRequest(t, other, other.Secret, key2, "lathe-01")
		if r := portalActivate(s, tok, tOther); r.Status != 403 || r.Str("error_code") != "FORBIDDEN" {
			t.Fatalf("another app's request: %s", r)
		}
		// An admin activates any key of the app.
		ra := s.MustAdmin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": t2})
		app.CheckFile(t, ra, "lathe-01")
		// A stale request (older than 30 days) is refused.
		old, err := licensefile.NewRequest(app.ID, key3, "mill-01", s.Clock.Now().Add(-31*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t3, err := licensefile.MakeRequest(old, app.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.Admin("POST", "/api/admin/keys.php?action=offline-activate&app_id="+app.ID, map[string]any{"request": t3}); r.Status != 400 {
			t.Fatalf("stale request: %s", r)
		}
		evs := s.EventsOf(app.ID, "license_file.issued")
		if len(evs) != 2 || evs[0]["source"] != "offline" || evs[1]["source"] != "admin" {
			t.Fatalf("license_file.issued events %v", evs)
		}
		if a := auditActions(t, s, app.ID); a["license_file.offline_activate"] != 2 || a["license_file.issue"] != 0 {
			t.Fatalf("audit actions %v", a)
		}
	})
}

// TestLicenseFilesPurged: the session reaper deletes the records of files
// valid until more than 30 days ago (their activation requests are refused
// as too old by then), but keeps revoked ones, which go on refusing a new
// file for their device.
func TestLicenseFilesPurged(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Purge")
		app.OfflineOn(t, 1)
		key := app.GenerateKeys(1, "lifetime", 0, 2)[0]
		old, _ := app.MustFile(t, key, "old")
		_, r := app.MustFile(t, key, "revoked")
		s.MustAdmin("POST", "/api/admin/keys.php?action=revoke-license-file&app_id="+app.ID, map[string]any{"id": r.Str("file_id")})
		keyID := old.Claims.KeyID

		s.Clock.Advance(30*24*time.Hour + time.Hour + time.Second)
		if _, err := s.License.ReapSessions(t.Context()); err != nil {
			t.Fatal(err)
		}
		files, err := s.License.LicenseFiles(t.Context(), app.ID, keyID)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || files[0].HWID != "revoked" || files[0].RevokedAt == nil {
			t.Fatalf("files after the purge %+v", files)
		}
		kwtest.ExpectCode(t, app.FileRequest(key, "revoked"), 200, "LICENSE_FILE_REVOKED")
		app.MustFile(t, key, "old")
	})
}

// TestLicenseFileUpstream: a license-file request with a key only the
// app's upstream has (lazy migration) imports it and answers a file, as a
// login would; a key the upstream does not have either is INVALID_KEY.
func TestLicenseFileUpstream(t *testing.T) {
	t.Parallel()
	clock := kwtest.NewClock()
	up := kwtest.Start(t, kwtest.Options{Clock: clock})
	hosted := up.CreateApp("Product")
	key := hosted.GenerateKeys(1, "lifetime", 0, 1)[0]
	token := up.MintToken(t, up.AdminToken(), "migration")["token"].(string)
	a := kwtest.Start(t, kwtest.Options{Clock: clock, Configure: func(c *config.Config) { c.WebhookAllowNetworks = "127.0.0.0/8" }})
	app := a.CreateApp("Product")
	a.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"upstream_url": up.URL,
		"upstream_app_id": hosted.ID, "upstream_token": token, "upstream_enabled": true, "offline_enabled": true}})

	f, _ := app.MustFile(t, key, "dev-1")
	if f.Claims.KeySHA256 != licensefile.KeySHA256(key) {
		t.Fatalf("claims %+v", f.Claims)
	}
	if d := app.KeyView(t, key); d["status"] != "active" {
		t.Fatalf("imported key %v", d)
	}
	kwtest.ExpectCode(t, app.FileRequest("NOWHERE-KEY-1234", "dev-1"), 200, "INVALID_KEY")
}

// TestLicenseFileBorrowRace: borrows and logins to a floating key with 3
// seats from 12 machines at once, half asking for a license file and half
// logging in: exactly 3 succeed, the rest are refused DEVICE_LIMIT, so
// offline use cannot exceed N even under a race. Both engines (the key
// row lock on PostgreSQL).
func TestLicenseFileBorrowRace(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Race")
		app.OfflineOn(t, 24)
		key := app.FloatingKey(t, 3)
		out := make([]*kwtest.Reply, 12)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				hwid := fmt.Sprintf("machine-%02d", i)
				if i%2 == 0 {
					out[i] = app.FileRequest(key, hwid)
				} else {
					out[i] = app.LoginReply(key, hwid)
				}
			}()
		}
		close(start)
		wg.Wait()
		countSeats(t, out, 3)
		if d := app.KeyView(t, key); d["seats_in_use"] != float64(3) {
			t.Fatalf("seats_in_use %v after the race, want 3", d["seats_in_use"])
		}
	})
}
