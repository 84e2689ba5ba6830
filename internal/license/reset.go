package license

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
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

// RequestHWIDReset queues a device-reset request of a key (license_key) or
// an app user account (username) for the owner and records
// hwid_reset.requested; with the app's auto-approve rule it is approved at
// once. It answers the same whether or not the key or account exists, so it
// cannot be used to probe for them; it returns only MISSING_FIELDS.
func (s *Service) RequestHWIDReset(ctx context.Context, app *App, in ResetRequestInput) error {
	in.LicenseKey, in.Username = strings.TrimSpace(in.LicenseKey), strings.TrimSpace(in.Username)
	if in.LicenseKey == "" && in.Username == "" {
		return apperr.Missing("license_key or username")
	}
	if in.LicenseKey == "" && !app.Settings.AccountsEnabled {
		return nil // no accounts to reset; the same answer as for an unknown name
	}
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		r := &ResetRequest{AppID: app.ID, HWID: truncate(in.HWID, 256), Reason: truncate(in.Reason, 1000), CreatedAt: now}
		if in.LicenseKey != "" {
			k, err := tx.KeyForUpdate(ctx, app.ID, in.LicenseKey)
			if errors.Is(err, apperr.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			r.KeyID, r.LicenseKey = k.ID, k.LicenseKey
		} else {
			a, err := tx.AccountForUpdate(ctx, app.ID, UsernameKey(in.Username))
			if errors.Is(err, apperr.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			r.AccountID, r.Username = a.ID, a.Username
		}
		if days := app.Settings.ResetAutoApproveDays; days > 0 {
			last, err := tx.LastApprovedReset(ctx, r.KeyID, r.AccountID)
			if err != nil {
				return err
			}
			if last == nil || now.Sub(*last) >= time.Duration(days)*24*time.Hour {
				if err := resetHolder(ctx, tx, r, now); err != nil {
					return err
				}
				r.Status, r.DecidedAt, r.DecidedBy = RequestApproved, &now, "auto"
			}
		}
		if err := tx.InsertResetRequest(ctx, r); err != nil {
			return err
		}
		if r.Status == RequestApproved {
			target := r.LicenseKey
			if target == "" {
				target = r.Username
			}
			if err := tx.AddAudit(ctx, audit.NewEntry(audit.System, now, "hwid_reset.auto_approve", app.ID, target,
				map[string]any{"request_id": r.ID, "days": app.Settings.ResetAutoApproveDays})); err != nil {
				return err
			}
		}
		subject := event.AccountSubject(r.AccountID)
		if r.KeyID != 0 {
			subject = event.KeySubject(r.KeyID)
		}
		return tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.HWIDResetRequested, CreatedAt: now, Subject: subject,
			Data: map[string]any{"app_id": app.ID, "license_key": r.LicenseKey, "username": r.Username, "hwid": r.HWID,
				"reason": r.Reason, "status": statusOr(r.Status)}})
	})
}

func statusOr(s string) string {
	if s == "" {
		return RequestPending
	}
	return s
}

// resetHolder clears the devices of the request's key or account and ends
// its sessions, whose next heartbeat answers HWID_RESET.
func resetHolder(ctx context.Context, tx Tx, r *ResetRequest, now time.Time) error {
	if r.KeyID != 0 {
		if _, err := tx.DeleteDevices(ctx, r.KeyID); err != nil {
			return err
		}
		_, err := tx.EndKeySessions(ctx, r.KeyID, CodeHWIDReset, now)
		return err
	}
	if _, err := tx.DeleteAccountDevices(ctx, r.AccountID); err != nil {
		return err
	}
	_, err := tx.EndAccountSessions(ctx, r.AccountID, CodeHWIDReset, now)
	return err
}

// ResetRequests lists an app's device-reset requests in status ("" = all),
// newest first, below the cursor before.
func (s *Service) ResetRequests(ctx context.Context, appID, status string, before int64, limit int) ([]ResetRequest, error) {
	switch status {
	case "", RequestPending, RequestApproved, RequestDenied:
	default:
		return nil, apperr.InvalidField("status", "use pending, approved or denied")
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	return s.store.ResetRequests(ctx, appID, status, before, limit)
}

// DecideResetRequest approves (performing the reset: devices cleared,
// sessions end with HWID_RESET) or denies a pending request. Deciding a
// decided request is CONFLICT.
func (s *Service) DecideResetRequest(ctx context.Context, actor audit.Actor, appID string, id int64, approve bool) (*ResetRequest, error) {
	now := s.Now()
	var out *ResetRequest
	err := s.store.InTx(ctx, func(tx Tx) error {
		r, err := tx.ResetRequestForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Request")
		}
		if r.Status != RequestPending {
			return conflict("This request was already " + r.Status + ".")
		}
		r.Status, r.DecidedAt, r.DecidedBy = RequestDenied, &now, actor.Name
		if approve {
			r.Status = RequestApproved
			if err := resetHolder(ctx, tx, r, now); err != nil {
				return err
			}
		}
		if err := tx.DecideResetRequest(ctx, r); err != nil {
			return err
		}
		out = r
		target := r.LicenseKey
		if target == "" {
			target = r.Username
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "hwid_reset."+map[bool]string{true: "approve", false: "deny"}[approve], appID, target,
			map[string]any{"request_id": r.ID}))
	})
	return out, err
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
