package clientapi_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// The expiry sweeps on the injected clock: key_expiring once per key and
// window (7 days, then 1 day), again after the expiry moves; key_expired
// once, the key shown expired and its session killed with EXPIRED. Lifetime
// and unused keys are left alone.
func TestExpirySweeps(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Expiry")
		days := a.GenerateKeys(1, "days", 10, 1)[0]
		life := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		a.GenerateKeys(1, "days", 1, 1) // never activated: no expiry yet
		sid := a.Login(days, "pc-1")
		a.Login(life, "pc-2")
		windows := []time.Duration{24 * time.Hour, 168 * time.Hour}
		warn := func(want int) {
			t.Helper()
			n, err := s.License.WarnExpiring(t.Context(), windows)
			if err != nil || n != want {
				t.Fatalf("WarnExpiring = %d, %v; want %d", n, err, want)
			}
		}
		expire := func(want int) {
			t.Helper()
			n, err := s.License.ExpireKeys(t.Context())
			if err != nil || n != want {
				t.Fatalf("ExpireKeys = %d, %v; want %d", n, err, want)
			}
		}

		warn(0) // 10 days left: outside both windows
		expire(0)
		s.Clock.Advance(4 * 24 * time.Hour) // 6 days left
		warn(1)
		warn(0)
		evs := s.EventsOf(a.ID, "key_expiring")
		if len(evs) != 1 || evs[0]["license_key"] != days || evs[0]["window"] != "168h0m0s" || evs[0]["days_left"] != float64(6) {
			t.Fatalf("key_expiring events %v", evs)
		}
		s.Clock.Advance(5*24*time.Hour + time.Hour) // 23 h left: the 1-day window
		warn(1)
		warn(0)
		if evs := s.EventsOf(a.ID, "key_expiring"); len(evs) != 2 || evs[1]["window"] != "24h0m0s" || evs[1]["days_left"] != float64(1) {
			t.Fatalf("key_expiring events %v", evs)
		}

		// Moving the expiry (10 more days) starts the notices over.
		s.MustAdmin("POST", "/api/admin/keys.php?action=extend", map[string]any{"app_id": a.ID, "license_key": days, "days": 10})
		s.Clock.Advance(4 * 24 * time.Hour) // ~6 days left of the new expiry
		warn(1)

		// A live session 30 s before expiry; the sweep a minute later kills it.
		exp := kwtest.WireTime(t, "expires_at", a.KeyView(t, days)["expires_at"])
		s.Clock.Set(exp.Add(-30 * time.Second))
		sid = a.Login(days, "pc-1")
		a.BeatOK(t, sid, days)
		s.Clock.Advance(time.Minute)
		expire(1)
		expire(0)
		if st := a.KeyView(t, days)["status"]; st != "expired" {
			t.Fatalf("status after the sweep = %v", st)
		}
		if st := a.KeyView(t, life)["status"]; st != "active" {
			t.Fatalf("lifetime key status = %v", st)
		}
		ev := s.EventsOf(a.ID, "key_expired")
		if len(ev) != 1 || ev[0]["license_key"] != days || ev[0]["expires_at"] == nil {
			t.Fatalf("key_expired events %v", ev)
		}
		a.Heartbeat(sid, days).Kill(t, "EXPIRED")
	})
}
