package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit (issue 22).
//
// A write transaction is a unit of work: the function the store's code
// passes to tx. On PostgreSQL each unit is a transaction of its own on the
// write pool, and concurrent commits already share WAL flushes inside the
// server (its own group commit). On SQLite one writer goroutine owns the one
// write connection: it takes every unit queued while the previous batch was
// committing, runs each in a savepoint of one transaction, and commits the
// batch once — one fsync for all of them, which is what lets SQLite run with
// synchronous=FULL (a commit is durable across power loss) at a login rate
// one commit per request could not reach.
//
// What a caller sees does not depend on its batch:
//   - its reply waits for the commit of its batch (tx returns after it);
//   - a unit that fails is rolled back to its savepoint, alone, and gets its
//     own error; the others commit;
//   - a unit's statements see the writes of the units before it in the
//     batch, exactly as they would had those committed first: SQLite runs
//     the units one at a time, in queue order, as it ran the transactions;
//   - a kill -9 or a power cut before the batch's commit loses the whole
//     batch, none of which was acknowledged.
//
// Two outcomes are shared by a batch, as they are by every transaction
// that commits at that moment: a failed COMMIT (disk full, I/O error) fails
// every unit that had succeeded, and a storage failure that makes SQLite
// roll back the whole transaction (SQLITE_FULL, SQLITE_IOERR) fails the
// units already run in it; units not yet run go to the next batch.
//
// Statements of a unit ignore its caller's cancellation: a cancelled
// statement interrupts the SQLite connection, and an interrupted write
// rolls back the whole transaction, which is the batch. A unit whose
// caller gave up before it ran is skipped (ctx.Err()); one already running
// finishes, and its caller waits for the commit, so an error reply never
// hides a committed write.

// maxBatch bounds the units of one SQLite batch, so a burst does not make
// one transaction (and the reply of its first unit) arbitrarily long.
const maxBatch = 256

// wtx is a write transaction as the store's code sees it: on SQLite one
// unit's view of its batch's transaction, on PostgreSQL a transaction of
// its own. It is a *sql.Tx whose statements may ignore the caller's
// cancellation and run prepared (a unit of SQLite's writer), and it remembers whether the unit wrote outbox
// events, so the commit wakes the webhook dispatcher.
type wtx struct {
	*sql.Tx
	// w is SQLite's writer running this unit (nil on PostgreSQL): its
	// statements ignore the caller's cancellation and use the writer's
	// prepared statements.
	w      *writer
	events bool
}

// stmtCtx is ctx, without its cancellation in a unit of SQLite's writer.
func (t *wtx) stmtCtx(ctx context.Context) context.Context {
	if t.w != nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt is q's statement prepared on the write connection, bound to t, or
// nil while q is not prepared (see writer.prepared).
func (t *wtx) stmt(ctx context.Context, q string) *sql.Stmt {
	if t.w == nil {
		return nil
	}
	if st := t.w.prepared(q); st != nil {
		return t.Tx.StmtContext(ctx, st)
	}
	return nil
}

// ExecContext is sql.Tx.ExecContext under stmtCtx.
func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = t.stmtCtx(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

// QueryContext is sql.Tx.QueryContext under stmtCtx.
func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = t.stmtCtx(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

// QueryRowContext is sql.Tx.QueryRowContext under stmtCtx.
func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = t.stmtCtx(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}

// PrepareContext is sql.Tx.PrepareContext under stmtCtx. The statement's
// own Exec calls must use stmtCtx too.
func (t *wtx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(t.stmtCtx(ctx), q)
}

// tx runs fn as one write unit and returns after its commit (or its
// failure). A failure of the database itself is remembered for readiness
// (noteWrite). A panic in fn rolls back fn's writes and is re-raised in
// the caller.
func (db *DB) tx(ctx context.Context, fn func(*wtx) error) error {
	if db.writer != nil {
		return db.writer.do(ctx, fn, false)
	}
	return db.txAlone(ctx, fn)
}

// txRan is tx for bookkeeping whose durability may trail its caller: on
// SQLite it returns once fn has run in its batch (with fn's own error),
// not after the batch's commit, which the caller's next write transaction
// then waits for (batches commit in order). The envelope replay record
// uses it: a login claims its envelope, then writes the login, then
// records the reply; waiting for three commits in a row would make every
// login three batches long. Should the batch fail to commit after fn ran
// (the disk fills up), the caller was told nil; only records whose loss
// is harmless may use it. On PostgreSQL it is tx.
func (db *DB) txRan(ctx context.Context, fn func(*wtx) error) error {
	if db.writer != nil {
		return db.writer.do(ctx, fn, true)
	}
	return db.txAlone(ctx, fn)
}

// txQueued queues fn to SQLite's writer and returns at once; onDone (on
// the writer's goroutine, so it must not block) is told its outcome after
// its batch commits or fails. Units run in queue order, so a write
// transaction its caller queues next runs after fn and commits with it or
// after it. It reports false on PostgreSQL, where there is no queue, and
// on a closed database.
func (db *DB) txQueued(fn func(*wtx) error, onDone func(error)) bool {
	if db.writer == nil {
		return false
	}
	u := &unit{ctx: context.Background(), fn: fn, done: make(chan struct{}), onDone: onDone}
	return db.writer.enqueue(u)
}

// txAlone runs fn in a transaction of its own (PostgreSQL), on a
// connection whose session cache invalidations are settled after the
// commit (withConn).
func (db *DB) txAlone(ctx context.Context, fn func(*wtx) error) error {
	return db.withConn(ctx, func(c *sql.Conn) error { return db.txOn(ctx, c, fn) })
}

// txOn runs fn in a transaction on c.
func (db *DB) txOn(ctx context.Context, c *sql.Conn, fn func(*wtx) error) (err error) {
	t, err := c.BeginTx(ctx, nil)
	if err != nil {
		db.noteWrite(err)
		return translate(err)
	}
	w := &wtx{Tx: t}
	defer func() {
		if p := recover(); p != nil {
			t.Rollback()
			panic(p)
		}
		if err != nil {
			t.Rollback()
			db.noteWrite(err)
			return
		}
		cerr := t.Commit()
		db.noteWrite(cerr)
		err = translate(cerr)
		if err == nil && w.events {
			db.eventsCommitted()
		}
	}()
	return fn(w)
}

// unit is one queued write transaction of the SQLite writer.
type unit struct {
	ctx  context.Context
	fn   func(*wtx) error
	done chan struct{}
	// state is unitQueued until the writer takes the unit (unitTaken) or
	// its caller gives up first (unitAbandoned).
	state atomic.Int32
	// ran: the caller is answered once fn has run (txRan), not after the
	// commit.
	ran bool
	// Written by the writer before done is closed.
	err      error
	panicked any
	events   bool
	released bool // done is closed (writer only)
	// onDone, for a unit nobody waits for (txQueued), is told its outcome
	// when it is released.
	onDone func(error)
}

// release answers the unit's caller (once).
func (u *unit) release() {
	if !u.released {
		u.released = true
		close(u.done)
		if u.onDone != nil {
			err := u.err
			if err == nil && u.panicked != nil {
				err = fmt.Errorf("panic in a queued write: %v", u.panicked)
			}
			u.onDone(err)
		}
	}
}

const (
	unitQueued int32 = iota
	unitTaken
	unitAbandoned
)

// writer is SQLite's one writer: a goroutine owning the write connection
// that runs queued units in batches (see the comment at the top of this
// file). Start it with startWriter; stop it with stop, which finishes what
// is queued.
type writer struct {
	db *DB

	mu     sync.Mutex
	queue  []*unit
	closed bool
	wake   chan struct{}
	done   chan struct{}

	// batches and units count what the writer committed (WriteBatches);
	// waited, the committed units whose callers waited for the commit
	// (tx, not txRan).
	batches, units, waited atomic.Int64
	// gather, when above zero, makes the next batch wait until that many
	// units are queued (GatherWrites); guarded by mu.
	gather int

	// stmts are the statements prepared on the write connection, by query
	// text; seen counts the unprepared ones run. Only the writer goroutine
	// uses them (see prepared).
	stmts map[string]*sql.Stmt
	seen  map[string]int

	// poll ticks while the writer waits, and polled is when it last read
	// PRAGMA data_version for the session cache (pollVersion).
	poll   <-chan time.Time
	polled time.Time
}

// versionEvery is how often the writer looks for commits of other
// processes while the session cache is on (see sessionCache).
const versionEvery = time.Second

// pollVersion reads PRAGMA data_version if the session cache is on and
// versionEvery has passed since the last read. Writer goroutine only.
func (w *writer) pollVersion() {
	c := w.db.sessions
	if c == nil || !c.on.Load() {
		return
	}
	now := time.Now() // a cadence, not a decision: the real clock
	if now.Sub(w.polled) < versionEvery {
		return
	}
	w.polled = now
	if err := w.readVersion(context.Background(), nil); err != nil {
		c.clear() // unknown: assume the worst, and read it again next time
		c.versionRead = false
	}
}

// Prepared statements of the writer. SQLite parses a statement on every
// run otherwise, which was a tenth of a login's CPU. A statement is
// prepared on the write connection between batches (database/sql prepares
// on a free connection, and the one connection is busy during a batch),
// once it has run twice, so statements built for one batch size (IN lists,
// multi-row inserts) rarely take a place; at most maxStmts are kept.
const (
	maxStmts = 256
	maxSeen  = 4096
)

// prepared returns q's prepared statement, or nil after noting that q ran
// unprepared.
func (w *writer) prepared(q string) *sql.Stmt {
	if st, ok := w.stmts[q]; ok {
		return st
	}
	if len(w.stmts) < maxStmts {
		if len(w.seen) >= maxSeen {
			clear(w.seen)
		}
		w.seen[q]++
	}
	return nil
}

// prepare prepares the statements that ran twice unprepared; called
// between batches, when the write connection is free.
func (w *writer) prepare() {
	for q, n := range w.seen {
		if n < 2 || len(w.stmts) >= maxStmts {
			continue
		}
		delete(w.seen, q)
		st, err := w.db.write.PrepareContext(context.Background(), q)
		if err != nil {
			continue // it runs unprepared, and reports its error there
		}
		w.stmts[q] = st
	}
}

// closeStmts closes the prepared statements (at stop).
func (w *writer) closeStmts() {
	for q, st := range w.stmts {
		st.Close()
		delete(w.stmts, q)
	}
}

// errClosed is the error of a write unit given to a closed database.
var errClosed = errors.New("store: the database is closed")

func startWriter(db *DB) *writer {
	w := &writer{db: db, wake: make(chan struct{}, 1), done: make(chan struct{}),
		stmts: map[string]*sql.Stmt{}, seen: map[string]int{}}
	var tick *time.Ticker
	if db.sessions != nil {
		tick = time.NewTicker(versionEvery)
		w.poll = tick.C
	}
	go func() {
		if tick != nil {
			defer tick.Stop()
		}
		w.run()
	}()
	return w
}

// do queues fn and waits for its batch's outcome. A caller whose ctx ends
// before the writer takes the unit abandons it (nothing is written); once
// taken, the unit's outcome is waited for, so a write that commits is
// never reported as failed.
func (w *writer) do(ctx context.Context, fn func(*wtx) error, ran bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u := &unit{ctx: ctx, fn: fn, done: make(chan struct{}), ran: ran}
	if !w.enqueue(u) {
		return errClosed
	}
	select {
	case <-u.done:
	case <-ctx.Done():
		if u.state.CompareAndSwap(unitQueued, unitAbandoned) {
			return ctx.Err()
		}
		<-u.done
	}
	if u.panicked != nil {
		panic(u.panicked)
	}
	return u.err
}

// enqueue queues u and wakes the writer; false when the writer is closed.
func (w *writer) enqueue(u *unit) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.queue = append(w.queue, u)
	select { // under mu: stop closes wake under it too
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// stop refuses new units, lets the writer finish the queued ones and waits
// for it.
func (w *writer) stop() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.wake)
	}
	w.mu.Unlock()
	<-w.done
}

// run is the writer goroutine.
func (w *writer) run() {
	defer close(w.done)
	defer w.closeStmts()
	var batch []*unit
	for {
		w.mu.Lock()
		for len(w.queue) == 0 || (len(w.queue) < w.gather && !w.closed) {
			if w.closed {
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			select {
			case <-w.wake:
			case <-w.poll:
				w.pollVersion()
			}
			w.mu.Lock()
		}
		w.gather = 0
		n := min(len(w.queue), maxBatch)
		batch = append(batch[:0], w.queue[:n]...)
		rest := copy(w.queue, w.queue[n:])
		clear(w.queue[rest:])
		w.queue = w.queue[:rest]
		w.mu.Unlock()

		// Units whose callers gave up are dropped before anything runs.
		live := batch[:0]
		for _, u := range batch {
			if u.state.CompareAndSwap(unitQueued, unitTaken) {
				live = append(live, u)
			}
		}
		if len(live) == 0 {
			continue
		}
		left := w.runBatch(live)
		if c := w.db.sessions; c != nil {
			c.settle() // after a batch that rolled back: harmless, and empties pending
			w.pollVersion()
		}
		w.prepare()
		if len(left) > 0 {
			// A storage failure ended the transaction before these ran:
			// they go first into the next batch, where their callers may
			// still give up on them.
			for _, u := range left {
				u.state.Store(unitQueued)
			}
			w.mu.Lock()
			w.queue = append(append([]*unit(nil), left...), w.queue...)
			w.mu.Unlock()
		}
	}
}

// runBatch runs units in one transaction and commits it, finishing every
// unit it ran. It returns the units it did not run because the
// transaction ended under them.
func (w *writer) runBatch(units []*unit) (left []*unit) {
	db := w.db
	finish := func(us []*unit) {
		for _, u := range us {
			u.release()
		}
	}
	t, err := db.write.BeginTx(context.Background(), nil)
	if err != nil {
		db.noteWrite(err)
		for _, u := range units {
			u.err = translate(err)
		}
		finish(units)
		return nil
	}
	alone := len(units) == 1
	events := false
	bt := &wtx{Tx: t, w: w} // the batch's own statements
	exec := func(q string) error {
		_, err := bt.ExecContext(context.Background(), q)
		return err
	}
	for i, u := range units {
		if err := u.ctx.Err(); err != nil {
			u.err = err // its caller is gone; nothing of it runs
			u.release()
			continue
		}
		if !alone {
			if err := exec(`SAVEPOINT unit`); err != nil {
				return w.abort(t, units[:i+1], units[i+1:], err)
			}
		}
		wt := &wtx{Tx: t, w: w}
		u.err, u.panicked = runUnit(u.fn, wt)
		if u.err == nil && u.panicked == nil {
			if !alone {
				if err := exec(`RELEASE unit`); err != nil {
					return w.abort(t, units[:i+1], units[i+1:], err)
				}
			}
			u.events = wt.events
			events = events || wt.events
			if u.ran {
				u.release()
			}
			continue
		}
		if u.err != nil {
			db.noteWrite(u.err)
		}
		if alone {
			t.Rollback()
			finish(units)
			return nil
		}
		if err := exec(`ROLLBACK TO unit`); err != nil {
			// The unit's failure ended the transaction (SQLite rolls back
			// the whole of it on some storage errors).
			return w.abort(t, units[:i], units[i+1:], err, u)
		}
		if err := exec(`RELEASE unit`); err != nil {
			return w.abort(t, units[:i], units[i+1:], err, u)
		}
		if u.ran {
			u.release() // its failure is final: nothing of it is in the batch
		}
	}
	cerr := t.Commit()
	db.noteWrite(cerr)
	if cerr != nil {
		for _, u := range units {
			if u.err == nil && u.panicked == nil && !u.released {
				u.err = translate(cerr)
			}
		}
	} else {
		w.batches.Add(1)
		w.units.Add(int64(len(units)))
		for _, u := range units {
			if !u.ran && u.onDone == nil {
				w.waited.Add(1)
			}
		}
		if events {
			db.eventsCommitted()
		}
	}
	if c := db.sessions; c != nil {
		// Before any caller is answered: a heartbeat after a ban's reply
		// must not find the key's sessions cached as they were.
		c.settle()
	}
	finish(units)
	return nil
}

// abort ends a batch whose transaction can no longer commit: the units it
// ran (ran) get the failure unless they already failed on their own,
// finished keeps the unit that caused it with its own error, and the units
// not yet run (rest) are returned for the next batch.
func (w *writer) abort(t *sql.Tx, ran, rest []*unit, cause error, finished ...*unit) []*unit {
	t.Rollback()
	w.db.noteWrite(cause)
	err := fmt.Errorf("the write transaction was rolled back: %w", translate(cause))
	for _, u := range ran {
		if u.err == nil && u.panicked == nil && !u.released {
			u.err = err
		}
		u.release()
	}
	for _, u := range finished {
		u.release()
	}
	return rest
}

// runUnit calls fn, turning a panic into its value.
func runUnit(fn func(*wtx) error, t *wtx) (err error, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return fn(t), nil
}

// GatherWrites makes SQLite's next write batch wait until n write
// transactions are queued and then take them together, so a test can
// build a batch of known units; on PostgreSQL (no batches) it does
// nothing. A batch is still at most maxBatch units.
func (db *DB) GatherWrites(n int) {
	if db.writer == nil {
		return
	}
	db.writer.mu.Lock()
	db.writer.gather = n
	db.writer.mu.Unlock()
}

// WriteWaits reports how many committed write transactions of SQLite's
// writer had their callers wait for the commit (0 on PostgreSQL): what
// makes a request as long as a batch.
func (db *DB) WriteWaits() int64 {
	if db.writer == nil {
		return 0
	}
	return db.writer.waited.Load()
}

// WriteBatches reports how many write batches SQLite's writer committed and
// how many units they held (0, 0 on PostgreSQL, where each unit commits on
// its own): units/batches is the average batch.
func (db *DB) WriteBatches() (batches, units int64) {
	if db.writer == nil {
		return 0, 0
	}
	return db.writer.batches.Load(), db.writer.units.Load()
}
