package store

import (
	"cmp"
	"context"
	"database/sql"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
)

// Expiry sweeps (license.ExpiryTx). Both queries walk the partial index
// license_keys_expiry (active keys with an expiry, by expires_at).

// ExpireDue is one UPDATE … RETURNING over the next keys by (expires_at,
// id) — the walk index, from the cursor, never a rescan — and one UPDATE of
// their live sessions; both statements' texts are the same for every batch
// (the limit and the ids are arguments), so SQLite's writer runs them
// prepared.
func (t licenseTx) ExpireDue(ctx context.Context, now, afterExp time.Time, afterID int64, limit int, reason string) ([]license.DueKey, error) {
	after := int64(math.MinInt64)
	if !afterExp.IsZero() {
		after = ms(afterExp)
	}
	rows, err := t.tx.QueryContext(ctx, t.db.rebind(`UPDATE license_keys SET status = 'expired', updated_at = ?
		WHERE id IN (SELECT id FROM license_keys
			WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ? AND (expires_at, id) > (?, ?)
			ORDER BY expires_at, id LIMIT ?`+t.db.skipLocked("")+`)
		RETURNING id, app_id, license_key, expires_at`),
		ms(now), ms(now), after, afterID, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	keys := make([]license.DueKey, 0, limit)
	for rows.Next() {
		var k license.DueKey
		var exp int64
		if err := rows.Scan(&k.ID, &k.AppID, &k.LicenseKey, &exp); err != nil {
			return nil, translate(err)
		}
		k.ExpiresAt = fromMS(exp)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// RETURNING promises no order.
	slices.SortFunc(keys, func(a, b license.DueKey) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	var in string
	var ids any
	if t.db.engine == Postgres {
		in = `= ANY(?)`
		ids = keyIDsOf(keys)
	} else {
		in = `IN (SELECT value FROM json_each(?))`
		b := make([]byte, 0, 12*len(keys))
		for i, k := range keys {
			b = append(b, ',')
			if i == 0 {
				b[0] = '['
			}
			b = strconv.AppendInt(b, k.ID, 10)
		}
		ids = string(append(b, ']'))
	}
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`UPDATE sessions SET ended_at = ?, end_reason = ? WHERE ended_at IS NULL AND key_id `+in),
		ms(now), reason, ids)
	return keys, translate(err)
}

func keyIDsOf(keys []license.DueKey) []int64 {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return ids
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

func (t licenseTx) AddEvents(ctx context.Context, evs []event.Event) error {
	return addEvents(ctx, t.db, t.tx, evs)
}

// inList returns "(?, ?, …)" for ids and the ids as arguments.
func inList[T any](ids []T) (string, []any) {
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
