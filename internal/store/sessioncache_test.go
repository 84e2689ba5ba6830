package store

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
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

// cacheEngines runs f as a subtest on each engine: SQLite, and PostgreSQL
// when KEYWARD_TEST_DATABASE_URL names a server (else that half says it
// did not run).
func cacheEngines(t *testing.T, f func(t *testing.T, e Engine)) {
	for _, e := range []Engine{SQLite, Postgres} {
		t.Run(string(e), func(t *testing.T) {
			if e == Postgres && os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
				t.Skip("KEYWARD_TEST_DATABASE_URL is not set: the PostgreSQL half did not run")
			}
			t.Parallel()
			f(t, e)
		})
	}
}

// freshOptions are the Options of a new, empty database on engine e: a
// temporary directory, or a PostgreSQL database of its own (dropped when t
// ends) on the server KEYWARD_TEST_DATABASE_URL names.
func freshOptions(t *testing.T, e Engine) Options {
	t.Helper()
	if e == SQLite {
		return Options{DataDir: t.TempDir()}
	}
	base := os.Getenv("KEYWARD_TEST_DATABASE_URL")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	crand.Read(b)
	name := "kw_cache_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			admin.Close()
		}
	})
	u.Path = "/" + name
	return Options{URL: u.String(), DataDir: t.TempDir()}
}

// freshDB opens a new, empty database on engine e (freshOptions, also
// returned) and migrates it; it is closed when t ends.
func freshDB(t *testing.T, e Engine) (*DB, Options) {
	t.Helper()
	ctx := context.Background()
	o := freshOptions(t, e)
	db, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db, o
}

// cachedDB is a migrated database on engine e with the session cache on,
// app "app", keys 1..keys, accounts 1..accounts, and sessions "tok-<i>":
// the first of them on keys, then some on accounts, then some on both.
func cachedDB(t *testing.T, e Engine, keys, accounts, sessions int) *DB {
	t.Helper()
	ctx := context.Background()
	db, _ := freshDB(t, e)
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
	// On PostgreSQL this process's own writes reach the cache twice: by
	// their notices, before each write returns, and by their notifications,
	// a moment later. The tests hear only the first, so that what they
	// check does not depend on when the second arrives: the notices alone
	// must keep the cache exact. The tests of other processes' writes turn
	// the notifications back on.
	db.sessions.deaf.Store(true)
	if err := db.CacheSessions(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	// On PostgreSQL the cache turns on once its listener is heard from.
	if err := db.CheckForeignWrites(ctx); err != nil {
		t.Fatal(err)
	}
	if !db.sessions.on.Load() {
		t.Fatal("the session cache is off")
	}
	return db
}

// exec runs one statement (? placeholders) in a write transaction of db.
func exec(t *testing.T, db *DB, q string, args ...any) {
	t.Helper()
	if err := db.tx(context.Background(), func(tx *wtx) error {
		_, err := tx.ExecContext(context.Background(), db.rebind(q), args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// views reads token's heartbeat view through the cache and straight from
// the database, and checks that the first says it came from the cache
// exactly when the cache holds the session.
func views(t *testing.T, db *DB, token string) (cached, read *license.HeartbeatView) {
	t.Helper()
	ls, ctx := licenseStore{db}, context.Background()
	get := func(f func(context.Context, string) (*license.HeartbeatView, error)) *license.HeartbeatView {
		v, err := f(ctx, token)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil
		} else if err != nil {
			t.Fatalf("HeartbeatView(%s): %v", token, err)
		}
		return v
	}
	_, held := db.sessions.get(token)
	cached = get(ls.HeartbeatView)
	read = get(ls.FreshHeartbeatView)
	if cached != nil {
		if cached.Cached != held {
			t.Fatalf("HeartbeatView(%s): Cached %v, the cache holding it %v", token, cached.Cached, held)
		}
		cached.Cached = false // compared with the read below
	}
	if read != nil && read.Cached {
		t.Fatalf("FreshHeartbeatView(%s) says it came from the cache", token)
	}
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
	if got := db.SessionCacheStatus().Entries; got != n {
		t.Fatalf("%s: %d sessions cached, want %d", when, got, n)
	}
}

// Whatever is written, the cached view of every session is what a read of
// the database returns: a random walk over every column the view depends
// on, the columns it does not, the heartbeat flush, deletions, and writes
// that roll back, each followed by a read of every session.
func TestSessionCacheAgreesWithTheDatabase(t *testing.T) {
	cacheEngines(t, testSessionCacheAgrees)
}

func testSessionCacheAgrees(t *testing.T, e Engine) {
	const keys, accounts, sessions = 6, 3, 25
	db := cachedDB(t, e, keys, accounts, sessions)
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
	// cacheable: reads of sessions the cache holds once read (live, with
	// a key or account); hits: those it already held.
	cacheable, hits := 0, 0
	checkAll := func(step int, what string) {
		t.Helper()
		for _, tk := range tokens {
			_, held := db.sessions.get(tk)
			c, r := views(t, db, tk)
			if _, ok := db.sessions.get(tk); ok {
				cacheable++
				if held {
					hits++
				}
			}
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
			var touch []license.Touch
			for range 1 + rng.IntN(8) {
				tk := tok()
				var key int64
				if err := db.read.QueryRowContext(ctx, db.rebind(`SELECT seen_key FROM sessions WHERE token_hash = ? AND seen_key IS NOT NULL`), tk).Scan(&key); err == nil {
					touch = append(touch, license.Touch{SeenKey: key, TokenHash: tk, At: seen})
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
	if hits*3 < cacheable*2 {
		t.Fatalf("the cache answered %d of %d reads of live sessions: it is not in use", hits, cacheable)
	}
	t.Logf("%d reads of live sessions, %d from the cache", cacheable, hits)
}

// A read that started before a change and fills the cache after the
// change committed is not kept: the next read sees the change.
func TestSessionCacheFillRacingAWrite(t *testing.T) {
	cacheEngines(t, func(t *testing.T, e Engine) {
		db := cachedDB(t, e, 1, 0, 1)
		c := db.sessions
		gen := c.generation() // the read starts...
		r := &heartbeatRow{}
		if err := db.readHeartbeatRow(context.Background(), "tok-0", r); err != nil {
			t.Fatal(err)
		}
		exec(t, db, `UPDATE license_keys SET status = 'banned' WHERE id = 1`) // ...a ban commits...
		c.put("tok-0", r, gen)                                                // ...and the read's fill comes last
		agrees(t, db, "tok-0", license.StatusBanned, "after the ban")
	})
}

// A change made by another process (here a second handle on the same
// file) reaches none of this process's triggers; the writer's check of
// PRAGMA data_version (every second, CheckForeignWrites here) empties the
// cache.
func TestSessionCacheSeesOtherProcesses(t *testing.T) {
	t.Parallel()
	db := cachedDB(t, SQLite, 1, 0, 1)
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
	db := cachedDB(t, SQLite, 1, 0, 1)
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
	cacheEngines(t, testSessionCacheIsBounded)
}

func testSessionCacheIsBounded(t *testing.T, e Engine) {
	db := cachedDB(t, e, 2, 0, 5)
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
	cacheEngines(t, testFillBetweenAChangeAndItsCommit)
}

func testFillBetweenAChangeAndItsCommit(t *testing.T, e Engine) {
	db := cachedDB(t, e, 1, 0, 1)
	ctx := context.Background()
	ls := licenseStore{db}
	err := db.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE license_keys SET status = 'banned' WHERE id = 1`); err != nil {
			return err
		}
		v, err := ls.HeartbeatView(ctx, "tok-0") // not committed yet: the old state, filled again
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
			tk, r := cacheRow(i)
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
// cacheRow is the i-th of a fleet's sessions as HeartbeatView reads it:
// its token hash and its row.
func cacheRow(i int) (string, *heartbeatRow) {
	tk := fmt.Sprintf("%064x", i) // hex SHA-256, as HashToken gives; the cache keeps it
	r := &heartbeatRow{}
	r.v.Session.ID = fmt.Sprintf("%032x", i)
	r.v.Session.AppID = fmt.Sprintf("%s-4f1e-8a2b-0123456789ab", "e2ad14a6-e3f7") // a new copy per row, as the driver gives
	r.keyID = sql.NullInt64{Int64: int64(i + 1), Valid: true}
	r.status = sql.NullString{String: "active", Valid: true}
	r.lk = sql.NullString{String: fmt.Sprintf("KW-%05d-%05d-%05d", i, i, i), Valid: true}
	r.expires = sql.NullInt64{Int64: 1_800_000_000_000, Valid: true}
	r.seen = 1_790_000_000_000
	return tk, r
}

// The cache keeps no heap object per session. Go stores a map value larger
// than 128 bytes out of line, one object per entry behind a pointer that
// every collection follows, and a cachedSession is larger than that; the
// shards keep entries in a slice instead (cacheShard). So filling the
// cache allocates only when a shard's map or slice grows.
func TestSessionCacheFillsWithoutAnObjectPerSession(t *testing.T) {
	const n = 20_000
	c := newSessionCache()
	c.max = 2 * n
	c.on.Store(true)
	tokens, rows := make([]string, 2*n), make([]*heartbeatRow, 2*n)
	for i := range tokens {
		tokens[i], rows[i] = cacheRow(i)
	}
	for i := range n {
		c.put(tokens[i], rows[i], c.generation())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := n; i < 2*n; i++ {
		c.put(tokens[i], rows[i], c.generation())
	}
	runtime.ReadMemStats(&after)
	if got := c.count.Load(); got != 2*n {
		t.Fatalf("%d cached, want %d", got, 2*n)
	}
	if objs := after.Mallocs - before.Mallocs; objs > n/10 {
		t.Errorf("caching %d more sessions made %d heap objects, want at most %d (one per session means the entries are stored out of line)", n, objs, n/10)
	}
	// A session removed and filled again reuses its slot.
	for i := range n {
		c.apply(invalidation{kind: 's', token: tokens[i]})
	}
	runtime.ReadMemStats(&before)
	for i := range n {
		c.put(tokens[i], rows[i], c.generation())
	}
	runtime.ReadMemStats(&after)
	if objs := after.Mallocs - before.Mallocs; objs > n/10 {
		t.Errorf("filling %d removed sessions again made %d heap objects, want at most %d", n, objs, n/10)
	}
	for i := range 2 * n {
		e, ok := c.get(tokens[i])
		if !ok || string(e.id[:e.idLen]) != rows[i].v.Session.ID || string(e.key[:e.keyLen]) != rows[i].lk.String {
			t.Fatalf("session %d: cached %v (%q, %q), want its own entry", i, ok, e.id[:e.idLen], e.key[:e.keyLen])
		}
	}
}

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

// A key's change drops its owner's version, and the slot that held it is
// given to the next owner filled. An entry of the first key names that
// slot still: it must find the new owner's version there, not its own, and
// stay invalid; an entry of the new owner is valid.
func TestSessionCacheOwnerSlotReused(t *testing.T) {
	c := newSessionCache()
	c.max = 10
	c.on.Store(true)
	tk1, r1 := cacheRow(1) // key 2
	tk2, r2 := cacheRow(2) // key 3
	c.put(tk1, r1, c.generation())
	e1, ok := c.get(tk1)
	if !ok {
		t.Fatal("the first session is not cached")
	}
	c.apply(invalidation{kind: 'k', id: r1.keyID.Int64})
	c.put(tk2, r2, c.generation())
	e2, ok := c.get(tk2)
	if !ok {
		t.Fatal("the second session is not cached")
	}
	if e2.slot != e1.slot {
		t.Fatalf("the second key got slot %d, not the freed slot %d: the test does not reach reuse", e2.slot, e1.slot)
	}
	if _, ok := c.get(tk1); ok {
		t.Fatal("the first session is valid after its key changed: it read the slot's new owner's version")
	}
	c.reset(true)
	if _, ok := c.get(tk2); ok {
		t.Fatal("a session is valid after the cache was emptied")
	}
}

// BenchmarkSessionCacheGet times a heartbeat's read of the cache holding
// 100 000 sessions, each on its own key, read in an order that jumps
// across the whole cache as a fleet's heartbeats do (so the maps' and
// entries' memory is mostly out of the processor's caches).
//
//	go test ./internal/store -run '^$' -bench SessionCacheGet
func BenchmarkSessionCacheGet(b *testing.B) {
	const n = 100_000
	c := newSessionCache()
	c.max = n
	c.on.Store(true)
	tokens := make([]string, n)
	for i := range n {
		tk, r := cacheRow(i)
		c.put(tk, r, c.generation())
		tokens[i] = tk
	}
	i := 0
	for b.Loop() {
		i = (i + 7919) % n // a prime stride: every session, far apart
		if _, ok := c.get(tokens[i]); !ok {
			b.Fatalf("session %d not cached", i)
		}
	}
}
