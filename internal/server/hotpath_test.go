package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// An app change made through this process applies to the very next request
// (the app cache is cleared), and one made through another process sharing
// the database applies once the cache's 1 s lifetime has passed: settings,
// a regenerated secret and a secret set with set-secret.
func TestAppChangesReachTheHotPath(t *testing.T) {
	pairs := map[string]func(*testing.T) (*kwtest.Server, *kwtest.Server){"sqlite": startSQLitePair}
	if len(kwtest.Engines()) > 1 {
		pairs["postgres"] = startPostgresPair
	}
	for name, start := range pairs {
		t.Run(name, func(t *testing.T) {
			a, b := start(t)
			appA := a.CreateApp("Cached")
			appB := b.NewApp(appA.ID, appA.Secret)
			keys := appA.GenerateKeys(2, "lifetime", 0, 1)
			sidA := appA.Login(keys[0], "pc-a")
			sidB := appB.Login(keys[1], "pc-b") // B has now cached the app

			a.MustAdmin("PUT", "/api/admin/apps.php?app_id="+appA.ID, map[string]any{"settings": map[string]any{"maintenance": true}})
			kwtest.ExpectCode(t, appA.Heartbeat(sidA, keys[0]), 200, "MAINTENANCE")

			a.Clock.Advance(1100 * time.Millisecond)
			kwtest.ExpectCode(t, appB.Heartbeat(sidB, keys[1]), 200, "MAINTENANCE")

			// A regenerated secret is refused by the other process after the same bound.
			old := appA.Secret
			a.MustAdmin("PUT", "/api/admin/apps.php?app_id="+appA.ID, map[string]any{"settings": map[string]any{"maintenance": false}})
			regen := a.MustAdmin("POST", "/api/admin/apps.php?action=regenerate-secret&app_id="+appA.ID, nil).Obj("app")["secret"].(string)
			a.Clock.Advance(1100 * time.Millisecond)
			for _, s := range []*kwtest.Server{a, b} {
				r := s.NewApp(appA.ID, old).Env("/api/auth/login.php", map[string]any{"license_key": keys[0], "hwid": "pc-a"})
				kwtest.ExpectCode(t, r, 401, "INVALID_APP")
				s.NewApp(appA.ID, regen).Login(keys[0], "pc-a") // both processes now cache the app under regen
			}

			// So is a secret replaced with set-secret, and the secret set
			// serves both processes, exactly as given.
			adopted := "C0FFEE" + strings.Repeat("0123456789abcdef", 3) + "0123456789"
			a.MustAdmin("POST", "/api/admin/apps.php?action=set-secret&app_id="+appA.ID, map[string]any{"secret": adopted})
			a.Clock.Advance(1100 * time.Millisecond)
			for _, s := range []*kwtest.Server{a, b} {
				r := s.NewApp(appA.ID, regen).Env("/api/auth/login.php", map[string]any{"license_key": keys[0], "hwid": "pc-a"})
				kwtest.ExpectCode(t, r, 401, "INVALID_APP")
				s.NewApp(appA.ID, adopted).Login(keys[0], "pc-a")
			}
		})
	}
}

// A heartbeat writes the session's last-seen time unless the stored one is
// less than a eighteenth of the session timeout old (10 s of the default
// 180 s): clients beating at the default 30 s interval have every beat
// recorded; a client beating faster costs one write per 10 s.
func TestHeartbeatTouchesAreCoalesced(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, FlushEvery: time.Hour})
		app := s.CreateApp("Touch")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		login := s.Clock.Now()
		sid := app.Login(key, "pc")

		lastSeen := func() time.Time {
			t.Helper()
			if err := s.License.FlushTouches(context.Background()); err != nil {
				t.Fatal(err)
			}
			list := s.MustAdmin("GET", "/api/admin/sessions.php?app_id="+app.ID, nil).Body["sessions"].([]any)
			if len(list) != 1 {
				t.Fatalf("%d live sessions, want 1", len(list))
			}
			ts, err := time.Parse(time.RFC3339, list[0].(map[string]any)["last_seen_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		beat := func() {
			t.Helper()
			if r := app.Heartbeat(sid, key); r.Body["success"] != true {
				t.Fatalf("heartbeat: %v", r)
			}
		}

		s.Clock.Advance(5 * time.Second)
		beat()
		if got := lastSeen(); !got.Equal(login) {
			t.Errorf("after a beat 5 s after login: last_seen_at %v, want the login time %v", got, login)
		}
		s.Clock.Advance(6 * time.Second)
		beat()
		if got, want := lastSeen(), login.Add(11*time.Second); !got.Equal(want) {
			t.Errorf("after a beat 11 s after login: last_seen_at %v, want %v", got, want)
		}
		s.Clock.Advance(30 * time.Second)
		beat()
		if got, want := lastSeen(), login.Add(41*time.Second); !got.Equal(want) {
			t.Errorf("after a beat at the 30 s interval: last_seen_at %v, want %v", got, want)
		}
	})
}
