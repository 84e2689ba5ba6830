package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
)

// ResellerStore returns db as the reseller package's Store.
func (db *DB) ResellerStore() reseller.Store { return resellerStore{db} }

type resellerStore struct{ db *DB }

// resellerTx is one write transaction of the reseller store; it is also a
// license transaction.
type resellerTx struct{ licenseTx }

func (s resellerStore) InResellerTx(ctx context.Context, fn func(reseller.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(resellerTx{licenseTx{journalTx{s.db, tx}}}) })
}

// License is this transaction as the license package's Tx.
func (t resellerTx) License() license.Tx { return t.licenseTx }

const resellerCols = `id, app_id, name, email, token_hint, balance, products, status, created_at, updated_at`

func scanReseller(row interface{ Scan(...any) error }) (*reseller.Reseller, error) {
	var r reseller.Reseller
	var products string
	var created, updated int64
	if err := row.Scan(&r.ID, &r.AppID, &r.Name, &r.Email, &r.TokenHint, &r.Balance, &products, &r.Status, &created, &updated); err != nil {
		return nil, translate(err)
	}
	if err := json.Unmarshal([]byte(products), &r.Products); err != nil {
		return nil, fmt.Errorf("reseller %s products: %w", r.ID, err)
	}
	if r.Products == nil {
		r.Products = []reseller.Product{}
	}
	r.CreatedAt, r.UpdatedAt = fromMS(created), fromMS(updated)
	return &r, nil
}

func productsText(ps []reseller.Product) string {
	if ps == nil {
		ps = []reseller.Product{}
	}
	b, _ := json.Marshal(ps)
	return string(b)
}

func (s resellerStore) Resellers(ctx context.Context, appID string) ([]reseller.Reseller, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+resellerCols+` FROM resellers WHERE app_id = ?
		ORDER BY created_at, id`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []reseller.Reseller{}
	for rows.Next() {
		r, err := scanReseller(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, translate(rows.Err())
}

func (s resellerStore) Reseller(ctx context.Context, appID, id string) (*reseller.Reseller, error) {
	return scanReseller(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+resellerCols+` FROM resellers WHERE app_id = ? AND id = ?`),
		appID, id))
}

func (s resellerStore) ResellerByTokenHash(ctx context.Context, hash string) (*reseller.Reseller, error) {
	return scanReseller(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+resellerCols+` FROM resellers WHERE token_hash = ?`), hash))
}

func (s resellerStore) Ledger(ctx context.Context, f reseller.LedgerFilter) ([]reseller.Entry, error) {
	q := `SELECT l.id, l.reseller_id, r.name, l.at, l.delta, l.balance_after, l.reason, l.detail, l.actor
		FROM reseller_ledger l JOIN resellers r ON r.id = l.reseller_id WHERE r.app_id = ?`
	args := []any{f.AppID}
	if f.ResellerID != "" {
		q += ` AND l.reseller_id = ?`
		args = append(args, f.ResellerID)
	}
	if f.Before > 0 {
		q += ` AND l.id < ?`
		args = append(args, f.Before)
	}
	q += ` ORDER BY l.id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []reseller.Entry{}
	for rows.Next() {
		var e reseller.Entry
		var at int64
		if err := rows.Scan(&e.ID, &e.ResellerID, &e.ResellerName, &at, &e.Delta, &e.BalanceAfter, &e.Reason, &e.Detail, &e.Actor); err != nil {
			return nil, translate(err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

func (s resellerStore) ResellerKeys(ctx context.Context, f reseller.KeyFilter) ([]license.Key, error) {
	q := `SELECT ` + keyCols + ` FROM license_keys WHERE reseller_id = ? AND app_id = ? AND id > ?`
	args := []any{f.ResellerID, f.AppID, f.After}
	q, args = statusFilter(q, args, f.Status, f.Now)
	q += ` ORDER BY id LIMIT ?`
	args = append(args, f.Limit)
	keys, err := scanKeys(s.db.read.QueryContext(ctx, s.db.rebind(q), args...))
	if keys == nil && err == nil {
		keys = []license.Key{}
	}
	return keys, err
}

func (t resellerTx) InsertReseller(ctx context.Context, r *reseller.Reseller, tokenHash string) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO resellers (id, app_id, name, email, token_hash, token_hint, balance, products,
		status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), r.ID, r.AppID, r.Name, r.Email, tokenHash, r.TokenHint,
		r.Balance, productsText(r.Products), r.Status, ms(r.CreatedAt), ms(r.UpdatedAt))
	return translate(err)
}

func (t resellerTx) ResellerForUpdate(ctx context.Context, appID, id string) (*reseller.Reseller, error) {
	return scanReseller(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+resellerCols+` FROM resellers WHERE app_id = ? AND id = ?`+
		t.db.forUpdate()), appID, id))
}

func (t resellerTx) UpdateReseller(ctx context.Context, r *reseller.Reseller) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE resellers SET name = ?, email = ?, products = ?, status = ?, updated_at = ?
		WHERE id = ?`), r.Name, r.Email, productsText(r.Products), r.Status, ms(r.UpdatedAt), r.ID)
	return affected(res, err)
}

func (t resellerTx) SetResellerToken(ctx context.Context, id, tokenHash, hint string, now time.Time) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE resellers SET token_hash = ?, token_hint = ?, updated_at = ? WHERE id = ?`),
		tokenHash, hint, ms(now), id)
	return affected(res, err)
}

func (t resellerTx) DeleteReseller(ctx context.Context, id string) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM resellers WHERE id = ?`), id)
	return affected(res, err)
}

// Debit is one conditional update: on PostgreSQL a concurrent debit waits
// for the row and re-checks the condition against the committed balance;
// SQLite runs one write transaction at a time.
func (t resellerTx) Debit(ctx context.Context, id string, amount int64, now time.Time) (int64, bool, error) {
	return t.balanceChange(ctx, `UPDATE resellers SET balance = balance - ?, updated_at = ? WHERE id = ? AND balance >= ?
		RETURNING balance`, amount, ms(now), id, amount)
}

func (t resellerTx) Credit(ctx context.Context, id string, amount, max int64, now time.Time) (int64, bool, error) {
	return t.balanceChange(ctx, `UPDATE resellers SET balance = balance + ?, updated_at = ? WHERE id = ? AND balance <= ?
		RETURNING balance`, amount, ms(now), id, max-amount)
}

func (t resellerTx) balanceChange(ctx context.Context, q string, args ...any) (int64, bool, error) {
	var bal int64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(q), args...).Scan(&bal)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, translate(err)
	}
	return bal, true, nil
}

func (t resellerTx) AddLedger(ctx context.Context, e *reseller.Entry) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO reseller_ledger (reseller_id, at, delta, balance_after, reason,
		detail, actor) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`), e.ResellerID, ms(e.At), e.Delta, e.BalanceAfter, e.Reason, e.Detail,
		e.Actor).Scan(&e.ID))
}

func (t resellerTx) InsertResellerKeys(ctx context.Context, resellerID string, keys []license.Key) error {
	return t.insertKeys(ctx, keys, resellerID)
}

func (t resellerTx) KeyReseller(ctx context.Context, appID, licenseKey string) (string, error) {
	var id sql.NullString
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT reseller_id FROM license_keys WHERE app_id = ? AND license_key = ?`+
		t.db.forUpdate()), appID, licenseKey).Scan(&id)
	return id.String, translate(err)
}
