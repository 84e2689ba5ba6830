package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
)

// AdminStore returns db as the admin package's Store.
func (db *DB) AdminStore() admin.Store { return adminStore{db} }

type adminStore struct{ db *DB }

func (s adminStore) scan(row *sql.Row) (*admin.User, error) {
	var u admin.User
	var created int64
	if err := row.Scan(&u.ID, &u.Username, &u.PasswordHash, &created); err != nil {
		return nil, translate(err)
	}
	u.CreatedAt = fromMS(created)
	return &u, nil
}

func (s adminStore) AdminByUsername(ctx context.Context, username string) (*admin.User, error) {
	return s.scan(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT id, username, password_hash, created_at FROM admin_users WHERE username = ?`), username))
}

func (s adminStore) AdminByID(ctx context.Context, id string) (*admin.User, error) {
	return s.scan(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT id, username, password_hash, created_at FROM admin_users WHERE id = ?`), id))
}

func (s adminStore) CountAdmins(ctx context.Context) (int, error) {
	var n int
	err := s.db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM admin_users`).Scan(&n)
	return n, translate(err)
}

func (s adminStore) InsertAdmin(ctx context.Context, u *admin.User, e audit.Entry) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO admin_users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)`),
			u.ID, u.Username, u.PasswordHash, ms(u.CreatedAt)); err != nil {
			return translate(err)
		}
		return addAudit(ctx, s.db, tx, e)
	})
}

func (s adminStore) ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error) {
	var v string
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", translate(err)
	}
	fresh, err := generate()
	if err != nil {
		return "", err
	}
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.db.rebind(`INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, fresh); err != nil {
			return translate(err)
		}
		return translate(tx.QueryRowContext(ctx, s.db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), name).Scan(&v))
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return "", errors.New("server secret vanished after insert")
	}
	return v, err
}
