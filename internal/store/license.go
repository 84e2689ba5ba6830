package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// LicenseStore returns db as the license package's Store.
func (db *DB) LicenseStore() license.Store { return licenseStore{db} }

type licenseStore struct{ db *DB }

var (
	_ license.Store = licenseStore{}
	_ license.Tx    = licenseTx{}
)

// licenseTx is one write transaction of the license store.
type licenseTx struct{ journalTx }

func (s licenseStore) InTx(ctx context.Context, fn func(license.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(licenseTx{journalTx{s.db, tx}}) })
}

const appCols = `id, name, version, secret, settings, created_at, updated_at, revoked_at, upstream_token, upstream_imported`

// scanApp reads an app, opening its sealed secret: apps are kept in the
// license service's app cache with the secret in the clear, so the hot path
// (heartbeat, login) pays for the decryption once per cache fill, not per
// request.
func (db *DB) scanApp(row interface{ Scan(...any) error }) (*license.App, error) {
	var a license.App
	var settings string
	var created, updated int64
	var revoked sql.NullInt64
	if err := row.Scan(&a.ID, &a.Name, &a.Version, &a.Secret, &settings, &created, &updated, &revoked,
		&a.UpstreamToken, &a.UpstreamImported); err != nil {
		return nil, translate(err)
	}
	var err error
	if a.Secret, err = db.openString(purposeAppSecret, a.ID, a.Secret); err != nil {
		return nil, err
	}
	if a.UpstreamToken, err = db.openString(purposeUpstreamToken, a.ID, a.UpstreamToken); err != nil {
		return nil, err
	}
	a.Settings = license.DefaultSettings()
	if err := json.Unmarshal([]byte(settings), &a.Settings); err != nil {
		return nil, fmt.Errorf("app %s settings: %w", a.ID, err)
	}
	a.Settings.UpstreamTokenSet = a.UpstreamToken != ""
	a.CreatedAt, a.UpdatedAt, a.RevokedAt = fromMS(created), fromMS(updated), fromNullMS(revoked)
	return &a, nil
}

func (s licenseStore) AppBySecretHash(ctx context.Context, hash string) (*license.App, error) {
	return s.db.scanApp(s.db.hotRow(ctx, `SELECT `+appCols+` FROM apps WHERE secret_hash = ?`, hash))
}

func (s licenseStore) App(ctx context.Context, id string) (*license.App, error) {
	return s.db.scanApp(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+appCols+` FROM apps WHERE id = ?`), id))
}

func (s licenseStore) Apps(ctx context.Context) ([]license.App, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+appCols+` FROM apps ORDER BY created_at, id`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.App
	for rows.Next() {
		a, err := s.db.scanApp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) InsertApp(ctx context.Context, a *license.App, secretHash string) error {
	settings, _ := json.Marshal(a.Settings)
	secret, err := t.db.sealString(purposeAppSecret, a.ID, a.Secret)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO apps (id, name, version, secret, secret_hash, settings, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), a.ID, a.Name, a.Version, secret, secretHash, string(settings), ms(a.CreatedAt), ms(a.UpdatedAt))
	if err != nil || a.OwnerID == "" {
		return translate(err)
	}
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO app_members (app_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)`),
		a.ID, a.OwnerID, ms(a.CreatedAt))
	return translate(err)
}

func (t licenseTx) UpdateApp(ctx context.Context, a *license.App, secretHash string) error {
	settings, _ := json.Marshal(a.Settings)
	secret, err := t.db.sealString(purposeAppSecret, a.ID, a.Secret)
	if err != nil {
		return err
	}
	token := ""
	if a.UpstreamToken != "" {
		if token, err = t.db.sealString(purposeUpstreamToken, a.ID, a.UpstreamToken); err != nil {
			return err
		}
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE apps SET name = ?, version = ?, secret = ?, secret_hash = ?, settings = ?, updated_at = ?,
		revoked_at = ?, upstream_token = ? WHERE id = ?`), a.Name, a.Version, secret, secretHash, string(settings), ms(a.UpdatedAt), optMS(a.RevokedAt),
		token, a.ID)
	return affected(res, err)
}

// CountUpstreamImport adds one to the app's count of keys imported from
// its upstream on first use.
func (t licenseTx) CountUpstreamImport(ctx context.Context, appID string) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE apps SET upstream_imported = upstream_imported + 1 WHERE id = ?`), appID)
	return affected(res, err)
}

// DeleteApp deletes the app; its keys, sessions and the rest go with it
// (ON DELETE CASCADE). On PostgreSQL the app's live sessions are locked
// first, in id order: the heartbeat flush locks the sessions it writes in
// that order (TouchSessions), and the cascade, left to itself, locks them
// in whatever order its deletes find them, so an app deleted while its
// fleet was beating could deadlock with the flush and fail.
func (t licenseTx) DeleteApp(ctx context.Context, id string) error {
	if t.db.engine == Postgres {
		if _, err := t.tx.ExecContext(ctx, `SELECT id FROM sessions WHERE app_id = $1 AND ended_at IS NULL ORDER BY id FOR UPDATE`, id); err != nil {
			return translate(err)
		}
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM apps WHERE id = ?`), id)
	return affected(res, err)
}

func affected(res sql.Result, err error) error {
	if err != nil {
		return translate(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return apperr.ErrNotFound
	}
	return nil
}

const keyCols = `id, app_id, license_key, status, key_type, duration, max_devices, note, features,
	activated_at, expires_at, last_self_reset_at, created_at, updated_at, floating`

func scanKey(row interface{ Scan(...any) error }) (*license.Key, error) {
	var k license.Key
	var features string
	var activated, expires, lastReset sql.NullInt64
	var created, updated int64
	if err := row.Scan(&k.ID, &k.AppID, &k.LicenseKey, &k.Status, &k.Type, &k.Duration, &k.MaxDevices, &k.Note, &features,
		&activated, &expires, &lastReset, &created, &updated, &k.Floating); err != nil {
		return nil, translate(err)
	}
	k.Features = json.RawMessage(features)
	k.ActivatedAt, k.ExpiresAt, k.LastSelfResetAt = fromNullMS(activated), fromNullMS(expires), fromNullMS(lastReset)
	k.CreatedAt, k.UpdatedAt = fromMS(created), fromMS(updated)
	return &k, nil
}

func (s licenseStore) Key(ctx context.Context, appID, licenseKey string) (*license.Key, error) {
	return scanKey(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+keyCols+` FROM license_keys WHERE app_id = ? AND license_key = ?`),
		appID, licenseKey))
}

func (s licenseStore) TakenKeyStrings(ctx context.Context, appID string, strs []string) ([]string, error) {
	return takenKeyStrings(ctx, s.db, s.db.read, appID, strs)
}

func (t licenseTx) TakenKeyStrings(ctx context.Context, appID string, strs []string) ([]string, error) {
	return takenKeyStrings(ctx, t.db, t.tx, appID, strs)
}

// takenKeyStrings looks strs up 500 at a time among the app's key strings
// and rotated keys' aliases.
func takenKeyStrings(ctx context.Context, db *DB, q queryer, appID string, strs []string) ([]string, error) {
	const chunk = 500
	var out []string
	for start := 0; start < len(strs); start += chunk {
		part := strs[start:min(start+chunk, len(strs))]
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ")
		args := make([]any, 0, 2*len(part)+2)
		args = append(args, appID)
		for _, v := range part {
			args = append(args, v)
		}
		args = append(args, appID)
		for _, v := range part {
			args = append(args, v)
		}
		rows, err := q.QueryContext(ctx, db.rebind(`SELECT license_key FROM license_keys WHERE app_id = ? AND license_key IN (`+marks+`)
			UNION SELECT alias FROM key_aliases WHERE app_id = ? AND alias IN (`+marks+`)`), args...)
		if err != nil {
			return nil, translate(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			out = append(out, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
	}
	return out, nil
}

// Keys lists keys by effective status: an active key past its expiry counts
// as expired.
func (s licenseStore) Keys(ctx context.Context, f license.KeyFilter) ([]license.Key, error) {
	where, args := bulkWhere(f.AppID, license.BulkFilter{Status: f.Status, Type: f.Type, Query: f.Query, Now: f.Now})
	if f.HWID != "" {
		where += ` AND id IN (SELECT key_id FROM devices WHERE hwid = ?)`
		args = append(args, f.HWID)
	}
	q := `SELECT ` + keyCols + ` FROM license_keys` + where + ` AND id > ? ORDER BY id LIMIT ?`
	return scanKeys(s.db.read.QueryContext(ctx, s.db.rebind(q), append(args, f.After, f.Limit)...))
}

// bulkWhere is the condition of a bulk filter over license_keys.
func bulkWhere(appID string, f license.BulkFilter) (string, []any) {
	q := ` WHERE app_id = ?`
	args := []any{appID}
	q, args = statusFilter(q, args, f.Status, f.Now)
	if f.Type != "" {
		q += ` AND key_type = ?`
		args = append(args, string(f.Type))
	}
	if f.Query != "" {
		like := "%" + likeEscape(strings.ToLower(f.Query)) + "%"
		q += ` AND (LOWER(license_key) LIKE ? ESCAPE '\' OR LOWER(note) LIKE ? ESCAPE '\')`
		args = append(args, like, like)
	}
	for _, c := range []struct {
		cond string
		t    *time.Time
	}{{` AND created_at > ?`, f.CreatedAfter}, {` AND created_at < ?`, f.CreatedBefore}, {` AND expires_at < ?`, f.ExpiresBefore}} {
		if c.t != nil {
			q += c.cond
			args = append(args, ms(*c.t))
		}
	}
	return q, args
}

func (s licenseStore) CountKeys(ctx context.Context, appID string, f license.BulkFilter) (int, error) {
	where, args := bulkWhere(appID, f)
	var n int
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM license_keys`+where), args...).Scan(&n)
	return n, translate(err)
}

func (t licenseTx) KeysForUpdate(ctx context.Context, appID string, f license.BulkFilter, limit int) ([]license.Key, error) {
	where, args := bulkWhere(appID, f)
	return scanKeys(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+keyCols+` FROM license_keys`+where+` ORDER BY id LIMIT ?`+t.db.forUpdate()),
		append(args, limit)...))
}

// statusFilter adds the condition on a key's effective status at now.
func statusFilter(q string, args []any, st license.Status, now time.Time) (string, []any) {
	switch st {
	case "":
	case license.StatusActive:
		q += ` AND status = 'active' AND (expires_at IS NULL OR expires_at > ?)`
		args = append(args, ms(now))
	case license.StatusExpired:
		q += ` AND (status = 'expired' OR (status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?))`
		args = append(args, ms(now))
	default:
		q += ` AND status = ?`
		args = append(args, string(st))
	}
	return q, args
}

// scanKeys reads every key of a query's rows.
func scanKeys(rows *sql.Rows, err error) ([]license.Key, error) {
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *k)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) KeyForUpdate(ctx context.Context, appID, licenseKey string) (*license.Key, error) {
	return scanKey(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+keyCols+` FROM license_keys WHERE app_id = ? AND license_key = ?`+t.db.forUpdate()),
		appID, licenseKey))
}

// InsertKeys inserts keys in multi-row statements and fills in their IDs.
func (t licenseTx) InsertKeys(ctx context.Context, keys []license.Key) error {
	return t.insertKeys(ctx, keys, nil)
}

// insertKeys inserts keys generated by resellerID (nil: the owner's).
func (t licenseTx) insertKeys(ctx context.Context, keys []license.Key, resellerID any) error {
	const chunk = 200
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		var b strings.Builder
		b.WriteString(`INSERT INTO license_keys (app_id, license_key, status, key_type, duration, max_devices, note, features,
			activated_at, expires_at, last_self_reset_at, created_at, updated_at, reseller_id, floating) VALUES `)
		args := make([]any, 0, len(part)*15)
		for i, k := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, k.AppID, k.LicenseKey, string(k.Status), string(k.Type), k.Duration, k.MaxDevices, k.Note,
				string(k.FeaturesJSON()), optMS(k.ActivatedAt), optMS(k.ExpiresAt), optMS(k.LastSelfResetAt), ms(k.CreatedAt), ms(k.UpdatedAt),
				resellerID, k.Floating)
		}
		b.WriteString(" RETURNING id, license_key")
		rows, err := t.tx.QueryContext(ctx, t.db.rebind(b.String()), args...)
		if err != nil {
			return translate(err)
		}
		ids := make(map[string]int64, len(part))
		for rows.Next() {
			var id int64
			var s string
			if err := rows.Scan(&id, &s); err != nil {
				rows.Close()
				return err
			}
			ids[s] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return translate(err)
		}
		for i := range part {
			part[i].ID = ids[part[i].LicenseKey]
		}
	}
	return nil
}

func (t licenseTx) UpdateKey(ctx context.Context, k *license.Key) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE license_keys SET license_key = ?, status = ?, key_type = ?, duration = ?,
		max_devices = ?, note = ?, features = ?, activated_at = ?, expires_at = ?, last_self_reset_at = ?, updated_at = ?, floating = ? WHERE id = ?`),
		k.LicenseKey, string(k.Status), string(k.Type), k.Duration, k.MaxDevices, k.Note, string(k.FeaturesJSON()),
		optMS(k.ActivatedAt), optMS(k.ExpiresAt), optMS(k.LastSelfResetAt), ms(k.UpdatedAt), k.Floating, k.ID)
	return affected(res, err)
}

func (t licenseTx) DeleteKey(ctx context.Context, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM license_keys WHERE id = ?`), id)
	return affected(res, err)
}

// deviceTable is where one kind of holder keeps its devices: keys in
// devices(key_id), accounts in account_devices(account_id). Both names are
// constants of this package.
type deviceTable struct{ table, holder string }

var (
	keyDevices     = deviceTable{"devices", "key_id"}
	accountDevices = deviceTable{"account_devices", "account_id"}
)

func (dt deviceTable) list(ctx context.Context, db *DB, q queryer, id int64) ([]license.Device, error) {
	rows, err := q.QueryContext(ctx, db.rebind(`SELECT hwid, created_at, last_seen_at FROM `+dt.table+` WHERE `+dt.holder+` = ?
		ORDER BY created_at, hwid`), id)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.Device
	for rows.Next() {
		var d license.Device
		var created, seen int64
		if err := rows.Scan(&d.HWID, &created, &seen); err != nil {
			return nil, translate(err)
		}
		if dt == keyDevices {
			d.KeyID = id
		} else {
			d.AccountID = id
		}
		d.CreatedAt, d.LastSeenAt = fromMS(created), fromMS(seen)
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

// upsert binds hwid to the holder, or refreshes its last-seen time.
func (dt deviceTable) upsert(ctx context.Context, t licenseTx, id int64, hwid string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO `+dt.table+` (`+dt.holder+`, hwid, created_at, last_seen_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (`+dt.holder+`, hwid) DO UPDATE SET last_seen_at = excluded.last_seen_at`), id, hwid, ms(now), ms(now))
	return translate(err)
}

// delete unbinds every device of the holder and returns how many.
func (dt deviceTable) delete(ctx context.Context, t licenseTx, id int64) (int, error) {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM `+dt.table+` WHERE `+dt.holder+` = ?`), id)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s licenseStore) Devices(ctx context.Context, keyID int64) ([]license.Device, error) {
	return keyDevices.list(ctx, s.db, s.db.read, keyID)
}

func (t licenseTx) Devices(ctx context.Context, keyID int64) ([]license.Device, error) {
	return keyDevices.list(ctx, t.db, t.tx, keyID)
}

func (t licenseTx) UpsertDevice(ctx context.Context, keyID int64, hwid string, now time.Time) error {
	return keyDevices.upsert(ctx, t, keyID, hwid, now)
}

func (t licenseTx) DeleteDevices(ctx context.Context, keyID int64) (int, error) {
	return keyDevices.delete(ctx, t, keyID)
}

// seenOf is the last-seen time of the session s: its session_seen row's
// while it is live, else the time the row gave back when it ended
// (migration 00028).
const seenOf = `COALESCE((SELECT x.last_seen_at FROM session_seen x WHERE x.seen_key = s.seen_key), s.last_seen_at)`

const sessionCols = `s.id, s.token_hash, s.app_id, s.key_id, s.account_id, s.hwid, s.ip, s.app_version, s.created_at, ` + seenOf + `, s.ended_at, s.end_reason`

func scanSession(row interface{ Scan(...any) error }, extra ...any) (*license.Session, error) {
	var ss license.Session
	var keyID, accountID, ended sql.NullInt64
	var reason sql.NullString
	var created, seen int64
	dest := append([]any{&ss.ID, &ss.TokenHash, &ss.AppID, &keyID, &accountID, &ss.HWID, &ss.IP, &ss.AppVersion, &created, &seen, &ended, &reason}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, translate(err)
	}
	if keyID.Valid {
		ss.KeyID = &keyID.Int64
	}
	if accountID.Valid {
		ss.AccountID = &accountID.Int64
	}
	ss.CreatedAt, ss.LastSeenAt, ss.EndedAt, ss.EndReason = fromMS(created), fromMS(seen), fromNullMS(ended), reason.String
	return &ss, nil
}

func (s licenseStore) Sessions(ctx context.Context, f license.SessionFilter) ([]license.Session, error) {
	q := `SELECT ` + sessionCols + `, COALESCE(k.license_key, ''), COALESCE(a.username, '') FROM sessions s
		LEFT JOIN license_keys k ON k.id = s.key_id LEFT JOIN accounts a ON a.id = s.account_id
		WHERE s.app_id = ? AND s.ended_at IS NULL AND s.id > ?`
	args := []any{f.AppID, f.After}
	if f.KeyID != 0 {
		q += ` AND s.key_id = ?`
		args = append(args, f.KeyID)
	}
	if f.AccountID != 0 {
		q += ` AND s.account_id = ?`
		args = append(args, f.AccountID)
	}
	q += ` ORDER BY s.id LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.Session
	for rows.Next() {
		var lk, username string
		ss, err := scanSession(rows, &lk, &username)
		if err != nil {
			return nil, err
		}
		ss.LicenseKey, ss.Username = lk, username
		out = append(out, *ss)
	}
	return out, translate(rows.Err())
}

// heartbeatViewQuery reads only what the heartbeat decides on: it runs on
// every heartbeat of every client. A session belongs to a key or an
// account; the state comes from whichever it has.
//
// Each column is named by one letter: the SQLite driver copies every
// column's name into a new string on every query, except a name of one
// byte (Go's one-byte strings are static), so the names cost no
// allocation (issue 21: ten of a heartbeat's allocations). The letters
// follow the columns' order; heartbeatView reads them by position.
var heartbeatViewQuery = `SELECT s.id AS a, s.app_id AS b, s.key_id AS c, s.account_id AS d,
	COALESCE(x.last_seen_at, s.last_seen_at) AS e, s.ended_at AS f, s.end_reason AS g, COALESCE(k.status, a.status) AS h,
	CASE WHEN s.key_id IS NOT NULL THEN k.expires_at ELSE a.expires_at END AS i, k.license_key AS j, x.seen_key AS k
	FROM sessions s LEFT JOIN session_seen x ON x.seen_key = s.seen_key
	LEFT JOIN license_keys k ON k.id = s.key_id LEFT JOIN accounts a ON a.id = s.account_id
	WHERE s.token_hash = ?`

// heartbeatRow is what heartbeatViewQuery reads, with the view built from it:
// every scan target and every pointer the view holds live in this one
// allocation (the hot path: each on its own would escape to the heap
// separately).
type heartbeatRow struct {
	v                                license.HeartbeatView
	keyID, accountID, ended, expires sql.NullInt64
	seenKey                          sql.NullInt64
	reason, status, lk               sql.NullString
	seen                             int64
	endedAt, expiresAt               time.Time
}

// HeartbeatView answers from the session cache when it holds the session
// (the view is then marked Cached), else reads the database and fills the
// cache.
func (s licenseStore) HeartbeatView(ctx context.Context, tokenHash string) (*license.HeartbeatView, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // a request already cancelled does not read
	}
	c := s.db.sessions
	if e, ok := c.get(tokenHash); ok {
		v := &c.view(&e, tokenHash).v
		v.Cached = true
		return v, nil
	}
	return s.FreshHeartbeatView(ctx, tokenHash)
}

// FreshHeartbeatView reads heartbeatViewQuery from the database, never the
// cache, and puts the row in the cache.
func (s licenseStore) FreshHeartbeatView(ctx context.Context, tokenHash string) (*license.HeartbeatView, error) {
	r := &heartbeatRow{}
	ss := &r.v.Session
	c := s.db.sessions
	gen := c.generation() // before the read: see sessionCache.put
	if err := s.db.readHeartbeatRow(ctx, tokenHash, r); err != nil {
		return nil, translate(err)
	}
	if r.keyID.Valid {
		ss.KeyID = &r.keyID.Int64
	}
	if r.accountID.Valid {
		ss.AccountID = &r.accountID.Int64
	}
	if r.ended.Valid {
		r.endedAt = fromMS(r.ended.Int64)
		ss.EndedAt = &r.endedAt
	}
	if r.expires.Valid {
		r.expiresAt = fromMS(r.expires.Int64)
		r.v.KeyExpiry = &r.expiresAt
	}
	ss.TokenHash, ss.LastSeenAt, ss.EndReason = tokenHash, fromMS(r.seen), r.reason.String
	r.v.SeenKey = r.seenKey.Int64
	r.v.KeyExists = r.status.Valid
	r.v.KeyStatus, r.v.KeyString = license.Status(r.status.String), r.lk.String
	c.put(tokenHash, r, gen)
	return &r.v, nil
}

// readHeartbeatRow reads heartbeatViewQuery's columns for tokenHash into r:
// on SQLite outside database/sql (liteReads), on PostgreSQL through a
// prepared statement.
func (db *DB) readHeartbeatRow(ctx context.Context, tokenHash string, r *heartbeatRow) error {
	if lite := db.lite; lite != nil {
		return lite.row(ctx, heartbeatViewQuery, tokenHash, r.scanLite)
	}
	return db.hotRow(ctx, heartbeatViewQuery, tokenHash).Scan(&r.v.Session.ID, &r.v.Session.AppID, &r.keyID, &r.accountID, &r.seen,
		&r.ended, &r.reason, &r.status, &r.expires, &r.lk, &r.seenKey)
}

// scanLite is the Scan of HeartbeatView's SQLite path (liteReads), over the
// columns of heartbeatViewQuery in order.
func (r *heartbeatRow) scanLite(vals []driver.Value) error {
	if len(vals) != 11 {
		return fmt.Errorf("heartbeat view: %d columns, want 11", len(vals))
	}
	ss := &r.v.Session
	errs := [...]error{
		liteString(vals[0], &ss.ID), liteString(vals[1], &ss.AppID), liteNullInt(vals[2], &r.keyID),
		liteNullInt(vals[3], &r.accountID), liteInt(vals[4], &r.seen), liteNullInt(vals[5], &r.ended),
		liteNullString(vals[6], &r.reason), liteNullString(vals[7], &r.status), liteNullInt(vals[8], &r.expires),
		liteNullString(vals[9], &r.lk), liteNullInt(vals[10], &r.seenKey),
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("heartbeat view, column %d: %w", i, err)
		}
	}
	return nil
}

// touchChunk is how many sessions one TouchSessions statement writes: on
// SQLite 1 000 parameters, well under its 32 766; on PostgreSQL one call of
// keyward_touch_seen, one transaction, whose row locks a login ending one
// of those sessions may wait for.
const touchChunk = 500

// TouchSessions writes heartbeat times into session_seen, each row found by
// its key (migration 00028): no session is looked up. The row of a session
// that ended or was deleted is gone, so its key writes nothing; a time never
// moves backwards. The keys go in ascending order so that concurrent
// flushes from several processes lock rows in the same order on
// PostgreSQL (touches is sorted in place). Once written, the cached views of those sessions move their
// times forward (sessionCache.seenAt): a touch of a row that was not
// written names a session the cache no longer holds, or a time it already
// has.
//
// On SQLite the whole flush is one transaction, one commit, of one
// UPDATE … FROM (VALUES …) statement per touchChunk sessions. On
// PostgreSQL each chunk of touchChunk sessions is its own write transaction,
// so a chunk's row locks are held only until its own commit and a login
// ending one of those sessions waits for one chunk, not the whole flush.
func (s licenseStore) TouchSessions(ctx context.Context, touches []license.Touch) error {
	if len(touches) == 0 {
		return nil
	}
	slices.SortFunc(touches, func(a, b license.Touch) int { return cmp.Compare(a.SeenKey, b.SeenKey) })
	var err error
	if s.db.engine == Postgres {
		err = s.pgTouchSessions(ctx, touches)
	} else {
		err = s.liteTouchSessions(ctx, touches)
	}
	if err != nil {
		return err
	}
	for _, t := range touches {
		s.db.sessions.seenAt(t.TokenHash, ms(t.At))
	}
	return nil
}

// liteTouchSessions is TouchSessions on SQLite: one commit for the whole
// flush. Every commit makes each of SQLite's read connections drop its
// page cache and unmap the file when it next reads (WAL readers cannot
// tell which pages changed), and the heartbeat's read is the one that
// pays: committing each chunk on its own, ten to twenty commits a second
// at 100 000 sessions, made that read several times dearer
// (BenchmarkHeartbeatViewWrites). The writer is one goroutine, so no row
// locks are held for others to wait on.
func (s licenseStore) liteTouchSessions(ctx context.Context, touches []license.Touch) error {
	type chunk struct {
		q    string
		args []any
	}
	chunks := make([]chunk, 0, (len(touches)+touchChunk-1)/touchChunk)
	var full string // the statement of a whole chunk, built once
	for len(touches) > 0 {
		part := touches[:min(len(touches), touchChunk)]
		touches = touches[len(part):]
		args := make([]any, 0, 2*len(part))
		for _, t := range part {
			args = append(args, t.SeenKey, ms(t.At))
		}
		q := full
		if len(part) < touchChunk || q == "" {
			q = touchQuery(len(part))
			if len(part) == touchChunk {
				full = q
			}
		}
		chunks = append(chunks, chunk{q, args})
	}
	return s.db.tx(ctx, func(tx *wtx) error {
		for _, c := range chunks {
			if _, err := tx.ExecContext(ctx, c.q, c.args...); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

// pgTouchSessions is TouchSessions on PostgreSQL: keys in chunks of
// touchChunk, each committed on its own through migration 00028's
// keyward_touch_seen, which updates each row by its key: a single UPDATE
// joining the chunk's rows left PostgreSQL a choice of plans, and with
// statistics that put few sessions live, or none (a table never analysed),
// it read every live session once per chunk or once per session in it
// (migration 00026).
func (s licenseStore) pgTouchSessions(ctx context.Context, touches []license.Touch) error {
	keys := make([]int64, 0, min(len(touches), touchChunk))
	times := make([]int64, 0, min(len(touches), touchChunk))
	for len(touches) > 0 {
		part := touches[:min(len(touches), touchChunk)]
		touches = touches[len(part):]
		keys, times = keys[:0], times[:0]
		for _, t := range part {
			keys = append(keys, t.SeenKey)
			times = append(times, ms(t.At))
		}
		err := s.db.tx(ctx, func(tx *wtx) error { return pgTouch(ctx, tx.Tx, keys, times) })
		if err != nil {
			return err
		}
	}
	return nil
}

// pgTouch writes the last-seen times of the rows keys (times in
// milliseconds, in the same order) in tx.
func pgTouch(ctx context.Context, tx *sql.Tx, keys, times []int64) error {
	_, err := tx.ExecContext(ctx, `SELECT keyward_touch_seen($1, $2)`, keys, times)
	return translate(err)
}

// touchQuery is SQLite's UPDATE of n last-seen times, its arguments being
// the seen key and milliseconds of each in turn (VALUES names its columns
// column1, column2).
func touchQuery(n int) string {
	var b strings.Builder
	b.Grow(140 + n*6)
	b.WriteString(`UPDATE session_seen SET last_seen_at = v.column2 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
	}
	b.WriteString(`) AS v WHERE session_seen.seen_key = v.column1 AND session_seen.last_seen_at < v.column2`)
	return b.String()
}

func (s licenseStore) ReapSessions(ctx context.Context, cutoff, now, purgeBefore time.Time) (int, error) {
	ids, err := s.silentSessions(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	if afterReapScan != nil {
		afterReapScan()
	}
	var n int64
	err = s.db.tx(ctx, func(tx *wtx) error {
		n = 0 // a retried unit starts again
		for rest := ids; len(rest) > 0; {
			part := rest[:min(len(rest), touchChunk)]
			rest = rest[len(part):]
			in, args := inList(part)
			// The time is checked again: a heartbeat flushed since the
			// read keeps its session.
			res, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE sessions AS s SET ended_at = ?, end_reason = ?
				WHERE s.id IN `+in+` AND s.ended_at IS NULL AND `+seenOf+` < ?`),
				append(append([]any{ms(now), license.CodeSessionExpired}, args...), ms(cutoff))...)
			if err != nil {
				return translate(err)
			}
			m, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += m
		}
		if _, err := tx.ExecContext(ctx, s.db.rebind(`DELETE FROM sessions WHERE ended_at IS NOT NULL AND ended_at < ?`), ms(purgeBefore)); err != nil {
			return translate(err)
		}
		_, err = tx.ExecContext(ctx, s.db.rebind(`DELETE FROM envelope_replays WHERE expires_at < ?`), ms(now))
		return translate(err)
	})
	return int(n), err
}

// afterReapScan, set only by a test, runs between the reaper's read of the
// silent sessions and its write.
var afterReapScan func()

// silentSessions returns the ids of the live sessions last seen before
// cutoff. No index holds the times — every heartbeat written would update
// it, and that was a quarter of the flush's cost (migration 00025) — so this
// reads every live session's, on a read connection: on SQLite the one writer
// is not held for the scan.
func (s licenseStore) silentSessions(ctx context.Context, cutoff time.Time) ([]string, error) {
	ids, err := stringsOf(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT s.id FROM sessions s JOIN session_seen x ON x.seen_key = s.seen_key
		WHERE s.ended_at IS NULL AND x.last_seen_at < ?`), ms(cutoff)))
	return ids, translate(err)
}

func (t licenseTx) LiveSessionsOfKey(ctx context.Context, keyID int64) ([]license.Session, error) {
	return t.liveSessions(ctx, "key_id", keyID)
}

// liveSessions returns the open sessions whose holder column (key_id or
// account_id, a constant of this package) is id, oldest first.
func (t licenseTx) liveSessions(ctx context.Context, holder string, id int64) ([]license.Session, error) {
	rows, err := t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+sessionCols+` FROM sessions s WHERE s.`+holder+` = ? AND s.ended_at IS NULL
		ORDER BY s.created_at, s.id`), id)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *ss)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) InsertSession(ctx context.Context, ss *license.Session) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO sessions (id, token_hash, app_id, key_id, account_id, hwid, ip, app_version, created_at, last_seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), ss.ID, ss.TokenHash, ss.AppID, ss.KeyID, ss.AccountID, ss.HWID, ss.IP, ss.AppVersion,
		ms(ss.CreatedAt), ms(ss.LastSeenAt))
	return translate(err)
}

func (t licenseTx) SessionByTokenHash(ctx context.Context, hash string) (*license.Session, error) {
	return scanSession(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+sessionCols+` FROM sessions s WHERE s.token_hash = ?`), hash))
}

func (t licenseTx) SessionByID(ctx context.Context, id string) (*license.Session, error) {
	return scanSession(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+sessionCols+` FROM sessions s WHERE s.id = ?`), id))
}

func (t licenseTx) EndSession(ctx context.Context, id, reason string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`),
		ms(now), reason, id)
	return translate(err)
}

func (t licenseTx) EndKeySessions(ctx context.Context, keyID int64, reason string, now time.Time) (int, error) {
	return t.endSessions(ctx, "key_id", keyID, reason, now)
}

// endSessions ends the live sessions whose holder column is id.
func (t licenseTx) endSessions(ctx context.Context, holder string, id int64, reason string, now time.Time) (int, error) {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE sessions SET ended_at = ?, end_reason = ? WHERE `+holder+` = ? AND ended_at IS NULL`),
		ms(now), reason, id)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (t licenseTx) InsertResetRequest(ctx context.Context, r *license.ResetRequest) error {
	if r.Status == "" {
		r.Status = license.RequestPending
	}
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO hwid_reset_requests (app_id, key_id, account_id, license_key, username, hwid, reason,
		status, created_at, decided_at, decided_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.AppID, nullID(r.KeyID), nullID(r.AccountID), r.LicenseKey, r.Username, r.HWID, r.Reason, r.Status, ms(r.CreatedAt),
		optMS(r.DecidedAt), r.DecidedBy).Scan(&r.ID))
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

const resetCols = `id, app_id, COALESCE(key_id, 0), COALESCE(account_id, 0), license_key, username, hwid, reason, status, created_at, decided_at, decided_by`

func scanResetRequest(row interface{ Scan(...any) error }) (*license.ResetRequest, error) {
	var r license.ResetRequest
	var created int64
	var decided sql.NullInt64
	if err := row.Scan(&r.ID, &r.AppID, &r.KeyID, &r.AccountID, &r.LicenseKey, &r.Username, &r.HWID, &r.Reason, &r.Status,
		&created, &decided, &r.DecidedBy); err != nil {
		return nil, translate(err)
	}
	r.CreatedAt, r.DecidedAt = fromMS(created), fromNullMS(decided)
	return &r, nil
}

func (s licenseStore) ResetRequests(ctx context.Context, appID, status string, before int64, limit int) ([]license.ResetRequest, error) {
	q := `SELECT ` + resetCols + ` FROM hwid_reset_requests WHERE app_id = ?`
	args := []any{appID}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, status)
	}
	if before > 0 {
		q += ` AND id < ?`
		args = append(args, before)
	}
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q+` ORDER BY id DESC LIMIT ?`), append(args, limit)...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.ResetRequest
	for rows.Next() {
		r, err := scanResetRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) ResetRequestForUpdate(ctx context.Context, appID string, id int64) (*license.ResetRequest, error) {
	return scanResetRequest(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+resetCols+` FROM hwid_reset_requests WHERE app_id = ? AND id = ?`+
		t.db.forUpdate()), appID, id))
}

func (t licenseTx) DecideResetRequest(ctx context.Context, r *license.ResetRequest) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE hwid_reset_requests SET status = ?, decided_at = ?, decided_by = ? WHERE id = ?`),
		r.Status, optMS(r.DecidedAt), r.DecidedBy, r.ID)
	return affected(res, err)
}

func (t licenseTx) LastApprovedReset(ctx context.Context, keyID, accountID int64) (*time.Time, error) {
	col, id := "key_id", keyID
	if keyID == 0 {
		col, id = "account_id", accountID
	}
	var at sql.NullInt64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT MAX(decided_at) FROM hwid_reset_requests WHERE `+col+` = ? AND status = 'approved'`), id).Scan(&at)
	return fromNullMS(at), translate(err)
}
