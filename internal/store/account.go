package store

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/license"
)

// AccountStore returns db as the account package's Store. Its methods are
// the license store's: accounts share the keys, sessions and devices
// tables, and a redemption changes a key and an account in one transaction.
func (db *DB) AccountStore() account.Store { return accountStore{licenseStore{db}} }

type accountStore struct{ licenseStore }

var (
	_ account.Store = accountStore{}
	_ account.Tx    = licenseTx{}
)

func (s accountStore) InTx(ctx context.Context, fn func(account.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(licenseTx{journalTx{s.db, tx}}) })
}

const accountCols = `id, app_id, username, email, password_hash, password_reset_required, status, max_devices, features,
	license_key, expires_at, last_login_at, created_at, updated_at`

func scanAccount(row interface{ Scan(...any) error }) (*license.Account, error) {
	var a license.Account
	var features string
	var expires, lastLogin sql.NullInt64
	var created, updated int64
	if err := row.Scan(&a.ID, &a.AppID, &a.Username, &a.Email, &a.PasswordHash, &a.PasswordResetRequired, &a.Status,
		&a.MaxDevices, &features, &a.LicenseKey, &expires, &lastLogin, &created, &updated); err != nil {
		return nil, translate(err)
	}
	a.Features = []byte(features)
	a.ExpiresAt, a.LastLoginAt = fromNullMS(expires), fromNullMS(lastLogin)
	a.CreatedAt, a.UpdatedAt = fromMS(created), fromMS(updated)
	return &a, nil
}

func featuresText(raw []byte) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

func (s licenseStore) AccountByUsername(ctx context.Context, appID, usernameKey string) (*license.Account, error) {
	return scanAccount(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+accountCols+` FROM accounts WHERE app_id = ? AND username_key = ?`),
		appID, usernameKey))
}

// likeEscape escapes LIKE wildcards in a user's search text (ESCAPE '\').
func likeEscape(q string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q)
}

func (s licenseStore) Accounts(ctx context.Context, f account.Filter) ([]license.Account, error) {
	q := `SELECT ` + accountCols + ` FROM accounts WHERE app_id = ? AND id > ?`
	args := []any{f.AppID, f.After}
	if f.Query != "" {
		q += ` AND (username_key LIKE ? ESCAPE '\' OR email_key LIKE ? ESCAPE '\')`
		pat := "%" + likeEscape(strings.ToLower(f.Query)) + "%"
		args = append(args, pat, pat)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []license.Account{}
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, translate(rows.Err())
}

func (s licenseStore) AccountDevices(ctx context.Context, accountID int64) ([]license.Device, error) {
	return accountDevices.list(ctx, s.db, s.db.read, accountID)
}

func (s licenseStore) Redemptions(ctx context.Context, accountID int64) ([]license.Redemption, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+redemptionCols+`, k.license_key
		FROM account_redemptions r JOIN license_keys k ON k.id = r.key_id
		WHERE r.account_id = ? ORDER BY r.created_at, r.key_id`), accountID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []license.Redemption{}
	for rows.Next() {
		r, err := scanRedemption(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, translate(rows.Err())
}

const redemptionCols = `r.key_id, r.account_id, r.days_added, r.added_seconds, r.lifetime, r.prior_expires_at, r.created_at`

func scanRedemption(row interface{ Scan(...any) error }, withKey bool) (*license.Redemption, error) {
	var r license.Redemption
	var account, prior sql.NullInt64
	var added, created int64
	dest := []any{&r.KeyID, &account, &r.DaysAdded, &added, &r.Lifetime, &prior, &created}
	if withKey {
		dest = append(dest, &r.LicenseKey)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, translate(err)
	}
	r.AccountID, r.Added = account.Int64, time.Duration(added)*time.Second
	r.PriorExpiresAt, r.CreatedAt = fromNullMS(prior), fromMS(created)
	return &r, nil
}

func (t licenseTx) InsertAccount(ctx context.Context, a *license.Account) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO accounts (app_id, username, username_key, email, email_key,
		password_hash, password_reset_required, status, max_devices, features, license_key, expires_at, last_login_at, created_at,
		updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		a.AppID, a.Username, license.UsernameKey(a.Username), a.Email, strings.ToLower(a.Email), a.PasswordHash, a.PasswordResetRequired, a.Status,
		a.MaxDevices, featuresText(a.Features), a.LicenseKey, optMS(a.ExpiresAt), optMS(a.LastLoginAt), ms(a.CreatedAt),
		ms(a.UpdatedAt)).Scan(&a.ID))
}

func (t licenseTx) AccountForUpdate(ctx context.Context, appID, usernameKey string) (*license.Account, error) {
	return scanAccount(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+accountCols+` FROM accounts WHERE app_id = ? AND username_key = ?`+
		t.db.forUpdate()), appID, usernameKey))
}

func (t licenseTx) AccountByIDForUpdate(ctx context.Context, appID string, id int64) (*license.Account, error) {
	return scanAccount(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+accountCols+` FROM accounts WHERE app_id = ? AND id = ?`+
		t.db.forUpdate()), appID, id))
}

func (t licenseTx) UpdateAccount(ctx context.Context, a *license.Account) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE accounts SET email = ?, email_key = ?, password_hash = ?,
		password_reset_required = ?, status = ?, max_devices = ?, features = ?, license_key = ?, expires_at = ?, last_login_at = ?,
		updated_at = ? WHERE id = ?`),
		a.Email, strings.ToLower(a.Email), a.PasswordHash, a.PasswordResetRequired, a.Status, a.MaxDevices, featuresText(a.Features), a.LicenseKey,
		optMS(a.ExpiresAt), optMS(a.LastLoginAt), ms(a.UpdatedAt), a.ID)
	return affected(res, err)
}

func (t licenseTx) DeleteAccount(ctx context.Context, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM accounts WHERE id = ?`), id)
	return affected(res, err)
}

func (t licenseTx) AccountDevices(ctx context.Context, accountID int64) ([]license.Device, error) {
	return accountDevices.list(ctx, t.db, t.tx, accountID)
}

func (t licenseTx) UpsertAccountDevice(ctx context.Context, accountID int64, hwid string, now time.Time) error {
	return accountDevices.upsert(ctx, t, accountID, hwid, now)
}

func (t licenseTx) DeleteAccountDevices(ctx context.Context, accountID int64) (int, error) {
	return accountDevices.delete(ctx, t, accountID)
}

func (t licenseTx) LiveSessionsOfAccount(ctx context.Context, accountID int64) ([]license.Session, error) {
	return t.liveSessions(ctx, "account_id", accountID)
}

func (t licenseTx) EndAccountSessions(ctx context.Context, accountID int64, reason string, now time.Time) (int, error) {
	return t.endSessions(ctx, "account_id", accountID, reason, now)
}

func (t licenseTx) InsertRedemption(ctx context.Context, r *license.Redemption) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO account_redemptions (key_id, account_id, days_added, added_seconds, lifetime,
		prior_expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`), r.KeyID, r.AccountID, r.DaysAdded, int64(r.Added/time.Second),
		r.Lifetime, optMS(r.PriorExpiresAt), ms(r.CreatedAt))
	return translate(err)
}

func (t licenseTx) RedemptionOfKey(ctx context.Context, keyID int64) (*license.Redemption, error) {
	return scanRedemption(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+redemptionCols+` FROM account_redemptions r WHERE r.key_id = ?`),
		keyID), false)
}

func (t licenseTx) ActiveLifetimeRedemptions(ctx context.Context, accountID int64) ([]license.Redemption, error) {
	rows, err := t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+redemptionCols+` FROM account_redemptions r
		JOIN license_keys k ON k.id = r.key_id WHERE r.account_id = ? AND r.lifetime = ? AND k.status = ? ORDER BY r.key_id`),
		accountID, true, license.StatusRedeemed)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.Redemption
	for rows.Next() {
		r, err := scanRedemption(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) UpdateRedemption(ctx context.Context, r *license.Redemption) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE account_redemptions SET prior_expires_at = ?, added_seconds = ? WHERE key_id = ?`),
		optMS(r.PriorExpiresAt), int64(r.Added/time.Second), r.KeyID)
	return affected(res, err)
}
