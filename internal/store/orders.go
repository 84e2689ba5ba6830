package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/license"
)

// OrderStore returns db as the commerce package's OrderStore.
func (db *DB) OrderStore() commerce.OrderStore { return commerceStore{db} }

func (s commerceStore) InOrderTx(ctx context.Context, fn func(commerce.OrderTx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(commerceTx{journalTx{s.db, tx}}) })
}

// License is this transaction as the license package's Tx.
func (t commerceTx) License() license.Tx { return licenseTx{journalTx{t.db, t.tx}} }

const orderCols = `id, app_id, plan_id, plan_name, kind, amount_cents, currency, key_type, duration, max_devices, features, email,
	status, payment_ref, keys, created_at, fulfilled_at, updated_at, subscription_id`

func scanOrder(row interface{ Scan(...any) error }) (*commerce.Order, error) {
	var o commerce.Order
	var planID, fulfilled, sub sql.NullInt64
	var keyType, features, keys string
	var created, updated int64
	if err := row.Scan(&o.ID, &o.AppID, &planID, &o.PlanName, &o.Kind, &o.AmountCents, &o.Currency, &keyType, &o.Duration,
		&o.MaxDevices, &features, &o.Email, &o.Status, &o.PaymentRef, &keys, &created, &fulfilled, &updated, &sub); err != nil {
		return nil, translate(err)
	}
	if planID.Valid {
		o.PlanID = &planID.Int64
	}
	if sub.Valid {
		o.SubscriptionID = &sub.Int64
	}
	o.KeyType, o.Features = license.KeyType(keyType), []byte(features)
	if err := json.Unmarshal([]byte(keys), &o.Keys); err != nil || o.Keys == nil {
		o.Keys = []string{}
	}
	o.CreatedAt, o.FulfilledAt, o.UpdatedAt = fromMS(created), fromNullMS(fulfilled), fromMS(updated)
	return &o, nil
}

func keysText(keys []string) string {
	if keys == nil {
		keys = []string{}
	}
	b, _ := json.Marshal(keys)
	return string(b)
}

func (s commerceStore) Orders(ctx context.Context, appID string, limit int) ([]commerce.Order, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+orderCols+` FROM orders WHERE app_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`), appID, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []commerce.Order{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *o)
	}
	return out, translate(rows.Err())
}

func (t commerceTx) InsertOrder(ctx context.Context, o *commerce.Order) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO orders (id, app_id, plan_id, plan_name, kind, amount_cents, currency,
		key_type, duration, max_devices, features, email, status, payment_ref, keys, created_at, fulfilled_at, updated_at, subscription_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		o.ID, o.AppID, o.PlanID, o.PlanName, o.Kind, o.AmountCents, o.Currency, string(o.KeyType), o.Duration, o.MaxDevices,
		featuresText(o.Features), o.Email, o.Status, o.PaymentRef, keysText(o.Keys), ms(o.CreatedAt), optMS(o.FulfilledAt), ms(o.UpdatedAt),
		o.SubscriptionID)
	return translate(err)
}

func (t commerceTx) OrderForUpdate(ctx context.Context, id string) (*commerce.Order, error) {
	return scanOrder(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+orderCols+` FROM orders WHERE id = ?`+t.db.forUpdate()), id))
}

func (t commerceTx) UpdateOrder(ctx context.Context, o *commerce.Order) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE orders SET status = ?, payment_ref = ?, keys = ?, fulfilled_at = ?, updated_at = ?
		WHERE id = ?`), o.Status, o.PaymentRef, keysText(o.Keys), optMS(o.FulfilledAt), ms(o.UpdatedAt), o.ID)
	return affected(res, err)
}

func (s commerceStore) FulfillmentSecretHash(ctx context.Context, appID string) (string, error) {
	var h string
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT fulfillment_secret_hash FROM apps WHERE id = ?`), appID).Scan(&h)
	return h, translate(err)
}

func (t commerceTx) SetFulfillmentSecretHash(ctx context.Context, appID, hash string) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE apps SET fulfillment_secret_hash = ? WHERE id = ?`), hash, appID)
	return affected(res, err)
}

const subCols = `id, app_id, plan_id, plan_name, period, period_days, amount_cents, currency, license_key, email, status, renews_at,
	renewal_order_id, created_at, updated_at`

func scanSub(row interface{ Scan(...any) error }) (*commerce.Subscription, error) {
	var s commerce.Subscription
	var planID sql.NullInt64
	var renewal sql.NullString
	var renews, created, updated int64
	if err := row.Scan(&s.ID, &s.AppID, &planID, &s.PlanName, &s.Period, &s.PeriodDays, &s.AmountCents, &s.Currency, &s.LicenseKey,
		&s.Email, &s.Status, &renews, &renewal, &created, &updated); err != nil {
		return nil, translate(err)
	}
	if planID.Valid {
		s.PlanID = &planID.Int64
	}
	s.RenewalOrderID = renewal.String
	s.RenewsAt, s.CreatedAt, s.UpdatedAt = fromMS(renews), fromMS(created), fromMS(updated)
	return &s, nil
}

func (s commerceStore) subs(ctx context.Context, q string, args ...any) ([]commerce.Subscription, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+subCols+` FROM subscriptions WHERE `+q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []commerce.Subscription{}
	for rows.Next() {
		sub, err := scanSub(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *sub)
	}
	return out, translate(rows.Err())
}

func (s commerceStore) Subscriptions(ctx context.Context, appID string) ([]commerce.Subscription, error) {
	return s.subs(ctx, `app_id = ? ORDER BY id DESC`, appID)
}

func (s commerceStore) SubscriptionOfKey(ctx context.Context, appID, licenseKey string) (*commerce.Subscription, error) {
	return scanSub(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+subCols+` FROM subscriptions WHERE app_id = ? AND license_key = ?
		ORDER BY id DESC LIMIT 1`), appID, licenseKey))
}

func (s commerceStore) DueSubscriptions(ctx context.Context, cutoff time.Time, limit int) ([]commerce.Subscription, error) {
	return s.subs(ctx, `status = ? AND renewal_order_id IS NULL AND renews_at <= ? ORDER BY renews_at, id LIMIT ?`,
		commerce.SubActive, ms(cutoff), limit)
}

func (t commerceTx) InsertSubscription(ctx context.Context, s *commerce.Subscription) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO subscriptions (app_id, plan_id, plan_name, period, period_days,
		amount_cents, currency, license_key, email, status, renews_at, renewal_order_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		s.AppID, s.PlanID, s.PlanName, s.Period, s.PeriodDays, s.AmountCents, s.Currency, s.LicenseKey, s.Email, s.Status,
		ms(s.RenewsAt), nullString(s.RenewalOrderID), ms(s.CreatedAt), ms(s.UpdatedAt)).Scan(&s.ID))
}

func (t commerceTx) SubscriptionForUpdate(ctx context.Context, appID string, id int64) (*commerce.Subscription, error) {
	return scanSub(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+subCols+` FROM subscriptions WHERE app_id = ? AND id = ?`+t.db.forUpdate()),
		appID, id))
}

func (t commerceTx) UpdateSubscription(ctx context.Context, s *commerce.Subscription) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE subscriptions SET status = ?, renews_at = ?, renewal_order_id = ?, updated_at = ?
		WHERE app_id = ? AND id = ?`), s.Status, ms(s.RenewsAt), nullString(s.RenewalOrderID), ms(s.UpdatedAt), s.AppID, s.ID)
	return affected(res, err)
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
