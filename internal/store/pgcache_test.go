package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// pgCachedDB is cachedDB on PostgreSQL with the listener's notifications
// heard (they are what other processes' writes reach the cache by), and a
// plain handle on the same database writing as psql would: no notices.
func pgCachedDB(t *testing.T, keys, sessions int) (*DB, *sql.DB) {
	t.Helper()
	postgresOnly(t)
	db := cachedDB(t, Postgres, keys, 0, sessions)
	db.sessions.deaf.Store(false)
	raw, err := sql.Open("pgx", db.pgConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return db, raw
}

// postgresOnly skips t, saying so, when no PostgreSQL is configured, and
// otherwise runs it in parallel with the other tests.
func postgresOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set: this PostgreSQL test did not run")
	}
	t.Parallel()
}

// rawExec runs q on the plain handle.
func rawExec(t *testing.T, raw *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := raw.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A change made by another keyward process, or by hand, reaches the cache
// by its notification: once the listener has caught up (CheckForeignWrites),
// the cache agrees with the database. A change of columns the view does not
// read leaves the cache alone.
func TestPGSessionCacheSeesOtherProcesses(t *testing.T) {
	db, raw := pgCachedDB(t, 2, 2)
	ctx := context.Background()
	other, err := Open(ctx, Options{URL: db.pgConfig.ConnString()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sync := func() {
		t.Helper()
		if err := db.CheckForeignWrites(ctx); err != nil {
			t.Fatal(err)
		}
	}
	views(t, db, "tok-0")
	views(t, db, "tok-1")
	wantCached(t, db, 2, "after the first reads")

	exec(t, other, `UPDATE license_keys SET status = 'banned' WHERE id = 1`) // another keyward
	sync()
	agrees(t, db, "tok-0", license.StatusBanned, "after another process's ban")
	rawExec(t, raw, `UPDATE license_keys SET status = 'paused' WHERE id = 2`) // psql
	sync()
	agrees(t, db, "tok-1", license.StatusPaused, "after a ban by hand")

	rawExec(t, raw, `UPDATE license_keys SET note = 'n', max_devices = 3`)
	rawExec(t, raw, `UPDATE sessions SET hwid = 'other', last_seen_at = last_seen_at + 1000`)
	sync()
	wantCached(t, db, 2, "after writes of columns the view does not read")

	rawExec(t, raw, `DELETE FROM sessions WHERE token_hash = 'tok-1'`)
	sync()
	wantCached(t, db, 1, "after a session was deleted by hand")
	if c, r := views(t, db, "tok-1"); c != nil || r != nil {
		t.Fatalf("deleted session read as %+v, %+v", c, r)
	}
}

// A transaction changing more rows than the triggers announce one by one
// announces '*', and the cache forgets everything: through this process's
// notices at once, through another's notification once heard.
func TestPGSessionCacheForgetsAllPastTheCap(t *testing.T) {
	db, raw := pgCachedDB(t, 1, 1)
	ctx := context.Background()
	rawExec(t, raw, `INSERT INTO license_keys (id, app_id, license_key, status, key_type, created_at, updated_at)
		SELECT 100 + g, 'app', 'BULK-' || g, 'active', 'lifetime', 0, 0 FROM generate_series(1, 10001) g`)
	db.sessions.deaf.Store(true) // this process's own write: its notices alone
	views(t, db, "tok-0")
	wantCached(t, db, 1, "before")
	exec(t, db, `UPDATE license_keys SET status = 'paused' WHERE id > 100`)
	wantCached(t, db, 0, "right after this process changed 10 001 keys")

	db.sessions.deaf.Store(false)
	if err := db.CheckForeignWrites(ctx); err != nil { // the notifications of that write, heard now too
		t.Fatal(err)
	}
	views(t, db, "tok-0")
	wantCached(t, db, 1, "read again")
	rawExec(t, raw, `UPDATE license_keys SET status = 'active' WHERE id > 100`)
	if err := db.CheckForeignWrites(ctx); err != nil {
		t.Fatal(err)
	}
	wantCached(t, db, 0, "after another connection changed 10 001 keys")
	agrees(t, db, "tok-0", license.StatusActive, "after the cap")
}

// When the listening connection is lost, the cache goes off and empty (what
// is written meanwhile would go unheard); it comes back, empty, once a new
// connection hears its ping.
func TestPGSessionCacheSurvivesLosingItsListener(t *testing.T) {
	db, raw := pgCachedDB(t, 1, 1)
	ctx := context.Background()
	views(t, db, "tok-0")
	wantCached(t, db, 1, "before")
	var n int
	if err := raw.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN keyward_cache'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", n, err)
	}
	// The listener notices at its next read of the connection.
	deadline := time.Now().Add(30 * time.Second)
	for db.sessions.listenErrors.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not notice its connection was lost")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rawExec(t, raw, `UPDATE license_keys SET status = 'banned' WHERE id = 1`)
	if err := db.CheckForeignWrites(ctx); err != nil { // waits for the new connection
		t.Fatal(err)
	}
	if !db.sessions.on.Load() {
		t.Fatal("the cache did not come back on")
	}
	agrees(t, db, "tok-0", license.StatusBanned, "after the listener came back")
	if err := *db.sessions.listenErr.Load(); err == nil {
		t.Fatal("no error kept for the lost connection")
	}
}

// The listener reads payloads anyone with access to the database may send:
// none makes it panic, and what it takes for an invalidation names exactly
// one thing.
func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{"*", "s:abc", "k:12", "a:-1", "k:", "x:1", "ping:ab:1", "s:", "", "k:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		inv, ok := parsePayload(p)
		if !ok {
			return
		}
		switch inv.kind {
		case '*':
			if p != "*" {
				t.Fatalf("%q read as *", p)
			}
		case 's':
			if "s:"+inv.token != p || inv.token == "" {
				t.Fatalf("%q read as session %q", p, inv.token)
			}
		case 'k', 'a':
			if fmt.Sprintf("%c:%d", inv.kind, inv.id) != p {
				t.Fatalf("%q read as %c %d", p, inv.kind, inv.id)
			}
		default:
			t.Fatalf("%q read as kind %q", p, inv.kind)
		}
	})
}

// The heartbeats' last-seen writes are HOT updates of session_seen on
// PostgreSQL (migrations 00024 and 00028): no index holds the time and pages
// keep room, so a touch writes no index entry; and the sessions table is not
// written at all. An index on the column would make every touch write one,
// a third of PostgreSQL's work at 100 000 sessions (docs/performance.md).
func TestPGTouchesAreHOTUpdates(t *testing.T) {
	db, _ := pgCachedDB(t, 2, 40)
	ctx := context.Background()
	keys, times := pgSeenKeys(t, db, 40), make([]int64, 40)
	for i := range times {
		times[i] = ms(cacheT0.Add(time.Minute))
	}
	var hot, updated, sessionsUpdated int64
	err := db.tx(ctx, func(tx *wtx) error {
		if err := pgTouch(ctx, tx.Tx, keys, times); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('session_seen'::regclass),
			pg_stat_get_xact_tuples_updated('session_seen'::regclass), pg_stat_get_xact_tuples_updated('sessions'::regclass)`).
			Scan(&hot, &updated, &sessionsUpdated)
	})
	if err != nil {
		t.Fatal(err)
	}
	if updated != 40 || hot != 40 || sessionsUpdated != 0 {
		t.Fatalf("%d times written, %d of them HOT updates, %d sessions rows updated; want 40, all and none", updated, hot, sessionsUpdated)
	}
}

// pgSeenKeys returns the seen keys of the first n live sessions, by id.
func pgSeenKeys(t *testing.T, db *DB, n int) []int64 {
	t.Helper()
	rows, err := db.read.Query(`SELECT seen_key FROM sessions WHERE ended_at IS NULL ORDER BY id LIMIT $1`, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []int64
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil || len(keys) != n {
		t.Fatalf("%d seen keys (%v), want %d", len(keys), err, n)
	}
	return keys
}

// The flush's chunk looks each row of session_seen up by its primary key
// and reads sessions not at all, whatever the statistics say: a single
// UPDATE joining the chunk's rows once read every live session once per
// chunk (hashing them) or once per session in it (a materialized scan in a
// nested loop), as migration 00026 tells.
func TestPGTouchLooksSessionsUpByKey(t *testing.T) {
	for _, c := range []struct {
		name string
		// setup fills the sessions table (autovacuum off for it).
		setup []string
	}{{
		// Analysed while 5 of 50 were live, before 5 000 more opened.
		name: "statistics of a smaller table",
		setup: []string{
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at, ended_at)
				SELECT 'old-' || i, 'old-tok-' || i, 'app', 'hw', 1, 1, CASE WHEN i > 5 THEN 2 END FROM generate_series(1, 50) i`,
			`ANALYZE sessions`,
			`ANALYZE session_seen`,
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at)
				SELECT 's-' || i, 'tok-s-' || i, 'app', 'hw', 1, 1 FROM generate_series(1, 5000) i`,
		},
	}, {
		// Never analysed (a new table; autovacuum off, or not yet round).
		name: "no statistics",
		setup: []string{
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at)
				SELECT 's-' || i, md5(i::text) || md5('t' || i), 'app', 'hw', 1, 1 FROM generate_series(1, 30000) i`,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			_, raw := pgCachedDB(t, 2, 0)
			ctx := context.Background()
			rawExec(t, raw, `ALTER TABLE sessions SET (autovacuum_enabled = false)`)
			rawExec(t, raw, `ALTER TABLE session_seen SET (autovacuum_enabled = false)`)
			for _, q := range c.setup {
				rawExec(t, raw, q)
			}
			keys, times := make([]int64, touchChunk), make([]int64, touchChunk)
			for i := range keys {
				if err := raw.QueryRow(`SELECT seen_key FROM sessions WHERE id = $1`, fmt.Sprintf("s-%d", 1+i*9)).Scan(&keys[i]); err != nil {
					t.Fatal(err)
				}
				times[i] = 100
			}
			tx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			key0, other0, sessions0 := seenScans(t, tx)
			if err := pgTouch(ctx, tx, keys, times); err != nil {
				t.Fatal(err)
			}
			var written int64
			if err := tx.QueryRow(`SELECT pg_stat_get_xact_tuples_updated('session_seen'::regclass)`).Scan(&written); err != nil {
				t.Fatal(err)
			}
			key1, other1, sessions1 := seenScans(t, tx)
			if byKey, other, sessions := key1-key0, other1-other0, sessions1-sessions0; written != touchChunk || byKey != touchChunk || other != 0 || sessions != 0 {
				t.Fatalf("the flush wrote %d of %d times with %d lookups by key, %d other reads of session_seen and %d reads of sessions; want %d, %d, 0 and 0",
					written, touchChunk, byKey, other, sessions, touchChunk, touchChunk)
			}
		})
	}
}

// seenScans counts, on tx's connection, the lookups of session_seen by
// primary key, its other reads, and every read of sessions. The counters
// also hold the connection's earlier transactions not yet reported, so a
// caller takes the difference of two counts.
func seenScans(t *testing.T, tx *sql.Tx) (byKey, other, sessions int64) {
	t.Helper()
	err := tx.QueryRow(`SELECT
		pg_stat_get_xact_numscans('session_seen_pkey'::regclass),
		pg_stat_get_xact_numscans('session_seen'::regclass),
		(SELECT coalesce(sum(pg_stat_get_xact_numscans(indexrelid)), 0) FROM pg_index WHERE indrelid = 'sessions'::regclass)
			+ pg_stat_get_xact_numscans('sessions'::regclass)`).Scan(&byKey, &other, &sessions)
	if err != nil {
		t.Fatal(err)
	}
	return byKey, other, sessions
}
