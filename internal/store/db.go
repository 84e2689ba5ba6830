// Package store is all of keyward's SQL: one implementation over database/sql
// for SQLite (modernc, pure Go) and PostgreSQL (pgx), embedded migrations per
// engine, and driver errors translated to apperr sentinels at this boundary.
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/seal"
)

//go:embed migrations
var migrations embed.FS

// Engine names a database engine.
type Engine string

// Supported engines.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// DB is keyward's database. On SQLite it keeps one writer connection, owned
// by a goroutine that commits queued write transactions in batches (group
// commit, commit.go), and a pool of readers; on PostgreSQL a pool of write
// connections and a pool of read connections.
type DB struct {
	engine Engine
	write  *sql.DB
	read   *sql.DB
	now    func() time.Time
	// lockPath is SQLite's migration lock file (see sqliteMigrateLock).
	lockPath string

	// hot caches prepared statements of the hot-path reads (query → *sql.Stmt),
	// so SQLite does not parse them on every heartbeat.
	hot sync.Map
	// lite is SQLite's heartbeat read outside database/sql (hotread.go);
	// nil on PostgreSQL.
	lite *liteReads
	// sessions is the in-memory heartbeat view (sessioncache.go; on
	// PostgreSQL kept by notifications, pgcache.go), on once CacheSessions
	// is called.
	sessions *sessionCache
	// pgConfig is PostgreSQL's write-pool configuration, which the
	// session cache's listener (pgcache.go) connects with; listener runs
	// once CacheSessions is called.
	pgConfig *pgx.ConnConfig
	listenMu sync.Mutex
	listener *pgListener

	// onEvents is called after a commit that wrote events (see OnEvents).
	onEvents atomic.Pointer[func()]

	// writer is SQLite's one writer, which commits write units in batches
	// (commit.go); nil on PostgreSQL.
	writer *writer
	// claims holds the envelope replay claims of this process not yet
	// committed (SQLite; see claimQueued).
	claims sync.Map

	// writeFail is the last write the database could not take (full,
	// read-only, I/O error, unreachable), kept until a write commits; the
	// readiness check reads it (see Writable). probeMu serialises the write
	// probes, probedAt is the last one's time.
	writeFail atomic.Pointer[writeFailure]
	probeMu   sync.Mutex
	probedAt  time.Time

	// keys seal and open the secrets stored at rest (see secrets.go); nil
	// refuses to write a secret and opens only legacy plaintext.
	keys *seal.Keyring
	log  *slog.Logger
}

// writeFailure is a failed write and when it failed.
type writeFailure struct {
	err error
	at  time.Time
}

// Options configure Open.
type Options struct {
	// DataDir holds keyward.db when URL is empty.
	DataDir string
	// URL selects PostgreSQL when it starts with postgres:// or postgresql://.
	URL string
	// ReadConns is the SQLite reader pool size (default 8).
	ReadConns int
	// Synchronous is SQLite's synchronous setting: "full" (the default: a
	// commit acknowledged is durable across power loss) or "normal" (a
	// power cut may lose the last commits; a kill -9 loses nothing).
	Synchronous string
	// Now is the clock of the write-failure bookkeeping (default time.Now).
	Now func() time.Time
	// Keys seal and open the secrets stored at rest (the key file of
	// --secret-key-file). Tools that only copy rows (move, backup) may
	// leave it nil: sealed values travel as opaque text.
	Keys *seal.Keyring
	// Log receives what background work of the store has to report: on
	// PostgreSQL, the session cache's listener losing its connection and
	// getting it back (default: discarded).
	Log *slog.Logger
}

// Open connects to the database Options select. It does not migrate.
func Open(ctx context.Context, o Options) (*DB, error) {
	var (
		db  *DB
		err error
	)
	switch {
	case strings.HasPrefix(o.URL, "postgres://") || strings.HasPrefix(o.URL, "postgresql://"):
		db, err = openPostgres(ctx, o.URL)
	case o.URL != "":
		return nil, fmt.Errorf("database url: only postgres:// URLs are supported (leave it empty for SQLite under the data directory)")
	default:
		db, err = openSQLite(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if o.Now != nil {
		db.now = o.Now
	}
	db.keys = o.Keys
	db.log = o.Log
	if db.log == nil {
		db.log = slog.New(slog.DiscardHandler)
	}
	return db, nil
}

func openSQLite(ctx context.Context, o Options) (*DB, error) {
	if err := PrepareDataDir(o.DataDir); err != nil {
		return nil, err
	}
	path := filepath.Join(o.DataDir, "keyward.db")
	// busy_timeout comes before journal_mode so that switching to WAL waits
	// for other processes instead of failing.
	syncMode := "FULL"
	switch strings.ToLower(o.Synchronous) {
	case "", "full":
	case "normal":
		syncMode = "NORMAL"
	default:
		return nil, fmt.Errorf("sqlite synchronous %q: want full or normal", o.Synchronous)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(" + syncMode + ")&_txlock=immediate"
	cache := newSessionCache()
	// The write connection's page cache holds a flush's dirty pages and
	// the pages it looks sessions up in (64 MiB: a flush of 8 000 sessions,
	// a million sessions' heartbeats every 250 ms, dirties up to 8 000
	// pages), so the flush neither re-reads pages from the file nor spills
	// them into the WAL before its commit. The WAL is checkpointed every
	// 10 000 pages (40 MiB) rather than SQLite's 1 000, so a page that
	// every flush rewrites is copied into the database once per several
	// flushes, not after each. Together a quarter of the flush's cost
	// (BenchmarkTouchSessionsCached: 50 -> 38 ms). Its sub-journal (the
	// pages a unit's savepoint or a many-row statement may roll back) is
	// kept in memory, temp_store(2): SQLite would spill one over 64 KiB to
	// a temporary file, opened per transaction and written a page per
	// system call, which cost the flush an eighth of its time (66 -> 58 ms
	// on that benchmark). The memory is a copy of each page a unit changes
	// that was in the database before it: a few MiB for a flush, more for
	// the rare unit that rewrites much of a table (deleting a large app).
	w := sql.OpenDB(liteConnector{writeDriver(cache), dsn + "&_pragma=cache_size(-65536)&_pragma=wal_autocheckpoint(10000)&_pragma=temp_store(2)"})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	n := o.ReadConns
	if n <= 0 {
		n = 8
	}
	readDSN := dsn + "&_pragma=query_only(1)&_pragma=mmap_size(268435456)"
	r, err := sql.Open("sqlite", readDSN)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	db := &DB{engine: SQLite, write: w, read: r, lite: newLiteReads(r.Driver(), readDSN, hotReadConns(n, runtime.GOMAXPROCS(0))), now: time.Now,
		lockPath: filepath.Join(o.DataDir, "migrate.lock"), sessions: cache}
	db.writer = startWriter(db)
	return db, nil
}

// hotReadConns sizes the pool of the heartbeat's session read (liteReads)
// by the cores keyward may use (procs, GOMAXPROCS), at least 2 and at most
// the read pool's size n. The read is CPU-bound while the database is in
// the OS page cache, and each SQLite read connection keeps its own page
// cache and memory map, which it drops at its first read after any commit
// (a WAL reader cannot tell which pages changed) and then rebuilds page by
// page: more connections than cores only multiply that rebuild. At 100 000
// sessions on two cores, heartbeats served went from 0.36 of the echo with
// 8 connections to 0.42 with 4 and 0.50 with 2 (docs/performance.md). Two
// at least, so one read waiting for the disk does not stop the others.
func hotReadConns(n, procs int) int {
	return min(n, max(2, procs))
}

// PostgreSQL pool sizes per process: write transactions and reads outside
// a transaction have pools of their own, so a burst of logins (every client
// signing in again after an outage) holding every write connection does not
// queue the heartbeats' reads behind it. Several processes share the
// server's max_connections (PostgreSQL's default is 100): 48 each leaves
// room for two.
const (
	pgWriteConns = 32
	pgReadConns  = 16
)

func openPostgres(ctx context.Context, url string) (*DB, error) {
	cache := newSessionCache()
	wcfg, rcfg, err := pgConfigs(url, cache)
	if err != nil {
		return nil, err
	}
	open := func(cfg *pgx.ConnConfig, n int, opts ...stdlib.OptionOpenDB) (*sql.DB, error) {
		db := stdlib.OpenDB(*cfg, opts...)
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		db.SetConnMaxIdleTime(5 * time.Minute)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("connect to postgres: %w", err)
		}
		return db, nil
	}
	// The write connections ask for the session cache triggers' notices
	// (pgcache.go). A SET after connecting rather than a startup
	// parameter: connection poolers refuse startup parameters they do not
	// know.
	w, err := open(wcfg, pgWriteConns, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET keyward.cache_notice = 'on'")
		return err
	}))
	if err != nil {
		return nil, err
	}
	r, err := open(rcfg, pgReadConns)
	if err != nil {
		w.Close()
		return nil, err
	}
	return &DB{engine: Postgres, write: w, read: r, now: time.Now, sessions: cache, pgConfig: wcfg}, nil
}

// Engine reports which engine db runs on.
func (db *DB) Engine() Engine { return db.engine }

// hotRow runs a hot-path read through a cached prepared statement on the
// reader pool. q uses ? placeholders.
//
// On SQLite a request that is still live reads under a context that cannot
// be cancelled: the read is one indexed row in this process (microseconds,
// no network to hang on), and a cancellable context costs each read two
// watcher goroutines — database/sql's and the driver's — and about ten
// allocations (issue 21: a heartbeat's allocations). A request already
// cancelled keeps its context, so it is refused without reading.
// PostgreSQL reads keep the caller's context: there the context is what
// bounds a query a broken connection would otherwise hold.
func (db *DB) hotRow(ctx context.Context, q string, args ...any) *sql.Row {
	if db.engine == SQLite && ctx.Err() == nil {
		ctx = context.Background() // database/sql and the driver use a context only to stop on
	}
	if st, ok := db.hot.Load(q); ok {
		return st.(*sql.Stmt).QueryRowContext(ctx, args...)
	}
	st, err := db.read.PrepareContext(ctx, db.rebind(q))
	if err != nil {
		// Let the plain query report the error through Row.Scan.
		return db.read.QueryRowContext(ctx, db.rebind(q), args...)
	}
	if prev, loaded := db.hot.LoadOrStore(q, st); loaded {
		st.Close()
		st = prev.(*sql.Stmt)
	}
	return st.QueryRowContext(ctx, args...)
}

// Close finishes the queued writes and closes every connection.
func (db *DB) Close() error {
	if db.writer != nil {
		db.writer.stop()
	}
	db.stopListening()
	db.hot.Range(func(q, st any) bool {
		st.(*sql.Stmt).Close()
		db.hot.Delete(q)
		return true
	})
	if db.lite != nil {
		db.lite.Close()
	}
	if db.sessions != nil {
		db.sessions.release()
	}
	return errors.Join(db.write.Close(), db.read.Close())
}

// Pools names the connection pools, for their statistics (sql.DB.Stats):
// "write" (write transactions) and "read" on both engines.
func (db *DB) Pools() map[string]*sql.DB {
	return map[string]*sql.DB{"write": db.write, "read": db.read}
}

// LiveSessions counts the open sessions of every app.
func (db *DB) LiveSessions(ctx context.Context) (int64, error) {
	var n int64
	err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL`).Scan(&n)
	return n, translate(err)
}

// WebhookBacklog counts the webhook deliveries waiting to be sent (or
// retried) and the paused destinations.
func (db *DB) WebhookBacklog(ctx context.Context) (pending, paused int64, err error) {
	err = db.read.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'),
		(SELECT COUNT(*) FROM webhook_destinations WHERE paused_at IS NOT NULL)`).Scan(&pending, &paused)
	return pending, paused, translate(err)
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// writeProbeEvery is how often Writable retries the database with a write
// while a failed write stands.
const writeProbeEvery = 5 * time.Second

// probeLease is the job_leases row the write probe upserts: a name no job
// has (job names have no colon), so no lease is ever taken by it.
const probeLease = "keyward:write-probe"

// probeFill is the probe's transient value: 12 KiB, three SQLite pages.
var probeFill = strings.Repeat("write-probe ", 1024)

// Writable is the readiness check of the write path. It costs nothing
// while writes succeed: it fails only while the last write the database
// could not take (noteWrite) stands. Then, at most once per
// writeProbeEvery, it tries a real write — an upsert of one row committed —
// and a success (or any other write committing) clears the failure, so
// readiness recovers by itself once the disk has room again, the file
// system is writable or the primary accepts writes.
func (db *DB) Writable(ctx context.Context) error {
	if db.writeFail.Load() == nil {
		return nil
	}
	db.probeMu.Lock()
	defer db.probeMu.Unlock()
	f := db.writeFail.Load()
	if f == nil {
		return nil // a write committed meanwhile
	}
	now := db.now()
	last := f.at
	if db.probedAt.After(last) {
		last = db.probedAt
	}
	if now.Sub(last) < writeProbeEvery {
		return fmt.Errorf("the last write failed at %s: %w", f.at.UTC().Format(time.RFC3339), f.err)
	}
	db.probedAt = now
	err := db.tx(ctx, func(t *wtx) error {
		// The row is written with a value of a few pages first, so the
		// probe needs room to grow, not only a page to rewrite: a database
		// that is full (SQLite at its size limit with no free page) fails
		// it. It is left small.
		_, err := t.ExecContext(ctx, db.rebind(`INSERT INTO job_leases (name, holder, until) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until`), probeLease, probeFill, ms(now))
		if err == nil {
			_, err = t.ExecContext(ctx, db.rebind(`UPDATE job_leases SET holder = ? WHERE name = ?`), "readiness", probeLease)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write probe (the last write failed at %s): %w", f.at.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// noteWrite records the outcome of a write: a failure of the database
// itself is remembered (with db.now), a success clears what was. Refusals
// that are about the data (a conflict, a missing row), a cancelled request
// or a domain error are not failures of the database and change nothing.
// The success path is one atomic load.
func (db *DB) noteWrite(err error) {
	if err == nil {
		if db.writeFail.Load() != nil {
			db.writeFail.Store(nil)
		}
		return
	}
	if storageFailure(err) {
		db.writeFail.Store(&writeFailure{err: err, at: db.now()})
	}
}

// storageFailure reports whether err says the database cannot take writes:
// SQLite's full, read-only, I/O, cannot-open and corruption errors;
// PostgreSQL's insufficient resources (disk full, out of memory or
// connections), system and internal errors, a read-only transaction (a
// standby or default_transaction_read_only), a revoked privilege, an
// administrator shutdown and connection failures.
func storageFailure(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case strings.HasPrefix(pg.Code, "53"), strings.HasPrefix(pg.Code, "58"), strings.HasPrefix(pg.Code, "XX"),
			strings.HasPrefix(pg.Code, "08"), strings.HasPrefix(pg.Code, "57P"):
			return true
		}
		return pg.Code == "25006" || pg.Code == "42501"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

func (db *DB) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations/"+string(db.engine))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if db.engine == SQLite {
		opts = append(opts, goose.WithSessionLocker(&sqliteMigrateLock{path: db.lockPath}))
	} else {
		dialect = goose.DialectPostgres
		// Several keyward processes may start at once: one migrates, the others wait.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, db.write, sub, opts...)
}

// MigrationsDigest is a SHA-256 over every embedded migration of both
// engines: test harnesses name a migrated template database after it, so a
// changed migration makes a new one.
func MigrationsDigest() string {
	h := sha256.New()
	fs.WalkDir(migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrations.ReadFile(path)
		h.Write([]byte(path + "\x00"))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))
}

// Migrate applies every pending migration and returns the schema version.
func (db *DB) Migrate(ctx context.Context) (int64, error) {
	if c := db.sessions; c != nil && c.on.Load() {
		// A migration may rebuild a table the cache's triggers are on
		// (and drop them with it): CacheSessions turns it on again.
		c.on.Store(false)
		c.triggers.Store(false)
		c.clear()
	}
	p, err := db.provider()
	if err != nil {
		return 0, err
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return p.GetDBVersion(ctx)
}

// CheckSchema returns an error unless the schema is exactly at the version
// this binary knows: older means migrations are pending, newer means the
// binary is older than the database.
func (db *DB) CheckSchema(ctx context.Context) error {
	p, err := db.provider()
	if err != nil {
		return err
	}
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return err
	}
	switch {
	case cur < target:
		return fmt.Errorf("database schema is at version %d, this keyward needs %d: run keyward migrate", cur, target)
	case cur > target:
		return fmt.Errorf("database schema is at version %d, newer than this keyward (%d): run a newer keyward", cur, target)
	}
	return nil
}

// SchemaCurrent is CheckSchema for frequent callers (the readiness probe):
// it reads the recorded version on the reader pool, never holding SQLite's
// one writer connection, and compares it with the newest embedded migration.
func (db *DB) SchemaCurrent(ctx context.Context) error {
	target, err := db.targetVersion()
	if err != nil {
		return err
	}
	var cur sql.NullInt64
	if err := db.read.QueryRowContext(ctx, `SELECT MAX(version_id) FROM goose_db_version`).Scan(&cur); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case cur.Int64 < target:
		return fmt.Errorf("database schema is at version %d, this keyward needs %d: run keyward migrate", cur.Int64, target)
	case cur.Int64 > target:
		return fmt.Errorf("database schema is at version %d, newer than this keyward (%d): run a newer keyward", cur.Int64, target)
	}
	return nil
}

// targetVersion is the number of the newest embedded migration of db's engine.
func (db *DB) targetVersion() (int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations/"+string(db.engine))
	if err != nil {
		return 0, err
	}
	var max int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if n, err := strconv.ParseInt(num, 10, 64); ok && err == nil && n > max {
			max = n
		}
	}
	return max, nil
}

// rebind turns ? placeholders into $1, $2 … for PostgreSQL. Queries in this
// package never contain a literal ? inside strings.
func (db *DB) rebind(q string) string {
	if db.engine != Postgres {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// forUpdate is the row-locking suffix of the engine (SQLite's single writer
// already serialises write transactions).
func (db *DB) forUpdate() string {
	if db.engine == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// queryer is what *sql.DB and *sql.Tx share.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// exec runs one write statement (q with ? placeholders) as a write
// transaction of its own, remembering a failure of the database for
// readiness. On SQLite it is a unit of the writer's batches like any
// other (so it shares their commit instead of taking the write connection
// for an fsync of its own).
func (db *DB) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if db.writer == nil {
		var res sql.Result
		err := db.withConn(ctx, func(c *sql.Conn) (err error) {
			res, err = c.ExecContext(ctx, db.rebind(q), args...)
			return err
		})
		db.noteWrite(err)
		return res, err
	}
	var res sql.Result
	err := db.tx(ctx, func(t *wtx) (err error) {
		res, err = t.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}

// translate maps driver errors to apperr sentinels; others pass unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.ErrNotFound
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" {
		return fmt.Errorf("%w: %s", apperr.ErrConflict, pg.ConstraintName)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %s", apperr.ErrConflict, se.Error())
		}
	}
	return err
}

// Times are stored as Unix milliseconds (BIGINT) on both engines, so the same
// code and the same move tool serve both.
func ms(t time.Time) int64 { return t.UnixMilli() }

func optMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}
