package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// liteReads is SQLite's path for the one read every heartbeat makes (issue
// 21, point 4: a heartbeat's allocations). It keeps its own small pool of
// read-only connections of the modernc driver, outside database/sql, each
// with its prepared statements, its argument and its row buffer.
//
// Why not database/sql: a QueryRow through a prepared *sql.Stmt allocates
// nine times of its own per read (the Row, the Rows, its release closure,
// the connection's release function, the argument slice, the value buffer,
// two in closing), on top of the driver's, and the read is one indexed row
// in this process. Here a read allocates only what the driver does (its
// rows, the column names and declared types it copies, the values it
// boxes) plus the boxed argument.
//
// The pool holds at most size connections (the read pool's size), opened on
// first use with the read pool's DSN (query_only, the same pragmas), so at
// most size more SQLite connections are open than before. It is not in
// DB.Pools' statistics. PostgreSQL does not use it.
type liteReads struct {
	driver driver.Driver
	dsn    string
	idle   chan *liteConn // connections not in use
	slots  chan struct{}  // one token per open connection: cap is the pool's size
	closed atomic.Bool
}

// liteConn is one connection of the pool, used by one read at a time.
type liteConn struct {
	conn  driver.Conn
	stmts map[string]driver.Stmt // prepared on first use, by query text
	args  [1]driver.NamedValue
	vals  [16]driver.Value // the row, reused: values are copied out before the connection goes back
}

func newLiteReads(drv driver.Driver, dsn string, size int) *liteReads {
	return &liteReads{driver: drv, dsn: dsn, idle: make(chan *liteConn, size), slots: make(chan struct{}, size)}
}

// errLiteClosed is returned by reads after Close.
var errLiteClosed = errors.New("store: database is closed")

// get takes an idle connection, opens one while the pool has room, or waits
// for one (until ctx is done).
func (p *liteReads) get(ctx context.Context) (*liteConn, error) {
	if p.closed.Load() {
		return nil, errLiteClosed
	}
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	select {
	case p.slots <- struct{}{}:
		conn, err := p.driver.Open(p.dsn)
		if err != nil {
			<-p.slots
			return nil, err
		}
		return &liteConn{conn: conn, stmts: make(map[string]driver.Stmt)}, nil
	default:
	}
	// Every connection is in use. (Only here is ctx.Done called: on a
	// request's context its first call makes the channel.)
	select {
	case c := <-p.idle:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put returns c to the pool, or closes it when it is no longer usable (an
// error the driver says left it broken) or the pool is closed.
func (p *liteReads) put(c *liteConn, err error) {
	if v, ok := c.conn.(driver.Validator); errors.Is(err, driver.ErrBadConn) || ok && !v.IsValid() {
		c.close()
		<-p.slots
		return
	}
	p.idle <- c // never blocks: at most cap(slots) connections exist
	if p.closed.Load() {
		p.drain() // Close ran while c was in use (see Close)
	}
}

// Close closes the idle connections; those in use close when they come
// back. A put racing with Close either sees closed and drains, or sent its
// connection before Close drains.
func (p *liteReads) Close() {
	p.closed.Store(true)
	p.drain()
}

func (p *liteReads) drain() {
	for {
		select {
		case c := <-p.idle:
			c.close()
			<-p.slots
		default:
			return
		}
	}
}

func (c *liteConn) close() {
	for _, st := range c.stmts {
		st.Close()
	}
	c.conn.Close()
}

// row runs q with one argument and hands the first row's values to scan,
// which must copy what it keeps: the slice is the connection's. It returns
// sql.ErrNoRows when there is no row. The query runs under a context that
// cannot be cancelled: with one, the driver would start a watcher goroutine
// per read (see DB.hotRow); ctx only bounds the wait for a connection.
func (p *liteReads) row(ctx context.Context, q string, arg any, scan func([]driver.Value) error) (err error) {
	c, err := p.get(ctx)
	if err != nil {
		return err
	}
	defer func() { p.put(c, err) }()
	st := c.stmts[q]
	if st == nil {
		if st, err = c.conn.Prepare(q); err != nil {
			return err
		}
		c.stmts[q] = st
	}
	c.args[0] = driver.NamedValue{Ordinal: 1, Value: arg}
	defer func() { c.args[0].Value = nil }() // hold no request's data in an idle connection
	qs, ok := st.(driver.StmtQueryContext)
	if !ok {
		return fmt.Errorf("store: the sqlite driver's statements have no QueryContext")
	}
	rows, err := qs.QueryContext(context.Background(), c.args[:])
	if err != nil {
		return err
	}
	// Closing the rows resets the prepared statement for the next read, so
	// it happens however this returns.
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	n := len(rows.Columns())
	if n > len(c.vals) {
		return fmt.Errorf("store: a hot read of %d columns (at most %d)", n, len(c.vals))
	}
	vals := c.vals[:n]
	defer clear(vals)
	if err = rows.Next(vals); err == io.EOF {
		return sql.ErrNoRows
	} else if err != nil {
		return err
	}
	return scan(vals)
}

// The conversions below store a driver value the way Row.Scan does for the
// few target types the hot reads use; any other value is an error.

func liteString(v driver.Value, dst *string) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%T where text was expected", v)
	}
	*dst = s
	return nil
}

func liteInt(v driver.Value, dst *int64) error {
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("%T where an integer was expected", v)
	}
	*dst = n
	return nil
}

func liteNullInt(v driver.Value, dst *sql.NullInt64) error {
	*dst = sql.NullInt64{}
	if v == nil {
		return nil
	}
	dst.Valid = true
	return liteInt(v, &dst.Int64)
}

func liteNullString(v driver.Value, dst *sql.NullString) error {
	*dst = sql.NullString{}
	if v == nil {
		return nil
	}
	dst.Valid = true
	return liteString(v, &dst.String)
}
