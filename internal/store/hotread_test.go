package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"runtime"
	"sync"
	"testing"
)

func openLite(t *testing.T, conns int) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{DataDir: t.TempDir(), ReadConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if db.lite == nil {
		t.Fatal("a SQLite DB has no liteReads")
	}
	return db
}

// liteOne reads one integer through the pool.
func liteOne(ctx context.Context, p *liteReads, arg int64) (int64, error) {
	var got int64
	err := p.row(ctx, `SELECT ? + 0 AS a`, arg, func(v []driver.Value) error { return liteInt(v[0], &got) })
	return got, err
}

// The pool opens at most its size of connections; a read finding every
// one in use waits for one to come back, and gives up when its context
// ends.
func TestLiteReadsBounded(t *testing.T) {
	db := openLite(t, 2)
	p := db.lite
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				want := int64(g*1000 + i)
				if got, err := liteOne(ctx, p, want); err != nil || got != want {
					t.Errorf("read %d: %d, %v", want, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(p.slots); n > 2 {
		t.Fatalf("%d connections open, pool size 2", n)
	}

	a, err := p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.get(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("get with both connections in use and a cancelled context: %v, want context.Canceled", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := liteOne(ctx, p, 7)
		got <- err
	}()
	p.put(a, nil)
	if err := <-got; err != nil {
		t.Fatalf("a read waiting for a connection: %v", err)
	}
	p.put(b, nil)
}

// A connection the driver reports broken is closed and its place freed; a
// read that finds no row reports sql.ErrNoRows; after Close reads fail and
// a connection coming back is closed.
func TestLiteReadsLifecycle(t *testing.T) {
	db := openLite(t, 2)
	p := db.lite
	ctx := context.Background()
	if _, err := liteOne(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	c, err := p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.put(c, driver.ErrBadConn)
	if n := len(p.slots); n != 0 {
		t.Fatalf("after a bad connection: %d connections counted open, want 0", n)
	}
	err = p.row(ctx, `SELECT 1 AS a WHERE ? = 0`, int64(1), func([]driver.Value) error { return nil })
	if !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("a read of no row: %v, want sql.ErrNoRows", err)
	}
	var text string
	err = p.row(ctx, `SELECT ? AS a`, int64(3), func(v []driver.Value) error { return liteString(v[0], &text) })
	if err == nil {
		t.Fatal("an integer scanned as text: no error")
	}

	// The connections are the read pool's: query_only, from the same DSN.
	var only int64
	err = p.row(ctx, `SELECT query_only AS a FROM pragma_query_only() WHERE ? = 1`, int64(1),
		func(v []driver.Value) error { return liteInt(v[0], &only) })
	if err != nil || only != 1 {
		t.Fatalf("query_only on a read connection: %d, %v; want 1", only, err)
	}

	inUse, err := p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := liteOne(ctx, p, 1); !errors.Is(err, errLiteClosed) {
		t.Fatalf("a read after Close: %v, want errLiteClosed", err)
	}
	p.put(inUse, nil)
	if n := len(p.slots); n != 0 {
		t.Fatalf("after Close and the last put: %d connections open, want 0", n)
	}
}

// The heartbeat's read pool follows the cores, within [2, the read pool].
func TestHotReadConns(t *testing.T) {
	for _, c := range []struct{ n, procs, want int }{
		{8, 1, 2}, {8, 2, 2}, {8, 4, 4}, {8, 32, 8}, {1, 4, 1}, {3, 2, 2},
	} {
		if got := hotReadConns(c.n, c.procs); got != c.want {
			t.Errorf("hotReadConns(%d, %d) = %d, want %d", c.n, c.procs, got, c.want)
		}
	}
	db := openLite(t, 8)
	if got, want := cap(db.lite.slots), hotReadConns(8, runtime.GOMAXPROCS(0)); got != want {
		t.Errorf("a database opened with 8 read connections has a hot-read pool of %d, want %d", got, want)
	}
}
