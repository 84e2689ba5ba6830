package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// Concurrent logins to one floating key through two keyward processes on
// one database: exactly max_devices succeed, however the logins are split
// between the processes (the key row lock of the login transaction holds
// across processes; SQLite has one writer).
func TestFloatingSeatsAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	floatingSeatsAcrossServers(t, startPostgresPair)
}

func TestFloatingSeatsAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	floatingSeatsAcrossServers(t, startSQLitePair)
}

func floatingSeatsAcrossServers(t *testing.T, start func(*testing.T) (*kwtest.Server, *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Floating")
	appB := b.NewApp(appA.ID, appA.Secret)
	denied := 0
	for round, seats := range []int{3, 5} {
		r := a.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": appA.ID, "count": 1, "key_type": "lifetime",
			"max_devices": seats, "floating": true})
		key := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)

		const machines = 16
		replies := make([]*kwtest.Reply, machines)
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i := range machines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				app := appA
				if i%2 == 1 {
					app = appB
				}
				<-gate
				replies[i] = app.Env("/api/auth/login.php", map[string]any{"license_key": key, "hwid": fmt.Sprintf("r%d-m%02d", round, i)})
			}()
		}
		close(gate)
		wg.Wait()
		ok := 0
		for _, r := range replies {
			if r.Body["success"] == true {
				ok++
				continue
			}
			kwtest.ExpectCode(t, r, 200, "DEVICE_LIMIT")
			if msg := r.Str("message"); !strings.Contains(msg, fmt.Sprintf("All %d seats", seats)) {
				t.Fatalf("refusal message %q", msg)
			}
		}
		if ok != seats {
			t.Fatalf("%d of %d logins through two processes succeeded, want exactly %d", ok, machines, seats)
		}
		d := b.MustAdmin("GET", "/api/admin/keys.php?app_id="+appA.ID+"&license_key="+key, nil).Obj("key")
		if d["seats_in_use"] != float64(seats) {
			t.Fatalf("seats_in_use %v, want %d", d["seats_in_use"], seats)
		}
		denied += machines - seats
		if n := len(a.EventsOf(appA.ID, "seat.denied")); n != denied {
			t.Fatalf("%d seat.denied events, want one per refused login (%d)", n, denied)
		}
	}
}
