package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimReplay records that the envelope with this MAC is being answered. It
// returns claimed=true for the first caller across every keyward process;
// later callers get claimed=false and the stored reply (nil while the first
// caller has not finished).
func (db *DB) ClaimReplay(ctx context.Context, appID, mac string, expires time.Time) (claimed bool, reply []byte, err error) {
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

// CompleteReplay stores the reply given to a claimed envelope, sealed: a
// login reply holds the new session's token.
func (db *DB) CompleteReplay(ctx context.Context, appID, mac string, reply []byte) error {
	sealed, err := db.keys.Seal(purposeReplayReply, replayID(appID, mac), reply)
	if err != nil {
		return err
	}
	// Recorded with the next batch, not waited for (txRan): should it be
	// lost to a crash, a duplicate of this envelope finds its claim
	// pending and is refused as busy until the envelope expires; it is
	// never answered twice.
	return db.txRan(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE envelope_replays SET reply = ? WHERE app_id = ? AND mac = ?`), sealed, appID, mac)
		return translate(err)
	})
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
