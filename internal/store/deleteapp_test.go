package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// TestDeleteAppLocksSessionsInTheFlushOrder: on PostgreSQL an app deleted
// while its fleet beats does not deadlock with the heartbeat flush. The
// flush locks the sessions it writes in id order; here a transaction
// standing for a flush chunk holds session "a" when the deletion starts,
// and then writes session "b". The deletion's cascade, left to itself,
// deletes "b" first (it was inserted first), then waits for "a": a
// deadlock, which PostgreSQL ends by failing one of the two. DeleteApp
// locks the app's live sessions in id order first, so it waits for "a"
// holding nothing the flush needs.
func TestDeleteAppLocksSessionsInTheFlushOrder(t *testing.T) {
	// SQLite has one writer and no row locks: nothing there to deadlock.
	postgresOnly(t)
	ctx := context.Background()
	db, o := freshDB(t, Postgres)
	t0 := ms(cacheT0)
	exec(t, db, `INSERT INTO apps (id, name, secret, secret_hash, created_at, updated_at) VALUES ('app', 'App', 's', 'h', ?, ?)`, t0, t0)
	for _, id := range []string{"b", "a"} {
		exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at) VALUES (?, ?, 'app', 'hw', ?, ?)`,
			id, "tok-"+id, t0, t0)
	}

	flush, err := sql.Open("pgx", o.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer flush.Close()
	chunk, err := flush.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chunk.Rollback()
	touch := func(id string) error {
		_, err := chunk.ExecContext(ctx, `UPDATE sessions SET last_seen_at = last_seen_at + 1 WHERE id = $1`, id)
		return err
	}
	if err := touch("a"); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() {
		deleted <- db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return tx.DeleteApp(ctx, "app") })
	}()
	// Once the deletion waits for a lock, the chunk goes on to "b".
	for waiting := 0; waiting == 0; {
		select {
		case err := <-deleted:
			t.Fatalf("the deletion ended (%v) while session a was locked", err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := flush.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := touch("b"); err != nil {
		t.Fatalf("the flush's next session: %v (the deletion held it)", err)
	}
	if err := chunk.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	if _, err := db.LicenseStore().App(ctx, "app"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("the app after its deletion: %v, want not found", err)
	}
}
