package store

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/lockout"
)

// LockoutStore returns db as the lockout package's Store. Counters are rows
// of the lockouts table, updated under row locks (PostgreSQL) or the single
// writer (SQLite), so every process sharing the database sees one count and
// a reservation of several subjects is one transaction.
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
	return s.UpdateCounters(ctx, []lockout.Key{{Scope: scope, Subject: subject}}, func(cs []lockout.Counter) { fn(&cs[0]) })
}

// UpdateCounters locks the rows of keys in one transaction, in (scope,
// subject) order whatever the order of keys, so two processes reserving
// the same subjects wait for each other instead of deadlocking.
func (s lockoutStore) UpdateCounters(ctx context.Context, keys []lockout.Key, fn func([]lockout.Counter)) error {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := keys[order[a]], keys[order[b]]
		return ka.Scope < kb.Scope || ka.Scope == kb.Scope && ka.Subject < kb.Subject
	})
	return s.db.tx(ctx, func(tx *wtx) error {
		cs := make([]lockout.Counter, len(keys))
		for _, i := range order {
			// Make sure the row exists, then lock it: two processes
			// counting at once both count.
			if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO lockouts (scope, subject, failures, window_start, locked_until)
				VALUES (?, ?, 0, 0, 0) ON CONFLICT (scope, subject) DO NOTHING`), keys[i].Scope, keys[i].Subject); err != nil {
				return translate(err)
			}
			c, err := scanCounter(tx.QueryRowContext(ctx, s.db.rebind(
				`SELECT failures, window_start, locked_until FROM lockouts WHERE scope = ? AND subject = ?`+s.db.forUpdate()),
				keys[i].Scope, keys[i].Subject))
			if err != nil {
				return translate(err)
			}
			cs[i] = c
		}
		fn(cs)
		for _, i := range order {
			c := cs[i]
			if _, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE lockouts SET failures = ?, window_start = ?, locked_until = ?
				WHERE scope = ? AND subject = ?`), c.Failures, zeroMS(c.WindowStart), zeroMS(c.LockedUntil), keys[i].Scope, keys[i].Subject); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

func (s lockoutStore) PurgeCounters(ctx context.Context, cutoff, now time.Time) (int, error) {
	var n int64
	err := s.db.tx(ctx, func(tx *wtx) error {
		// Rows a sign-in holds are skipped, not waited for: a reservation
		// locks its (up to two) rows in key order while this DELETE would
		// lock in scan order, and the two orders could deadlock on PostgreSQL.
		res, err := tx.ExecContext(ctx, s.db.rebind(`DELETE FROM lockouts WHERE (scope, subject) IN (
			SELECT scope, subject FROM lockouts WHERE window_start < ? AND locked_until <= ?`+s.db.skipLocked("")+`)`), ms(cutoff), ms(now))
		if err != nil {
			return translate(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
