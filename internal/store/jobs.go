package store

import (
	"context"
	"time"
)

// TryLease takes or renews the lease of a scheduled job for holder until
// the given time, and reports whether holder has it: it succeeds when the
// lease is free, expired at now, or already holder's. One statement, so two
// processes racing for it cannot both win.
func (db *DB) TryLease(ctx context.Context, name, holder string, now, until time.Time) (bool, error) {
	res, err := db.exec(ctx, `INSERT INTO job_leases (name, holder, until) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
		WHERE job_leases.until < ? OR job_leases.holder = excluded.holder`, name, holder, ms(until), ms(now))
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, translate(err)
}

// PurgeWebhookLog deletes finished deliveries (with their attempts) last
// changed before cutoff, and events dispatched before it, at most batch rows
// of each per statement, and returns how many deliveries and events went.
func (db *DB) PurgeWebhookLog(ctx context.Context, cutoff time.Time, batch int) (deliveries, events int, err error) {
	for {
		res, err := db.exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
			SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < ? LIMIT ?)`, ms(cutoff), batch)
		if err != nil {
			return deliveries, events, translate(err)
		}
		n, _ := res.RowsAffected()
		deliveries += int(n)
		if int(n) < batch {
			break
		}
	}
	for {
		// An event may go once fanned out; its deliveries keep their own body.
		res, err := db.exec(ctx, `DELETE FROM events WHERE id IN (
			SELECT id FROM events WHERE dispatched_at IS NOT NULL AND created_at < ? LIMIT ?)`, ms(cutoff), batch)
		if err != nil {
			return deliveries, events, translate(err)
		}
		n, _ := res.RowsAffected()
		events += int(n)
		if int(n) < batch {
			return deliveries, events, nil
		}
	}
}
