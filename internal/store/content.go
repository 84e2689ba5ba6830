package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/internal/content"
)

// ContentStore returns db as the content package's Store.
func (db *DB) ContentStore() content.Store { return contentStore{db} }

type contentStore struct{ db *DB }

type contentTx struct{ journalTx }

func (s contentStore) InTx(ctx context.Context, fn func(content.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(contentTx{journalTx{s.db, tx}}) })
}

func textMap(rows *sql.Rows, err error) (map[string]string, error) {
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, translate(err)
		}
		out[k] = v
	}
	return out, translate(rows.Err())
}

func (s contentStore) Texts(ctx context.Context, appID, licenseKey string) (map[string]string, map[string]string, error) {
	defaults, err := textMap(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT name, value FROM app_texts WHERE app_id = ?`), appID))
	if err != nil || licenseKey == "" {
		return defaults, nil, err
	}
	var keyID int64
	err = s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT id FROM license_keys WHERE app_id = ? AND license_key = ?`),
		appID, licenseKey).Scan(&keyID)
	if err == sql.ErrNoRows {
		return defaults, nil, nil
	} else if err != nil {
		return nil, nil, translate(err)
	}
	overrides, err := textMap(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT name, value FROM key_texts WHERE key_id = ?`), keyID))
	return defaults, overrides, err
}

const slideCols = `id, app_id, title, body, image_url, link_url, position, active, starts_at, ends_at, created_at, updated_at`

func scanSlide(row interface{ Scan(...any) error }) (*content.Slide, error) {
	var sl content.Slide
	var starts, ends sql.NullInt64
	var created, updated int64
	if err := row.Scan(&sl.ID, &sl.AppID, &sl.Title, &sl.Body, &sl.ImageURL, &sl.LinkURL, &sl.Position, &sl.Active,
		&starts, &ends, &created, &updated); err != nil {
		return nil, translate(err)
	}
	sl.StartsAt, sl.EndsAt, sl.CreatedAt, sl.UpdatedAt = fromNullMS(starts), fromNullMS(ends), fromMS(created), fromMS(updated)
	return &sl, nil
}

func (s contentStore) Slides(ctx context.Context, appID string) ([]content.Slide, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+slideCols+` FROM slides WHERE app_id = ? ORDER BY position, id`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []content.Slide{}
	for rows.Next() {
		sl, err := scanSlide(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *sl)
	}
	return out, translate(rows.Err())
}

const linkCols = `id, app_id, platform, url, label, position, clicks, created_at, updated_at`

func scanLink(row interface{ Scan(...any) error }) (*content.Link, error) {
	var l content.Link
	var created, updated int64
	if err := row.Scan(&l.ID, &l.AppID, &l.Platform, &l.URL, &l.Label, &l.Position, &l.Clicks, &created, &updated); err != nil {
		return nil, translate(err)
	}
	l.CreatedAt, l.UpdatedAt = fromMS(created), fromMS(updated)
	return &l, nil
}

func (s contentStore) Links(ctx context.Context, appID string) ([]content.Link, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+linkCols+` FROM social_links WHERE app_id = ? ORDER BY position, id`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []content.Link{}
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *l)
	}
	return out, translate(rows.Err())
}

// CountClick increments in one UPDATE statement, so concurrent clicks from
// any number of processes are all counted.
func (s contentStore) CountClick(ctx context.Context, appID string, id int64, platform string) error {
	return s.db.tx(ctx, func(tx *wtx) error {
		var res sql.Result
		var err error
		if id > 0 {
			res, err = tx.ExecContext(ctx, s.db.rebind(`UPDATE social_links SET clicks = clicks + 1 WHERE app_id = ? AND id = ?`), appID, id)
		} else {
			res, err = tx.ExecContext(ctx, s.db.rebind(`UPDATE social_links SET clicks = clicks + 1 WHERE id = (
				SELECT id FROM social_links WHERE app_id = ? AND platform = ? ORDER BY position, id LIMIT 1)`), appID, platform)
		}
		return affected(res, err)
	})
}

const entryCols = `id, app_id, version, title, body, category, published_at, created_at, updated_at`

func scanEntry(row interface{ Scan(...any) error }) (*content.Entry, error) {
	var e content.Entry
	var published sql.NullInt64
	var created, updated int64
	if err := row.Scan(&e.ID, &e.AppID, &e.Version, &e.Title, &e.Body, &e.Category, &published, &created, &updated); err != nil {
		return nil, translate(err)
	}
	e.PublishedAt, e.CreatedAt, e.UpdatedAt = fromNullMS(published), fromMS(created), fromMS(updated)
	return &e, nil
}

func (s contentStore) Entries(ctx context.Context, appID string) ([]content.Entry, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+entryCols+` FROM changelog_entries WHERE app_id = ?
		ORDER BY COALESCE(published_at, created_at) DESC, id DESC`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []content.Entry{}
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, translate(rows.Err())
}

func (t contentTx) SetAppText(ctx context.Context, appID, name, value string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO app_texts (app_id, name, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (app_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`), appID, name, value, ms(now))
	return translate(err)
}

func (t contentTx) DeleteAppText(ctx context.Context, appID, name string) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM app_texts WHERE app_id = ? AND name = ?`), appID, name)
	return affected(res, err)
}

func (t contentTx) keyID(ctx context.Context, appID, licenseKey string) (int64, error) {
	var id int64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT id FROM license_keys WHERE app_id = ? AND license_key = ?`), appID, licenseKey).Scan(&id)
	return id, translate(err)
}

func (t contentTx) SetKeyText(ctx context.Context, appID, licenseKey, name, value string, now time.Time) error {
	id, err := t.keyID(ctx, appID, licenseKey)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO key_texts (key_id, name, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (key_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`), id, name, value, ms(now))
	return translate(err)
}

func (t contentTx) DeleteKeyText(ctx context.Context, appID, licenseKey, name string) error {
	id, err := t.keyID(ctx, appID, licenseKey)
	if err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM key_texts WHERE key_id = ? AND name = ?`), id, name)
	return affected(res, err)
}

func (t contentTx) InsertSlide(ctx context.Context, sl *content.Slide) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO slides (app_id, title, body, image_url, link_url, position, active,
		starts_at, ends_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		sl.AppID, sl.Title, sl.Body, sl.ImageURL, sl.LinkURL, sl.Position, sl.Active, optMS(sl.StartsAt), optMS(sl.EndsAt),
		ms(sl.CreatedAt), ms(sl.UpdatedAt)).Scan(&sl.ID))
}

func (t contentTx) SlideForUpdate(ctx context.Context, appID string, id int64) (*content.Slide, error) {
	return scanSlide(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+slideCols+` FROM slides WHERE app_id = ? AND id = ?`+t.db.forUpdate()), appID, id))
}

func (t contentTx) UpdateSlide(ctx context.Context, sl *content.Slide) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE slides SET title = ?, body = ?, image_url = ?, link_url = ?, position = ?,
		active = ?, starts_at = ?, ends_at = ?, updated_at = ? WHERE app_id = ? AND id = ?`),
		sl.Title, sl.Body, sl.ImageURL, sl.LinkURL, sl.Position, sl.Active, optMS(sl.StartsAt), optMS(sl.EndsAt), ms(sl.UpdatedAt),
		sl.AppID, sl.ID)
	return affected(res, err)
}

func (t contentTx) DeleteSlide(ctx context.Context, appID string, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM slides WHERE app_id = ? AND id = ?`), appID, id)
	return affected(res, err)
}

func (t contentTx) InsertLink(ctx context.Context, l *content.Link) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO social_links (app_id, platform, url, label, position, clicks,
		created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		l.AppID, l.Platform, l.URL, l.Label, l.Position, l.Clicks, ms(l.CreatedAt), ms(l.UpdatedAt)).Scan(&l.ID))
}

func (t contentTx) LinkForUpdate(ctx context.Context, appID string, id int64) (*content.Link, error) {
	return scanLink(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+linkCols+` FROM social_links WHERE app_id = ? AND id = ?`+t.db.forUpdate()), appID, id))
}

// UpdateLink leaves clicks alone: only CountClick changes them.
func (t contentTx) UpdateLink(ctx context.Context, l *content.Link) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE social_links SET platform = ?, url = ?, label = ?, position = ?, updated_at = ?
		WHERE app_id = ? AND id = ?`), l.Platform, l.URL, l.Label, l.Position, ms(l.UpdatedAt), l.AppID, l.ID)
	return affected(res, err)
}

func (t contentTx) DeleteLink(ctx context.Context, appID string, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM social_links WHERE app_id = ? AND id = ?`), appID, id)
	return affected(res, err)
}

func (t contentTx) InsertEntry(ctx context.Context, e *content.Entry) error {
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO changelog_entries (app_id, version, title, body, category,
		published_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		e.AppID, e.Version, e.Title, e.Body, e.Category, optMS(e.PublishedAt), ms(e.CreatedAt), ms(e.UpdatedAt)).Scan(&e.ID))
}

func (t contentTx) EntryForUpdate(ctx context.Context, appID string, id int64) (*content.Entry, error) {
	return scanEntry(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+entryCols+` FROM changelog_entries WHERE app_id = ? AND id = ?`+
		t.db.forUpdate()), appID, id))
}

func (t contentTx) UpdateEntry(ctx context.Context, e *content.Entry) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE changelog_entries SET version = ?, title = ?, body = ?, category = ?,
		published_at = ?, updated_at = ? WHERE app_id = ? AND id = ?`),
		e.Version, e.Title, e.Body, e.Category, optMS(e.PublishedAt), ms(e.UpdatedAt), e.AppID, e.ID)
	return affected(res, err)
}

func (t contentTx) DeleteEntry(ctx context.Context, appID string, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM changelog_entries WHERE app_id = ? AND id = ?`), appID, id)
	return affected(res, err)
}
