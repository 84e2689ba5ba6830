package license

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
)

// ResetRequestInput is the body of the deprecated auth/request-hwid-reset.
type ResetRequestInput struct {
	LicenseKey string
	Username   string
	HWID       string
	Reason     string
}

// RequestHWIDReset queues a device-reset request for the owner and records
// hwid_reset.requested. It answers the same whether or not the key exists, so
// it cannot be used to probe for keys; it returns only MISSING_FIELDS.
func (s *Service) RequestHWIDReset(ctx context.Context, app *App, in ResetRequestInput) error {
	if in.LicenseKey == "" && in.Username == "" {
		return apperr.Missing("license_key or username")
	}
	if in.LicenseKey == "" {
		return nil // app user accounts arrive with their own capability
	}
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		k, err := tx.KeyForUpdate(ctx, app.ID, in.LicenseKey)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		r := &ResetRequest{AppID: app.ID, KeyID: k.ID, LicenseKey: k.LicenseKey, Username: truncate(in.Username, 255),
			HWID: truncate(in.HWID, 256), Reason: truncate(in.Reason, 1000), CreatedAt: now}
		if err := tx.InsertResetRequest(ctx, r); err != nil {
			return err
		}
		return tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.HWIDResetRequested, CreatedAt: now,
			Data: map[string]any{"app_id": app.ID, "license_key": k.LicenseKey, "hwid": r.HWID, "reason": r.Reason}})
	})
}

// duplicateGrace is how long after a self-service reset the same request is
// answered with success again: clients resend once when a connection drops.
const duplicateGrace = 2 * time.Minute

// SelfReset is the customer's "move license": it unbinds every device of the
// key and ends its sessions (their next heartbeat answers HWID_RESET), at most
// once per cooldown. It returns the time of the next allowed reset, or
// MISSING_FIELDS, SELF_RESET_DISABLED, INVALID_KEY, KEY_NOT_ACTIVE, NO_HWID or
// RATE_LIMITED.
func (s *Service) SelfReset(ctx context.Context, app *App, licenseKey, reason, ip string) (time.Time, error) {
	if licenseKey == "" {
		return time.Time{}, apperr.Missing("key")
	}
	if !app.Settings.SelfResetEnabled {
		return time.Time{}, apperr.New(apperr.Forbidden, CodeSelfResetDisabled, "Self-service device reset is disabled for this application.")
	}
	cooldown := time.Duration(app.Settings.SelfResetCooldownHours) * time.Hour
	now := s.Now()
	var next time.Time
	err := s.store.InTx(ctx, func(tx Tx) error {
		k, err := tx.KeyForUpdate(ctx, app.ID, licenseKey)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.New(apperr.NotFound, CodeInvalidKey, "Invalid license key.")
		} else if err != nil {
			return err
		}
		if st := k.StatusAt(now); st != StatusActive {
			return apperr.New(apperr.Invalid, CodeKeyNotActive, fmt.Sprintf("This license key is %s; only an active key can be moved.", st))
		}
		devices, err := tx.Devices(ctx, k.ID)
		if err != nil {
			return err
		}
		if last := k.LastSelfResetAt; last != nil && now.Before(last.Add(cooldown)) {
			next = last.Add(cooldown)
			if len(devices) == 0 && now.Sub(*last) < duplicateGrace {
				return nil // the client's retry of a reset that already happened
			}
			wait := next.Sub(now)
			hours := int(math.Ceil(wait.Hours()))
			e := apperr.New(apperr.RateLimited, CodeRateLimited,
				fmt.Sprintf("HWID was reset recently. Please wait ~%d hour(s) before resetting again.", hours)).
				With("next_reset_at", Timestamp(next))
			e.RetryAfter = int(math.Ceil(wait.Seconds()))
			return e
		}
		if len(devices) == 0 {
			return apperr.New(apperr.Invalid, CodeNoHWID, "This license key is not bound to any device.")
		}
		if _, err := tx.DeleteDevices(ctx, k.ID); err != nil {
			return err
		}
		if _, err := tx.EndKeySessions(ctx, k.ID, CodeHWIDReset, now); err != nil {
			return err
		}
		k.LastSelfResetAt = &now
		k.UpdatedAt = now
		if err := tx.UpdateKey(ctx, k); err != nil {
			return err
		}
		next = now.Add(cooldown)
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: audit.Actor{Kind: "customer", Name: "license key", IP: ip},
			Action: "key.self_reset", AppID: app.ID, Target: k.LicenseKey,
			Details: map[string]any{"reason": truncate(reason, 255), "devices": len(devices)}})
	})
	return next, err
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
