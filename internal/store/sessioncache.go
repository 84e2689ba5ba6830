package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/keyward/keyward/internal/license"
)

// sessionCache is the in-memory copy of what the heartbeat reads (issue
// 21, point 4): for each live session the columns HeartbeatView returns,
// so a heartbeat does not ask the database at all in the common case. On
// SQLite the read it saves was a third of a heartbeat's CPU at 100 000
// sessions, most of it SQLite rebuilding its page map after each commit
// (docs/performance.md, "The session cache"). What follows is how SQLite
// keeps it exact; PostgreSQL, shared by several processes, keeps the same
// cache exact through notices and notifications (pgcache.go).
//
// It is exact, not a TTL: HeartbeatView returns from it only what a read
// of the database would return at that moment. SQLite has one write
// connection in this process (the writer, commit.go), and on it temporary
// triggers (sessionTriggers) call back into the cache for every row change
// the view depends on, whatever code made it:
//   - a session's identity, end or token (UPDATE OF those columns, DELETE):
//     that session's entry goes;
//   - a key's status, expiry or string, or an account's status or expiry
//     (UPDATE OF, DELETE): every entry of that key or account goes, by its
//     owner's version (owners) going;
//   - a session's last-seen time (the heartbeat flush, in session_seen): no
//     trigger; TouchSessions moves the entries' times forward once its
//     write commits, since dropping them would empty the cache every few
//     seconds.
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
//
// Nothing the cache keeps per session holds a pointer: the entries are
// fixed-size arrays and numbers (app ids and statuses are indexes into
// names) kept in a slice per shard (cacheShard), and the maps' keys and
// values are arrays and numbers too, so the garbage collector never scans
// them. Entries made of strings and pointers cost every collection a walk
// over every cached session, which gave back half of what the cache saved
// (docs/performance.md, "The session cache without pointers"). A token,
// session id or key string too long for its array is not cached.
type sessionCache struct {
	max   int64
	count atomic.Int64
	// on: HeartbeatView uses the cache (CacheSessions); triggers: the
	// cache wants reports of changes (on SQLite the write connection must
	// carry sessionTriggers, which a new connection gets from the driver's
	// connection hook; on PostgreSQL the triggers' notices are applied).
	on, triggers atomic.Bool
	gen          atomic.Uint64
	fills        atomic.Int64

	seed   maphash.Seed
	shards [cacheShards]cacheShard
	// owners holds the current version of each key's and account's
	// columns: an entry is valid while its owner's version is the one it
	// was filled under.
	owners ownerTable

	// mu orders fills (put) with invalidations; owners' slots and nameIdx
	// are under it.
	mu sync.Mutex
	// names are the app ids and statuses entries refer to by index: a few
	// distinct values shared by every session, each kept once. The slice
	// is replaced, never changed, so readers load it without mu.
	names   atomic.Pointer[[]string]
	nameIdx map[string]uint32

	// pending are the invalidations since the last settle (SQLite);
	// byConn those each PostgreSQL write connection's notices reported
	// since its last settleConn (pgcache.go).
	pmu     sync.Mutex
	pending []invalidation
	byConn  map[*pgconn.PgConn][]invalidation

	// listenErrors counts PostgreSQL listening connections lost (or pings
	// not heard back), listenErr holds the last one's error (pgcache.go).
	listenErrors atomic.Int64
	listenErr    atomic.Pointer[error]
	// deaf: the listener hears pings but applies no invalidation, so
	// that a test sees what the notices alone do (pgcache.go).
	deaf atomic.Bool

	// version is the write connection's PRAGMA data_version when last
	// read, versionRead whether it was (the writer goroutine's; see
	// readVersion).
	version     int64
	versionRead bool
}

const cacheShards = 64

// The longest session id and license key a cached entry holds (ids are
// 36-character UUIDs; generated keys are shorter than 40 characters).
const (
	maxCachedID  = 40
	maxCachedKey = 64
)

// cacheShard holds its entries in slots, a slice of values, and maps each
// token to its slot: Go stores a map value larger than 128 bytes out of
// line, one heap object per entry behind a pointer the collector follows,
// and a cachedSession is 160 bytes. A map of small values and a slice of
// pointer-free ones hold no pointer per entry, and a fill allocates
// nothing once the slice has grown. A removed entry's slot goes on free
// for the next fill, which overwrites it.
type cacheShard struct {
	mu    sync.RWMutex
	m     map[tokenKey]uint32 // index into slots
	slots []cachedSession
	free  []uint32
	_     [48]byte // a shard to two cache lines
}

// lookup returns the entry of k (sh.mu held).
func (sh *cacheShard) lookup(k tokenKey) (*cachedSession, bool) {
	i, ok := sh.m[k]
	if !ok {
		return nil, false
	}
	return &sh.slots[i], true
}

// insert adds e as the entry of k, which has none, in a free slot or a
// new one (sh.mu held).
func (sh *cacheShard) insert(k tokenKey, e *cachedSession) {
	var i uint32
	if n := len(sh.free); n > 0 {
		i, sh.free = sh.free[n-1], sh.free[:n-1]
		sh.slots[i] = *e
	} else {
		i = uint32(len(sh.slots))
		sh.slots = append(sh.slots, *e)
	}
	sh.m[k] = i
}

// remove drops k's entry and reports whether it had one (sh.mu held).
func (sh *cacheShard) remove(k tokenKey) bool {
	i, ok := sh.m[k]
	if !ok {
		return false
	}
	delete(sh.m, k)
	sh.free = append(sh.free, i)
	return true
}

// empty drops every entry, keeping room for new ones if keep, else
// leaving nil maps and slices behind (sh.mu held).
func (sh *cacheShard) empty(keep bool) {
	sh.m, sh.slots, sh.free = nil, nil, nil
	if keep {
		sh.m = map[tokenKey]uint32{}
	}
}

// ownerTable keeps each owner's version in a slot that an entry names, so
// a heartbeat reads it with one atomic load: no lock and no map lookup,
// which had been two fifths of a cache read (BenchmarkSessionCacheGet at
// 100 000 sessions: 870 ns a read with a map of versions, 630 with
// slots). Slots and the slot map change only under sessionCache.mu. A
// dropped owner's slot is zeroed and reused; versions never are (last
// only grows, even across reset, and the first is 1), so an entry naming a
// reused slot finds another version there and is not valid.
type ownerTable struct {
	slot map[ownerKey]uint32 // each owner's slot
	free []uint32
	n    uint32 // slots handed out
	last uint64 // the latest version given
	// chunks are the slots, ownerChunkLen at a time, replaced (never
	// changed) when one is added, so get loads them without a lock.
	chunks atomic.Pointer[[]*ownerChunk]
}

// ownerChunk holds ownerChunkLen slots: 32 KiB with no pointer in it.
type ownerChunk [ownerChunkLen]atomic.Uint64

const ownerChunkLen = 4096

// version returns the version in slot i, 0 (no version) for a slot the
// table does not have (it was emptied since the entry was filled).
func (t *ownerTable) version(i uint32) uint64 {
	cs := t.chunks.Load()
	if cs == nil || int(i/ownerChunkLen) >= len(*cs) {
		return 0
	}
	return (*cs)[i/ownerChunkLen][i%ownerChunkLen].Load()
}

// of returns o's slot and version, giving o a slot and a new version if it
// has none (sessionCache.mu held).
func (t *ownerTable) of(o ownerKey) (uint32, uint64) {
	if i, ok := t.slot[o]; ok {
		return i, t.version(i)
	}
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = t.n
		t.n++
		var cs []*ownerChunk
		if p := t.chunks.Load(); p != nil {
			cs = *p
		}
		if int(i/ownerChunkLen) >= len(cs) {
			grown := append(cs[:len(cs):len(cs)], new(ownerChunk))
			t.chunks.Store(&grown)
		}
	}
	t.last++
	v := t.last
	(*t.chunks.Load())[i/ownerChunkLen][i%ownerChunkLen].Store(v)
	t.slot[o] = i
	return i, v
}

// drop ends o's version: no entry filled under it is valid any more
// (sessionCache.mu held).
func (t *ownerTable) drop(o ownerKey) {
	i, ok := t.slot[o]
	if !ok {
		return
	}
	(*t.chunks.Load())[i/ownerChunkLen][i%ownerChunkLen].Store(0)
	delete(t.slot, o)
	t.free = append(t.free, i)
}

// reset forgets every owner, and with keep false leaves the slot map nil
// (sessionCache.mu held). Entries filled before it name slots that hold
// no version or, once given out again, a later one.
func (t *ownerTable) reset(keep bool) {
	t.slot, t.free, t.n = nil, nil, 0
	t.chunks.Store(nil)
	if keep {
		t.slot = map[ownerKey]uint32{}
	}
}

// tokenKey is a session's token hash as a map key without a pointer: the
// 32 bytes a 64-character lowercase hex hash (HashToken's) stands for, or
// the bytes of any other string of at most 32 (n says which: 64 for a
// decoded hash, else the length). The two forms cannot meet: a decoded
// hash has n 64, a raw string at most 32.
type tokenKey struct {
	n uint8
	b [32]byte
}

func tokenKeyOf(token string) (tokenKey, bool) {
	var k tokenKey
	if len(token) <= len(k.b) {
		k.n = uint8(copy(k.b[:], token))
		return k, true
	}
	if len(token) != 2*len(k.b) {
		return k, false
	}
	for i := range k.b {
		hi, lo := lowerHex[token[2*i]], lowerHex[token[2*i+1]]
		if hi|lo > 0x0f {
			return k, false
		}
		k.b[i] = hi<<4 | lo
	}
	k.n = 64
	return k, true
}

// lowerHex is each byte's value as a lowercase hex digit, 0xff for any
// other byte (uppercase too, so that each decoded key stands for exactly
// one string). A table: the heartbeat decodes 64 digits.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// ownerKey names a key (kind 'k') or an account ('a').
type ownerKey struct {
	id   int64
	kind byte
}

// cachedSession is one session's columns of heartbeatViewQuery and its
// owner's (key's or account's), copied in; ver is the owner's version it
// was filled under, slot where the owner's current one is (ownerTable).
type cachedSession struct {
	keyID, accountID int64
	seen             int64 // last_seen_at, ms
	seenKey          int64 // session_seen's key
	expires          int64
	ver              uint64
	slot             uint32
	app, status      uint32 // indexes into names
	hasKey, hasAcct  bool
	hasExpires       bool
	idLen, keyLen    uint8
	id               [maxCachedID]byte
	key              [maxCachedKey]byte
}

func (e *cachedSession) owner() ownerKey {
	if e.hasKey {
		return ownerKey{e.keyID, 'k'}
	}
	return ownerKey{e.accountID, 'a'}
}

// invalidation is one trigger's call: kind 's' (a session, by token hash),
// 'k' (a key, by id), 'a' (an account, by id) or '*' (every entry: only
// PostgreSQL's triggers send it, see pgcache.go).
type invalidation struct {
	kind  byte
	token string
	id    int64
}

func newSessionCache() *sessionCache {
	c := &sessionCache{seed: maphash.MakeSeed(), nameIdx: map[string]uint32{}}
	c.names.Store(&[]string{})
	for i := range c.shards {
		c.shards[i].empty(true)
	}
	c.owners.reset(true)
	return c
}

func (c *sessionCache) shard(k *tokenKey) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, k.b[:])%cacheShards]
}

// get returns token's entry while it is valid.
func (c *sessionCache) get(token string) (cachedSession, bool) {
	if !c.on.Load() {
		return cachedSession{}, false
	}
	k, ok := tokenKeyOf(token)
	if !ok {
		return cachedSession{}, false
	}
	sh := c.shard(&k)
	sh.mu.RLock()
	p, ok := sh.lookup(k)
	var e cachedSession
	if ok {
		e = *p
	}
	sh.mu.RUnlock()
	if !ok {
		return e, false
	}
	return e, c.owners.version(e.slot) == e.ver
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
	k, ok := tokenKeyOf(token)
	id := r.v.Session.ID
	if !ok || len(id) > maxCachedID || len(r.lk.String) > maxCachedKey {
		return
	}
	var e cachedSession
	switch {
	case r.keyID.Valid:
		if !r.lk.Valid {
			return // the status is the account's: the key row is missing
		}
		e.keyID, e.hasKey = r.keyID.Int64, true
		if r.accountID.Valid {
			e.accountID, e.hasAcct = r.accountID.Int64, true
		}
	case r.accountID.Valid:
		e.accountID, e.hasAcct = r.accountID.Int64, true
	default:
		return
	}
	e.seen, e.seenKey = r.seen, r.seenKey.Int64
	e.expires, e.hasExpires = r.expires.Int64, r.expires.Valid
	e.idLen = uint8(copy(e.id[:], id))
	e.keyLen = uint8(copy(e.key[:], r.lk.String))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen || !c.on.Load() {
		return
	}
	var ok1, ok2 bool
	e.app, ok1 = c.intern(r.v.Session.AppID)
	e.status, ok2 = c.intern(r.status.String)
	if !ok1 || !ok2 {
		return
	}
	e.slot, e.ver = c.owners.of(e.owner())
	sh := c.shard(&k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if p, ok := sh.lookup(k); ok {
		*p = e
	} else {
		if c.count.Load() >= c.max {
			return
		}
		c.count.Add(1)
		sh.insert(k, &e)
	}
	c.fills.Add(1)
}

// maxNames bounds names: apps are few, but nothing here relies on it.
const maxNames = 10_000

// intern returns the index of s in names, adding it if new (c.mu held);
// false when names is full.
func (c *sessionCache) intern(s string) (uint32, bool) {
	if i, ok := c.nameIdx[s]; ok {
		return i, true
	}
	old := *c.names.Load()
	if len(old) >= maxNames {
		return 0, false
	}
	names := append(slices.Clip(old), s) // a new array: readers keep the old one
	c.names.Store(&names)
	i := uint32(len(names) - 1)
	c.nameIdx[s] = i
	return i, true
}

// view builds the HeartbeatView of entry e for token, as HeartbeatView's
// read would.
func (c *sessionCache) view(e *cachedSession, token string) *heartbeatRow {
	names := *c.names.Load()
	r := &heartbeatRow{}
	ss := &r.v.Session
	ss.ID, ss.AppID, ss.TokenHash = string(e.id[:e.idLen]), names[e.app], token
	if e.hasKey {
		r.keyID.Int64, r.keyID.Valid = e.keyID, true
		ss.KeyID = &r.keyID.Int64
	}
	if e.hasAcct {
		r.accountID.Int64, r.accountID.Valid = e.accountID, true
		ss.AccountID = &r.accountID.Int64
	}
	ss.LastSeenAt, r.v.SeenKey = fromMS(e.seen), e.seenKey
	if e.hasExpires {
		r.expiresAt = fromMS(e.expires)
		r.v.KeyExpiry = &r.expiresAt
	}
	r.v.KeyExists = true
	r.v.KeyStatus, r.v.KeyString = license.Status(names[e.status]), string(e.key[:e.keyLen])
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
	if inv.kind == '*' {
		c.clear()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch inv.kind {
	case 's':
		if k, ok := tokenKeyOf(inv.token); ok {
			sh := c.shard(&k)
			sh.mu.Lock()
			if sh.remove(k) {
				c.count.Add(-1)
			}
			sh.mu.Unlock()
		}
	case 'k', 'a':
		c.owners.drop(ownerKey{inv.id, inv.kind}) // its entries' version is gone: none is valid
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

// seenAt moves token's entry's time forward to ms, once a heartbeat flush
// wrote it (a flush never moves a session's time back).
func (c *sessionCache) seenAt(token string, ms int64) {
	k, ok := tokenKeyOf(token)
	if !ok {
		return
	}
	sh := c.shard(&k)
	sh.mu.Lock()
	if e, ok := sh.lookup(k); ok && ms > e.seen {
		e.seen = ms
	}
	sh.mu.Unlock()
}

// clear forgets every entry.
func (c *sessionCache) clear() {
	c.reset(true)
}

// release turns the cache off for good and lets its memory go (Close):
// the driver keeps the triggers' functions, and so c, for the life of the
// program. Every method stays safe on the nil maps left behind.
func (c *sessionCache) release() {
	c.on.Store(false)
	c.triggers.Store(false)
	c.reset(false)
}

// reset empties the maps, or with keep false drops them (nil).
func (c *sessionCache) reset(keep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.empty(keep)
		sh.mu.Unlock()
	}
	c.owners.reset(keep)
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
// driver with the triggers' function bound to c, and a hook that gives
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

// CacheSessions keeps the heartbeat's view of up to max live sessions in
// memory (sessionCache). On SQLite it is exact under every write of this
// process and emptied within about a second of a write by another; call
// it once the schema is current (Migrate turns the cache off again: a
// migration may rebuild the tables the triggers are on). On PostgreSQL it
// starts the listener that keeps the cache exact under every process's
// writes (pgcache.go); the cache turns on once the listener has shown that
// notifications arrive, a moment later.
func (db *DB) CacheSessions(ctx context.Context, max int) error {
	c := db.sessions
	if c == nil || max <= 0 {
		return nil
	}
	if db.engine == Postgres {
		c.mu.Lock()
		c.max = int64(max)
		c.mu.Unlock()
		c.triggers.Store(true)
		return db.startListening(ctx)
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

// SessionCacheStatus is the session cache's state, for metrics.
type SessionCacheStatus struct {
	// On: heartbeats are answered from memory.
	On bool
	// Entries are the sessions held, Fills the times a read filled one.
	Entries, Fills int64
	// ListenFailures counts the PostgreSQL listener's lost connections
	// and late pings (each turned the cache off until it heard again).
	ListenFailures int64
}

// SessionCacheStatus reports the session cache's state.
func (db *DB) SessionCacheStatus() SessionCacheStatus {
	c := db.sessions
	if c == nil {
		return SessionCacheStatus{}
	}
	return SessionCacheStatus{On: c.on.Load(), Entries: c.count.Load(), Fills: c.fills.Load(), ListenFailures: c.listenErrors.Load()}
}

// CheckForeignWrites brings the session cache up to date with writes of
// other connections, as the cache does on its own a moment later. On
// SQLite it empties the cache if another connection committed since the
// last check (what the writer does at most a second apart). On PostgreSQL
// it returns once the listener has applied every change committed before
// the call, and the cache is on. Tests call it instead of waiting.
func (db *DB) CheckForeignWrites(ctx context.Context) error {
	if db.engine == Postgres {
		db.listenMu.Lock()
		l := db.listener
		db.listenMu.Unlock()
		if l == nil {
			return nil
		}
		return l.sync(ctx)
	}
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
