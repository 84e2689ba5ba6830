package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// Issued license files (license.FileTx, license.FileStore): the
// license_files table of migration 00023.

const licenseFileCols = `id, app_id, key_id, hwid, kid, source, floating, COALESCE(nonce, ''), issued_at, valid_until, returned_at, revoked_at, file`

func scanLicenseFile(row interface{ Scan(...any) error }) (*license.IssuedFile, error) {
	var f license.IssuedFile
	var issued, until int64
	var returned, revoked sql.NullInt64
	if err := row.Scan(&f.ID, &f.AppID, &f.KeyID, &f.HWID, &f.Kid, &f.Source, &f.Floating, &f.Nonce, &issued, &until,
		&returned, &revoked, &f.Text); err != nil {
		return nil, translate(err)
	}
	f.IssuedAt, f.ValidUntil, f.ReturnedAt, f.RevokedAt = fromMS(issued), fromMS(until), fromNullMS(returned), fromNullMS(revoked)
	return &f, nil
}

func scanLicenseFiles(rows *sql.Rows, err error) ([]license.IssuedFile, error) {
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []license.IssuedFile
	for rows.Next() {
		f, err := scanLicenseFile(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *f)
	}
	return out, translate(rows.Err())
}

func (t licenseTx) InsertLicenseFile(ctx context.Context, f *license.IssuedFile) error {
	var nonce any
	if f.Nonce != "" {
		nonce = f.Nonce
	}
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`INSERT INTO license_files (id, app_id, key_id, hwid, kid, source, floating, nonce,
		issued_at, valid_until, returned_at, revoked_at, file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		f.ID, f.AppID, f.KeyID, f.HWID, f.Kid, f.Source, f.Floating, nonce, ms(f.IssuedAt), ms(f.ValidUntil),
		optMS(f.ReturnedAt), optMS(f.RevokedAt), f.Text)
	return translate(err)
}

func (t licenseTx) LicenseFileByNonce(ctx context.Context, appID, nonce string) (*license.IssuedFile, error) {
	return scanLicenseFile(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+licenseFileCols+` FROM license_files
		WHERE app_id = ? AND nonce = ?`), appID, nonce))
}

func (t licenseTx) LicenseFileForUpdate(ctx context.Context, appID, id string) (*license.IssuedFile, error) {
	return scanLicenseFile(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+licenseFileCols+` FROM license_files
		WHERE app_id = ? AND id = ?`+t.db.forUpdate()), appID, id))
}

func (t licenseTx) LatestLicenseFile(ctx context.Context, keyID int64, hwid string) (*license.IssuedFile, error) {
	return scanLicenseFile(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+licenseFileCols+` FROM license_files
		WHERE key_id = ? AND hwid = ? ORDER BY seq DESC LIMIT 1`), keyID, hwid))
}

func (t licenseTx) SetLicenseFileState(ctx context.Context, f *license.IssuedFile) error {
	return affected(t.tx.ExecContext(ctx, t.db.rebind(`UPDATE license_files SET returned_at = ?, revoked_at = ? WHERE id = ?`),
		optMS(f.ReturnedAt), optMS(f.RevokedAt), f.ID))
}

func (t licenseTx) BorrowsOfKey(ctx context.Context, keyID int64, now time.Time) ([]license.IssuedFile, error) {
	return scanLicenseFiles(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+licenseFileCols+` FROM license_files
		WHERE key_id = ? AND floating AND returned_at IS NULL AND valid_until > ? ORDER BY seq`), keyID, ms(now)))
}

func (s licenseStore) LicenseFiles(ctx context.Context, appID string, keyID int64, limit int) ([]license.IssuedFile, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	return scanLicenseFiles(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+licenseFileCols+` FROM license_files
		WHERE app_id = ? AND key_id = ? ORDER BY seq DESC LIMIT ?`), appID, keyID, limit))
}

func (s licenseStore) PurgeLicenseFiles(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.exec(ctx, `DELETE FROM license_files
		WHERE revoked_at IS NULL AND valid_until < ? AND issued_at < ?`, ms(cutoff), ms(cutoff))
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
