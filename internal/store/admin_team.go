package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/internal/admin"
)

// Personal access tokens and app membership of admins.

const tokenCols = `t.id, t.user_id, t.name, t.hint, t.created_at, t.last_used_at, t.revoked_at`

func scanToken(row interface{ Scan(...any) error }) (*admin.Token, error) {
	var t admin.Token
	var created int64
	var used, revoked sql.NullInt64
	if err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.Hint, &created, &used, &revoked); err != nil {
		return nil, translate(err)
	}
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromMS(created), fromNullMS(used), fromNullMS(revoked)
	return &t, nil
}

func (t adminTx) InsertToken(ctx context.Context, tk *admin.Token, hash string) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO admin_tokens (id, user_id, name, token_hash, hint, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		tk.ID, tk.UserID, tk.Name, hash, tk.Hint, ms(tk.CreatedAt))
	return translate(err)
}

func (s adminStore) TokenByHash(ctx context.Context, hash string) (*admin.Token, *admin.User, error) {
	row := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+tokenCols+`, u.id, u.username, u.operator
		FROM admin_tokens t JOIN admin_users u ON u.id = t.user_id WHERE t.token_hash = ?`), hash)
	var t admin.Token
	var u admin.User
	var created int64
	var used, revoked sql.NullInt64
	if err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.Hint, &created, &used, &revoked, &u.ID, &u.Username, &u.Operator); err != nil {
		return nil, nil, translate(err)
	}
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromMS(created), fromNullMS(used), fromNullMS(revoked)
	return &t, &u, nil
}

func (s adminStore) Tokens(ctx context.Context, userID string) ([]admin.Token, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+tokenCols+` FROM admin_tokens t WHERE t.user_id = ? ORDER BY t.created_at, t.id`), userID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []admin.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, translate(rows.Err())
}

func (t adminTx) RevokeToken(ctx context.Context, userID, id string, at time.Time) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND user_id = ?`),
		ms(at), id, userID)
	return affected(res, err)
}

func (s adminStore) TouchToken(ctx context.Context, id string, at time.Time) error {
	return s.db.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE admin_tokens SET last_used_at = ? WHERE id = ?`), ms(at), id)
		return translate(err)
	})
}

func (s adminStore) MemberRole(ctx context.Context, appID, userID string) (admin.Role, bool, error) {
	var role sql.NullString
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT m.role FROM apps a
		LEFT JOIN app_members m ON m.app_id = a.id AND m.user_id = ? WHERE a.id = ?`), userID, appID).Scan(&role)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, translate(err)
	}
	return admin.Role(role.String), true, nil
}

func (s adminStore) Roles(ctx context.Context, userID string) (map[string]admin.Role, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT app_id, role FROM app_members WHERE user_id = ?`), userID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]admin.Role{}
	for rows.Next() {
		var app, role string
		if err := rows.Scan(&app, &role); err != nil {
			return nil, translate(err)
		}
		out[app] = admin.Role(role)
	}
	return out, translate(rows.Err())
}

func (s adminStore) Members(ctx context.Context, appID string) ([]admin.Member, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT m.app_id, m.user_id, u.username, u.email, m.role, m.created_at
		FROM app_members m JOIN admin_users u ON u.id = m.user_id WHERE m.app_id = ? ORDER BY m.created_at, u.username`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []admin.Member
	for rows.Next() {
		var m admin.Member
		var created int64
		if err := rows.Scan(&m.AppID, &m.UserID, &m.Username, &m.Email, &m.Role, &created); err != nil {
			return nil, translate(err)
		}
		m.CreatedAt = fromMS(created)
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// changeTeam runs change on appID's members with the app row locked, then
// refuses (ErrLastOwner) a team left without an owner.
func (t adminTx) changeTeam(ctx context.Context, appID string, change func() error) error {
	var id string
	if err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT id FROM apps WHERE id = ?`+t.db.forUpdate()), appID).Scan(&id); err != nil {
		return translate(err)
	}
	if err := change(); err != nil {
		return err
	}
	var owners int
	if err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT COUNT(*) FROM app_members WHERE app_id = ? AND role = 'owner'`), appID).Scan(&owners); err != nil {
		return translate(err)
	}
	if owners == 0 {
		return admin.ErrLastOwner
	}
	return nil
}

func (t adminTx) PutMember(ctx context.Context, m *admin.Member, newUser *admin.User) error {
	return t.changeTeam(ctx, m.AppID, func() error {
		if newUser != nil {
			if err := insertAdmin(ctx, t.db, t.tx, newUser); err != nil {
				return err
			}
		}
		_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO app_members (app_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (app_id, user_id) DO UPDATE SET role = excluded.role`), m.AppID, m.UserID, string(m.Role), ms(m.CreatedAt))
		return translate(err)
	})
}

func (t adminTx) DeleteMember(ctx context.Context, appID, userID string) error {
	return t.changeTeam(ctx, appID, func() error {
		res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM app_members WHERE app_id = ? AND user_id = ?`), appID, userID)
		return affected(res, err)
	})
}
