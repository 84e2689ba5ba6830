package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
)

// The session cache on PostgreSQL (issue 21, point 4): the same
// sessionCache as SQLite's, kept exact by other means, since several
// processes share the database and PostgreSQL cannot call into Go.
//
// The triggers of migration 00024 announce every change to what the
// heartbeat's view reads (a session's identity or end, a key's or an
// account's status, expiry or string) in two ways:
//
//   - pg_notify on the channel keyward_cache, delivered to every listening
//     process once the transaction commits. Each process keeps one
//     connection of its own listening (pgListener) and drops what each
//     notification names. This is how a change made by another process,
//     or by hand in psql, reaches the cache: within the time PostgreSQL
//     takes to deliver a notification, a millisecond or less on a healthy
//     connection.
//   - a NOTICE in the reply of the statement that made the change, on
//     keyward's own write connections (which set keyward.cache_notice).
//     The notice arrives before the statement returns, so the process that
//     made a change applies it at once and again after its commit
//     (settleConn), as the SQLite triggers' callbacks do: when a ban's
//     request is answered, no heartbeat in the same process can still be
//     answered from the state before it.
//
// The listener proves every second that notifications arrive: it sends one
// to itself from a second connection of its own (a ping) and expects it
// back within two seconds. Until the first ping arrives, and from the
// moment one is late or the connection fails, the cache is off and empty;
// it comes back empty after the next ping arrives. A connection pooler in
// transaction mode, which does not deliver notifications to a client
// between transactions, therefore leaves the cache off rather than stale.
//
// What the cache cannot know on PostgreSQL is a heartbeat's last-seen time
// written by another process (announcing those would be a notification per
// heartbeat). A cached view's LastSeenAt may trail; the view is marked
// Cached, and the heartbeat trusts it only to keep a session alive: a
// decision to end one is made on a fresh read (license.Service.Heartbeat).

// cacheChannel is the channel the triggers notify.
const cacheChannel = "keyward_cache"

// noticePrefix starts the triggers' notices; the payload follows.
const noticePrefix = "keyward_cache "

// How often the listener pings itself, and how late a ping may arrive
// before the cache is turned off.
const (
	pingEvery   = time.Second
	pingTimeout = 2 * time.Second
)

// parsePayload reads a trigger's payload: 's:' and a token hash, 'k:' or
// 'a:' and an id, or '*' (kind '*': forget everything). Anything else is
// not an invalidation (ok false).
func parsePayload(p string) (inv invalidation, ok bool) {
	if p == "*" {
		return invalidation{kind: '*'}, true
	}
	if len(p) < 3 || p[1] != ':' {
		return inv, false
	}
	switch p[0] {
	case 's':
		return invalidation{kind: 's', token: p[2:]}, true
	case 'k', 'a':
		id, err := strconv.ParseInt(p[2:], 10, 64)
		if err != nil || strconv.FormatInt(id, 10) != p[2:] {
			return inv, false // only the triggers' form: one spelling per id
		}
		return invalidation{kind: p[0], id: id}, true
	}
	return inv, false
}

// noticed is the write connections' notice handler: an invalidation the
// statement running on pc made, applied now and kept for settleConn.
func (c *sessionCache) noticed(pc *pgconn.PgConn, n *pgconn.Notice) {
	p, ok := strings.CutPrefix(n.Message, noticePrefix)
	if !ok || !c.triggers.Load() { // not ours, or no cache to keep (--session-cache 0)
		return
	}
	inv, ok := parsePayload(p)
	if !ok {
		return
	}
	c.apply(inv)
	c.pmu.Lock()
	if c.byConn == nil {
		c.byConn = map[*pgconn.PgConn][]invalidation{}
	}
	c.byConn[pc] = append(c.byConn[pc], inv)
	c.pmu.Unlock()
}

// settleConn applies again the invalidations pc's notices reported since its
// last settle: called once pc's transaction has committed or rolled back, so
// that nothing filled from the state before the commit outlives it.
func (c *sessionCache) settleConn(pc *pgconn.PgConn) {
	if pc == nil {
		return
	}
	c.pmu.Lock()
	p := c.byConn[pc]
	delete(c.byConn, pc)
	c.pmu.Unlock()
	for _, inv := range p {
		c.apply(inv)
	}
}

// pgConfigs are the pgx configurations of the write and read pools. The
// write pool's connections ask for the triggers' notices and hand them to
// cache.
func pgConfigs(url string, cache *sessionCache) (write, read *pgx.ConnConfig, err error) {
	write, err = pgx.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("database url: %w", err)
	}
	read = write.Copy()
	write.OnNotice = cache.noticed
	return write, read, nil
}

// withConn runs fn on one connection of the write pool and then settles
// the cache invalidations that connection's notices reported (settleConn).
// PostgreSQL's write transactions and single writes run through it.
func (db *DB) withConn(ctx context.Context, fn func(*sql.Conn) error) error {
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var pc *pgconn.PgConn
	_ = conn.Raw(func(dc any) error {
		if sc, ok := dc.(*stdlib.Conn); ok {
			pc = sc.Conn().PgConn()
		}
		return nil
	})
	defer db.sessions.settleConn(pc)
	return fn(conn)
}

// pgListener is a process's listening connection (see the top of this
// file). Started by CacheSessions, stopped by Close.
type pgListener struct {
	db    *DB
	cfg   *pgx.ConnConfig
	cache *sessionCache
	// pingPrefix starts this process's pings: "ping:", a random token,
	// ":", and then the ping's sequence number.
	pingPrefix string
	lost       bool // the last connection failed (run's goroutine)

	stop chan struct{}
	done chan struct{}

	// heard is closed and replaced each time a ping arrives; heardSeq is the
	// last ping heard. sent is the last ping sent.
	mu       sync.Mutex
	heard    chan struct{}
	heardSeq uint64
	sent     atomic.Uint64
}

func newPGListener(db *DB, cfg *pgx.ConnConfig) *pgListener {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	cfg = cfg.Copy()
	cfg.OnNotice = nil
	// A context ending while the listener waits sets a deadline on the
	// socket instead of sending PostgreSQL a cancel request: waiting with a
	// timeout is the listener's loop, not an error.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	return &pgListener{db: db, cfg: cfg, cache: db.sessions, pingPrefix: "ping:" + hex.EncodeToString(b) + ":",
		stop: make(chan struct{}), done: make(chan struct{}), heard: make(chan struct{})}
}

// run listens until stop, reconnecting after a failure; the cache is off
// whenever notifications are not known to arrive.
func (l *pgListener) run() {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-l.stop
		cancel()
	}()
	wait := 100 * time.Millisecond
	for {
		began := time.Now()
		err := l.listen(ctx)
		l.cache.on.Store(false)
		l.cache.clear()
		if ctx.Err() != nil {
			return
		}
		l.cache.listenErrors.Add(1)
		l.cache.listenErr.Store(&err)
		l.db.log.Warn("session cache: not hearing PostgreSQL's notifications; heartbeats read the database until it is back", "err", err)
		l.lost = true
		if time.Since(began) > time.Minute {
			wait = 100 * time.Millisecond // it had been working: retry soon
		}
		select {
		case <-l.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// listen runs one listening connection until it fails, a ping is late or
// ctx ends.
func (l *pgListener) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+cacheChannel); err != nil {
		return err
	}
	// Pings go out on a second connection of the listener's own: through
	// another connection, as other processes' notifications come, and not
	// through the write pool, which a burst of logins may keep busy for
	// longer than a ping may take.
	pinger, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer pinger.Close(context.Background())
	var sentAt time.Time
	var outstanding uint64 // the ping awaited, 0 for none
	for {
		now := time.Now()
		switch {
		case outstanding != 0 && now.Sub(sentAt) > pingTimeout:
			return fmt.Errorf("session cache: ping %d not heard back within %s", outstanding, pingTimeout)
		case outstanding == 0 && now.Sub(sentAt) >= pingEvery:
			seq, err := l.ping(ctx, func(ctx context.Context, q string, args ...any) error {
				_, err := pinger.Exec(ctx, q, args...)
				return err
			})
			if err != nil {
				return err
			}
			outstanding, sentAt = seq, now
		}
		next := sentAt.Add(pingEvery)
		if outstanding != 0 {
			next = sentAt.Add(pingTimeout)
		}
		wctx, cancel := context.WithDeadline(ctx, next.Add(time.Millisecond))
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if n != nil {
			l.heardNotification(n.Payload, &outstanding)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return err
		}
	}
}

// heardNotification applies one notification: a ping of this process
// (clearing outstanding when it is the one awaited) or an invalidation.
func (l *pgListener) heardNotification(p string, outstanding *uint64) {
	if seq, ok := l.pingSeq(p); ok {
		if seq == *outstanding {
			*outstanding = 0
		}
		if !l.cache.on.Load() {
			l.cache.clear() // what was missed while off is forgotten
			l.cache.on.Store(true)
			if l.lost {
				l.db.log.Info("session cache: hearing PostgreSQL's notifications again; heartbeats answered from memory")
				l.lost = false
			}
		}
		l.heardPing(seq)
		return
	}
	if inv, ok := parsePayload(p); ok && !l.cache.deaf.Load() {
		l.cache.apply(inv)
	}
}

// ping notifies the channel through exec and returns its sequence.
func (l *pgListener) ping(ctx context.Context, exec func(context.Context, string, ...any) error) (uint64, error) {
	seq := l.sent.Add(1)
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return seq, exec(ctx, `SELECT pg_notify($1, $2)`, cacheChannel, l.pingPrefix+strconv.FormatUint(seq, 10))
}

// pingSeq reads one of this process's pings; other processes' are ignored.
func (l *pgListener) pingSeq(p string) (uint64, bool) {
	rest, ok := strings.CutPrefix(p, l.pingPrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}

func (l *pgListener) heardPing(seq uint64) {
	l.mu.Lock()
	if seq > l.heardSeq {
		l.heardSeq = seq
	}
	close(l.heard)
	l.heard = make(chan struct{})
	l.mu.Unlock()
}

// sync returns once the listener has heard a ping sent after the call
// began, so every change committed before the call has been applied to
// the cache (PostgreSQL delivers notifications in commit order), and the
// cache is on.
func (l *pgListener) sync(ctx context.Context) error {
	seq, err := l.ping(ctx, func(ctx context.Context, q string, args ...any) error {
		_, err := l.db.write.ExecContext(ctx, q, args...)
		return err
	})
	if err != nil {
		return translate(err)
	}
	for {
		l.mu.Lock()
		got, heard := l.heardSeq, l.heard
		l.mu.Unlock()
		if got >= seq && l.cache.on.Load() {
			return nil
		}
		select {
		case <-heard:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return errClosed
		}
	}
}

// close stops the listener and waits for it.
func (l *pgListener) close() {
	close(l.stop)
	<-l.done
}

// startListening starts db's listener (PostgreSQL, once).
func (db *DB) startListening(ctx context.Context) error {
	var ok bool
	if err := db.read.QueryRowContext(ctx, `SELECT to_regproc('keyward_cache_changed') IS NOT NULL`).Scan(&ok); err != nil {
		return translate(err)
	}
	if !ok {
		return errors.New("session cache: the schema lacks its triggers (migration 00024); run keyward migrate")
	}
	db.listenMu.Lock()
	defer db.listenMu.Unlock()
	if db.listener == nil {
		db.listener = newPGListener(db, db.pgConfig)
		go db.listener.run()
	}
	return nil
}

// stopListening stops db's listener, if any.
func (db *DB) stopListening() {
	db.listenMu.Lock()
	l := db.listener
	db.listener = nil
	db.listenMu.Unlock()
	if l != nil {
		l.close()
	}
}
