package store

import (
	"context"
	"database/sql"
	"math"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
)

// Expiry sweeps (license.ExpiryTx). Both queries walk the partial index
// license_keys_expiry (active keys with an expiry, by expires_at).

func (t licenseTx) KeysPastExpiry(ctx context.Context, now, afterExp time.Time, afterID int64, limit int) ([]license.Key, error) {
	after := int64(math.MinInt64)
	if !afterExp.IsZero() {
		after = ms(afterExp)
	}
	return scanKeys(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+keyCols+` FROM license_keys
		WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ? AND (expires_at, id) > (?, ?)
		ORDER BY expires_at, id LIMIT ?`+t.db.skipLocked("")),
		ms(now), after, afterID, limit))
}

func (t licenseTx) KeysExpiringBy(ctx context.Context, now, until, afterExp time.Time, afterID int64, minWindow int64,
	limit int) ([]license.ExpiringKey, error) {
	after := ms(now)
	if !afterExp.IsZero() {
		after = ms(afterExp)
	}
	rows, err := t.tx.QueryContext(ctx, t.db.rebind(`SELECT id, app_id, license_key, expires_at, expiry_notice_for, COALESCE(expiry_notice, 0)
		FROM license_keys
		WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ?
			AND (expires_at, id) > (?, ?)
			AND (expiry_notice_for IS NULL OR expiry_notice_for <> expires_at OR expiry_notice > ?)
		ORDER BY expires_at, id LIMIT ?`+t.db.skipLocked("")),
		ms(now), ms(until), after, afterID, minWindow, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.ExpiringKey
	for rows.Next() {
		var k license.ExpiringKey
		var exp int64
		var noticeFor sql.NullInt64
		if err := rows.Scan(&k.ID, &k.AppID, &k.LicenseKey, &exp, &noticeFor, &k.Notice); err != nil {
			return nil, translate(err)
		}
		k.ExpiresAt, k.NoticeFor = fromMS(exp), fromNullMS(noticeFor)
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) SetExpiryNotice(ctx context.Context, keyID int64, forExpiry time.Time, window int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE license_keys SET expiry_notice_for = ?, expiry_notice = ? WHERE id = ?`),
		ms(forExpiry), window, keyID)
	return affected(res, err)
}

func (t licenseTx) MarkExpired(ctx context.Context, ids []int64, reason string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids)
	if _, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE license_keys SET status = 'expired', updated_at = ? WHERE id IN `+in),
		append([]any{ms(now)}, args...)...); err != nil {
		return translate(err)
	}
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE sessions SET ended_at = ?, end_reason = ? WHERE ended_at IS NULL AND key_id IN `+in),
		append([]any{ms(now), reason}, args...)...)
	return translate(err)
}

func (t licenseTx) AddEvents(ctx context.Context, evs []event.Event) error {
	return addEvents(ctx, t.db, t.tx, evs)
}

// inList returns "(?, ?, …)" for ids and the ids as arguments.
func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return "(?" + strings.Repeat(", ?", len(ids)-1) + ")", args
}

// Key aliases (license.AliasTx): strings rotated away for a suspected leak.

func (t licenseTx) InsertKeyAlias(ctx context.Context, appID, alias, hwid string, keyID int64, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO key_aliases (app_id, alias, hwid, key_id, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (app_id, alias, hwid) DO UPDATE SET key_id = excluded.key_id`), appID, alias, hwid, keyID, ms(now))
	return translate(err)
}

func (t licenseTx) KeyByAliasForUpdate(ctx context.Context, appID, alias, hwid string) (*license.Key, error) {
	return scanKey(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+keyCols+` FROM license_keys WHERE id =
		(SELECT key_id FROM key_aliases WHERE app_id = ? AND alias = ? AND hwid = ?)`+t.db.forUpdate()), appID, alias, hwid))
}

func (t licenseTx) DeleteDevice(ctx context.Context, keyID int64, hwid string) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM devices WHERE key_id = ? AND hwid = ?`), keyID, hwid)
	return translate(err)
}

func (s licenseStore) IsKeyAlias(ctx context.Context, appID, alias string, keyID int64) (bool, error) {
	var n int
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM key_aliases WHERE app_id = ? AND alias = ? AND key_id = ?`),
		appID, alias, keyID).Scan(&n)
	return n > 0, translate(err)
}
