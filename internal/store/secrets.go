package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/keyward/keyward/internal/seal"
)

// Secrets at rest: the columns below hold values sealed under the
// key-encryption key (package seal), bound to their column and row. The
// store seals on write and opens on read, so the domain packages see
// plaintext and a raw read of the database (a dump, a backup) sees none.
const (
	purposeAppSecret     = "apps.secret"
	purposeUpstreamToken = "apps.upstream_token"
	purposeTOTPSecret    = "admin_users.totp_secret"
	purposeTOTPPending   = "admin_users.totp_pending"
	purposeWebhookSecret = "webhook_destinations.secret"
	purposeServerSecret  = "server_secrets.value"
	purposeReplayReply   = "envelope_replays.reply"
)

// sealedColumn is one column of sealed values: its table, the key columns
// that address a row, and how they make the row id of the associated data.
type sealedColumn struct {
	table, col, purpose string
	keys                []string
	rowID               func(keys []any) string
}

func oneKey(keys []any) string { return keyText(keys[0]) }

func keyText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

// replayID is the row id of an envelope_replays row.
func replayID(appID, mac string) string { return appID + "/" + mac }

var sealedColumns = []sealedColumn{
	{"server_secrets", "value", purposeServerSecret, []string{"name"}, oneKey},
	{"apps", "secret", purposeAppSecret, []string{"id"}, oneKey},
	{"apps", "upstream_token", purposeUpstreamToken, []string{"id"}, oneKey},
	{"admin_users", "totp_secret", purposeTOTPSecret, []string{"id"}, oneKey},
	{"admin_users", "totp_pending", purposeTOTPPending, []string{"id"}, oneKey},
	{"webhook_destinations", "secret", purposeWebhookSecret, []string{"id"}, oneKey},
	{"envelope_replays", "reply", purposeReplayReply, []string{"app_id", "mac"},
		func(k []any) string { return replayID(keyText(k[0]), keyText(k[1])) }},
}

// keyCheckName is the server_secrets row that tells which key the database's
// secrets are sealed with: a start with another key file refuses instead of
// sealing new secrets under a second key.
const keyCheckName = "secret_key_check"

// SetKeys sets the keyring db seals and opens secrets with (Options.Keys).
func (db *DB) SetKeys(kr *seal.Keyring) { db.keys = kr }

// Keys is the keyring db seals and opens secrets with.
func (db *DB) Keys() *seal.Keyring { return db.keys }

func (db *DB) sealString(purpose, id, v string) (string, error) {
	return db.keys.SealString(purpose, id, v)
}

func (db *DB) openString(purpose, id, v string) (string, error) {
	out, err := db.keys.OpenString(purpose, id, v)
	if err != nil {
		return "", fmt.Errorf("%s of %q: %w", purpose, id, err)
	}
	return out, nil
}

// CheckKeys verifies that the loaded key file is the one the database's
// secrets are sealed with, recording the primary key's id in a fresh
// database. A database sealed under a key that is not loaded is refused with
// an error naming that key's id.
func (db *DB) CheckKeys(ctx context.Context) error {
	if db.keys == nil {
		return errors.New("no secret key is loaded")
	}
	var v string
	err := db.read.QueryRowContext(ctx, db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), keyCheckName).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		fresh, serr := db.sealString(purposeServerSecret, keyCheckName, "keyward")
		if serr != nil {
			return serr
		}
		if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`),
			keyCheckName, fresh); err != nil {
			return translate(err)
		}
		err = db.write.QueryRowContext(ctx, db.rebind(`SELECT value FROM server_secrets WHERE name = ?`), keyCheckName).Scan(&v)
	}
	if err != nil {
		return translate(err)
	}
	if _, err := db.keys.Open(purposeServerSecret, keyCheckName, v); err != nil {
		kid, _, _ := seal.Parse(v)
		return fmt.Errorf("the database's secrets are sealed with secret key %s, which the secret key file does not hold (it holds %s): "+
			"use the key file the database was sealed with (--secret-key-file; every process sharing the database needs the same one)",
			kid, strings.Join(db.keys.IDs(), ", "))
	}
	return nil
}

// SealSecrets is the start-up migration of secrets at rest: after CheckKeys,
// it re-writes every secret still stored in plaintext (rows written before
// sealing existed) sealed under the primary key, in batches. It is
// idempotent and safe with several processes starting at once (each row is
// re-written only if it still holds the plaintext read). It returns the
// number of values sealed.
func (db *DB) SealSecrets(ctx context.Context) (int, error) {
	if err := db.CheckKeys(ctx); err != nil {
		return 0, err
	}
	return db.reseal(ctx, seal.Prefix)
}

// RotateSecrets re-seals every sealed (or legacy plaintext) value under the
// primary key of db's keyring, which must also hold the keys the values are
// sealed with now. It returns the number of values re-written.
func (db *DB) RotateSecrets(ctx context.Context) (int, error) {
	if db.keys == nil {
		return 0, errors.New("no secret key is loaded")
	}
	return db.reseal(ctx, seal.Prefix+db.keys.PrimaryID()+":")
}

// resealBatch is how many rows one transaction of reseal re-writes.
const resealBatch = 500

// reseal re-writes, column by column, every non-empty value that does not
// start with keep, sealed under the primary key.
func (db *DB) reseal(ctx context.Context, keep string) (int, error) {
	total := 0
	for _, c := range sealedColumns {
		for {
			n, err := db.resealBatch(ctx, c, keep)
			total += n
			if err != nil {
				return total, fmt.Errorf("seal %s.%s: %w", c.table, c.col, err)
			}
			if n < resealBatch {
				break
			}
		}
	}
	return total, nil
}

func (db *DB) resealBatch(ctx context.Context, c sealedColumn, keep string) (int, error) {
	keys := strings.Join(c.keys, ", ")
	rows, err := db.write.QueryContext(ctx, db.rebind(`SELECT `+keys+`, `+c.col+` FROM `+c.table+
		` WHERE `+c.col+` IS NOT NULL AND `+c.col+` <> '' AND `+c.col+` NOT LIKE ? LIMIT ?`), keep+"%", resealBatch)
	if err != nil {
		return 0, translate(err)
	}
	type row struct {
		keys []any
		old  string
	}
	var batch []row
	for rows.Next() {
		r := row{keys: make([]any, len(c.keys))}
		dest := make([]any, 0, len(c.keys)+1)
		for i := range r.keys {
			dest = append(dest, &r.keys[i])
		}
		if err := rows.Scan(append(dest, &r.old)...); err != nil {
			rows.Close()
			return 0, translate(err)
		}
		for i, k := range r.keys {
			if b, ok := k.([]byte); ok {
				r.keys[i] = string(b)
			}
		}
		batch = append(batch, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, translate(err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	where := strings.Join(c.keys, " = ? AND ") + " = ?"
	update := db.rebind(`UPDATE ` + c.table + ` SET ` + c.col + ` = ? WHERE ` + where + ` AND ` + c.col + ` = ?`)
	err = db.tx(ctx, func(tx *wtx) error {
		for _, r := range batch {
			id := c.rowID(r.keys)
			plain, err := db.keys.Open(c.purpose, id, r.old)
			if err != nil {
				return fmt.Errorf("row %q: %w", id, err)
			}
			sealed, err := db.keys.Seal(c.purpose, id, plain)
			if err != nil {
				return err
			}
			args := append(append([]any{sealed}, r.keys...), r.old)
			if _, err := tx.ExecContext(ctx, update, args...); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(batch), nil
}
