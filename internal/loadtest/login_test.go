package loadtest_test

import (
	"context"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// Login's budgets: what a login (first activation or repeat) may cost,
// counted, never timed (issue 22).
const (
	// loginAllocBudget is the allocations per login, client and server
	// together, over real HTTP on SQLite.
	loginAllocBudget = 760
	// loginWaitBudget is the commits a login waits for: its own. The
	// envelope's replay record and leak detection's sightings are written
	// in the writer's batches without waiting for their commit.
	loginWaitBudget = 1
	// loginUnitBudget is the write transactions per login: the replay
	// claim, the login, the replay reply and, on a first activation, the
	// device's sighting (the address's is one per address and key).
	loginUnitBudget = 4
)

// TestLoginCost guards the login path on SQLite: a login waits for one
// commit (so a burst of them shares commits instead of queueing for
// several each), writes at most loginUnitBudget write transactions, and
// its allocations stay within loginAllocBudget. First activations and
// repeat logins are counted apart.
func TestLoginCost(t *testing.T) {
	srv := kwtest.Start(t, kwtest.Options{})
	const keys = 400
	tg, err := loadtest.Provision(context.Background(), loadtest.Options{URL: srv.URL, AdminUsername: "admin",
		AdminPassword: kwtest.AdminPassword, Mode: loadtest.Login, Keys: keys, Conns: 1, Now: srv.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close(context.Background(), true) })
	ctx := context.Background()
	i := 0
	login := func() {
		if err := tg.Do(ctx, loadtest.Login, i); err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
		i++
	}
	measure := func(name string, n int) {
		_, u0 := srv.DB.WriteBatches()
		w0 := srv.DB.WriteWaits()
		allocs := testing.AllocsPerRun(n, login)
		_, u1 := srv.DB.WriteBatches()
		w1 := srv.DB.WriteWaits()
		runs := float64(n + 1) // AllocsPerRun runs once more to warm up
		units, waits := float64(u1-u0)/runs, float64(w1-w0)/runs
		t.Logf("%s: %.0f allocations, %.2f write transactions, %.2f commits waited for per login", name, allocs, units, waits)
		// Background jobs (the session touch flush) may add a write now
		// and then: a twentieth per login is allowed for them.
		if waits > loginWaitBudget+0.05 {
			t.Errorf("%s: a login waits for %.2f commits, budget %d", name, waits, loginWaitBudget)
		}
		if units > loginUnitBudget+0.05 {
			t.Errorf("%s: %.2f write transactions per login, budget %d", name, units, loginUnitBudget)
		}
		if allocs > loginAllocBudget && !raceDetector {
			t.Errorf("%s: %.0f allocations per login, budget %d", name, allocs, loginAllocBudget)
		}
	}
	measure("first activation", keys/2-1) // keys 0…199: each key's first login
	i = 0
	measure("repeat", keys/2-1) // the same keys and devices again
}
