package store

import (
	"context"

	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/license"
)

// CommerceStore returns db as the commerce package's Store.
func (db *DB) CommerceStore() commerce.Store { return commerceStore{db} }

type commerceStore struct{ db *DB }

type commerceTx struct{ journalTx }

func (s commerceStore) InTx(ctx context.Context, fn func(commerce.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(commerceTx{journalTx{s.db, tx}}) })
}

const planCols = `id, app_id, kind, name, description, price_cents, currency, period, key_type, duration, max_devices, features,
	position, active, created_at, updated_at`

func scanPlan(row interface{ Scan(...any) error }) (*commerce.Plan, error) {
	var p commerce.Plan
	var keyType, features string
	var created, updated int64
	if err := row.Scan(&p.ID, &p.AppID, &p.Kind, &p.Name, &p.Description, &p.PriceCents, &p.Currency, &p.Period, &keyType,
		&p.Duration, &p.MaxDevices, &features, &p.Position, &p.Active, &created, &updated); err != nil {
		return nil, translate(err)
	}
	p.KeyType, p.Features = license.KeyType(keyType), []byte(features)
	p.CreatedAt, p.UpdatedAt = fromMS(created), fromMS(updated)
	return &p, nil
}

func (s commerceStore) Plans(ctx context.Context, appID string) ([]commerce.Plan, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+planCols+` FROM price_plans WHERE app_id = ? ORDER BY position, id`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []commerce.Plan{}
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, translate(rows.Err())
}

func (t commerceTx) InsertPlan(ctx context.Context, p *commerce.Plan) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO price_plans (app_id, kind, name, description, price_cents,
		currency, period, key_type, duration, max_devices, features, position, active, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		p.AppID, p.Kind, p.Name, p.Description, p.PriceCents, p.Currency, p.Period, string(p.KeyType), p.Duration, p.MaxDevices,
		featuresText(p.Features), p.Position, p.Active, ms(p.CreatedAt), ms(p.UpdatedAt)).Scan(&p.ID))
}

func (t commerceTx) PlanForUpdate(ctx context.Context, appID string, id int64) (*commerce.Plan, error) {
	return scanPlan(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+planCols+` FROM price_plans WHERE app_id = ? AND id = ?`+t.db.forUpdate()),
		appID, id))
}

func (t commerceTx) UpdatePlan(ctx context.Context, p *commerce.Plan) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE price_plans SET name = ?, description = ?, price_cents = ?, currency = ?,
		period = ?, key_type = ?, duration = ?, max_devices = ?, features = ?, position = ?, active = ?, updated_at = ?
		WHERE app_id = ? AND id = ?`),
		p.Name, p.Description, p.PriceCents, p.Currency, p.Period, string(p.KeyType), p.Duration, p.MaxDevices, featuresText(p.Features),
		p.Position, p.Active, ms(p.UpdatedAt), p.AppID, p.ID)
	return affected(res, err)
}

func (t commerceTx) DeletePlan(ctx context.Context, appID string, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM price_plans WHERE app_id = ? AND id = ?`), appID, id)
	return affected(res, err)
}
