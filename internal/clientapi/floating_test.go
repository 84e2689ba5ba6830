package clientapi_test

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Floating seats (issue 23, item 4): a floating key binds no device, and its
// max_devices counts the live sessions on any machines.

// seatHWIDs are the machines holding a seat of key, by the key detail.
func seatHWIDs(t *testing.T, app *kwtest.App, key string) []string {
	t.Helper()
	d := app.KeyView(t, key)
	var out []string
	for _, s := range d["seat_sessions"].([]any) {
		out = append(out, s.(map[string]any)["hwid"].(string))
	}
	if n := int(d["seats_in_use"].(float64)); n != len(out) {
		t.Fatalf("seats_in_use %d, but %d seats listed", n, len(out))
	}
	return out
}

// raceLogins logs n machines in at once, machine i through apps[i%len(apps)],
// and returns the replies by machine.
func raceLogins(apps []*kwtest.App, key string, n int) []*kwtest.Reply {
	out := make([]*kwtest.Reply, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = apps[i%len(apps)].LoginReply(key, fmt.Sprintf("machine-%02d", i))
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// countSeats checks that exactly seats of the replies succeeded and the
// rest are the all-seats-held refusal.
func countSeats(t *testing.T, replies []*kwtest.Reply, seats int) {
	t.Helper()
	ok := 0
	for _, r := range replies {
		if r.Body["success"] == true {
			ok++
			continue
		}
		r.SeatsFull(t, seats)
	}
	if ok != seats {
		t.Fatalf("%d of %d concurrent logins succeeded, want exactly %d", ok, len(replies), seats)
	}
}

func TestFloatingSeatsConcurrentLogins(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Floating")
		key := app.FloatingKey(t, 3)

		countSeats(t, raceLogins([]*kwtest.App{app}, key, 12), 3)

		if held := seatHWIDs(t, app, key); len(held) != 3 {
			t.Fatalf("seats held %v, want 3", held)
		}
		d := app.KeyView(t, key)
		if devs := d["devices"].([]any); len(devs) != 0 {
			t.Fatalf("a floating key bound devices: %v", devs)
		}
		if d["status"] != "active" || d["floating"] != true {
			t.Fatalf("key after logins: %v", d)
		}
		// One seat.denied per refused login, naming key, app, machine and seats.
		evs := s.EventsOf(app.ID, "seat.denied")
		if len(evs) != 9 {
			t.Fatalf("%d seat.denied events, want 9", len(evs))
		}
		for _, e := range evs {
			if e["app_id"] != app.ID || e["license_key"] != key || e["key_id"] == nil || !strings.HasPrefix(e["hwid"].(string), "machine-") ||
				e["seats_in_use"] != float64(3) || e["max_devices"] != float64(3) {
				t.Fatalf("seat.denied data %v", e)
			}
		}
		rec := httptest.NewRecorder()
		s.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), "keyward_seat_denials_total 9\n") {
			t.Fatalf("metrics lack keyward_seat_denials_total 9")
		}
	})
}

func TestFloatingSeatsFree(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Seats")
		key := app.FloatingKey(t, 2)
		sidA := app.Login(key, "pc-a")
		sidB := app.Login(key, "pc-b")
		app.LoginReply(key, "pc-c").SeatsFull(t, 2)

		t.Run("check-key takes no seat", func(t *testing.T) {
			r := app.Env("/api/auth/check-key.php", map[string]any{"license_key": key})
			if r.Body["success"] != true || r.Body["valid"] != true {
				t.Fatalf("check-key: %v", r)
			}
			if held := seatHWIDs(t, app, key); len(held) != 2 {
				t.Fatalf("seats after check-key %v", held)
			}
		})

		t.Run("a heartbeat keeps a floating session as today", func(t *testing.T) {
			if r := app.Heartbeat(sidA, key); r.Body["success"] != true {
				t.Fatalf("heartbeat: %v", r)
			}
		})

		t.Run("the same machine logging in again reuses its seat", func(t *testing.T) {
			sidA2 := app.Login(key, "pc-a") // a crashed app restarting
			kwtest.ExpectCode(t, app.Heartbeat(sidA, key), 200, "SESSION_EXPIRED")
			if r := app.Heartbeat(sidA2, key); r.Body["success"] != true {
				t.Fatalf("heartbeat of the new session: %v", r)
			}
			if held := seatHWIDs(t, app, key); len(held) != 2 {
				t.Fatalf("seats after a re-login %v, want 2", held)
			}
			sidA = sidA2
		})

		t.Run("logout frees a seat", func(t *testing.T) {
			if r := app.Env("/api/auth/logout.php", map[string]any{"session_id": sidB, "license_key": key}); r.Body["success"] != true {
				t.Fatalf("logout: %v", r)
			}
			sidB = app.Login(key, "pc-c")
			app.LoginReply(key, "pc-d").SeatsFull(t, 2)
		})

		t.Run("revoking a session frees its seat", func(t *testing.T) {
			var id string
			for _, ss := range app.KeyView(t, key)["seat_sessions"].([]any) {
				if m := ss.(map[string]any); m["hwid"] == "pc-c" {
					id = m["id"].(string)
				}
			}
			s.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": id})
			kwtest.ExpectCode(t, app.Heartbeat(sidB, key), 200, "SESSION_REVOKED")
			sidB = app.Login(key, "pc-d")
		})

		t.Run("a ban kills every seat, and they are free after the unban", func(t *testing.T) {
			if r := app.KeyAction("ban", key, nil); r.Body["success"] != true {
				t.Fatalf("ban: %v", r)
			}
			kwtest.ExpectCode(t, app.Heartbeat(sidA, key), 200, "BANNED")
			kwtest.ExpectCode(t, app.Heartbeat(sidB, key), 200, "BANNED")
			if held := seatHWIDs(t, app, key); len(held) != 0 {
				t.Fatalf("seats after a ban %v", held)
			}
			app.KeyAction("unban", key, nil)
			sidA = app.Login(key, "pc-e")
			sidB = app.Login(key, "pc-f")
		})

		t.Run("a crashed client's seat frees after the session timeout", func(t *testing.T) {
			app.LoginReply(key, "pc-g").SeatsFull(t, 2)
			s.Clock.Advance(100 * time.Second)
			if r := app.Heartbeat(sidA, key); r.Body["success"] != true { // pc-e runs; pc-f crashed
				t.Fatalf("heartbeat: %v", r)
			}
			s.Clock.Advance(79 * time.Second) // pc-f silent 179 s: still holds its seat
			app.LoginReply(key, "pc-g").SeatsFull(t, 2)
			s.Clock.Advance(2 * time.Second) // 181 s: stale, though not reaped yet
			app.Login(key, "pc-g")
			kwtest.ExpectCode(t, app.Heartbeat(sidB, key), 200, "SESSION_EXPIRED")
			if r := app.Heartbeat(sidA, key); r.Body["success"] != true {
				t.Fatalf("the live seat was taken: %v", r)
			}
			held := seatHWIDs(t, app, key)
			slices.Sort(held)
			if len(held) != 2 || held[0] != "pc-e" || held[1] != "pc-g" {
				t.Fatalf("seats %v, want [pc-e pc-g]", held)
			}
		})
	})
}

// Keys switch to floating and back with PUT keys.php; bad values are a 400.
func TestFloatingKeyEdit(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Edit")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		if d := app.KeyView(t, key); d["floating"] != false {
			t.Fatalf("new key floating = %v", d["floating"])
		}
		app.Login(key, "pc-a")
		kwtest.ExpectCode(t, app.LoginReply(key, "pc-b"), 200, "HWID_MISMATCH")

		r := s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key, "floating": true, "max_devices": 2})
		if k := r.Obj("key"); k["floating"] != true || k["max_devices"] != float64(2) {
			t.Fatalf("after edit: %v", k)
		}
		app.Login(key, "pc-b") // no device binding any more: a second seat
		app.LoginReply(key, "pc-c").SeatsFull(t, 2)

		// A PUT without floating leaves it alone.
		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key, "note": "n"})
		if d := app.KeyView(t, key); d["floating"] != true {
			t.Fatalf("floating lost by an edit without it")
		}
		bad := s.Admin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key, "floating": "yes"})
		kwtest.ExpectCode(t, bad, 400, "MISSING_FIELDS")
		bad = s.Admin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "floating": 1})
		kwtest.ExpectCode(t, bad, 400, "MISSING_FIELDS")

		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": key, "floating": false})
		if d := app.KeyView(t, key); d["floating"] != false {
			t.Fatalf("floating not switched off")
		}
	})
}

// The key export's floating column brings a floating key into another app
// as floating, and a merge import switches it.
func TestFloatingKeyExportImport(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		src := s.CreateApp("Source")
		fk := src.FloatingKey(t, 4)
		plain := src.GenerateKeys(1, "lifetime", 0, 2)[0]
		src.Login(fk, "pc-1")
		dst := s.CreateApp("Destination")
		if r := s.ImportCSV(dst.ID, "&dry_run=false", s.ExportCSV(t, src.ID)); r.Status != 200 {
			t.Fatalf("import: %s", r)
		}
		if d := dst.KeyView(t, fk); d["floating"] != true || d["max_devices"] != float64(4) || len(d["devices"].([]any)) != 0 {
			t.Fatalf("imported floating key: %v", d)
		}
		if d := dst.KeyView(t, plain); d["floating"] != false {
			t.Fatalf("imported plain key: %v", d)
		}
		// It behaves as one: four machines, not one device.
		for i := range 4 {
			dst.Login(fk, fmt.Sprintf("m-%d", i))
		}
		dst.LoginReply(fk, "m-5").SeatsFull(t, 4)

		r := s.ImportCSV(dst.ID, "&merge=true&dry_run=false", []byte("key,floating\n"+plain+",yes\n"+fk+",false\n"))
		if r.Status != 200 {
			t.Fatalf("merge: %s", r)
		}
		if dst.KeyView(t, plain)["floating"] != true || dst.KeyView(t, fk)["floating"] != false {
			t.Fatalf("merge did not switch floating")
		}
	})
}
