package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// gcUnit is one write transaction of the group-commit tests: it inserts
// key "<name>" with an audit entry naming it, then does what fail says.
type gcUnit struct {
	name string
	fail string // "" commits; "error" returns errBoom; "conflict" inserts a taken key; "panic" panics
}

func (u gcUnit) run(ctx context.Context, tx license.Tx, appID string) error {
	if err := tx.InsertKeys(ctx, []license.Key{newKey(appID, u.name)}); err != nil {
		return err
	}
	if err := tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "key.generate", AppID: appID, Target: u.name}); err != nil {
		return err
	}
	switch u.fail {
	case "error":
		return errBoom
	case "conflict":
		return tx.InsertKeys(ctx, []license.Key{newKey(appID, "TAKEN")})
	case "panic":
		panic("unit " + u.name)
	}
	return nil
}

// testGroupCommit: write transactions that share one commit (SQLite's
// writer takes them as one batch; PostgreSQL commits each) end exactly as
// they would alone. A unit that fails mid-batch — with its own error, a
// constraint violation or a panic — is rolled back alone and reports its
// own error; the others commit, every row of theirs.
func testGroupCommit(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "gc")
	addKeys(t, db, newKey("gc", "TAKEN"))

	units := []gcUnit{{"A", ""}, {"B", ""}, {"C", "error"}, {"D", ""}, {"E", "conflict"}, {"F", ""}, {"G", "panic"}, {"H", ""}}
	b0, n0 := db.WriteBatches()
	db.GatherWrites(len(units))
	errs := make([]error, len(units))
	panics := make([]any, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = ls.InTx(ctx, func(tx license.Tx) error { return u.run(ctx, tx, "gc") })
		})
	}
	wg.Wait()

	if db.Engine() == store.SQLite {
		b1, n1 := db.WriteBatches()
		if b1-b0 != 1 || n1-n0 != int64(len(units)) {
			t.Errorf("SQLite committed %d batches of %d units, want the %d units in one batch", b1-b0, n1-n0, len(units))
		}
	}
	for i, u := range units {
		k, kerr := ls.Key(ctx, "gc", u.name)
		entries, aerr := db.Audit(ctx, store.AuditFilter{AppID: "gc", Target: u.name})
		if aerr != nil {
			t.Fatalf("Audit: %v", aerr)
		}
		switch u.fail {
		case "":
			if errs[i] != nil || panics[i] != nil {
				t.Errorf("unit %s: error %v, panic %v; want it committed", u.name, errs[i], panics[i])
			}
			if kerr != nil || k.LicenseKey != u.name || len(entries) != 1 {
				t.Errorf("unit %s committed, but its key reads %v (%v) and it has %d audit entries, want the key and 1", u.name, k, kerr, len(entries))
			}
			continue
		case "error":
			wantErr(t, "unit "+u.name, errs[i], errBoom)
		case "conflict":
			wantErr(t, "unit "+u.name, errs[i], apperr.ErrConflict)
		case "panic":
			if panics[i] != "unit "+u.name {
				t.Errorf("unit %s: recovered %v in the caller, want its own panic", u.name, panics[i])
			}
		}
		if !errors.Is(kerr, apperr.ErrNotFound) || len(entries) != 0 {
			t.Errorf("unit %s failed (%s) but left its key (%v) or %d audit entries", u.name, u.fail, kerr, len(entries))
		}
	}

	// The database takes writes as before: the failures left nothing
	// behind that a later transaction trips on.
	if err := ls.InTx(ctx, func(tx license.Tx) error { return gcUnit{"I", ""}.run(ctx, tx, "gc") }); err != nil {
		t.Fatalf("a write after the batch: %v", err)
	}
}

// testGroupCommitOrder: units of one batch see each other's writes in the
// order they run, as consecutive transactions would: each reads the
// counter the previous unit wrote and writes it plus one, so the n units
// leave n whatever the batches were.
func testGroupCommitOrder(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "gco")
	addKeys(t, db, newKey("gco", "COUNTER"))
	n := 24
	if db.Engine() != store.SQLite {
		n = 8 // each a connection of its own: the suite's databases share max_connections
	}
	db.GatherWrites(n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- ls.InTx(ctx, func(tx license.Tx) error {
				k, err := tx.KeyForUpdate(ctx, "gco", "COUNTER")
				if err != nil {
					return err
				}
				k.Duration++
				return tx.UpdateKey(ctx, k)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("increment: %v", err)
		}
	}
	k, err := ls.Key(ctx, "gco", "COUNTER")
	if err != nil {
		t.Fatal(err)
	}
	if want := newKey("gco", "COUNTER").Duration + n; k.Duration != want {
		t.Errorf("after %d increments in shared commits the counter is %d, want %d", n, k.Duration, want)
	}
}

// testGroupCommitCancelled: a unit whose caller gave up before it ran
// writes nothing and reports the context's error; the batch it would have
// joined commits.
func testGroupCommitCancelled(t *testing.T, db *store.DB) {
	ls := db.LicenseStore()
	addApp(t, db, "gcc")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	err := ls.InTx(gone, func(tx license.Tx) error { return gcUnit{"X", ""}.run(gone, tx, "gcc") })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a unit of a cancelled request: error %v, want context.Canceled", err)
	}
	ctx := context.Background()
	if err := ls.InTx(ctx, func(tx license.Tx) error { return gcUnit{"Y", ""}.run(ctx, tx, "gcc") }); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"X": false, "Y": true} {
		_, err := ls.Key(ctx, "gcc", name)
		if got := err == nil; got != want {
			t.Errorf("key %s present %v (%v), want %v", name, got, err, want)
		}
	}
}
