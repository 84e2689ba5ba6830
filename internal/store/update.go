package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/keyward/keyward/internal/update"
)

// UpdateStore returns db as the update package's Store.
func (db *DB) UpdateStore() update.Store { return updateStore{db} }

type updateStore struct{ db *DB }

type updateTx struct{ journalTx }

func (s updateStore) InTx(ctx context.Context, fn func(update.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(updateTx{journalTx{s.db, tx}}) })
}

const releaseCols = `id, app_id, version, channel, changelog, mandatory, min_version, rollout, salt, published, halted, yanked,
	published_at, created_at, updated_at`

func scanRelease(row interface{ Scan(...any) error }) (*update.Release, error) {
	var r update.Release
	var version, minVersion, salt string
	var published sql.NullInt64
	var created, updated int64
	if err := row.Scan(&r.ID, &r.AppID, &version, &r.Channel, &r.Changelog, &r.Mandatory, &minVersion, &r.Rollout, &salt,
		&r.Published, &r.Halted, &r.Yanked, &published, &created, &updated); err != nil {
		return nil, translate(err)
	}
	v, err := update.ParseVersion(version)
	if err != nil {
		return nil, fmt.Errorf("release %d: stored version: %w", r.ID, err)
	}
	r.Version = v
	if minVersion != "" {
		mv, err := update.ParseVersion(minVersion)
		if err != nil {
			return nil, fmt.Errorf("release %d: stored min_version: %w", r.ID, err)
		}
		r.MinVersion = &mv
	}
	if r.Salt, err = hex.DecodeString(salt); err != nil {
		return nil, fmt.Errorf("release %d: stored salt: %w", r.ID, err)
	}
	r.PublishedAt, r.CreatedAt, r.UpdatedAt = fromNullMS(published), fromMS(created), fromMS(updated)
	return &r, nil
}

const artifactCols = `id, release_id, os, arch, file_name, size, sha256, blob_key, created_at`

// artifacts loads the artifacts of the releases in byID.
func artifacts(ctx context.Context, db *DB, q queryer, where string, arg any, byID map[int64]*update.Release) error {
	rows, err := q.QueryContext(ctx, db.rebind(`SELECT `+artifactCols+` FROM release_artifacts WHERE `+where+` ORDER BY os, arch`), arg)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a update.Artifact
		var releaseID, created int64
		if err := rows.Scan(&a.ID, &releaseID, &a.OS, &a.Arch, &a.FileName, &a.Size, &a.SHA256, &a.BlobKey, &created); err != nil {
			return translate(err)
		}
		a.CreatedAt = fromMS(created)
		if r := byID[releaseID]; r != nil {
			r.Artifacts = append(r.Artifacts, a)
		}
	}
	return translate(rows.Err())
}

func (s updateStore) Releases(ctx context.Context, appID string) ([]update.Release, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+releaseCols+` FROM releases WHERE app_id = ? ORDER BY id`), appID)
	if err != nil {
		return nil, translate(err)
	}
	var out []*update.Release
	byID := map[int64]*update.Release{}
	for rows.Next() {
		r, err := scanRelease(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
		byID[r.ID] = r
	}
	rows.Close()
	if err := translate(rows.Err()); err != nil {
		return nil, err
	}
	if len(out) > 0 {
		err = artifacts(ctx, s.db, s.db.read, `release_id IN (SELECT id FROM releases WHERE app_id = ?)`, appID, byID)
	}
	res := make([]update.Release, len(out))
	for i, r := range out {
		res[i] = *r
	}
	return res, err
}

func (s updateStore) Release(ctx context.Context, appID string, id int64) (*update.Release, error) {
	return oneRelease(ctx, s.db, s.db.read, appID, id, "")
}

func oneRelease(ctx context.Context, db *DB, q queryer, appID string, id int64, lock string) (*update.Release, error) {
	r, err := scanRelease(q.QueryRowContext(ctx, db.rebind(`SELECT `+releaseCols+` FROM releases WHERE app_id = ? AND id = ?`+lock), appID, id))
	if err != nil {
		return nil, err
	}
	return r, artifacts(ctx, db, q, `release_id = ?`, id, map[int64]*update.Release{id: r})
}

func (s updateStore) Floors(ctx context.Context, appID string) (map[string]string, error) {
	return textMap(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT channel, version FROM update_floors WHERE app_id = ?`), appID))
}

func (s updateStore) RecordChecks(ctx context.Context, cs []update.CheckRecord) error {
	return s.db.tx(ctx, func(tx *wtx) error {
		// A check of an app deleted since it was buffered is skipped, not an
		// error that would fail the whole batch.
		stmt, err := tx.PrepareContext(ctx, s.db.rebind(`INSERT INTO update_checks (app_id, device, current, channel, os, arch, offered, checked_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM apps WHERE id = ?)
			ON CONFLICT (app_id, device) DO UPDATE SET current = excluded.current, channel = excluded.channel, os = excluded.os,
				arch = excluded.arch, offered = excluded.offered, checked_at = excluded.checked_at
			WHERE excluded.checked_at >= update_checks.checked_at`))
		if err != nil {
			return translate(err)
		}
		defer stmt.Close()
		for _, c := range cs {
			if _, err := stmt.ExecContext(tx.stmtCtx(ctx), c.AppID, c.Device, c.Current, c.Channel, c.OS, c.Arch, c.Offered, ms(c.At), c.AppID); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

func (s updateStore) CheckStats(ctx context.Context, appID string, since time.Time) (int64, []update.VersionCount, error) {
	var devices int64
	if err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM update_checks WHERE app_id = ? AND checked_at >= ?`),
		appID, ms(since)).Scan(&devices); err != nil {
		return 0, nil, translate(err)
	}
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT v, SUM(offered), SUM(running) FROM (
			SELECT offered AS v, 1 AS offered, 0 AS running FROM update_checks WHERE app_id = ? AND checked_at >= ? AND offered <> ''
			UNION ALL
			SELECT current AS v, 0 AS offered, 1 AS running FROM update_checks WHERE app_id = ? AND checked_at >= ?
		) c GROUP BY v`), appID, ms(since), appID, ms(since))
	if err != nil {
		return 0, nil, translate(err)
	}
	defer rows.Close()
	out := []update.VersionCount{}
	for rows.Next() {
		var vc update.VersionCount
		if err := rows.Scan(&vc.Version, &vc.Offered, &vc.Running); err != nil {
			return 0, nil, translate(err)
		}
		out = append(out, vc)
	}
	return devices, out, translate(rows.Err())
}

func (t updateTx) InsertRelease(ctx context.Context, r *update.Release) error {
	key := r.Version
	key.Build = ""
	return translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO releases (app_id, version, version_key, channel, changelog, mandatory,
		min_version, rollout, salt, published, halted, yanked, published_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.AppID, r.Version.String(), key.String(), r.Channel, r.Changelog, r.Mandatory, minVersionText(r), r.Rollout, hex.EncodeToString(r.Salt),
		r.Published, r.Halted, r.Yanked, optMS(r.PublishedAt), ms(r.CreatedAt), ms(r.UpdatedAt)).Scan(&r.ID))
}

func minVersionText(r *update.Release) string {
	if r.MinVersion == nil {
		return ""
	}
	return r.MinVersion.String()
}

func (t updateTx) ReleaseForUpdate(ctx context.Context, appID string, id int64) (*update.Release, error) {
	return oneRelease(ctx, t.db, t.tx, appID, id, t.db.forUpdate())
}

func (t updateTx) UpdateRelease(ctx context.Context, r *update.Release) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE releases SET channel = ?, changelog = ?, mandatory = ?, min_version = ?, rollout = ?,
		published = ?, halted = ?, yanked = ?, published_at = ?, updated_at = ? WHERE app_id = ? AND id = ?`),
		r.Channel, r.Changelog, r.Mandatory, minVersionText(r), r.Rollout, r.Published, r.Halted, r.Yanked, optMS(r.PublishedAt),
		ms(r.UpdatedAt), r.AppID, r.ID)
	return affected(res, err)
}

// DeleteRelease deletes the release; its artifacts go with it (ON DELETE
// CASCADE on both engines).
func (t updateTx) DeleteRelease(ctx context.Context, appID string, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM releases WHERE app_id = ? AND id = ?`), appID, id)
	return affected(res, err)
}

func (t updateTx) PutArtifact(ctx context.Context, releaseID int64, a *update.Artifact) (*update.Artifact, error) {
	var old update.Artifact
	var created int64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT id, file_name, size, sha256, blob_key, created_at FROM release_artifacts
		WHERE release_id = ? AND os = ? AND arch = ?`), releaseID, a.OS, a.Arch).
		Scan(&old.ID, &old.FileName, &old.Size, &old.SHA256, &old.BlobKey, &created)
	switch {
	case err == sql.ErrNoRows:
		return nil, translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO release_artifacts (release_id, os, arch, file_name, size,
			sha256, blob_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
			releaseID, a.OS, a.Arch, a.FileName, a.Size, a.SHA256, a.BlobKey, ms(a.CreatedAt)).Scan(&a.ID))
	case err != nil:
		return nil, translate(err)
	}
	old.OS, old.Arch, old.CreatedAt = a.OS, a.Arch, fromMS(created)
	a.ID = old.ID
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`UPDATE release_artifacts SET file_name = ?, size = ?, sha256 = ?, blob_key = ?, created_at = ?
		WHERE id = ?`), a.FileName, a.Size, a.SHA256, a.BlobKey, ms(a.CreatedAt), a.ID)
	return &old, translate(err)
}

func (t updateTx) SetFloor(ctx context.Context, appID, channel, version string, now time.Time) error {
	if version == "" {
		_, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM update_floors WHERE app_id = ? AND channel = ?`), appID, channel)
		return translate(err)
	}
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO update_floors (app_id, channel, version, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (app_id, channel) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`),
		appID, channel, version, ms(now))
	return translate(err)
}
