package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
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

// The heartbeats' last-seen writes are HOT updates on PostgreSQL (migration
// 00024): no index holds last_seen_at and pages keep room, so a touch
// writes no index entry. An index on the column would make every touch
// write one in each index of the table, a third of PostgreSQL's work at
// 100 000 sessions (docs/performance.md).
func TestPGTouchesAreHOTUpdates(t *testing.T) {
	db, _ := pgCachedDB(t, 2, 40)
	ctx := context.Background()
	ids, times := make([]string, 40), make([]int64, 40)
	for i := range ids {
		ids[i], times[i] = fmt.Sprintf("s-%d", i), ms(cacheT0.Add(time.Minute))
	}
	var written []touched
	var hot int64
	err := db.tx(ctx, func(tx *wtx) error {
		var err error
		if written, err = pgTouch(ctx, tx.Tx, ids, times, nil); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('sessions'::regclass)`).Scan(&hot)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 40 || hot != 40 {
		t.Fatalf("%d sessions touched, %d of them HOT updates; want 40 and all", len(written), hot)
	}
}

// The flush's chunk looks each session up by its primary key whatever the
// statistics say of live sessions, where a single UPDATE joining the chunk's
// rows read every live session once per chunk (hashing them) or once per
// session in it (a materialized scan in a nested loop). Each case's control
// runs that UPDATE, as the flush did before migration 00026, and shows that
// it does not.
func TestPGTouchLooksSessionsUpByKey(t *testing.T) {
	for _, c := range []struct {
		name string
		// setup fills the sessions table (autovacuum off for it).
		setup []string
		// settings run before the control's UPDATE: the flush's own
		// before 00026, or none.
		settings string
	}{{
		// Analysed while 5 of 50 were live, before 5 000 more opened:
		// the planner hashed the chunk and read every live session.
		name: "statistics of a smaller table",
		setup: []string{
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at, ended_at)
				SELECT 'old-' || i, 'old-tok-' || i, 'app', 'hw', 1, 1, CASE WHEN i > 5 THEN 2 END FROM generate_series(1, 50) i`,
			`ANALYZE sessions`,
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at)
				SELECT 's-' || i, 'tok-s-' || i, 'app', 'hw', 1, 1 FROM generate_series(1, 5000) i`,
		},
	}, {
		// Never analysed (a new table; autovacuum off, or not yet round):
		// "ended_at IS NULL" gets the default selectivity of 0.5 %, and
		// with hash and merge joins off (the flush's settings until 00026)
		// the planner scanned the live-session index, materialized it and
		// compared it with each of the chunk's sessions: 290 ms a chunk
		// at 100 000 sessions in the load tool, against 7 ms.
		name: "no statistics",
		setup: []string{
			`INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at)
				SELECT 's-' || i, md5(i::text) || md5('t' || i), 'app', 'hw', 1, 1 FROM generate_series(1, 30000) i`,
		},
		settings: `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			db, raw := pgCachedDB(t, 2, 0)
			ctx := context.Background()
			rawExec(t, raw, `ALTER TABLE sessions SET (autovacuum_enabled = false)`)
			for _, q := range c.setup {
				rawExec(t, raw, q)
			}
			ids, times := make([]string, touchChunk), make([]int64, touchChunk)
			args := make([]any, 0, 2*touchChunk)
			for i := range ids {
				ids[i], times[i] = fmt.Sprintf("s-%d", 1+i*9), 100
				args = append(args, ids[i], times[i])
			}
			// scans runs f in a transaction, rolled back, and returns what
			// it wrote and how it read sessions (sessionScans).
			scans := func(f func(tx *sql.Tx) (int, error)) (written int, byKey, other int64) {
				tx, err := raw.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				key0, other0 := sessionScans(t, tx)
				if written, err = f(tx); err != nil {
					t.Fatal(err)
				}
				byKey, other = sessionScans(t, tx)
				return written, byKey - key0, other - other0
			}
			_, byKey, other := scans(func(tx *sql.Tx) (int, error) {
				if c.settings != "" {
					if _, err := tx.ExecContext(ctx, c.settings); err != nil {
						return 0, err
					}
				}
				res, err := tx.ExecContext(ctx, pgJoinTouch(db, touchChunk), args...)
				if err != nil {
					return 0, err
				}
				n, err := res.RowsAffected()
				return int(n), err
			})
			if other == 0 {
				t.Fatalf("control: a single UPDATE joining the chunk looked sessions up by key (%d lookups) and read them no other way, so this case shows nothing", byKey)
			}
			written, byKey, other := scans(func(tx *sql.Tx) (int, error) {
				w, err := pgTouch(ctx, tx, ids, times, nil)
				return len(w), err
			})
			if written != touchChunk || byKey != touchChunk || other != 0 {
				t.Fatalf("the flush wrote %d of %d sessions with %d lookups by key and %d other reads of sessions; want %d, %d and 0",
					written, touchChunk, byKey, other, touchChunk, touchChunk)
			}
		})
	}
}

// sessionScans counts, on tx's connection, the lookups of sessions by
// primary key and every other read of them (the table, or another index).
// The counters also hold the connection's earlier transactions not yet
// reported, so a caller takes the difference of two counts.
func sessionScans(t *testing.T, tx *sql.Tx) (byKey, other int64) {
	t.Helper()
	err := tx.QueryRow(`SELECT
		coalesce(sum(pg_stat_get_xact_numscans(indexrelid)) FILTER (WHERE indexrelid = 'sessions_pkey'::regclass), 0),
		coalesce(sum(pg_stat_get_xact_numscans(indexrelid)) FILTER (WHERE indexrelid <> 'sessions_pkey'::regclass), 0)
			+ pg_stat_get_xact_numscans('sessions'::regclass)
		FROM pg_index WHERE indrelid = 'sessions'::regclass`).Scan(&byKey, &other)
	if err != nil {
		t.Fatal(err)
	}
	return byKey, other
}

// pgJoinTouch is the flush's statement on PostgreSQL before migration
// 00026: SQLite's one UPDATE joining n (id, time) rows, its first row cast
// so PostgreSQL types the VALUES columns (the times would be text).
func pgJoinTouch(db *DB, n int) string {
	return strings.Replace(db.rebind(touchQuery(n)), "($1,$2)", "($1::text,$2::bigint)", 1)
}
