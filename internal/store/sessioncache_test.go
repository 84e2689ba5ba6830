package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// cacheT0 is the time the session cache tests' rows start at.
var cacheT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// cachedDB is a migrated SQLite database with the session cache on, app
// "app", keys 1..keys, accounts 1..accounts, and sessions "tok-<i>": the
// first of them on keys, then some on accounts, then some on both.
func cachedDB(t *testing.T, keys, accounts, sessions int) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := ms(cacheT0)
	exec(t, db, `INSERT INTO apps (id, name, secret, secret_hash, created_at, updated_at) VALUES ('app', 'App', 's', 'h', ?, ?)`, t0, t0)
	for i := 1; i <= keys; i++ {
		exec(t, db, `INSERT INTO license_keys (id, app_id, license_key, status, key_type, expires_at, created_at, updated_at)
			VALUES (?, 'app', ?, 'active', 'lifetime', ?, ?, ?)`, i, fmt.Sprintf("KEY-%d", i), t0+int64(i)*3_600_000, t0, t0)
	}
	for i := 1; i <= accounts; i++ {
		exec(t, db, `INSERT INTO accounts (id, app_id, username, username_key, password_hash, status, created_at, updated_at)
			VALUES (?, 'app', ?, ?, 'x', 'active', ?, ?)`, i, fmt.Sprintf("user%d", i), fmt.Sprintf("user%d", i), t0, t0)
	}
	for i := range sessions {
		var key, acct any
		switch {
		case i%5 == 3 && accounts > 0:
			acct = 1 + i%accounts
		case i%5 == 4 && accounts > 0:
			key, acct = 1+i%keys, 1+i%accounts
		default:
			key = 1 + i%keys
		}
		exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, key_id, account_id, hwid, created_at, last_seen_at)
			VALUES (?, ?, 'app', ?, ?, 'hw', ?, ?)`, fmt.Sprintf("s-%d", i), fmt.Sprintf("tok-%d", i), key, acct, t0, t0)
	}
	if err := db.CacheSessions(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	return db
}

// exec runs one statement in a write transaction of db's writer.
func exec(t *testing.T, db *DB, q string, args ...any) {
	t.Helper()
	if err := db.tx(context.Background(), func(tx *wtx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// views reads token's heartbeat view through the cache and straight from
// the database.
func views(t *testing.T, db *DB, token string) (cached, read *license.HeartbeatView) {
	t.Helper()
	ls, ctx := licenseStore{db}, context.Background()
	get := func() *license.HeartbeatView {
		v, err := ls.HeartbeatView(ctx, token)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil
		} else if err != nil {
			t.Fatalf("HeartbeatView(%s): %v", token, err)
		}
		return v
	}
	cached = get()
	db.sessions.on.Store(false)
	read = get()
	db.sessions.on.Store(true)
	return cached, read
}

// agrees fails t unless token's cached view has status and is what a read
// of the database returns (when says at which point of the test).
func agrees(t *testing.T, db *DB, token string, status license.Status, when string) {
	t.Helper()
	if c, r := views(t, db, token); c.KeyStatus != status || !reflect.DeepEqual(c, r) {
		t.Fatalf("%s: cached %+v, database %+v", when, c, r)
	}
}

// wantCached fails t unless the cache holds n sessions (when says at which
// point of the test).
func wantCached(t *testing.T, db *DB, n int64, when string) {
	t.Helper()
	if got, _ := db.SessionCacheStats(); got != n {
		t.Fatalf("%s: %d sessions cached, want %d", when, got, n)
	}
}

// Whatever is written, the cached view of every session is what a read of
// the database returns: a random walk over every column the view depends
// on, the columns it does not, the heartbeat flush, deletions, and writes
// that roll back, each followed by a read of every session.
func TestSessionCacheAgreesWithTheDatabase(t *testing.T) {
	t.Parallel()
	const keys, accounts, sessions = 6, 3, 25
	db := cachedDB(t, keys, accounts, sessions)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 4))
	tokens := make([]string, 0, sessions+50)
	for i := range sessions {
		tokens = append(tokens, fmt.Sprintf("tok-%d", i))
	}
	statuses := []string{"active", "banned", "paused", "expired", "unused"}
	key := func() int { return 1 + rng.IntN(keys+1) } // sometimes one that was never there
	acct := func() int { return 1 + rng.IntN(accounts+1) }
	tok := func() string { return tokens[rng.IntN(len(tokens))] }
	seen := cacheT0
	reads := 0
	checkAll := func(step int, what string) {
		t.Helper()
		for _, tk := range tokens {
			c, r := views(t, db, tk)
			reads++
			if !reflect.DeepEqual(c, r) {
				t.Fatalf("step %d (%s): session %s: cached view %+v, database %+v", step, what, tk, c, r)
			}
		}
	}
	checkAll(-1, "start")
	checkAll(-1, "again, from the cache")
	for step := range 300 {
		var what string
		switch op := rng.IntN(15); op {
		case 0:
			what = "key status"
			exec(t, db, `UPDATE license_keys SET status = ? WHERE id = ?`, statuses[rng.IntN(len(statuses))], key())
		case 1:
			what = "key expiry"
			var exp any
			if rng.IntN(3) > 0 {
				exp = ms(cacheT0) + rng.Int64N(1e9)
			}
			exec(t, db, `UPDATE license_keys SET expires_at = ? WHERE id = ?`, exp, key())
		case 2:
			what = "key string"
			exec(t, db, `UPDATE license_keys SET license_key = ? WHERE id = ?`, fmt.Sprintf("KEY-%d-%d", key(), step), key())
		case 3:
			what = "key columns the view does not read"
			exec(t, db, `UPDATE license_keys SET note = ?, max_devices = ? WHERE id = ?`, fmt.Sprint(step), 1+rng.IntN(3), key())
		case 4:
			what = "account status and expiry"
			exec(t, db, `UPDATE accounts SET status = ?, expires_at = ? WHERE id = ?`,
				statuses[rng.IntN(len(statuses))], ms(cacheT0)+rng.Int64N(1e9), acct())
		case 5:
			what = "session ended"
			exec(t, db, `UPDATE sessions SET ended_at = ?, end_reason = ? WHERE token_hash = ?`, ms(seen), "BANNED", tok())
		case 6:
			what = "session moved to another key"
			exec(t, db, `UPDATE sessions SET key_id = (SELECT id FROM license_keys WHERE id = ?) WHERE token_hash = ?`, 1+rng.IntN(keys), tok())
		case 7:
			what = "heartbeat flush"
			seen = seen.Add(time.Duration(1+rng.IntN(30)) * time.Second)
			touch := map[string]time.Time{}
			for range 1 + rng.IntN(8) {
				var id string
				if err := db.read.QueryRowContext(ctx, `SELECT id FROM sessions WHERE token_hash = ?`, tok()).Scan(&id); err == nil {
					touch[id] = seen
				}
			}
			if err := (licenseStore{db}).TouchSessions(ctx, touch); err != nil {
				t.Fatal(err)
			}
		case 8:
			what = "session deleted"
			exec(t, db, `DELETE FROM sessions WHERE token_hash = ?`, tok())
		case 9:
			what = "key deleted"
			exec(t, db, `DELETE FROM license_keys WHERE id = ?`, key())
		case 10:
			what = "account deleted"
			exec(t, db, `DELETE FROM accounts WHERE id = ?`, acct())
		case 11:
			what = "session added"
			tk := fmt.Sprintf("tok-new-%d", step)
			k := 1 + rng.IntN(keys)
			exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, key_id, hwid, created_at, last_seen_at)
				SELECT ?, ?, 'app', id, 'hw', ?, ? FROM license_keys WHERE id = ?`, "s-new-"+fmt.Sprint(step), tk, ms(seen), ms(seen), k)
			tokens = append(tokens, tk)
		case 12:
			what = "a write that rolls back"
			err := db.tx(ctx, func(tx *wtx) error {
				if _, err := tx.ExecContext(ctx, `UPDATE license_keys SET status = 'banned'`); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = 1`); err != nil {
					return err
				}
				return errors.New("changed my mind")
			})
			if err == nil {
				t.Fatal("the unit's error was lost")
			}
		case 13:
			what = "key restored"
			exec(t, db, `UPDATE license_keys SET status = 'active', expires_at = NULL WHERE id = ?`, key())
		case 14:
			what = "session's own columns the view does not read"
			exec(t, db, `UPDATE sessions SET hwid = ?, ip = ? WHERE token_hash = ?`, fmt.Sprint("hw", step), "10.0.0.1", tok())
		}
		checkAll(step, what)
	}
	_, fills := db.SessionCacheStats()
	if fills == 0 || fills*3 > int64(reads) {
		t.Fatalf("the cache filled %d times for %d reads: it is not in use", fills, reads)
	}
	t.Logf("%d reads, %d fills", reads, fills)
}

// A read that started before a change and fills the cache after the
// change committed is not kept: the next read sees the change.
func TestSessionCacheFillRacingAWrite(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, 1, 0, 1)
	c := db.sessions
	gen := c.generation() // the read starts...
	r := &heartbeatRow{}
	if err := db.lite.row(context.Background(), heartbeatViewQuery, "tok-0", r.scanLite); err != nil {
		t.Fatal(err)
	}
	r.v.Session.ID = "s-0"
	exec(t, db, `UPDATE license_keys SET status = 'banned' WHERE id = 1`) // ...a ban commits...
	c.put("tok-0", r, gen)                                                // ...and the read's fill comes last
	agrees(t, db, "tok-0", license.StatusBanned, "after the ban")
}

// A change made by another process (here a second handle on the same
// file) reaches none of this process's triggers; the writer's check of
// PRAGMA data_version (every second, CheckForeignWrites here) empties the
// cache.
func TestSessionCacheSeesOtherProcesses(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, 1, 0, 1)
	ctx := context.Background()
	if c, _ := views(t, db, "tok-0"); c.KeyStatus != license.StatusActive {
		t.Fatalf("status %s before the ban", c.KeyStatus)
	}
	other, err := Open(ctx, Options{DataDir: filepath.Dir(db.lockPath)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE license_keys SET status = 'banned' WHERE id = 1`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The cache cannot know yet: that is what the check is for.
	if c, _ := views(t, db, "tok-0"); c.KeyStatus != license.StatusActive {
		t.Fatalf("status %s: the test no longer shows what the check does", c.KeyStatus)
	}
	if err := db.CheckForeignWrites(ctx); err != nil {
		t.Fatal(err)
	}
	agrees(t, db, "tok-0", license.StatusBanned, "after the check")
	// This process's own writes do not empty it.
	views(t, db, "tok-0")
	exec(t, db, `UPDATE license_keys SET note = 'n' WHERE id = 1`)
	if err := db.CheckForeignWrites(ctx); err != nil {
		t.Fatal(err)
	}
	wantCached(t, db, 1, "after a write of this process")
}

// Migrate turns the cache off (a migration may rebuild the tables its
// triggers are on); heartbeats then read the database until CacheSessions.
func TestMigrateTurnsTheSessionCacheOff(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, 1, 0, 1)
	ctx := context.Background()
	views(t, db, "tok-0")
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `UPDATE license_keys SET status = 'banned' WHERE id = 1`)
	agrees(t, db, "tok-0", license.StatusBanned, "after Migrate")
	wantCached(t, db, 0, "while the cache is off")
	if err := db.CacheSessions(ctx, 10); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `UPDATE license_keys SET status = 'active' WHERE id = 1`)
	views(t, db, "tok-0")
	exec(t, db, `UPDATE license_keys SET status = 'paused' WHERE id = 1`)
	agrees(t, db, "tok-0", license.StatusPaused, "on again")
}

// The cache holds at most the sessions it was given; the others read the
// database, and a session leaving makes room.
func TestSessionCacheIsBounded(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, 2, 0, 5)
	ctx := context.Background()
	if err := db.CacheSessions(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c, r := views(t, db, fmt.Sprintf("tok-%d", i))
		if !reflect.DeepEqual(c, r) {
			t.Fatalf("tok-%d: cached %+v, database %+v", i, c, r)
		}
	}
	wantCached(t, db, 3, "the bound")
	exec(t, db, `DELETE FROM sessions WHERE token_hash = 'tok-0'`)
	views(t, db, "tok-4")
	wantCached(t, db, 3, "after one left and another came")
}

// A read between a change and its commit sees the state before it (WAL
// readers see commits only) and fills the cache with it; the writer's
// settle after the commit drops that entry before the change's caller is
// answered.
func TestSessionCacheFillBetweenAChangeAndItsCommit(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, 1, 0, 1)
	ctx := context.Background()
	ls := licenseStore{db}
	err := db.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE license_keys SET status = 'banned' WHERE id = 1`); err != nil {
			return err
		}
		v, err := ls.HeartbeatView(ctx, "tok-0") // not committed yet: the old state
		if err == nil && v.KeyStatus != license.StatusActive {
			err = fmt.Errorf("a reader saw the uncommitted status %s", v.KeyStatus)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	agrees(t, db, "tok-0", license.StatusBanned, "after the commit")
}

// BenchmarkSessionCacheMemory reports the heap one cached session costs
// (B/session): 100 000 sessions of one app, each on its own key, with ids,
// token hashes and keys of the real lengths.
//
//	go test ./internal/store -run '^$' -bench SessionCacheMemory -benchtime 1x
func BenchmarkSessionCacheMemory(b *testing.B) {
	const n = 100_000
	for range b.N {
		c := newSessionCache()
		c.max = n
		c.on.Store(true)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			tk := fmt.Sprintf("%064x", i) // hex SHA-256, as HashToken gives; the cache keeps it
			r := &heartbeatRow{}
			r.v.Session.ID = fmt.Sprintf("%032x", i)
			r.v.Session.AppID = fmt.Sprintf("%s-4f1e-8a2b-0123456789ab", "e2ad14a6-e3f7") // a new copy per row, as the driver gives
			r.keyID = sql.NullInt64{Int64: int64(i + 1), Valid: true}
			r.status = sql.NullString{String: "active", Valid: true}
			r.lk = sql.NullString{String: fmt.Sprintf("KW-%05d-%05d-%05d", i, i, i), Valid: true}
			r.expires = sql.NullInt64{Int64: 1_800_000_000_000, Valid: true}
			r.seen = 1_790_000_000_000
			c.put(tk, r, c.generation())
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := c.count.Load(); got != n {
			b.Fatalf("%d cached, want %d", got, n)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/session")
		// What the cached sessions add to a collection: its time with
		// them, less its time once they are gone.
		b.ReportMetric(float64(gcTime()), "gc-ns")
		runtime.KeepAlive(c)
		c = nil
		b.ReportMetric(float64(gcTime()), "gc-ns-empty")
	}
}

// gcTime is the least time of a few full collections.
func gcTime() time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := time.Now()
		runtime.GC()
		best = min(best, time.Since(t0))
	}
	return best
}

// Nothing a cached session is kept as holds a pointer, so collections do
// not scan the cache (see sessionCache): only booleans, numbers and byte
// arrays.
func TestSessionCacheEntriesHoldNoPointers(t *testing.T) {
	t.Parallel()
	for _, ty := range []reflect.Type{reflect.TypeFor[tokenKey](), reflect.TypeFor[cachedSession](), reflect.TypeFor[ownerKey]()} {
		for i := range ty.NumField() {
			f := ty.Field(i)
			switch k := f.Type.Kind(); {
			case k == reflect.Bool, k >= reflect.Int && k <= reflect.Uint64:
			case k == reflect.Array && f.Type.Elem().Kind() == reflect.Uint8:
			default:
				t.Errorf("%s.%s is a %s", ty.Name(), f.Name, f.Type)
			}
		}
	}
}
