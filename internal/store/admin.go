package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
)

// AdminStore returns db as the admin package's Store.
func (db *DB) AdminStore() admin.Store { return adminStore{db} }

type adminStore struct{ db *DB }

// adminTx is the admin package's Tx: its writes and the journal of one
// transaction.
type adminTx struct{ journalTx }

func (s adminStore) InTx(ctx context.Context, fn func(admin.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(adminTx{journalTx{s.db, tx}}) })
}

const adminCols = `id, username, email, password_hash, operator, token_gen, totp_secret, totp_pending, created_at`

// scanAdmin reads an admin, opening the sealed TOTP secrets.
func (db *DB) scanAdmin(row interface{ Scan(...any) error }, extra ...any) (*admin.User, error) {
	var u admin.User
	var created int64
	dest := append([]any{&u.ID, &u.Username, &u.Email, &u.PasswordHash, &u.Operator, &u.TokenGen, &u.TOTPSecret, &u.TOTPPending, &created}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, translate(err)
	}
	u.CreatedAt = fromMS(created)
	var err error
	if u.TOTPSecret, err = db.openString(purposeTOTPSecret, u.ID, u.TOTPSecret); err != nil {
		return nil, err
	}
	if u.TOTPPending, err = db.openString(purposeTOTPPending, u.ID, u.TOTPPending); err != nil {
		return nil, err
	}
	return &u, nil
}

func (s adminStore) AdminByUsername(ctx context.Context, username string) (*admin.User, error) {
	return s.db.scanAdmin(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+adminCols+` FROM admin_users WHERE username = ?`), username))
}

func (s adminStore) AdminByID(ctx context.Context, id string) (*admin.User, error) {
	return s.db.scanAdmin(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+adminCols+` FROM admin_users WHERE id = ?`), id))
}

func (s adminStore) AdminForJWT(ctx context.Context, id, jti string) (*admin.User, bool, error) {
	var revoked bool
	u, err := s.db.scanAdmin(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+adminCols+`,
		EXISTS (SELECT 1 FROM admin_revoked_jwts WHERE jti = ?) FROM admin_users WHERE id = ?`), jti, id), &revoked)
	return u, revoked, err
}

func (s adminStore) CountAdmins(ctx context.Context) (int, error) {
	var n int
	err := s.db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM admin_users`).Scan(&n)
	return n, translate(err)
}

func insertAdmin(ctx context.Context, db *DB, tx *wtx, u *admin.User) error {
	_, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO admin_users (id, username, email, password_hash, operator, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		u.ID, u.Username, u.Email, u.PasswordHash, u.Operator, ms(u.CreatedAt))
	return translate(err)
}

func (t adminTx) AdminByIDForUpdate(ctx context.Context, id string) (*admin.User, error) {
	return t.db.scanAdmin(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+adminCols+` FROM admin_users WHERE id = ?`+t.db.forUpdate()), id))
}

func (t adminTx) InsertAdmin(ctx context.Context, u *admin.User) error {
	return insertAdmin(ctx, t.db, t.tx, u)
}

func (t adminTx) UpdateAdmin(ctx context.Context, u *admin.User, codes []string) error {
	totp, err := t.db.sealString(purposeTOTPSecret, u.ID, u.TOTPSecret)
	if err != nil {
		return err
	}
	pending, err := t.db.sealString(purposeTOTPPending, u.ID, u.TOTPPending)
	if err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE admin_users SET email = ?, password_hash = ?, token_gen = ?, totp_secret = ?, totp_pending = ?
		WHERE id = ?`), u.Email, u.PasswordHash, u.TokenGen, totp, pending, u.ID)
	if err := affected(res, err); err != nil {
		return err
	}
	if codes == nil {
		return nil
	}
	if _, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM admin_recovery_codes WHERE user_id = ?`), u.ID); err != nil {
		return translate(err)
	}
	for _, h := range codes {
		if _, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO admin_recovery_codes (user_id, code_hash) VALUES (?, ?)`), u.ID, h); err != nil {
			return translate(err)
		}
	}
	return nil
}

func (s adminStore) ClaimTOTPStep(ctx context.Context, userID string, step int64) (bool, error) {
	return s.changedOne(ctx, `UPDATE admin_users SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?`, step, userID, step)
}

func (s adminStore) UseRecoveryCode(ctx context.Context, userID, hash string, at time.Time) (bool, error) {
	return s.changedOne(ctx, `UPDATE admin_recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL`,
		ms(at), userID, hash)
}

// changedOne runs a conditional update and reports whether it changed a
// row: the claim of something usable once.
func (s adminStore) changedOne(ctx context.Context, q string, args ...any) (bool, error) {
	var ok bool
	err := s.db.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, s.db.rebind(q), args...)
		if err != nil {
			return translate(err)
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	return ok, err
}

func (t adminTx) RevokeJWT(ctx context.Context, jti string, expires time.Time) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO admin_revoked_jwts (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING`),
		jti, ms(expires))
	return translate(err)
}

// PurgeRevokedJWTs forgets signed-out JWTs that have expired anyway.
func (db *DB) PurgeRevokedJWTs(ctx context.Context, now time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM admin_revoked_jwts WHERE expires_at < ?`, ms(now))
	if err != nil {
		return 0, translate(err)
	}
	return res.RowsAffected()
}

func (s adminStore) ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error) {
	var v string
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), name).Scan(&v)
	if err == nil {
		return s.db.openString(purposeServerSecret, name, v)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", translate(err)
	}
	fresh, err := generate()
	if err != nil {
		return "", err
	}
	if fresh, err = s.db.sealString(purposeServerSecret, name, fresh); err != nil {
		return "", err
	}
	err = s.db.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, fresh); err != nil {
			return translate(err)
		}
		return translate(tx.QueryRowContext(ctx, s.db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), name).Scan(&v))
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return "", errors.New("server secret vanished after insert")
	} else if err != nil {
		return "", err
	}
	return s.db.openString(purposeServerSecret, name, v)
}
