package client

import (
	"context"
	"strings"
	"time"

	"github.com/keyward/keyward/wire"
)

// LicenseFile is a signed offline license file the server issued for one
// key on one device (docs/offline.md). Text is the armored document: store
// it, and verify it when offline with the operator's license-file public
// key (the format's verifiers in docs/offline.md; GET
// /api/app/public-keys.php serves the keys an app pins).
type LicenseFile struct {
	Text       string
	FileID     string
	ValidUntil time.Time
	// Floating: the key is floating and this file is a borrowed seat, held
	// until ValidUntil or until returned with ReturnLicenseFile(BorrowID).
	Floating bool
	BorrowID string
}

// LicenseFile asks for a license file for key on device hwid
// (POST /api/auth/license-file.php, enveloped). It binds the device as
// Login does, with the same refusals (*APIError: INVALID_KEY, BANNED,
// HWID_MISMATCH, DEVICE_LIMIT, …), and OFFLINE_DISABLED when the app issues
// no files, LICENSE_FILE_REVOKED when the operator revoked this device's
// file. It opens no session. Renew the file whenever the app is online, so
// a machine that goes offline leaves with a full validity.
func (c *Client) LicenseFile(ctx context.Context, key, hwid string) (*LicenseFile, error) {
	var r wire.LicenseFileReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/auth/license-file.php", kind: envelopeCall,
		body: wire.LicenseFileRequest{LicenseKey: strings.TrimSpace(key), HWID: hwid}}, &r); err != nil {
		return nil, err
	}
	if r.LicenseFile == "" {
		return nil, &SecurityError{Err: ErrBadReply, Method: "POST", Path: "/api/auth/license-file.php"}
	}
	return &LicenseFile{Text: r.LicenseFile, FileID: r.FileID, ValidUntil: r.ValidUntil, Floating: r.Floating, BorrowID: r.SessionID}, nil
}

// ReturnLicenseFile returns a floating key's borrowed seat early (its
// BorrowID); the seat frees at once. Returning one already returned
// succeeds; an unknown id is NOT_FOUND. The file still verifies until its
// ValidUntil, so the app must delete it once this succeeds: keeping it
// would use a seat it gave back.
func (c *Client) ReturnLicenseFile(ctx context.Context, borrowID string) error {
	_, err := c.do(ctx, call{method: "POST", path: "/api/auth/license-file.php", kind: envelopeCall,
		body: wire.LicenseFileRequest{SessionID: borrowID, Return: true}}, nil)
	return err
}
