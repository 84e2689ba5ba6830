package store

import (
	"context"
	"database/sql"
	"fmt"
)

// sqliteMigrateLock serialises migrations of one SQLite data directory across
// processes (goose has no SQLite locker): `keyward migrate` and a starting
// `keyward serve`, or two servers started at once on a fresh directory, would
// otherwise both try to create the schema. The lock is an exclusive
// transaction on a separate file, migrate.lock, beside keyward.db; SQLite's
// own file locking makes it work wherever SQLite does, and a crashed holder
// releases it with its process.
type sqliteMigrateLock struct {
	path string
	db   *sql.DB
	tx   *sql.Tx
}

// SessionLock waits (up to a minute) for the lock. It ignores conn: the lock
// lives in another file so that the migrations can use keyward.db freely.
func (l *sqliteMigrateLock) SessionLock(ctx context.Context, _ *sql.Conn) error {
	db, err := sql.Open("sqlite", "file:"+l.path+"?_pragma=busy_timeout(60000)&_txlock=exclusive")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		db.Close()
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	l.db, l.tx = db, tx
	return nil
}

// SessionUnlock releases the lock.
func (l *sqliteMigrateLock) SessionUnlock(context.Context, *sql.Conn) error {
	if l.db == nil {
		return nil
	}
	l.tx.Rollback()
	err := l.db.Close()
	l.db, l.tx = nil, nil
	return err
}
