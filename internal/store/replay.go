package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimReplay records that the envelope with this MAC is being answered. It
// returns claimed=true for the first caller across every keyward process
// (on SQLite, in the one process that owns the database: see claimQueued);
// later callers get claimed=false and the stored reply (nil while the first
// caller has not finished).
func (db *DB) ClaimReplay(ctx context.Context, appID, mac string, expires time.Time) (claimed bool, reply []byte, err error) {
	if db.writer != nil {
		return db.claimQueued(ctx, appID, mac, expires)
	}
	// The claim need not be durable before the request goes on: the
	// request's own write (a login) commits after it, in order, and its
	// reply waits for that (txRan).
	err = db.txRan(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO envelope_replays (app_id, mac, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (app_id, mac) DO NOTHING`), appID, mac, ms(expires))
		if err != nil {
			return translate(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			claimed = true
			return nil
		}
		var r sql.NullString
		if err := tx.QueryRowContext(ctx, db.rebind(`SELECT reply FROM envelope_replays WHERE app_id = ? AND mac = ?`), appID, mac).Scan(&r); err != nil {
			return translate(err)
		}
		if r.Valid {
			reply, err = db.keys.Open(purposeReplayReply, replayID(appID, mac), r.String)
		}
		return err
	})
	return claimed, reply, err
}

// claimQueued is ClaimReplay on SQLite, where one process owns the
// database: a claim costs the request no batch of its own. An envelope
// claimed in this process and not yet committed is in db.claims; one
// committed (before a restart too) is in the table, read on the read pool;
// otherwise the claim is this caller's, and its INSERT is queued to the
// writer without waiting (txQueued). The request's own write transaction,
// queued after it, commits with it or after it, so a login acknowledged
// has its claim durable too; the claims entry goes once the INSERT has
// committed, when the table shows it.
func (db *DB) claimQueued(ctx context.Context, appID, mac string, expires time.Time) (bool, []byte, error) {
	key := appID + "\x00" + mac
	if _, inFlight := db.claims.LoadOrStore(key, struct{}{}); inFlight {
		// Claimed in this process; its reply, if recorded, may still be
		// queued: ReplayReply reads through the writer, behind it.
		reply, err := db.ReplayReply(ctx, appID, mac)
		return false, reply, err
	}
	var r sql.NullString
	err := db.read.QueryRowContext(ctx, db.rebind(`SELECT reply FROM envelope_replays WHERE app_id = ? AND mac = ?`), appID, mac).Scan(&r)
	if err == nil {
		db.claims.Delete(key)
		if !r.Valid {
			reply, err := db.ReplayReply(ctx, appID, mac)
			return false, reply, err
		}
		reply, err := db.keys.Open(purposeReplayReply, replayID(appID, mac), r.String)
		return false, reply, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		db.claims.Delete(key)
		return false, nil, translate(err)
	}
	queued := db.txQueued(func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO envelope_replays (app_id, mac, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (app_id, mac) DO NOTHING`, appID, mac, ms(expires))
		return translate(err)
	}, func(error) { db.claims.Delete(key) })
	if !queued {
		db.claims.Delete(key)
		return false, nil, errClosed
	}
	return true, nil, nil
}

// CompleteReplay stores the reply given to a claimed envelope, sealed: a
// login reply holds the new session's token.
func (db *DB) CompleteReplay(ctx context.Context, appID, mac string, reply []byte) error {
	sealed, err := db.keys.Seal(purposeReplayReply, replayID(appID, mac), reply)
	if err != nil {
		return err
	}
	// Not waited for: on SQLite queued to the writer (txQueued; a
	// duplicate reads it through the writer, behind it), on PostgreSQL
	// committed without waiting for its WAL flush (txRan). Should it be
	// lost to a crash, a duplicate of this envelope finds its claim
	// pending and is refused as busy until the envelope expires; it is
	// never answered twice.
	update := func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE envelope_replays SET reply = ? WHERE app_id = ? AND mac = ?`), sealed, appID, mac)
		return translate(err)
	}
	if db.txQueued(update, func(error) {}) {
		return nil
	}
	return db.txRan(ctx, update)
}

// ReplayReply reads the stored reply of an envelope, nil while pending.
// On SQLite it reads through the writer: the reply is recorded in the
// writer's batches without waiting for their commit (CompleteReplay), so
// the write connection is where it is first seen.
func (db *DB) ReplayReply(ctx context.Context, appID, mac string) ([]byte, error) {
	var r sql.NullString
	q := db.rebind(`SELECT reply FROM envelope_replays WHERE app_id = ? AND mac = ?`)
	var err error
	if db.writer != nil {
		err = db.txRan(ctx, func(tx *wtx) error { return tx.QueryRowContext(ctx, q, appID, mac).Scan(&r) })
	} else {
		err = db.read.QueryRowContext(ctx, q, appID, mac).Scan(&r)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, translate(err)
	}
	if !r.Valid {
		return nil, nil
	}
	return db.keys.Open(purposeReplayReply, replayID(appID, mac), r.String)
}

// ReleaseReplay forgets a claim whose request failed internally, so that the
// client's retry is processed afresh.
func (db *DB) ReleaseReplay(ctx context.Context, appID, mac string) error {
	_, err := db.exec(ctx, `DELETE FROM envelope_replays WHERE app_id = ? AND mac = ? AND reply IS NULL`, appID, mac)
	return translate(err)
}
