package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/license"
)

// CustomerStore returns db as the customer package's Store. Every query
// that takes a Holder filters by its app and by the key or account.
func (db *DB) CustomerStore() customer.Store { return customerStore{db} }

type customerStore struct{ db *DB }

type customerTx struct{ journalTx }

func (s customerStore) InTx(ctx context.Context, fn func(customer.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(customerTx{journalTx{s.db, tx}}) })
}

func (t customerTx) License() license.Tx      { return licenseTx{journalTx{t.db, t.tx}} }
func (t customerTx) Orders() commerce.OrderTx { return commerceTx{journalTx{t.db, t.tx}} }

func (s customerStore) ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error) {
	return adminStore{s.db}.ServerSecret(ctx, name, generate)
}

func (s customerStore) App(ctx context.Context, id string) (*license.App, error) {
	return licenseStore{s.db}.App(ctx, id)
}

func (s customerStore) Key(ctx context.Context, appID, licenseKey string) (*license.Key, error) {
	return licenseStore{s.db}.Key(ctx, appID, licenseKey)
}

func (s customerStore) Account(ctx context.Context, appID, usernameKey string) (*license.Account, error) {
	return licenseStore{s.db}.AccountByUsername(ctx, appID, usernameKey)
}

// holderKeys is a subquery of the license key strings a holder owns, with
// its arguments: the key itself, or the keys redeemed onto the account.
func holderKeys(h customer.Holder) (string, []any) {
	if h.AccountID != 0 {
		return `SELECT hk.license_key FROM account_redemptions hr JOIN license_keys hk ON hk.id = hr.key_id
			JOIN accounts ha ON ha.id = hr.account_id WHERE hk.app_id = ? AND ha.app_id = ? AND hr.account_id = ?`,
			[]any{h.AppID, h.AppID, h.AccountID}
	}
	return `SELECT hk.license_key FROM license_keys hk WHERE hk.app_id = ? AND hk.id = ?`, []any{h.AppID, h.KeyID}
}

// holderSessions is the WHERE condition on sessions s of a holder.
func holderSessions(h customer.Holder) (string, []any) {
	if h.AccountID != 0 {
		return `s.app_id = ? AND s.account_id = ?`, []any{h.AppID, h.AccountID}
	}
	return `s.app_id = ? AND s.key_id = ?`, []any{h.AppID, h.KeyID}
}

func (s customerStore) HolderKeys(ctx context.Context, h customer.Holder) ([]string, error) {
	q, args := holderKeys(h)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q+` ORDER BY hk.id`), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

func (s customerStore) Devices(ctx context.Context, h customer.Holder) ([]license.Device, error) {
	q := `SELECT d.hwid, d.created_at, d.last_seen_at FROM devices d JOIN license_keys k ON k.id = d.key_id
		WHERE k.app_id = ? AND d.key_id = ? ORDER BY d.created_at, d.hwid`
	id := h.KeyID
	if h.AccountID != 0 {
		q = `SELECT d.hwid, d.created_at, d.last_seen_at FROM account_devices d JOIN accounts a ON a.id = d.account_id
			WHERE a.app_id = ? AND d.account_id = ? ORDER BY d.created_at, d.hwid`
		id = h.AccountID
	}
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), h.AppID, id)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []license.Device{}
	for rows.Next() {
		d := license.Device{KeyID: h.KeyID, AccountID: h.AccountID}
		var created, seen int64
		if err := rows.Scan(&d.HWID, &created, &seen); err != nil {
			return nil, translate(err)
		}
		d.CreatedAt, d.LastSeenAt = fromMS(created), fromMS(seen)
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

func (s customerStore) LiveSessions(ctx context.Context, h customer.Holder) ([]license.Session, error) {
	cond, args := holderSessions(h)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+sessionCols+` FROM sessions s WHERE `+cond+`
		AND s.ended_at IS NULL ORDER BY s.created_at, s.id LIMIT 1000`), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []license.Session{}
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *ss)
	}
	return out, translate(rows.Err())
}

func (s customerStore) Subscriptions(ctx context.Context, h customer.Holder) ([]commerce.Subscription, error) {
	keys, args := holderKeys(h)
	return commerceStore{s.db}.subs(ctx, `app_id = ? AND license_key IN (`+keys+`) ORDER BY id DESC`, append([]any{h.AppID}, args...)...)
}

// Orders finds the holder's orders by the delivered keys (a JSON array of
// strings, matched with LIKE and then exactly) and by the subscriptions
// they renew. An app's orders are scanned: a customer has few keys, and the
// portal is not a hot path.
func (s customerStore) Orders(ctx context.Context, h customer.Holder, limit int) ([]commerce.Order, error) {
	own, err := s.HolderKeys(ctx, h)
	if err != nil || len(own) == 0 {
		return []commerce.Order{}, err
	}
	if len(own) > 100 {
		own = own[:100]
	}
	keys, kargs := holderKeys(h)
	var likes []string
	args := []any{h.AppID}
	for _, k := range own {
		quoted, _ := json.Marshal(k)
		likes = append(likes, `keys LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscape(string(quoted))+"%")
	}
	args = append(append(append(args, h.AppID), kargs...), limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+orderCols+` FROM orders WHERE app_id = ? AND (`+strings.Join(likes, " OR ")+`
		OR subscription_id IN (SELECT id FROM subscriptions WHERE app_id = ? AND license_key IN (`+keys+`)))
		ORDER BY created_at DESC, id DESC LIMIT ?`), args...)
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
		if o.SubscriptionID != nil || slices.ContainsFunc(o.Keys, func(k string) bool { return slices.Contains(own, k) }) {
			out = append(out, *o)
		}
	}
	return out, translate(rows.Err())
}

func (t customerTx) LiveSession(ctx context.Context, h customer.Holder, id string) (*license.Session, error) {
	cond, args := holderSessions(h)
	return scanSession(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+sessionCols+` FROM sessions s WHERE s.id = ? AND `+cond+`
		AND s.ended_at IS NULL`+t.db.forUpdate()), append([]any{id}, args...)...))
}

func (t customerTx) SubscriptionForUpdate(ctx context.Context, h customer.Holder, id int64) (*commerce.Subscription, error) {
	keys, args := holderKeys(h)
	return scanSub(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+subCols+` FROM subscriptions WHERE app_id = ? AND id = ?
		AND license_key IN (`+keys+`)`+t.db.forUpdate()), append([]any{h.AppID, id}, args...)...))
}
