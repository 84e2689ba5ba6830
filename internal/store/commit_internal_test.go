package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
)

// sqliteForCommit opens a migrated SQLite database for the writer's own
// tests (the engine-independent rules are in the conformance suite,
// storetest/groupcommit.go).
func sqliteForCommit(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// lease writes a job_leases row, the simplest table there is.
func lease(ctx context.Context, db *DB, t *wtx, name string) error {
	_, err := t.ExecContext(ctx, `INSERT INTO job_leases (name, holder, until) VALUES (?, 'test', 0)`, name)
	return translate(err)
}

func hasLease(t *testing.T, db *DB, name string) bool {
	t.Helper()
	var n int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM job_leases WHERE name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// runBatch queues fns as one batch and returns their errors in order.
func runBatch(db *DB, fns ...func(*wtx) error) []error {
	db.GatherWrites(len(fns))
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = db.tx(context.Background(), fn) })
	}
	wg.Wait()
	return errs
}

// A unit's statements ignore its caller's cancellation once it runs: an
// interrupted SQLite statement would roll back the whole batch. The unit
// commits, and its caller is told so (nil), not that it failed.
func TestWriterUnitOutlivesCancel(t *testing.T) {
	db := sqliteForCommit(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := db.tx(ctx, func(w *wtx) error {
		if err := lease(ctx, db, w, "before"); err != nil {
			return err
		}
		cancel()
		return lease(ctx, db, w, "after")
	})
	if err != nil {
		t.Fatalf("a unit whose caller went away while it ran: %v, want its commit (nil)", err)
	}
	if !hasLease(t, db, "before") || !hasLease(t, db, "after") {
		t.Error("the unit's writes are missing after it reported success")
	}
}

// A unit that ends the transaction under its batch (what SQLite does on
// some storage failures) takes down only the units that ran with it: they
// get an error and nothing of them is kept; the units after it run in the
// next batch and commit.
func TestWriterTransactionLostMidBatch(t *testing.T) {
	db := sqliteForCommit(t)
	ctx := context.Background()
	var ran sync.Map
	unit := func(name string, end bool) func(*wtx) error {
		return func(w *wtx) error {
			ran.Store(name, true)
			if err := lease(ctx, db, w, name); err != nil {
				return err
			}
			if end {
				// The whole transaction, savepoints and all, ends here.
				if _, err := w.ExecContext(ctx, `ROLLBACK`); err != nil {
					return err
				}
				return errors.New("storage failure")
			}
			return nil
		}
	}
	// The order within a batch is the queue's, which the goroutines race
	// for; what each unit saw decides what it must get.
	b0, _ := db.WriteBatches()
	errs := runBatch(db, unit("a", false), unit("b", true), unit("c", false))
	for i, name := range []string{"a", "b", "c"} {
		if name == "b" {
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "storage failure") {
				t.Errorf("the failing unit got %v, want its own error", errs[i])
			}
			if hasLease(t, db, "b") {
				t.Error("the failing unit's write was kept")
			}
			continue
		}
		if errs[i] == nil && !hasLease(t, db, name) {
			t.Errorf("unit %s reported success but its write is missing", name)
		}
		if errs[i] != nil && hasLease(t, db, name) {
			t.Errorf("unit %s reported %v but its write was kept", name, errs[i])
		}
	}
	if b1, _ := db.WriteBatches(); b1 == b0 && (errs[0] == nil || errs[2] == nil) {
		t.Error("a unit succeeded but no batch committed")
	}
	// The writer goes on.
	if err := db.tx(ctx, unit("d", false)); err != nil || !hasLease(t, db, "d") {
		t.Fatalf("a write after the lost batch: %v", err)
	}
}

// A unit that succeeds in a transaction already ended (its RELEASE fails)
// is not reported as committed.
func TestWriterReleaseFails(t *testing.T) {
	db := sqliteForCommit(t)
	ctx := context.Background()
	errs := runBatch(db,
		func(w *wtx) error { return lease(ctx, db, w, "x") },
		func(w *wtx) error {
			if err := lease(ctx, db, w, "y"); err != nil {
				return err
			}
			_, err := w.ExecContext(ctx, `ROLLBACK`)
			return err
		})
	if errs[1] == nil {
		t.Error("a unit whose transaction ended under it was reported committed")
	}
	if hasLease(t, db, "y") {
		t.Error("the write of a unit whose transaction ended was kept")
	}
	if errs[0] == nil && !hasLease(t, db, "x") {
		t.Error("a unit reported committed lost its write")
	}
}

// Close finishes what is queued, and a write after Close is refused
// without touching the database.
func TestWriterClose(t *testing.T) {
	db := sqliteForCommit(t)
	ctx := context.Background()
	if err := db.tx(ctx, func(w *wtx) error { return lease(ctx, db, w, "kept") }); err != nil {
		t.Fatal(err)
	}
	db.writer.stop()
	if err := db.tx(ctx, func(w *wtx) error { return lease(ctx, db, w, "late") }); !errors.Is(err, errClosed) {
		t.Errorf("a write after the writer stopped: %v, want errClosed", err)
	}
	if !hasLease(t, db, "kept") || hasLease(t, db, "late") {
		t.Error("stop lost a committed write or let a late one in")
	}
	// A unique violation in a unit alone is still the conflict sentinel.
	db2 := sqliteForCommit(t)
	w := func(w *wtx) error { return lease(ctx, db2, w, "dup") }
	if err := db2.tx(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := db2.tx(ctx, w); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("a duplicate: %v, want ErrConflict", err)
	}
}

// Writes racing Close either commit or are refused with errClosed; none
// panics, none is lost after reporting success.
func TestWriterCloseRacingWrites(t *testing.T) {
	db := sqliteForCommit(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Go(func() {
			errs[i] = db.tx(ctx, func(w *wtx) error { return lease(ctx, db, w, "race-"+string(rune('A'+i))) })
		})
	}
	db.writer.stop()
	wg.Wait()
	for i, err := range errs {
		name := "race-" + string(rune('A'+i))
		switch {
		case err == nil && !hasLease(t, db, name):
			t.Errorf("%s reported committed but is missing", name)
		case err != nil && !errors.Is(err, errClosed):
			t.Errorf("%s: %v, want nil or errClosed", name, err)
		case err != nil && hasLease(t, db, name):
			t.Errorf("%s refused but written", name)
		}
	}
}
