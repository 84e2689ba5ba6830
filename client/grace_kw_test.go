package client

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/signing"
)

// graceServer is a signing keyward with an app whose offline trust is on
// (TTL ttl hours; off when ttl is 0), behind a real HTTP reverse proxy the
// test can turn into a 503 answerer. The client's clock is its own, started
// at the server's time, so tests can move it apart.
type graceServer struct {
	s     *kwtest.Server
	app   *kwtest.App
	pub   []byte
	proxy *httptest.Server
	down  atomic.Bool // the proxy answers 503 (unsigned, as a real proxy would)
	clock *kwtest.Clock
}

func startGrace(t *testing.T, engine string, ttl int) *graceServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "signing")
	key, err := signing.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &graceServer{pub: key.PublicPEM, clock: kwtest.NewClock()}
	g.s = kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = dir }})
	g.app = g.s.CreateApp("Grace")
	settings := map[string]any{"heartbeat_interval": 5}
	if ttl > 0 {
		settings["offline_enabled"], settings["offline_ttl_hours"] = true, ttl
	}
	g.s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+g.app.ID, map[string]any{"settings": settings})
	target, _ := url.Parse(g.s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	g.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(g.proxy.Close)
	return g
}

// client returns a client through the proxy on the test's own clock.
func (g *graceServer) client(t *testing.T, pinned bool, opts ...Option) *Client {
	t.Helper()
	return g.clientAt(t, g.proxy.URL, pinned, opts...)
}

// clientAt is client with another base URL (the server itself).
func (g *graceServer) clientAt(t *testing.T, baseURL string, pinned bool, opts ...Option) *Client {
	t.Helper()
	base := []Option{WithClock(g.clock.Now), WithHTTPClient(&http.Client{Timeout: 5 * time.Second})}
	if pinned {
		base = append(base, WithPinnedKeys(g.pub))
	}
	c, err := New(baseURL, g.app.Secret, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// login logs lk in and returns the session with its loop driven by hand.
func (g *graceServer) login(t *testing.T, c *Client, lk string) (*Session, *beats) {
	t.Helper()
	sess, err := c.Login(context.Background(), lk, "hw-1")
	if err != nil {
		t.Fatal(err)
	}
	return sess, runLoop(t, sess)
}

// The server goes away (the kwtest server is stopped): beats fail with
// network errors, the budget runs out, and the session goes on in grace
// until the signed trust_until of the last reply, then ends NETWORK_LOST
// wrapping ErrGraceExpired. Verdict agrees at each step: Allowed while the
// server answers, Grace within trust_until, Refused after it.
func TestGraceServerStopped(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		g := startGrace(t, engine, 2)
		lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
		c := g.clientAt(t, g.s.URL, true) // no proxy: connections are refused once it stops
		sess, b := g.login(t, c, lk)
		want := g.s.Clock.Now().Add(2 * time.Hour).Truncate(time.Second)
		if tr, ok := c.Trust(); !ok || !tr.Until.Equal(want) || tr.LicenseKey != lk {
			t.Fatalf("trust after login: %+v %v, want until %s", tr, ok, want)
		}
		if v := sess.Verdict(nil); v.Status != Allowed || !v.Until.Equal(want) {
			t.Fatalf("verdict of a success: %+v", v)
		}
		g.s.Clock.Advance(30 * time.Second)
		g.clock.Advance(30 * time.Second)
		if e := b.beat(t); e.Kind != EventOK {
			t.Fatalf("beat: %+v", e)
		}
		want = want.Add(30 * time.Second)
		if tr, _ := c.Trust(); !tr.Until.Equal(want) {
			t.Fatalf("a beat moves trust_until to %s: %+v", want, tr)
		}

		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		g.s.Close(sctx) // the licence server is gone
		cancel()
		for i := 1; i < MaxUnanswered; i++ {
			e := b.beat(t)
			var api *APIError
			var sec *SecurityError
			if e.Kind != EventUnanswered || e.Err == nil || errors.As(e.Err, &api) || errors.As(e.Err, &sec) {
				t.Fatalf("beat %d with the server down: %+v, want a network error", i, e)
			}
		}
		e := b.beat(t)
		if e.Kind != EventGrace || !e.GraceUntil.Equal(want) || e.Err == nil {
			t.Fatalf("budget spent, trust held: %+v, want grace until %s", e, want)
		}
		_, err := c.CheckKey(ctx, lk)
		if v := c.Verdict(lk, err); v.Status != Grace || !v.Until.Equal(want) || v.Err == nil {
			t.Fatalf("verdict with the server down: %+v", v)
		}
		if v := c.Verdict("OTHER-KEY", err); v.Status != Refused || !errors.Is(v.Err, ErrNoTrust) || v.Code != CodeNetworkLost {
			t.Fatalf("another key has no trust: %+v", v)
		}
		g.clock.Set(want.Add(-time.Second))
		if e := b.beat(t); e.Kind != EventGrace {
			t.Fatalf("a second before trust_until: %+v", e)
		}
		g.clock.Set(want)
		if v := c.Verdict(lk, err); v.Status != Refused || v.Code != CodeNetworkLost || !errors.Is(v.Err, ErrGraceExpired) {
			t.Fatalf("verdict at trust_until: %+v", v)
		}
		if e := b.beat(t); e.Kind != EventKill || e.Code != CodeNetworkLost || !errors.Is(e.Err, ErrGraceExpired) {
			t.Fatalf("beat at trust_until: %+v", e)
		}
		b.ended(t, CodeNetworkLost)
	})
}

// A 5xx from a real HTTP server in front (unsigned, as a proxy's would be)
// is an outage: grace. When the server answers again with a kill code (the
// key was banned meanwhile), the session ends at once with it, the trust is
// dropped, and Verdict says Refused BANNED — no grace for a refusal.
func TestGraceProxy5xxThenKill(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		g := startGrace(t, engine, 168)
		lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
		c := g.client(t, true)
		sess, b := g.login(t, c, lk)
		g.down.Store(true)
		for i := 1; i <= MaxUnanswered+2; i++ {
			e := b.beat(t)
			if i < MaxUnanswered && e.Kind != EventUnanswered || i >= MaxUnanswered && e.Kind != EventGrace {
				t.Fatalf("beat %d behind a 503: %+v", i, e)
			}
			var sec *SecurityError
			if !errors.As(e.Err, &sec) || !errors.Is(e.Err, ErrUnsigned) {
				t.Fatalf("beat %d: the 503 was not refused as unsigned: %v", i, e.Err)
			}
		}
		g.app.KeyAction("ban", lk, nil)
		g.down.Store(false)
		e := b.beat(t)
		if e.Kind != EventKill || e.Code != CodeBanned {
			t.Fatalf("first beat after the outage, key banned: %+v", e)
		}
		b.ended(t, CodeBanned)
		if _, ok := c.Trust(); ok {
			t.Fatal("trust kept after a kill code")
		}
		if v := sess.Verdict(e.Err); v.Status != Refused || v.Code != CodeBanned {
			t.Fatalf("verdict of the kill: %+v", v)
		}
		if v := sess.Verdict(&KillError{Code: CodeBanned}); v.Status != Refused || v.Code != CodeBanned {
			t.Fatalf("verdict of Run's KillError: %+v", v)
		}
		// And the outage again: no trust left, so no grace.
		g.down.Store(true)
		_, err := c.CheckKey(context.Background(), lk)
		if v := c.Verdict(lk, err); v.Status != Refused || !errors.Is(v.Err, ErrNoTrust) {
			t.Fatalf("verdict after the refusal, server down: %+v", v)
		}
	})
}

// A heartbeat of a banned key is refused on the spot: the session ends at
// the first beat, with trust held and the server up, and nothing of the
// grace applies.
func TestGraceBannedHeartbeatRefusedAtOnce(t *testing.T) {
	g := startGrace(t, "sqlite", 168)
	lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
	c := g.client(t, true)
	_, b := g.login(t, c, lk)
	if _, ok := c.Trust(); !ok {
		t.Fatal("no trust after a signed login")
	}
	g.app.KeyAction("ban", lk, nil)
	if e := b.beat(t); e.Kind != EventKill || e.Code != CodeBanned || e.Unanswered != 0 {
		t.Fatalf("banned key's beat: %+v", e)
	}
	b.ended(t, CodeBanned)
	_, err := c.Login(context.Background(), lk, "hw-1")
	if v := c.Verdict(lk, err); v.Status != Refused || v.Code != CodeBanned {
		t.Fatalf("login of the banned key: %+v", v)
	}
}

// A local clock turned back behind the last signed server time (by more
// than RollbackTolerance) refuses the grace and says so: the loop ends with
// CLOCK_ROLLBACK wrapping ErrClockRollback, and Verdict agrees. Within the
// tolerance it is no rollback.
func TestGraceClockRollback(t *testing.T) {
	g := startGrace(t, "sqlite", 168)
	lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
	c := g.client(t, true)
	_, b := g.login(t, c, lk)
	g.down.Store(true)
	for i := 1; i < MaxUnanswered; i++ {
		b.beat(t)
	}
	g.clock.Advance(-RollbackTolerance + time.Second)
	if e := b.beat(t); e.Kind != EventGrace {
		t.Fatalf("clock within the tolerance: %+v", e)
	}
	g.clock.Advance(-time.Hour)
	_, err := c.CheckKey(context.Background(), lk)
	v := c.Verdict(lk, err)
	if v.Status != Refused || v.Code != CodeClockRollback || !errors.Is(v.Err, ErrClockRollback) {
		t.Fatalf("verdict with the clock turned back: %+v", v)
	}
	if e := b.beat(t); e.Kind != EventKill || e.Code != CodeClockRollback || !errors.Is(e.Err, ErrClockRollback) {
		t.Fatalf("beat with the clock turned back: %+v", e)
	}
	b.ended(t, CodeClockRollback)
}

// The latest time seen in grace is a floor too: going forward in grace and
// then back (still after the last signed server time) is a rollback.
func TestGraceClockRollbackBehindSeen(t *testing.T) {
	g := startGrace(t, "sqlite", 168)
	lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
	c := g.client(t, true)
	if _, err := c.Login(context.Background(), lk, "hw-1"); err != nil {
		t.Fatal(err)
	}
	g.down.Store(true)
	_, err := c.CheckKey(context.Background(), lk)
	g.clock.Advance(48 * time.Hour)
	if v := c.Verdict(lk, err); v.Status != Grace {
		t.Fatalf("two days into the outage: %+v", v)
	}
	g.clock.Advance(-47 * time.Hour)
	if v := c.Verdict(lk, err); v.Status != Refused || !errors.Is(v.Err, ErrClockRollback) {
		t.Fatalf("back a day after two: %+v", v)
	}
}

// Unsigned replies give no grace: a client that pins no key (the server
// signs nothing for it, so no trust_until reaches it) ends NETWORK_LOST
// when the budget runs out, wrapping nothing of the grace; and with offline
// trust off, signed replies carry no trust_until either.
func TestGraceNeedsSignedTrust(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ttl    int
		pinned bool
	}{{"unpinned", 168, false}, {"offline off", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGrace(t, "sqlite", tc.ttl)
			lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
			c := g.client(t, tc.pinned)
			_, b := g.login(t, c, lk)
			if _, ok := c.Trust(); ok {
				t.Fatal("trust without a signed trust_until")
			}
			g.down.Store(true)
			for i := 1; i < MaxUnanswered; i++ {
				b.beat(t)
			}
			if e := b.beat(t); e.Kind != EventKill || e.Code != CodeNetworkLost {
				t.Fatalf("budget spent without trust: %+v", e)
			}
			b.ended(t, CodeNetworkLost)
			_, err := c.CheckKey(context.Background(), lk)
			if v := c.Verdict(lk, err); v.Status != Refused || !errors.Is(v.Err, ErrNoTrust) {
				t.Fatalf("verdict: %+v", v)
			}
		})
	}
}

// Trust survives a restart through a FileStore: an app started while the
// server is down runs within the grace its last run had. A stored record
// that was edited gives nothing; a refusal clears the file.
func TestGraceStoreAcrossRestart(t *testing.T) {
	g := startGrace(t, "sqlite", 24)
	lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
	path := filepath.Join(t.TempDir(), "trust.json")
	c := g.client(t, true, WithStore(FileStore(path)))
	if _, err := c.Login(context.Background(), lk, "hw-1"); err != nil {
		t.Fatal(err)
	}
	want, _ := c.Trust()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust file: %v %v", fi, err)
	}

	g.down.Store(true)
	g.clock.Advance(3 * time.Hour)
	restarted := g.client(t, true, WithStore(FileStore(path)))
	if tr, ok := restarted.Trust(); !ok || !tr.Until.Equal(want.Until) || tr.LicenseKey != lk {
		t.Fatalf("trust after a restart: %+v %v, want %+v", tr, ok, want)
	}
	_, err := restarted.Login(context.Background(), lk, "hw-1")
	if v := restarted.Verdict(lk, err); v.Status != Grace || !v.Until.Equal(want.Until) {
		t.Fatalf("login during the outage after a restart: %+v", v)
	}
	// Another pinned key, or no pin: the record is not trusted.
	other, _ := signing.Generate()
	if _, ok := g.client(t, false, WithPinnedKeys(other.PublicPEM), WithStore(FileStore(path))).Trust(); ok {
		t.Fatal("a record adopted under another pinned key")
	}
	if _, ok := g.client(t, false, WithStore(FileStore(path))).Trust(); ok {
		t.Fatal("a record adopted without pinned keys")
	}
	// Edited: one byte of the signed reply changed.
	raw, _ := os.ReadFile(path)
	for i := len(raw) / 2; i < len(raw); i++ {
		if raw[i] >= 'A' && raw[i] <= 'Y' {
			raw[i]++
			break
		}
	}
	edited := filepath.Join(t.TempDir(), "edited.json")
	os.WriteFile(edited, raw, 0o600)
	if _, ok := g.client(t, true, WithStore(FileStore(edited))).Trust(); ok {
		t.Fatal("an edited record was adopted")
	}

	// Back online: a refusal takes the trust away, the file too.
	g.down.Store(false)
	g.s.Clock.Set(g.clock.Now())
	g.app.KeyAction("ban", lk, nil)
	_, err = restarted.CheckKey(context.Background(), lk)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := restarted.Trust(); ok {
		t.Fatal("trust kept after check-key said the key is not valid")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("trust file after the refusal: %v", err)
	}
}

// An outage longer than the session timeout: the session expired on the
// server meanwhile, so the first answer after the grace is SESSION_EXPIRED;
// the loop signs in again with the same key and device (EventRelogin, a new
// Session.ID) and beats on. Had the key been banned, that login's refusal
// ends the session with BANNED.
func TestGraceReloginAfterLongOutage(t *testing.T) {
	for _, banned := range []bool{false, true} {
		g := startGrace(t, "sqlite", 168)
		lk := g.app.GenerateKeys(1, "lifetime", 0, 1)[0]
		c := g.client(t, true)
		sess, b := g.login(t, c, lk)
		old := sess.ID
		g.down.Store(true)
		for i := 1; i <= MaxUnanswered; i++ {
			b.beat(t)
		}
		g.s.Clock.Advance(10 * time.Minute) // past the 180 s session timeout
		g.clock.Advance(10 * time.Minute)
		if e := b.beat(t); e.Kind != EventGrace {
			t.Fatalf("ten minutes into the outage: %+v", e)
		}
		if banned {
			g.app.KeyAction("ban", lk, nil)
		}
		g.down.Store(false)
		e := b.beat(t)
		if banned {
			if e.Kind != EventKill || e.Code != CodeBanned {
				t.Fatalf("back online, key banned: %+v", e)
			}
			b.ended(t, CodeBanned)
			continue
		}
		if e.Kind != EventRelogin || e.Code != CodeSessionExpired || sess.ID == old || sess.ID == "" {
			t.Fatalf("back online after the session timed out: %+v (id %s, was %s)", e, sess.ID, old)
		}
		if e := b.beat(t); e.Kind != EventOK {
			t.Fatalf("beat on the new session: %+v", e)
		}
		if tr, ok := c.Trust(); !ok || !tr.Until.Equal(g.s.Clock.Now().Add(168*time.Hour).Truncate(time.Second)) {
			t.Fatalf("trust after the relogin: %+v %v", tr, ok)
		}
	}
}
