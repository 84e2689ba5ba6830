package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"

	"github.com/keyward/keyward/internal/license"
)

// sessionCache is SQLite's in-memory copy of what the heartbeat reads
// (issue 21, point 4): for each live session the columns HeartbeatView
// returns, so a heartbeat does not ask SQLite at all in the common case.
// The read it saves was a third of a heartbeat's CPU at 100 000 sessions,
// most of it SQLite rebuilding its page map after each commit
// (docs/performance.md, "The session cache").
//
// It is exact, not a TTL: HeartbeatView returns from it only what a read
// of the database would return at that moment. SQLite has one write
// connection in this process (the writer, commit.go), and on it temporary
// triggers (sessionTriggers) call back into the cache for every row change
// the view depends on, whatever code made it:
//   - a session's identity, end or token (UPDATE OF those columns, DELETE):
//     that session's entry goes;
//   - a key's status, expiry or string, or an account's status or expiry
//     (UPDATE OF, DELETE): every entry of that key or account goes, through
//     the owner they share (cachedOwner);
//   - a session's last_seen_at (the heartbeat flush): the entry's time
//     moves forward, since the flush writes every touched session and
//     dropping them would empty the cache every few seconds.
//
// An invalidation is applied when the trigger fires and again after the
// batch that ran it commits or rolls back (settle), and each bumps gen: a
// fill records gen before its read and is not cached if gen moved, so a
// read of the state before a change, racing it, is never kept past that
// change's commit.
//
// Writes by another process sharing the database file (a second keyward
// serve, a keyward import run beside it) reach no trigger of ours. The
// writer reads PRAGMA data_version at most a second apart (it changes only
// when another connection committed) and empties the cache when it moved,
// so such a change is seen within about a second, as for apps (AppCacheTTL).
//
// Only live sessions whose key (or, with no key, account) exists are
// cached, so a row inserted later can never change a cached view (no
// INSERT trigger is needed). At most max sessions are kept; past that a
// heartbeat reads SQLite as before.
type sessionCache struct {
	max   int64
	count atomic.Int64
	// on: HeartbeatView uses the cache (CacheSessions); triggers: the
	// write connection must carry sessionTriggers (a new connection gets
	// them from the driver's connection hook).
	on, triggers atomic.Bool
	gen          atomic.Uint64
	fills        atomic.Int64

	seed   maphash.Seed
	shards [cacheShards]cacheShard

	// mu orders fills (put) with invalidations; the owners maps are under it.
	mu       sync.Mutex
	keys     map[int64]*cachedOwner
	accounts map[int64]*cachedOwner
	// names interns the app ids and statuses the entries hold: a few
	// distinct values shared by every session, so each is kept once.
	names map[string]string

	// pending are the invalidations since the last settle.
	pmu     sync.Mutex
	pending []invalidation

	// version is the write connection's PRAGMA data_version when last
	// read, versionRead whether it was (the writer goroutine's; see
	// readVersion).
	version     int64
	versionRead bool
}

const cacheShards = 64

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]*cachedSession
	_  [40]byte // a shard to a cache line
}

// cachedSession is one session's columns of heartbeatViewQuery; owner
// holds its key's (or account's) columns.
type cachedSession struct {
	id, appID        string
	keyID, accountID int64
	hasKey, hasAcct  bool
	seen             atomic.Int64 // last_seen_at, ms
	dead             atomic.Bool
	owner            *cachedOwner
}

// cachedOwner is a key's or an account's columns of heartbeatViewQuery,
// shared by its sessions' entries; dead once any of them changed.
type cachedOwner struct {
	status     string
	expires    int64
	hasExpires bool
	licenseKey string
	dead       atomic.Bool
}

// invalidation is one trigger's call: kind 's' (a session, by token hash),
// 'k' (a key, by id) or 'a' (an account, by id).
type invalidation struct {
	kind  byte
	token string
	id    int64
}

func newSessionCache() *sessionCache {
	c := &sessionCache{seed: maphash.MakeSeed(), keys: map[int64]*cachedOwner{}, accounts: map[int64]*cachedOwner{},
		names: map[string]string{}}
	for i := range c.shards {
		c.shards[i].m = map[string]*cachedSession{}
	}
	return c
}

func (c *sessionCache) shard(token string) *cacheShard {
	return &c.shards[maphash.String(c.seed, token)%cacheShards]
}

// get returns token's entry while it is valid, else nil.
func (c *sessionCache) get(token string) *cachedSession {
	if !c.on.Load() {
		return nil
	}
	sh := c.shard(token)
	sh.mu.RLock()
	e := sh.m[token]
	sh.mu.RUnlock()
	if e == nil || e.dead.Load() || e.owner.dead.Load() {
		return nil
	}
	return e
}

// generation is what a fill records before it reads (see put).
func (c *sessionCache) generation() uint64 { return c.gen.Load() }

// put keeps the view r read for token, unless the cache changed since gen
// was taken (an invalidation may have been for this very row), the view
// is not one the cache keeps, or the cache is full.
func (c *sessionCache) put(token string, r *heartbeatRow, gen uint64) {
	if !c.on.Load() || r.ended.Valid || !r.status.Valid {
		return
	}
	e := &cachedSession{id: r.v.Session.ID}
	var ownerID int64
	switch {
	case r.keyID.Valid:
		if !r.lk.Valid {
			return // the status is the account's: the key row is missing
		}
		e.keyID, e.hasKey, ownerID = r.keyID.Int64, true, r.keyID.Int64
		if r.accountID.Valid {
			e.accountID, e.hasAcct = r.accountID.Int64, true
		}
	case r.accountID.Valid:
		e.accountID, e.hasAcct, ownerID = r.accountID.Int64, true, r.accountID.Int64
	default:
		return
	}
	e.seen.Store(r.seen)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen || !c.on.Load() {
		return
	}
	owners := c.accounts
	if e.hasKey {
		owners = c.keys
	}
	e.appID = c.intern(r.v.Session.AppID)
	o := owners[ownerID]
	if o == nil {
		o = &cachedOwner{status: c.intern(r.status.String), expires: r.expires.Int64, hasExpires: r.expires.Valid,
			licenseKey: r.lk.String}
		owners[ownerID] = o
	}
	e.owner = o
	sh := c.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[token]; !ok {
		if c.count.Load() >= c.max {
			return
		}
		c.count.Add(1)
	}
	sh.m[token] = e
	c.fills.Add(1)
}

// maxNames bounds names: apps are few, but nothing here relies on it.
const maxNames = 10_000

// intern returns the one copy of s the cache keeps (c.mu held).
func (c *sessionCache) intern(s string) string {
	if v, ok := c.names[s]; ok {
		return v
	}
	if len(c.names) < maxNames {
		c.names[s] = s
	}
	return s
}

// view builds the HeartbeatView of entry e for token, as HeartbeatView's
// read would: one allocation, like the read's.
func (e *cachedSession) view(token string) *heartbeatRow {
	r := &heartbeatRow{}
	ss := &r.v.Session
	ss.ID, ss.AppID, ss.TokenHash = e.id, e.appID, token
	if e.hasKey {
		r.keyID.Int64, r.keyID.Valid = e.keyID, true
		ss.KeyID = &r.keyID.Int64
	}
	if e.hasAcct {
		r.accountID.Int64, r.accountID.Valid = e.accountID, true
		ss.AccountID = &r.accountID.Int64
	}
	ss.LastSeenAt = fromMS(e.seen.Load())
	o := e.owner
	if o.hasExpires {
		r.expiresAt = fromMS(o.expires)
		r.v.KeyExpiry = &r.expiresAt
	}
	r.v.KeyExists = true
	r.v.KeyStatus, r.v.KeyString = license.Status(o.status), o.licenseKey
	return r
}

// changed is the triggers' callback: it applies the invalidation now and
// keeps it for settle.
func (c *sessionCache) changed(inv invalidation) {
	c.apply(inv)
	c.pmu.Lock()
	c.pending = append(c.pending, inv)
	c.pmu.Unlock()
}

// apply drops what inv names and moves gen.
func (c *sessionCache) apply(inv invalidation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch inv.kind {
	case 's':
		sh := c.shard(inv.token)
		sh.mu.Lock()
		if e := sh.m[inv.token]; e != nil {
			e.dead.Store(true)
			delete(sh.m, inv.token)
			c.count.Add(-1)
		}
		sh.mu.Unlock()
	case 'k', 'a':
		owners := c.keys
		if inv.kind == 'a' {
			owners = c.accounts
		}
		if o := owners[inv.id]; o != nil {
			o.dead.Store(true)
			delete(owners, inv.id)
		}
	}
	c.gen.Add(1)
}

// settle applies again the invalidations of the batch that just ended
// (committed or not), so nothing filled from the state before its commit
// outlives it. The writer calls it after every batch.
func (c *sessionCache) settle() {
	c.pmu.Lock()
	p := c.pending
	c.pending = nil
	c.pmu.Unlock()
	for _, inv := range p {
		c.apply(inv)
	}
}

// seenAt is the last-seen trigger's callback: the entry's time moves
// forward (a flush never moves a session's time back).
func (c *sessionCache) seenAt(token string, ms int64) {
	sh := c.shard(token)
	sh.mu.RLock()
	e := sh.m[token]
	sh.mu.RUnlock()
	if e == nil {
		return
	}
	for {
		old := e.seen.Load()
		if ms <= old || e.seen.CompareAndSwap(old, ms) {
			return
		}
	}
}

// clear forgets every entry.
func (c *sessionCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			e.dead.Store(true)
		}
		sh.m = map[string]*cachedSession{}
		sh.mu.Unlock()
	}
	for _, o := range c.keys {
		o.dead.Store(true)
	}
	for _, o := range c.accounts {
		o.dead.Store(true)
	}
	c.keys, c.accounts = map[int64]*cachedOwner{}, map[int64]*cachedOwner{}
	c.count.Store(0)
	c.gen.Add(1)
}

// release turns the cache off for good and lets its memory go (Close):
// the driver keeps the triggers' functions, and so c, for the life of the
// program. Every method stays safe on the nil maps left behind.
func (c *sessionCache) release() {
	c.on.Store(false)
	c.triggers.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.m = nil
		sh.mu.Unlock()
	}
	c.keys, c.accounts, c.names = nil, nil, nil
	c.count.Store(0)
	c.gen.Add(1)
}

// sessionTriggers are the temporary triggers of the write connection that
// keep the cache exact (see sessionCache). TEMP: they live in the
// connection, not in the database file, so no other process runs them and
// no migration or backup carries them. The column lists are those
// heartbeatViewQuery reads.
var sessionTriggers = []string{
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_session_update
	AFTER UPDATE OF id, token_hash, app_id, key_id, account_id, ended_at, end_reason ON main.sessions
	BEGIN SELECT keyward_session_changed('s', OLD.token_hash), keyward_session_changed('s', NEW.token_hash); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_session_delete AFTER DELETE ON main.sessions
	BEGIN SELECT keyward_session_changed('s', OLD.token_hash); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_session_seen AFTER UPDATE OF last_seen_at ON main.sessions
	BEGIN SELECT keyward_session_seen(NEW.token_hash, NEW.last_seen_at); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_key_update
	AFTER UPDATE OF id, status, expires_at, license_key ON main.license_keys
	BEGIN SELECT keyward_session_changed('k', OLD.id); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_key_delete AFTER DELETE ON main.license_keys
	BEGIN SELECT keyward_session_changed('k', OLD.id); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_account_update
	AFTER UPDATE OF id, status, expires_at ON main.accounts
	BEGIN SELECT keyward_session_changed('a', OLD.id); END`,
	`CREATE TEMP TRIGGER IF NOT EXISTS keyward_cache_account_delete AFTER DELETE ON main.accounts
	BEGIN SELECT keyward_session_changed('a', OLD.id); END`,
}

// writeDriver is the driver of SQLite's write connection: the modernc
// driver with the triggers' two functions bound to c, and a hook that gives
// the triggers to a connection opened while the cache wants them (should
// database/sql ever replace the one write connection).
func writeDriver(c *sessionCache) *sqlite.Driver {
	d := &sqlite.Driver{}
	d.MustRegisterScalarFunction("keyward_session_changed", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		kind, _ := args[0].(string)
		switch kind {
		case "s":
			if t, ok := args[1].(string); ok {
				c.changed(invalidation{kind: 's', token: t})
			}
		case "k", "a":
			if id, ok := args[1].(int64); ok {
				c.changed(invalidation{kind: kind[0], id: id})
			}
		}
		return nil, nil
	})
	d.MustRegisterScalarFunction("keyward_session_seen", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		t, ok1 := args[0].(string)
		ms, ok2 := args[1].(int64)
		if ok1 && ok2 {
			c.seenAt(t, ms)
		}
		return nil, nil
	})
	d.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
		if !c.triggers.Load() {
			return nil
		}
		for _, q := range sessionTriggers {
			if _, err := conn.ExecContext(context.Background(), q, nil); err != nil {
				return fmt.Errorf("session cache triggers: %w", err)
			}
		}
		return nil
	})
	return d
}

// liteConnector opens connections of one DSN with one driver (sql.OpenDB).
type liteConnector struct {
	d   *sqlite.Driver
	dsn string
}

func (l liteConnector) Connect(context.Context) (driver.Conn, error) { return l.d.Open(l.dsn) }
func (l liteConnector) Driver() driver.Driver                        { return l.d }

// CacheSessions keeps, on SQLite, the heartbeat's view of up to max live
// sessions in memory (sessionCache), exact under every write of this
// process and emptied within about a second of a write by another. Call it
// once the schema is current (Migrate turns the cache off again: a
// migration may rebuild the tables the triggers are on). On PostgreSQL,
// where several processes share the database, it does nothing.
func (db *DB) CacheSessions(ctx context.Context, max int) error {
	c := db.sessions
	if c == nil || max <= 0 {
		return nil
	}
	c.on.Store(false)
	c.triggers.Store(true)
	err := db.tx(ctx, func(tx *wtx) error {
		for _, q := range sessionTriggers {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("session cache triggers: %w", err)
			}
		}
		return db.writer.readVersion(ctx, tx)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.max = int64(max) // put reads it under mu
	c.mu.Unlock()
	c.clear()
	c.on.Store(true)
	return nil
}

// SessionCacheStats reports the sessions the cache holds and how many
// times a heartbeat's read filled it (0, 0 without the cache).
func (db *DB) SessionCacheStats() (entries, fills int64) {
	if db.sessions == nil {
		return 0, 0
	}
	return db.sessions.count.Load(), db.sessions.fills.Load()
}

// CheckForeignWrites empties the session cache if another connection
// committed since the last check: what the writer does on its own at most
// a second apart. Tests call it instead of waiting.
func (db *DB) CheckForeignWrites(ctx context.Context) error {
	if db.sessions == nil || !db.sessions.on.Load() {
		return nil
	}
	return db.tx(ctx, func(tx *wtx) error { return db.writer.readVersion(ctx, tx) })
}

// readVersion reads the write connection's PRAGMA data_version in tx and
// empties the session cache if it moved since the last read. It runs on
// the writer goroutine (in a unit, or between batches with tx nil).
func (w *writer) readVersion(ctx context.Context, tx *wtx) error {
	var v int64
	var err error
	if tx != nil {
		err = tx.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	} else {
		err = w.db.write.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	}
	if err != nil {
		return translate(err)
	}
	c := w.db.sessions
	if c.versionRead && v != c.version {
		c.clear()
	}
	c.version, c.versionRead = v, true
	return nil
}
