package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/lockout"
)

// LockoutStore returns db as the lockout package's Store. Counters are rows
// of the lockouts table, updated under a row lock (PostgreSQL) or the single
// writer (SQLite), so every process sharing the database sees one count.
func (db *DB) LockoutStore() lockout.Store { return lockoutStore{db} }

type lockoutStore struct{ db *DB }

// zeroMS stores the zero time as 0 (not the far-negative Unix milliseconds
// of year 1), and reads 0 back as the zero time.
func zeroMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromZeroMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}

func scanCounter(row *sql.Row) (lockout.Counter, error) {
	var c lockout.Counter
	var start, until int64
	if err := row.Scan(&c.Failures, &start, &until); err != nil {
		return lockout.Counter{}, err
	}
	c.WindowStart, c.LockedUntil = fromZeroMS(start), fromZeroMS(until)
	return c, nil
}

func (s lockoutStore) Counter(ctx context.Context, scope, subject string) (lockout.Counter, error) {
	c, err := scanCounter(s.db.read.QueryRowContext(ctx, s.db.rebind(
		`SELECT failures, window_start, locked_until FROM lockouts WHERE scope = ? AND subject = ?`), scope, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return lockout.Counter{}, nil
	}
	return c, translate(err)
}

func (s lockoutStore) UpdateCounter(ctx context.Context, scope, subject string, fn func(*lockout.Counter)) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		// Make sure the row exists, then lock it: two processes failing at
		// once both count.
		if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO lockouts (scope, subject, failures, window_start, locked_until)
			VALUES (?, ?, 0, 0, 0) ON CONFLICT (scope, subject) DO NOTHING`), scope, subject); err != nil {
			return translate(err)
		}
		c, err := scanCounter(tx.QueryRowContext(ctx, s.db.rebind(
			`SELECT failures, window_start, locked_until FROM lockouts WHERE scope = ? AND subject = ?`+s.db.forUpdate()), scope, subject))
		if err != nil {
			return translate(err)
		}
		fn(&c)
		_, err = tx.ExecContext(ctx, s.db.rebind(`UPDATE lockouts SET failures = ?, window_start = ?, locked_until = ?
			WHERE scope = ? AND subject = ?`), c.Failures, zeroMS(c.WindowStart), zeroMS(c.LockedUntil), scope, subject)
		return translate(err)
	})
}

func (s lockoutStore) DeleteCounter(ctx context.Context, scope, subject string) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		// A running lock stays: only the failure count is forgotten.
		_, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE lockouts SET failures = 0 WHERE scope = ? AND subject = ? AND locked_until > 0`), scope, subject)
		if err != nil {
			return translate(err)
		}
		_, err = tx.ExecContext(ctx, s.db.rebind(`DELETE FROM lockouts WHERE scope = ? AND subject = ? AND locked_until = 0`), scope, subject)
		return translate(err)
	})
}

func (s lockoutStore) PurgeCounters(ctx context.Context, cutoff, now time.Time) (int, error) {
	var n int64
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.db.rebind(`DELETE FROM lockouts WHERE window_start < ? AND locked_until <= ?`), ms(cutoff), ms(now))
		if err != nil {
			return translate(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
