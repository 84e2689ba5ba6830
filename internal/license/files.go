package license

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/wire"
)

// License files (issue 23, docs/offline.md): signed documents an app
// verifies without the server, issued online (auth/license-file.php), for an
// air-gapped machine's activation request (the customer portal or an
// admin), and recorded in the license_files table so operators can list and
// revoke them, a floating key's unreturned files hold seats, and an
// activation request's nonce is used once.

// Sources of an issued file.
const (
	FileOnline  = "online"  // auth/license-file.php
	FileOffline = "offline" // an activation request through the customer portal
	FileAdmin   = "admin"   // an activation request through the admin API
)

// IssuedFile is one license file the server handed out.
type IssuedFile struct {
	ID       string
	AppID    string
	KeyID    int64
	HWID     string
	Kid      string
	Source   string // FileOnline, FileOffline, FileAdmin
	Floating bool   // a borrowed seat of a floating key
	// Nonce is the activation request's nonce ("" for online files).
	Nonce      string
	IssuedAt   time.Time
	ValidUntil time.Time
	ReturnedAt *time.Time
	RevokedAt  *time.Time
	// Text is the armored file, kept so a repeated activation request is
	// answered with the same file.
	Text string
	// Activated: issuing this file activated the key (not stored).
	Activated bool
}

// HoldsSeat reports whether f is a borrowed seat still held at now:
// floating, not returned and not past its valid_until. A revoked file still
// holds its seat: it stays usable offline until valid_until (the trade
// docs/offline.md states), so freeing its seat could let offline use exceed
// max_devices.
func (f *IssuedFile) HoldsSeat(now time.Time) bool {
	return f.Floating && f.ReturnedAt == nil && now.Before(f.ValidUntil)
}

// FileTx is what issuing, returning and revoking files need of a
// transaction.
type FileTx interface {
	InsertLicenseFile(ctx context.Context, f *IssuedFile) error
	// LicenseFileByNonce returns the app's file issued for an activation
	// request with this nonce (ErrNotFound if none).
	LicenseFileByNonce(ctx context.Context, appID, nonce string) (*IssuedFile, error)
	// LicenseFileForUpdate reads one of the app's files, locking it.
	LicenseFileForUpdate(ctx context.Context, appID, id string) (*IssuedFile, error)
	// LatestLicenseFile returns the newest file of the key for hwid
	// (ErrNotFound if none).
	LatestLicenseFile(ctx context.Context, keyID int64, hwid string) (*IssuedFile, error)
	// SetLicenseFileState stores f's ReturnedAt and RevokedAt.
	SetLicenseFileState(ctx context.Context, f *IssuedFile) error
	// BorrowsOfKey returns the key's floating files not returned whose
	// valid_until is after now, oldest first.
	BorrowsOfKey(ctx context.Context, keyID int64, now time.Time) ([]IssuedFile, error)
}

// FileStore is what listing files needs.
type FileStore interface {
	// LicenseFiles lists the files of one key of the app, newest first.
	LicenseFiles(ctx context.Context, appID string, keyID int64, limit int) ([]IssuedFile, error)
	// PurgeLicenseFiles deletes the records of files not revoked whose
	// valid_until and issued_at are both before cutoff, and returns how
	// many. With cutoff = now - MaxRequestAge this never reopens a nonce:
	// the request of a purged file was made before cutoff, so it is
	// refused as too old anyway. Revoked files are kept: their record
	// is what refuses a new file for the device.
	PurgeLicenseFiles(ctx context.Context, cutoff time.Time) (int, error)
}

// FileSigner signs a license file's claims with the server's active
// license-file key, setting c.Kid, and returns the kid and the armored text
// (the edge's license keys: signing.LicenseKeys).
type FileSigner func(c licensefile.Claims) (kid, text string, err error)

// FileRequest asks for a license file for one key on one device.
type FileRequest struct {
	LicenseKey string
	HWID       string
	Source     string // FileOnline, FileOffline or FileAdmin
	// Nonce is the activation request's nonce (air-gapped); "" online.
	Nonce string
	// Actor is who asked (the client, a customer, an admin): the audit
	// entry's.
	Actor audit.Actor
}

// Refusals of the license-file routes.
var (
	errOfflineDisabled = apperr.New(apperr.Forbidden, CodeOfflineDisabled,
		"This application does not issue license files (offline use is off).")
	errFileRevoked = apperr.New(apperr.Forbidden, CodeLicenseFileRevoked,
		"The license file of this device was revoked; ask the vendor for a new one.")
	errNonceUsed = apperr.New(apperr.Conflict, CodeConflict,
		"This activation request was already used for another license or device.")
)

// IssueFile binds req.HWID to the key exactly as Login does (the same
// refusals and codes: MISSING_FIELDS, INVALID_KEY, MAINTENANCE, BANNED,
// PAUSED, EXPIRED, HWID_MISMATCH, DEVICE_LIMIT; upstream lookup of unknown
// keys), activating an unused key, and returns a signed license file for
// that key and device, valid until min(now + offline_ttl_hours, the
// license's expiry). It opens no session.
//
// It refuses with OFFLINE_DISABLED when the app has offline use off, and
// with LICENSE_FILE_REVOKED when the newest file of the key for this device
// was revoked, unless an admin asks (an admin's file lifts the block).
//
// A floating key binds no device: the file is a borrowed seat, counted with
// the live sessions (Seats.BorrowSeat) until it is returned or its
// valid_until passes; a new file for the same device supersedes (returns)
// that device's earlier borrows.
//
// With req.Nonce (an air-gapped activation request) the nonce is used once:
// the same request again answers with the file already issued for it, and a
// nonce already used for another key or device is refused with CONFLICT.
func (s *Service) IssueFile(ctx context.Context, app *App, req FileRequest, sign FileSigner) (*IssuedFile, error) {
	if !app.Settings.OfflineEnabled {
		return nil, errOfflineDisabled
	}
	if err := checkDeviceRequest(app, req.LicenseKey, req.HWID); err != nil {
		return nil, err
	}
	if sign == nil {
		return nil, apperr.Wrap(errors.New("no license-file signing key is loaded"), "license file")
	}
	now := s.Now().Truncate(time.Second)
	var f *IssuedFile
	err := s.withUpstream(ctx, app, req.LicenseKey, func() (err error) {
		f, err = s.issueFile(ctx, app, req, sign, now)
		return err
	})
	return f, err
}

func (s *Service) issueFile(ctx context.Context, app *App, req FileRequest, sign FileSigner, now time.Time) (*IssuedFile, error) {
	var out *IssuedFile
	var denied error
	fresh := false // a new file, not the one of a repeated request
	err := s.store.InTx(ctx, func(tx Tx) error {
		out, denied, fresh = nil, nil, false
		k, err := keyForDevice(ctx, tx, app.ID, req.LicenseKey, req.HWID)
		if err != nil {
			return err
		}
		if req.Nonce != "" {
			prev, err := tx.LicenseFileByNonce(ctx, app.ID, req.Nonce)
			if err == nil {
				if prev.KeyID != k.ID || prev.HWID != req.HWID {
					return errNonceUsed
				}
				out = prev // the same request again: the same file
				return nil
			} else if !errors.Is(err, apperr.ErrNotFound) {
				return err
			}
		}
		if err := statusError(k.StatusAt(now)); err != nil {
			return err
		}
		if req.Source != FileAdmin {
			last, err := tx.LatestLicenseFile(ctx, k.ID, req.HWID)
			if err == nil && last.RevokedAt != nil {
				return errFileRevoked
			} else if err != nil && !errors.Is(err, apperr.ErrNotFound) {
				return err
			}
		}
		activated, refused, err := s.admit(ctx, tx, app, k, req.HWID, now, Seats.BorrowSeat, map[string]any{"license_file": true})
		if err != nil || refused != nil {
			denied = refused
			return err
		}
		if k.Floating {
			// A new borrow for the same device supersedes its earlier ones:
			// one device holds one seat.
			borrows, err := tx.BorrowsOfKey(ctx, k.ID, now)
			if err != nil {
				return err
			}
			for i := range borrows {
				if b := &borrows[i]; b.HWID == req.HWID {
					b.ReturnedAt = &now
					if err := tx.SetLicenseFileState(ctx, b); err != nil {
						return err
					}
				}
			}
		}
		f, err := s.signFile(app, k, req, sign, now)
		if err != nil {
			return err
		}
		f.Activated = activated
		if err := tx.InsertLicenseFile(ctx, f); err != nil {
			if errors.Is(err, apperr.ErrConflict) {
				return errNonceUsed // the same nonce, concurrently, for another key
			}
			return err
		}
		details := map[string]any{"hwid": f.HWID, "source": f.Source, "file_id": f.ID, "valid_until": Timestamp(f.ValidUntil),
			"floating": f.Floating}
		action := "license_file.issue"
		if f.Nonce != "" {
			action = "license_file.offline_activate" // from an air-gapped machine's request
		}
		if err := tx.AddAudit(ctx, audit.NewEntry(req.Actor, now, action, app.ID, k.LicenseKey, details)); err != nil {
			return err
		}
		out, fresh = f, true
		return tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.LicenseFileIssued, CreatedAt: now, Subject: event.KeySubject(k.ID),
			Data: map[string]any{"app_id": app.ID, "key_id": k.ID, "license_key": k.LicenseKey, "hwid": f.HWID, "file_id": f.ID,
				"source": f.Source, "floating": f.Floating, "issued_at": Timestamp(f.IssuedAt), "valid_until": Timestamp(f.ValidUntil)}})
	})
	if err != nil {
		return nil, err
	}
	if denied != nil {
		s.seatDeniedFor(app.ID)
		return nil, denied
	}
	if s.fileIssued != nil && fresh {
		s.fileIssued(out.Source)
	}
	return out, nil
}

// signFile builds and signs the file of k for req at now. valid_until is
// now + offline_ttl_hours, capped at the license's own expiry: a file never
// outlives the license it carries.
func (s *Service) signFile(app *App, k *Key, req FileRequest, sign FileSigner, now time.Time) (*IssuedFile, error) {
	ttl := app.Settings.OfflineTTLHours
	if ttl <= 0 {
		ttl = 168
	}
	until := now.Add(time.Duration(ttl) * time.Hour)
	if k.ExpiresAt != nil && k.ExpiresAt.Before(until) {
		until = k.ExpiresAt.UTC().Truncate(time.Second)
	}
	if !until.After(now) {
		return nil, errExpired
	}
	id := NewID(s.random)
	c := licensefile.Claims{V: licensefile.Version, AppID: app.ID, KeyID: k.ID, KeyHint: licensefile.KeyHint(k.LicenseKey),
		KeySHA256: licensefile.KeySHA256(k.LicenseKey), HWID: req.HWID, KeyType: string(k.Type), Status: string(k.StatusAt(now)),
		Features: app.Features(k.Features), IssuedAt: now, ExpiresAt: k.ExpiresAt, ValidUntil: until,
		Floating: k.Floating, FileID: id, Nonce: req.Nonce}
	if k.Floating {
		c.BorrowID = id
	}
	kid, text, err := sign(c)
	if err != nil {
		return nil, apperr.Wrap(err, "sign license file")
	}
	return &IssuedFile{ID: id, AppID: app.ID, KeyID: k.ID, HWID: req.HWID, Kid: kid, Source: req.Source, Floating: k.Floating,
		Nonce: req.Nonce, IssuedAt: now, ValidUntil: until, Text: text}, nil
}

// ReturnFile returns a borrowed seat (a floating key's license file, named
// by its borrow id, the file's borrow_id): its seat frees at once. A file
// of a key that is not floating is no borrow: NOT_FOUND.
// Returning a file already returned, or one past its valid_until, succeeds;
// an id that names no file of the app is NOT_FOUND. The returned file stays
// cryptographically valid until its valid_until: the app must discard it
// (the SDK's ReturnLicenseFile does).
func (s *Service) ReturnFile(ctx context.Context, app *App, id string, actor audit.Actor) error {
	if id == "" {
		return apperr.Missing("session_id")
	}
	_, err := s.returnFile(ctx, app, 0, id, actor)
	return err
}

// ReturnKeyFile is ReturnFile for the holder of one key (the customer
// portal): a file of any other key is NOT_FOUND, as an unknown id is. It
// returns the file as it now is.
func (s *Service) ReturnKeyFile(ctx context.Context, app *App, keyID int64, id string, actor audit.Actor) (*IssuedFile, error) {
	if id == "" {
		return nil, apperr.Missing("id")
	}
	if keyID == 0 {
		return nil, apperr.NotFoundOf("Borrowed seat")
	}
	return s.returnFile(ctx, app, keyID, id, actor)
}

// returnFile returns the borrow id of app, of the key keyID unless 0.
func (s *Service) returnFile(ctx context.Context, app *App, keyID int64, id string, actor audit.Actor) (*IssuedFile, error) {
	if len(id) > 64 {
		return nil, apperr.NotFoundOf("Borrowed seat")
	}
	now := s.Now()
	var out *IssuedFile
	err := s.store.InTx(ctx, func(tx Tx) error {
		f, err := tx.LicenseFileForUpdate(ctx, app.ID, id)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && (!f.Floating || (keyID != 0 && f.KeyID != keyID))) {
			return apperr.NotFoundOf("Borrowed seat")
		} else if err != nil {
			return err
		}
		out = f
		if f.ReturnedAt != nil {
			return nil
		}
		f.ReturnedAt = &now
		if err := tx.SetLicenseFileState(ctx, f); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "license_file.return", app.ID, f.ID, map[string]any{"hwid": f.HWID}))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeFile marks one of the app's license files revoked: no new file is
// issued for its key and device but by an admin (IssueFile). The file
// itself stays valid offline until its valid_until — a signed document
// cannot be recalled — and a revoked borrow keeps its seat until then.
func (s *Service) RevokeFile(ctx context.Context, appID, id string, actor audit.Actor) (*IssuedFile, error) {
	if id == "" {
		return nil, apperr.Missing("id")
	}
	now := s.Now()
	var out *IssuedFile
	err := s.store.InTx(ctx, func(tx Tx) error {
		f, err := tx.LicenseFileForUpdate(ctx, appID, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("License file")
		} else if err != nil {
			return err
		}
		out = f
		if f.RevokedAt != nil {
			return nil
		}
		f.RevokedAt = &now
		if err := tx.SetLicenseFileState(ctx, f); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "license_file.revoke", appID, f.ID,
			map[string]any{"hwid": f.HWID, "key_id": f.KeyID}))
	})
	return out, err
}

// LicenseFiles lists the files issued for one key of the app, newest
// first (at most 200).
func (s *Service) LicenseFiles(ctx context.Context, appID string, keyID int64) ([]IssuedFile, error) {
	return s.store.LicenseFiles(ctx, appID, keyID, 200)
}

// Reply is the reply carrying f ([wire.LicenseFileReply]), for the client,
// portal and admin routes that issue files. A floating key's file carries
// its borrow id as session_id.
func (f *IssuedFile) Reply() *wire.LicenseFileReply {
	r := &wire.LicenseFileReply{Success: true, Message: "License file issued", LicenseFile: f.Text, FileID: f.ID,
		ValidUntil: f.ValidUntil.UTC(), Floating: f.Floating}
	if f.Floating {
		r.SessionID = f.ID
	}
	return r
}

// View is f as the key detail lists it (no text).
func (f *IssuedFile) View() wire.LicenseFile {
	return wire.LicenseFile{ID: f.ID, HWID: f.HWID, Kid: f.Kid, Source: f.Source, Floating: f.Floating,
		IssuedAt: Timestamp(f.IssuedAt), ValidUntil: Timestamp(f.ValidUntil), ReturnedAt: OptTimestamp(f.ReturnedAt),
		RevokedAt: OptTimestamp(f.RevokedAt)}
}

// Activation requests older than MaxRequestAge, or made more than
// maxRequestSkew in the server's future, are refused: an air-gapped
// machine's request is carried by hand, which takes days, not months.
const (
	MaxRequestAge  = 30 * 24 * time.Hour
	maxRequestSkew = 10 * time.Minute
)

// OfflineRequest is an air-gapped activation: the activation request's
// text and who turns it into a file.
type OfflineRequest struct {
	// AppID is the app the caller may act on (the customer token's, the
	// admin's app_id): the request must be for it.
	AppID string
	// Text is the activation request as the machine made it.
	Text string
	// LicenseKeys, when not empty, are the only keys the request may name
	// (a customer's own key, or the keys redeemed onto their account).
	LicenseKeys []string
	Source      string // FileOffline (customer portal) or FileAdmin
	Actor       audit.Actor
}

// OfflineActivate turns an air-gapped machine's activation request into a
// license file (docs/offline.md). The request must be well-formed, MACed
// with req.AppID's secret (a request edited on the way, to
// another device say, fails), made within MaxRequestAge, and name one of
// req.LicenseKeys when those are given. The device is then bound and
// counted exactly as an online login would (IssueFile, with the request's
// nonce: the same request again answers the same file; its nonce never
// produces a file for another device or key).
func (s *Service) OfflineActivate(ctx context.Context, req OfflineRequest, sign FileSigner) (*IssuedFile, error) {
	if strings.TrimSpace(req.Text) == "" {
		return nil, apperr.Missing("request")
	}
	if len(req.Text) > licensefile.MaxSize {
		return nil, apperr.InvalidField("request", "larger than 64 KiB")
	}
	doc, err := licensefile.ParseRequest(req.Text)
	if err != nil {
		return nil, apperr.InvalidField("request", "not an activation request ("+truncate(err.Error(), 200)+")")
	}
	app, err := s.store.App(ctx, req.AppID)
	if err != nil {
		return nil, err
	}
	if app.RevokedAt != nil {
		return nil, ErrAppRevoked
	}
	// The MAC decides which app a request is for: only code holding this
	// app's secret makes one that verifies. Its app_id is the machine's
	// word (a machine that never reached the server may not know it:
	// keyward client offline-request without --app-id), so it refuses
	// only a request that does not verify.
	if err := doc.Verify(app.Secret); err != nil {
		if doc.AppID != req.AppID {
			return nil, apperr.New(apperr.Forbidden, CodeForbidden, "This activation request is for another application.")
		}
		return nil, apperr.InvalidField("request", "it does not match this application's secret (changed after it was made, or made for another application)")
	}
	now := s.Now()
	if doc.CreatedAt.Before(now.Add(-MaxRequestAge)) {
		return nil, apperr.InvalidField("request", "made more than 30 days ago; make a new one")
	}
	if doc.CreatedAt.After(now.Add(maxRequestSkew)) {
		return nil, apperr.InvalidField("request", "made in the future (check the machine's clock)")
	}
	if len(req.LicenseKeys) > 0 {
		mine := false
		for _, k := range req.LicenseKeys {
			if subtle.ConstantTimeCompare([]byte(k), []byte(doc.LicenseKey)) == 1 {
				mine = true
			}
		}
		if !mine {
			return nil, apperr.New(apperr.Forbidden, CodeForbidden, "This activation request is for another license key.")
		}
	}
	return s.IssueFile(ctx, app, FileRequest{LicenseKey: doc.LicenseKey, HWID: doc.HWID, Source: req.Source, Nonce: doc.Nonce,
		Actor: req.Actor}, sign)
}
