package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/trial"
)

// TrialStore returns db as the trial package's Store (over the license
// store's tables and transaction: a trial inserts a key and opens a session).
func (db *DB) TrialStore() trial.Store { return trialStore{licenseStore{db}} }

type trialStore struct{ licenseStore }

var (
	_ trial.Store = trialStore{}
	_ trial.Tx    = licenseTx{}
)

func (s trialStore) InTx(ctx context.Context, fn func(trial.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(licenseTx{journalTx{s.db, tx}}) })
}

func (t licenseTx) LockApp(ctx context.Context, appID string) error {
	var id string
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT id FROM apps WHERE id = ?`+t.db.forUpdate()), appID).Scan(&id))
}

func (t licenseTx) KeyByIDForUpdate(ctx context.Context, appID string, id int64) (*license.Key, error) {
	return scanKey(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+keyCols+` FROM license_keys WHERE app_id = ? AND id = ?`+t.db.forUpdate()),
		appID, id))
}

func (t licenseTx) TrialOf(ctx context.Context, appID, hwid string) (*trial.Trial, error) {
	var tr trial.Trial
	var keyID sql.NullInt64
	var created int64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT id, app_id, hwid, key_id, ip, created_at FROM trials WHERE app_id = ? AND hwid = ?`),
		appID, hwid).Scan(&tr.ID, &tr.AppID, &tr.HWID, &keyID, &tr.IP, &created)
	if err != nil {
		return nil, translate(err)
	}
	if keyID.Valid {
		tr.KeyID = &keyID.Int64
	}
	tr.CreatedAt = fromMS(created)
	return &tr, nil
}

func (t licenseTx) IsTrialKey(ctx context.Context, keyID int64) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT COUNT(*) FROM trials WHERE key_id = ?`), keyID).Scan(&n)
	return n > 0, translate(err)
}

func (t licenseTx) CountTrialsFromIP(ctx context.Context, appID, ip string, since time.Time) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT COUNT(*) FROM trials WHERE app_id = ? AND ip = ? AND created_at >= ?`),
		appID, ip, ms(since)).Scan(&n)
	return n, translate(err)
}

func (t licenseTx) InsertTrial(ctx context.Context, tr *trial.Trial) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO trials (app_id, hwid, key_id, ip, created_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`), tr.AppID, tr.HWID, tr.KeyID, tr.IP, ms(tr.CreatedAt)).Scan(&tr.ID))
}

func (s licenseStore) Trials(ctx context.Context, appID string, before int64, limit int) ([]trial.Trial, error) {
	q := `SELECT t.id, t.app_id, t.hwid, t.key_id, t.ip, t.created_at, k.license_key, k.status, k.expires_at
		FROM trials t LEFT JOIN license_keys k ON k.id = t.key_id WHERE t.app_id = ?`
	args := []any{appID}
	if before > 0 {
		q += ` AND t.id < ?`
		args = append(args, before)
	}
	q += ` ORDER BY t.id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trial.Trial{}
	for rows.Next() {
		var tr trial.Trial
		var keyID, expires sql.NullInt64
		var lk, status sql.NullString
		var created int64
		if err := rows.Scan(&tr.ID, &tr.AppID, &tr.HWID, &keyID, &tr.IP, &created, &lk, &status, &expires); err != nil {
			return nil, translate(err)
		}
		if keyID.Valid {
			tr.KeyID = &keyID.Int64
		}
		tr.CreatedAt, tr.LicenseKey, tr.Status, tr.ExpiresAt = fromMS(created), lk.String, license.Status(status.String), fromNullMS(expires)
		out = append(out, tr)
	}
	return out, translate(rows.Err())
}
