package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// A session whose client stopped beating is reaped after the session timeout:
// it leaves the live list, its seat is free for another device's session,
// and a late heartbeat answers SESSION_EXPIRED.
func TestSilentSessionIsReaped(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Reaper")
		key := app.GenerateKeys(1, "days", 30, 2)[0]
		silent := app.Login(key, "pc-silent")
		alive := app.Login(key, "pc-alive")

		for range 4 { // 4 × 50 s: the live client beats, the silent one does not
			s.Clock.Advance(50 * time.Second)
			if r := app.Heartbeat(alive, key); r.Body["success"] != true {
				t.Fatalf("live heartbeat: %v", r)
			}
		}
		n, err := s.License.ReapSessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("ReapSessions ended %d sessions, want 1 (the silent one)", n)
		}
		list := s.MustAdmin("GET", "/api/admin/sessions.php?app_id="+app.ID, nil).Body["sessions"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["hwid"] != "pc-alive" {
			t.Errorf("live sessions after reaping = %v, want only pc-alive", list)
		}
		kwtest.ExpectCode(t, app.Heartbeat(silent, key), 200, "SESSION_EXPIRED")
		if r := app.Heartbeat(alive, key); r.Body["success"] != true {
			t.Errorf("live session after reaping: %v", r)
		}
	})
}

// Buffered heartbeat times reach the database on shutdown, so a restart does
// not make live sessions look older than they are.
func TestCloseFlushesHeartbeats(t *testing.T) {
	clock := kwtest.NewClock()
	s := kwtest.Start(t, kwtest.Options{Clock: clock, FlushEvery: time.Hour})
	app := s.CreateApp("Flush")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	sid := app.Login(key, "pc")
	clock.Advance(100 * time.Second)
	if r := app.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("heartbeat: %v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Same data directory, 100 s later: only 100 s of silence since the beat,
	// so the session must still be alive (it would be 200 s without the flush).
	clock.Advance(100 * time.Second)
	s2 := kwtest.Start(t, kwtest.Options{Clock: clock, DataDir: s.DataDir})
	if r := s2.NewApp(app.ID, app.Secret).Heartbeat(sid, key); r.Body["success"] != true {
		t.Errorf("heartbeat after restart: %v, want success (last beat flushed at shutdown)", r)
	}
}
