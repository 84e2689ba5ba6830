package license

import (
	"context"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
)

// Rotating a key for a suspected leak. The key gets a new string, which the
// owner passes to their customer (key.rotated carries it). Only the device
// the key was bound to first — the customer's, before anyone else used the
// key — stays bound, and the old string stays an alias of the key for that
// device alone: its running session and its next logins with the old string
// keep working until the customer enters the new one. Every other device is
// unbound and its sessions end, so the leaked string is dead everywhere else.

// AliasTx is what rotation needs of a write transaction.
type AliasTx interface {
	InsertKeyAlias(ctx context.Context, appID, alias, hwid string, keyID int64, now time.Time) error
	// KeyByAliasForUpdate returns the key alias names for hwid, locked.
	KeyByAliasForUpdate(ctx context.Context, appID, alias, hwid string) (*Key, error)
	DeleteDevice(ctx context.Context, keyID int64, hwid string) error
}

// RotateForLeak rotates a key keeping its first device, as described above.
func (s *Service) RotateForLeak(ctx context.Context, actor audit.Actor, appID, licenseKey string) (*Key, error) {
	app, err := s.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	fresh, err := NewKeyString(s.random, app.Settings.KeyPrefix)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	var out *Key
	err = s.store.InTx(ctx, func(tx Tx) error {
		k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Key")
		} else if err != nil {
			return err
		}
		devices, err := tx.Devices(ctx, k.ID)
		if err != nil {
			return err
		}
		var keep *Device
		for i := range devices {
			if keep == nil || devices[i].CreatedAt.Before(keep.CreatedAt) {
				keep = &devices[i]
			}
		}
		live, err := tx.LiveSessionsOfKey(ctx, k.ID)
		if err != nil {
			return err
		}
		for _, sess := range live {
			if keep == nil || sess.HWID != keep.HWID {
				if err := tx.EndSession(ctx, sess.ID, CodeSessionRevoked, now); err != nil {
					return err
				}
			}
		}
		for _, d := range devices {
			if keep != nil && d.HWID != keep.HWID {
				if err := tx.DeleteDevice(ctx, k.ID, d.HWID); err != nil {
					return err
				}
			}
		}
		old := k.LicenseKey
		k.LicenseKey, k.UpdatedAt = fresh, now
		if err := tx.UpdateKey(ctx, k); err != nil {
			return err
		}
		kept := ""
		if keep != nil {
			kept = keep.HWID
			if err := tx.InsertKeyAlias(ctx, appID, old, keep.HWID, k.ID, now); err != nil {
				return err
			}
		}
		out = k
		if err := tx.AddEvent(ctx, event.Event{AppID: appID, Type: event.KeyRotated, CreatedAt: now, Subject: event.KeySubject(k.ID), Data: map[string]any{
			"app_id": appID, "old_license_key": old, "license_key": fresh, "reason": "suspected leak", "kept_hwid": kept}}); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.rotate", appID, old,
			map[string]any{"new_license_key": fresh, "reason": "suspected leak", "kept_hwid": kept}))
	})
	return out, err
}
