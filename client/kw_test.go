package client

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// beats drives a session's heartbeat loop by hand: the test sends a tick,
// the loop beats, and the event comes back on events.
type beats struct {
	ticks  chan time.Time
	events chan Event
	kills  chan string
	done   chan error
}

// manualTicks replaces c's heartbeat ticker with a channel the test feeds.
func manualTicks(c *Client) chan time.Time {
	ch := make(chan time.Time)
	c.tick = func(time.Duration) (<-chan time.Time, func()) { return ch, func() {} }
	return ch
}

// runLoop starts s.Run with manual ticks and returns its handles.
func runLoop(t *testing.T, s *Session) *beats {
	t.Helper()
	b := &beats{ticks: manualTicks(s.c), events: make(chan Event, 64), kills: make(chan string, 4), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		b.done <- s.Run(ctx, HeartbeatOptions{
			OnEvent: func(e Event) { b.events <- e },
			OnKill:  func(code string) { b.kills <- code },
		})
	}()
	return b
}

// beat sends one tick and returns the event of that beat.
func (b *beats) beat(t *testing.T) Event {
	t.Helper()
	select {
	case b.ticks <- time.Now():
	case err := <-b.done:
		t.Fatalf("loop ended before the beat: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("loop does not take ticks")
	}
	select {
	case e := <-b.events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event after a beat")
	}
	return Event{}
}

// ended waits for the loop's end and returns its kill error.
func (b *beats) ended(t *testing.T, code string) {
	t.Helper()
	select {
	case err := <-b.done:
		var k *KillError
		if !errors.As(err, &k) || k.Code != code || !IsKill(err) || KillCode(err) != code {
			t.Fatalf("Run returned %v, want a KillError %s", err, code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the kill")
	}
	select {
	case got := <-b.kills:
		if got != code {
			t.Fatalf("OnKill(%q), want %q", got, code)
		}
	default:
		t.Fatal("OnKill was not called")
	}
}

// setup starts a keyward server on engine with an app whose settings are
// applied, and returns a client for it on the server's clock.
func setup(t *testing.T, engine string, settings map[string]any, opts ...Option) (*kwtest.Server, *kwtest.App, *Client) {
	t.Helper()
	s := kwtest.Start(t, kwtest.Options{Engine: engine})
	app := s.CreateApp("SDK test")
	if len(settings) > 0 {
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": settings})
	}
	c, err := New(s.URL, app.Secret, append([]Option{WithClock(s.Clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, app, c
}

func apiErr(t *testing.T, err error, status int, code string, sealed bool) *APIError {
	t.Helper()
	var a *APIError
	if !errors.As(err, &a) || a.Status != status || a.Code != code || a.Sealed != sealed {
		t.Fatalf("got %#v, want APIError %d %s sealed=%v", err, status, code, sealed)
	}
	return a
}

// Login → heartbeat → ban through the admin API → the kill code arrives at
// the next beat, the loop ends and OnKill is called once.
func TestLoginHeartbeatBan(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		_, app, c := setup(t, engine, map[string]any{"heartbeat_interval": 5})
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		s, err := c.Login(ctx, " "+key+" ", "hw-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(s.ID) != 64 || s.Interval != 5*time.Second || s.LicenseKey != key || s.User.LicenseKey != key ||
			s.User.Status != "active" || s.User.ExpiresAt == nil || s.User.DaysRemaining == nil || *s.User.DaysRemaining != 30 ||
			s.App.Name != "SDK test" || s.User.HWID != "hw-1" {
			t.Fatalf("session %+v", s)
		}
		st, err := c.CheckKey(ctx, key)
		if err != nil || !st.Valid || st.Key.Status != "active" || st.Key.MaxDevices != 1 {
			t.Fatalf("check-key %+v %v", st, err)
		}
		b := runLoop(t, s)
		for i := 0; i < 2; i++ {
			if e := b.beat(t); e.Kind != EventOK || e.Err != nil {
				t.Fatalf("beat %d: %+v", i, e)
			}
		}
		if r := app.KeyAction("ban", key, nil); r.Status != 200 {
			t.Fatalf("ban: %s", r)
		}
		if e := b.beat(t); e.Kind != EventKill || e.Code != CodeBanned {
			t.Fatalf("beat after the ban: %+v", e)
		}
		b.ended(t, CodeBanned)
		// A banned key's next login is a sealed refusal.
		_, err = c.Login(ctx, key, "hw-1")
		apiErr(t, err, 200, "BANNED", true)
	})
}

// Logout ends the session: the next beat is SESSION_EXPIRED, a kill code.
func TestLogout(t *testing.T) {
	ctx := context.Background()
	_, app, c := setup(t, "sqlite", nil)
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	s, err := c.Login(ctx, key, "hw")
	if err != nil {
		t.Fatal(err)
	}
	if s.User.ExpiresAt != nil || s.User.DaysRemaining != nil {
		t.Fatalf("lifetime key has an expiry: %+v", s.User)
	}
	if err := s.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.Beat(ctx)
	if !IsKill(err) || KillCode(err) != CodeSessionExpired {
		t.Fatalf("beat after logout: %v", err)
	}
}

// Typed errors: sealed business refusals, plain transport refusals,
// errors.As and the Fields of the reply.
func TestTypedErrors(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		s, app, c := setup(t, engine, nil)
		_, err := c.Login(ctx, "NOPE-NOPE", "hw")
		a := apiErr(t, err, 200, "INVALID_KEY", true)
		if a.Message == "" || !strings.Contains(a.Error(), "INVALID_KEY") || IsKill(err) {
			t.Fatalf("%v", a)
		}
		_, err = c.CheckKey(ctx, "NOPE")
		apiErr(t, err, 200, "INVALID_KEY", true)

		key := app.GenerateKeys(1, "days", 30, 1)[0]
		if _, err := c.Login(ctx, key, "hw-a"); err != nil {
			t.Fatal(err)
		}
		_, err = c.Login(ctx, key, "hw-b")
		apiErr(t, err, 200, "HWID_MISMATCH", true)

		multi := app.GenerateKeys(1, "days", 30, 1)[0]
		app.KeyAction("pause", multi, nil)
		_, err = c.Login(ctx, multi, "hw-a")
		apiErr(t, err, 200, "PAUSED", true)

		bad, _ := New(s.URL, strings.Repeat("0", 64), WithClock(s.Clock.Now))
		_, err = bad.Login(ctx, key, "hw-a")
		apiErr(t, err, 401, "INVALID_APP", false)
		if _, err := bad.StartTrial(ctx, "x"); err == nil {
			t.Fatal("trial with a wrong secret succeeded")
		}
	})
}

// A clock refusal corrects the client's clock and the request is resent
// once; the correction then also applies to reply envelopes.
func TestClockAutoCorrection(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		srv, app, c := setup(t, engine, nil)
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		// The server's clock moves an hour ahead of the client's: the login
		// is refused, corrected and resent.
		local := srv.Clock.Now()
		c.now = func() time.Time { return local }
		srv.Clock.Advance(time.Hour)
		s, err := c.Login(ctx, key, "hw")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ClockOffset(); got != time.Hour {
			t.Fatalf("offset after login %v", got)
		}
		// Then the local clock jumps back another ten minutes (the session
		// must not time out on the server, so its clock stays): the beat is
		// refused, corrected and resent within the same beat.
		c.now = func() time.Time { return local.Add(-10 * time.Minute) }
		b := runLoop(t, s)
		e := b.beat(t)
		if e.Kind != EventOK || e.ClockOffset != time.Hour+10*time.Minute {
			t.Fatalf("beat after the local clock jumped: %+v", e)
		}
		if st, err := c.CheckKey(ctx, key); err != nil || !st.Valid {
			t.Fatalf("check-key with the corrected clock: %v", err)
		}

		// Without auto-correction every beat is a clock refusal: after
		// three the session ends with CLOCK_SKEW.
		c2, _ := New(srv.URL, app.Secret, WithClock(func() time.Time { return local }), WithAutoCorrectClock(false))
		if _, err := c2.CheckKey(ctx, key); !errors.As(err, new(*APIError)) || !err.(*APIError).ClockRefusal() {
			t.Fatalf("check-key with a wrong clock and no correction: %v", err)
		}
		s2, err := c.Login(ctx, app.GenerateKeys(1, "days", 30, 1)[0], "hw2")
		if err != nil {
			t.Fatal(err)
		}
		s2.c = c2
		b2 := runLoop(t, s2)
		for i := 0; i < 2; i++ {
			if e := b2.beat(t); e.Kind != EventUnanswered || e.Code != "CRYPTO_ERROR" || e.Unanswered != i+1 {
				t.Fatalf("beat %d without correction: %+v", i, e)
			}
		}
		if e := b2.beat(t); e.Kind != EventKill || e.Code != CodeClockSkew {
			t.Fatalf("third refused beat: %+v", e)
		}
		b2.ended(t, CodeClockSkew)
	})
}

// Trials: off → TRIAL_DISABLED; on → a key with a session; again → the same
// key, resumed.
func TestTrial(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		srv, app, c := setup(t, engine, nil)
		_, err := c.StartTrial(ctx, "hw-trial")
		apiErr(t, err, 403, "TRIAL_DISABLED", false)
		srv.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"trial_enabled": true}})
		tr, err := c.StartTrial(ctx, "hw-trial")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tr.Key, "TRIAL-") || tr.ExpiresAt == nil || tr.Session == nil || len(tr.ID) != 64 || tr.Resumed {
			t.Fatalf("trial %+v", tr)
		}
		if err := tr.Beat(ctx); err != nil {
			t.Fatal(err)
		}
		again, err := c.StartTrial(ctx, "hw-trial")
		if err != nil || again.Key != tr.Key || !again.Resumed {
			t.Fatalf("second trial %+v %v", again, err)
		}
	})
}

// Accounts: register with a key, sign in, beat, redeem a second key through
// the session, change the password (the session is revoked).
func TestAccounts(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		_, app, c := setup(t, engine, map[string]any{"accounts_enabled": true})
		keys := app.GenerateKeys(3, "days", 30, 1)
		acc, err := c.Register(ctx, RegisterRequest{Username: "alice", Password: "password-1", LicenseKey: keys[0]})
		if err != nil {
			t.Fatal(err)
		}
		if acc.User.Username != "alice" || acc.DaysAdded != 30 || acc.Lifetime {
			t.Fatalf("account %+v", acc)
		}
		_, err = c.Register(ctx, RegisterRequest{Username: "ALICE", Password: "other-password"})
		apiErr(t, err, 409, "USERNAME_EXISTS", false)

		_, err = c.AccountLogin(ctx, "alice", "wrong-password", "hw")
		apiErr(t, err, 401, "INVALID_CREDENTIALS", false)
		s, err := c.AccountLogin(ctx, "alice", "password-1", "hw")
		if err != nil {
			t.Fatal(err)
		}
		if s.User.Username != "alice" || s.LicenseKey != keys[0] || len(s.ID) != 64 {
			t.Fatalf("account session %+v", s)
		}
		if err := s.Beat(ctx); err != nil {
			t.Fatal(err)
		}
		red, err := c.Redeem(ctx, RedeemRequest{SessionID: s.ID, LicenseKey: keys[1]})
		if err != nil || red.DaysAdded != 30 || red.DaysRemaining == nil || *red.DaysRemaining != 60 || red.Mode != "stack" {
			t.Fatalf("redeem %+v %v", red, err)
		}
		if _, err := c.Login(ctx, keys[2], "elsewhere"); err != nil {
			t.Fatal(err)
		}
		_, err = c.Redeem(ctx, RedeemRequest{Username: "alice", Password: "password-1", LicenseKey: keys[2]})
		apiErr(t, err, 409, "KEY_IN_USE", false)
		if err := c.ChangePassword(ctx, "alice", "password-1", "password-2"); err != nil {
			t.Fatal(err)
		}
		if err := s.Beat(ctx); KillCode(err) != CodeSessionRevoked {
			t.Fatalf("beat after the password change: %v", err)
		}
		if _, err := c.AccountLogin(ctx, "alice", "password-2", "hw"); err != nil {
			t.Fatal(err)
		}
	})
}

// Self-service reset: the session gets HWID_RESET; a second reset within
// the cooldown is RATE_LIMITED with next_reset_at.
func TestResetHWID(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		srv, app, c := setup(t, engine, nil)
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		s, err := c.Login(ctx, key, "old-pc")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.ResetHWID(ctx, key, "")
		if err != nil || res.NextResetAt == nil || !res.NextResetAt.After(srv.Clock.Now()) {
			t.Fatalf("reset %+v %v", res, err)
		}
		if err := s.Beat(ctx); KillCode(err) != CodeHWIDReset {
			t.Fatalf("beat after reset: %v", err)
		}
		if _, err := c.Login(ctx, key, "new-pc"); err != nil {
			t.Fatal(err)
		}
		_, err = c.ResetHWID(ctx, key, "again")
		a := apiErr(t, err, 429, "RATE_LIMITED", false)
		if a.Fields["next_reset_at"] == nil {
			t.Fatalf("no next_reset_at: %v", a.Fields)
		}
		_, err = c.ResetHWID(ctx, "NOPE-NOPE", "x")
		apiErr(t, err, 404, "INVALID_KEY", false)
	})
}

// Content: info with social links, texts with a key's override, slides,
// social clicks.
func TestContent(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		srv, app, c := setup(t, engine, nil)
		key := app.GenerateKeys(1, "days", 30, 1)[0]
		srv.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Hello"})
		srv.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Hi VIP", "license_key": key})
		srv.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "News", "body": "b"})
		srv.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": app.ID, "platform": "discord", "url": "https://discord.example/x", "label": "Community"})

		info, err := c.Info(ctx)
		if err != nil || info.Name != "SDK test" || info.Version != "1.0.0" || info.MaintenanceMode || len(info.SocialLinks) != 1 {
			t.Fatalf("info %+v %v", info, err)
		}
		texts, err := c.Texts(ctx, "")
		if err != nil || texts["welcome"] != "Hello" {
			t.Fatalf("texts %v %v", texts, err)
		}
		texts, err = c.Texts(ctx, key)
		if err != nil || texts["welcome"] != "Hi VIP" {
			t.Fatalf("texts with key %v %v", texts, err)
		}
		if v, ok, err := c.Text(ctx, "", "welcome"); err != nil || !ok || v != "Hello" {
			t.Fatalf("text %q %v %v", v, ok, err)
		}
		if _, ok, err := c.Text(ctx, "", "nope"); err != nil || ok {
			t.Fatalf("missing text: %v %v", ok, err)
		}
		slides, err := c.Slides(ctx)
		if err != nil || len(slides) != 1 || slides[0].Title != "News" {
			t.Fatalf("slides %+v %v", slides, err)
		}
		if err := c.SocialClick(ctx, info.SocialLinks[0].ID); err != nil {
			t.Fatal(err)
		}
		r := srv.MustAdmin("GET", "/api/admin/social-links.php?app_id="+app.ID, nil)
		if n := r.Body["social_links"].([]any)[0].(map[string]any)["clicks"]; n != float64(1) {
			t.Fatalf("clicks %v", n)
		}
		err = c.SocialClick(ctx, 999999)
		apiErr(t, err, 200, "NOT_FOUND", true)
	})
}

// failingFile is an *os.File that fails its writes after limit bytes: a
// download interrupted halfway.
type failingFile struct {
	*os.File
	limit int64
}

func (f *failingFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		n := max(f.limit-off, 0)
		f.File.WriteAt(p[:n], off)
		return int(n), errors.New("disk unplugged")
	}
	return f.File.WriteAt(p, off)
}

// rangeRecorder records the Range headers the client sends.
type rangeRecorder struct {
	mu     sync.Mutex
	ranges []string
}

func (r *rangeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "download") {
		r.mu.Lock()
		r.ranges = append(r.ranges, req.Header.Get("Range"))
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Update check and download: interrupted halfway, resumed with Range,
// verified; corrupted bytes are rejected and the partial file deleted.
func TestUpdateDownload(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		rec := &rangeRecorder{}
		_, app, c := setup(t, engine, nil, WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}))
		artifact := bytes.Repeat([]byte("keyward-artifact-"), 20000) // 340 000 bytes
		app.Release("1.1.0", artifact, nil)

		if o, err := c.CheckUpdate(ctx, UpdateRequest{Version: "1.1.0"}); err != nil || o != nil {
			t.Fatalf("up to date: %+v %v", o, err)
		}
		_, err := c.CheckUpdate(ctx, UpdateRequest{Version: "not-semver"})
		apiErr(t, err, 200, "MISSING_FIELDS", true)
		offer, err := c.CheckUpdate(ctx, UpdateRequest{Version: "1.0.0", HWID: "hw", OS: "linux", Arch: "x64"})
		if err != nil || offer == nil {
			t.Fatalf("offer %+v %v", offer, err)
		}
		if offer.Version != "1.1.0" || offer.Size != int64(len(artifact)) || len(offer.SHA256) != 64 || !strings.Contains(offer.DownloadURL, "v=1.1.0") {
			t.Fatalf("offer %+v", offer)
		}

		dir := t.TempDir()
		dst := filepath.Join(dir, "app.bin")
		f, err := os.Create(dst + ".part")
		if err != nil {
			t.Fatal(err)
		}
		half := int64(len(artifact) / 2)
		err = c.Download(ctx, offer, &failingFile{File: f, limit: half}, 0)
		f.Close()
		if err == nil || !strings.Contains(err.Error(), "disk unplugged") {
			t.Fatalf("interrupted download: %v", err)
		}
		if st, _ := os.Stat(dst + ".part"); st.Size() != half {
			t.Fatalf("partial file has %d bytes, want %d", st.Size(), half)
		}
		if err := c.DownloadFile(ctx, offer, dst); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(dst)
		if !bytes.Equal(got, artifact) {
			t.Fatal("downloaded artifact differs")
		}
		if _, err := os.Stat(dst + ".part"); !os.IsNotExist(err) {
			t.Fatalf("partial file left behind: %v", err)
		}
		rec.mu.Lock()
		if len(rec.ranges) != 2 || rec.ranges[0] != "" || rec.ranges[1] != "bytes=170000-" {
			t.Fatalf("ranges sent %q", rec.ranges)
		}
		rec.mu.Unlock()

		// Corrupted bytes in the part already downloaded: the resumed file
		// does not match, it is deleted and the error says so.
		dst2 := filepath.Join(dir, "app2.bin")
		bad := append([]byte(nil), artifact[:half]...)
		bad[10] ^= 0xff
		os.WriteFile(dst2+".part", bad, 0o644)
		err = c.DownloadFile(ctx, offer, dst2)
		if !errors.Is(err, ErrChecksum) {
			t.Fatalf("corrupted download: %v", err)
		}
		for _, p := range []string{dst2, dst2 + ".part"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("%s exists after a checksum mismatch", p)
			}
		}
		// A fresh attempt then succeeds from zero.
		if err := c.DownloadFile(ctx, offer, dst2); err != nil {
			t.Fatal(err)
		}
		// An offer whose sha256 is wrong is refused.
		wrong := *offer
		wrong.SHA256 = strings.Repeat("0", 64)
		err = c.DownloadFile(ctx, &wrong, filepath.Join(dir, "app3.bin"))
		if !errors.Is(err, ErrChecksum) {
			t.Fatalf("wrong sha256: %v", err)
		}
		// An unknown version is a 404 NOT_FOUND.
		gone := *offer
		gone.DownloadURL = "api/update/download.php?v=9.9.9"
		err = c.DownloadFile(ctx, &gone, filepath.Join(dir, "app4.bin"))
		apiErr(t, err, 404, "NOT_FOUND", false)
	})
}
