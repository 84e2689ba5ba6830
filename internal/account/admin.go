package account

import (
	"context"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/license"
)

// ListAccounts returns a page of an app's accounts and the cursor of the
// next page (0 at the end).
func (s *Service) ListAccounts(ctx context.Context, f Filter) ([]license.Account, int64, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	if _, err := s.lic.App(ctx, f.AppID); err != nil {
		return nil, 0, err
	}
	as, err := s.store.Accounts(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(as) == f.Limit {
		next = as[len(as)-1].ID
	}
	return as, next, nil
}

// AccountDetail is one account with its devices, open sessions and redeemed keys.
type AccountDetail struct {
	Account     license.Account
	Devices     []license.Device
	Sessions    []license.Session
	Redemptions []license.Redemption
}

// GetAccount returns an account of the app by username, or NOT_FOUND.
func (s *Service) GetAccount(ctx context.Context, appID, username string) (*AccountDetail, error) {
	a, err := s.store.AccountByUsername(ctx, appID, license.UsernameKey(username))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundOf("license.Account")
	} else if err != nil {
		return nil, err
	}
	d := &AccountDetail{Account: *a}
	if d.Devices, err = s.store.AccountDevices(ctx, a.ID); err != nil {
		return nil, err
	}
	if d.Sessions, err = s.store.Sessions(ctx, license.SessionFilter{AppID: appID, AccountID: a.ID, Limit: 1000}); err != nil {
		return nil, err
	}
	if d.Redemptions, err = s.store.Redemptions(ctx, a.ID); err != nil {
		return nil, err
	}
	return d, nil
}

// Account actions of the admin API.
const (
	AccountBan           = "ban"
	AccountUnban         = "unban"
	AccountPause         = "pause"
	AccountResume        = "resume"
	AccountResetDevices  = "reset-devices"
	AccountSetExpiry     = "set-expiry"
	AccountResetPassword = "reset-password"
)

// AccountActionInput carries an action's parameters: ExpiresAt (nil with
// Lifetime for set-expiry) and a Reason kept in the audit log.
type AccountActionInput struct {
	ExpiresAt *time.Time
	Lifetime  bool
	Reason    string
}

// AccountAction applies one owner action to an account:
//   - ban / unban, pause / resume: sessions end with BANNED / PAUSED;
//   - reset-devices: every device unbound, sessions end with HWID_RESET;
//   - set-expiry: a new expiry (or lifetime); a past expiry ends the
//     account's time at its next heartbeat;
//   - reset-password: a temporary password, returned once; sessions end
//     with SESSION_REVOKED and sign-in answers PASSWORD_RESET_REQUIRED
//     until the user sets a new password through change-password.
//
// It returns the account, the temporary password of reset-password, or
// NOT_FOUND, MISSING_FIELDS or CONFLICT.
func (s *Service) AccountAction(ctx context.Context, actor audit.Actor, appID, username, action string, in AccountActionInput) (*license.Account, string, error) {
	details := map[string]any{}
	if in.Reason != "" {
		details["reason"] = truncate(in.Reason, 1000)
	}
	var temp, tempHash string
	switch action {
	case AccountBan, AccountUnban, AccountPause, AccountResume, AccountResetDevices:
	case AccountSetExpiry:
		if in.Lifetime == (in.ExpiresAt != nil) {
			return nil, "", apperr.InvalidField("expires_at", "give an ISO 8601 time, or lifetime true")
		}
		details["expires_at"], details["lifetime"] = license.OptTimestamp(in.ExpiresAt), in.Lifetime
	case AccountResetPassword:
		var err error
		if temp, err = s.randomPassword(); err != nil {
			return nil, "", err
		}
		if tempHash, err = s.hashPassword(temp); err != nil {
			return nil, "", err
		}
	default:
		return nil, "", apperr.InvalidField("action", "must be ban, unban, pause, resume, reset-devices, set-expiry or reset-password")
	}
	now := s.Now()
	var out *license.Account
	err := s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.AccountForUpdate(ctx, appID, license.UsernameKey(username))
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("license.Account")
		} else if err != nil {
			return err
		}
		end := func(reason string) error {
			_, err := tx.EndAccountSessions(ctx, a.ID, reason, now)
			return err
		}
		switch action {
		case AccountBan:
			a.Status = license.StatusBanned
			err = end(license.CodeBanned)
		case AccountUnban:
			if a.Status != license.StatusBanned {
				return conflict("The account is not banned.")
			}
			a.Status = license.StatusActive
		case AccountPause:
			switch a.Status {
			case license.StatusBanned:
				return conflict("A banned account cannot be paused.")
			case license.StatusActive:
				a.Status = license.StatusPaused
				err = end(license.CodePaused)
			}
		case AccountResume:
			if a.Status != license.StatusPaused {
				return conflict("The account is not paused.")
			}
			a.Status = license.StatusActive
		case AccountResetDevices:
			if _, err = tx.DeleteAccountDevices(ctx, a.ID); err == nil {
				err = end(license.CodeHWIDReset)
			}
		case AccountSetExpiry:
			a.ExpiresAt = in.ExpiresAt
		case AccountResetPassword:
			a.PasswordHash, a.PasswordResetRequired = tempHash, true
			err = end(license.CodeSessionRevoked)
		}
		if err != nil {
			return err
		}
		a.UpdatedAt = now
		if err := tx.UpdateAccount(ctx, a); err != nil {
			return err
		}
		out = a
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "account."+action, appID, a.Username, details))
	})
	if err != nil {
		return nil, "", err
	}
	return out, temp, nil
}

// DeleteAccount deletes an account; its sessions end with SESSION_REVOKED.
// Keys it redeemed stay redeemed: their time went with the account.
func (s *Service) DeleteAccount(ctx context.Context, actor audit.Actor, appID, username string) error {
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		a, err := tx.AccountForUpdate(ctx, appID, license.UsernameKey(username))
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("license.Account")
		} else if err != nil {
			return err
		}
		if _, err := tx.EndAccountSessions(ctx, a.ID, license.CodeSessionRevoked, now); err != nil {
			return err
		}
		if err := tx.DeleteAccount(ctx, a.ID); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "account.delete", appID, a.Username, nil))
	})
}

// randomPassword returns a temporary password of 16 unambiguous characters.
func (s *Service) randomPassword() (string, error) {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 16)
	for i := range b {
		var r [1]byte
		for {
			if _, err := s.random.Read(r[:]); err != nil {
				return "", apperr.Wrap(err, "random")
			}
			if int(r[0]) < 256-256%len(alphabet) { // no modulo bias
				break
			}
		}
		b[i] = alphabet[int(r[0])%len(alphabet)]
	}
	return string(b), nil
}
