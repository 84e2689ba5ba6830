package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/keyward/keyward/internal/abuse"
)

// AbuseStore returns db as the abuse package's Store.
func (db *DB) AbuseStore() abuse.Store { return abuseStore{db} }

type abuseStore struct{ db *DB }

type abuseTx struct{ journalTx }

func (s abuseStore) InTx(ctx context.Context, fn func(abuse.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(abuseTx{journalTx{s.db, tx}}) })
}

// Sight records a sighting and counts the key's sightings of that kind
// since since, in one unit: leak detection's bookkeeping, which need not
// be durable before the login goes on (txRan).
func (s abuseStore) Sight(ctx context.Context, appID, licenseKey, kind, value string, now, since time.Time) (int, error) {
	var n int
	err := s.db.txRan(ctx, func(tx *wtx) error {
		// A key not of this app (INVALID_KEY) is not recorded: the foreign key
		// on app_id holds, and sightings of unknown strings would only grow.
		if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO key_sightings (app_id, license_key, kind, value, last_seen)
			SELECT ?, ?, ?, ?, CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM license_keys WHERE app_id = ? AND license_key = ?)
			ON CONFLICT (app_id, license_key, kind, value) DO UPDATE SET last_seen = excluded.last_seen`),
			appID, licenseKey, kind, value, ms(now), appID, licenseKey); err != nil {
			return translate(err)
		}
		return translate(tx.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM key_sightings
			WHERE app_id = ? AND license_key = ? AND kind = ? AND last_seen >= ?`), appID, licenseKey, kind, ms(since)).Scan(&n))
	})
	return n, err
}

func (s abuseStore) LastDetection(ctx context.Context, appID, kind, subject string) (time.Time, error) {
	var at sql.NullInt64
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT MAX(created_at) FROM detections WHERE app_id = ? AND kind = ? AND subject = ?`),
		appID, kind, subject).Scan(&at)
	if err != nil || !at.Valid {
		return time.Time{}, translate(err)
	}
	return fromMS(at.Int64), nil
}

func (s abuseStore) Detections(ctx context.Context, appID, kind string, limit int) ([]abuse.Detection, error) {
	q := `SELECT id, app_id, kind, subject, details, created_at FROM detections WHERE app_id = ?`
	args := []any{appID}
	if kind != "" {
		q += ` AND kind = ?`
		args = append(args, kind)
	}
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q+` ORDER BY id DESC LIMIT ?`), append(args, limit)...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []abuse.Detection{}
	for rows.Next() {
		var d abuse.Detection
		var details string
		var at int64
		if err := rows.Scan(&d.ID, &d.AppID, &d.Kind, &d.Subject, &details, &at); err != nil {
			return nil, translate(err)
		}
		json.Unmarshal([]byte(details), &d.Details)
		d.CreatedAt = fromMS(at)
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

func (t abuseTx) AddDetection(ctx context.Context, d *abuse.Detection) error {
	details, err := json.Marshal(d.Details)
	if err != nil {
		return err
	}
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO detections (app_id, kind, subject, details, created_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`), d.AppID, d.Kind, d.Subject, string(details), ms(d.CreatedAt)).Scan(&d.ID))
}

// PurgeSightings deletes key sightings last seen before cutoff.
func (db *DB) PurgeSightings(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := db.exec(ctx, `DELETE FROM key_sightings WHERE last_seen < ?`, ms(cutoff))
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}
