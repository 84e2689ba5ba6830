package account

import (
	"context"
	"errors"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/lockout"
)

// Lockout scopes of account sign-ins; the app ID follows.
const (
	scopeAccount   = "account:"
	scopeAccountIP = "account-ip:"
)

// signInSubjects are what a failed sign-in counts against: the username (an
// unknown one too, so a lockout says nothing about existence) and the client IP.
func (s *Service) signInSubjects(appID, username, ip string) []lockout.Subject {
	u := license.UsernameKey(username)
	if len(u) > 64 {
		u = u[:64]
	}
	return []lockout.Subject{
		{Scope: scopeAccount + appID, ID: u, Policy: s.cfg.SignIn},
		{Scope: scopeAccountIP + appID, ID: ip, Policy: s.cfg.SignInIP},
	}
}

// verifyAccount checks a username and password under the sign-in lockout.
// An unknown username costs the same bcrypt comparison as a known one and
// gets the same INVALID_CREDENTIALS. It returns TOO_MANY_ATTEMPTS while
// locked, without comparing the password. The right password gives the
// attempt back and forgets the username's failures.
func (s *Service) verifyAccount(ctx context.Context, app *license.App, username, password, ip string) (*license.Account, error) {
	a, res, err := s.checkAccount(ctx, app, username, password, ip)
	if err != nil {
		return nil, err
	}
	if err := res.GiveBack(ctx, s.signInSubjects(app.ID, username, ip)[0]); err != nil {
		return nil, err
	}
	return a, nil
}

// VerifyAccount checks an app user's username and password for another
// surface than the client API (the customer portal), under the same
// per-username and per-IP sign-in lockout as account-login, so both share
// one attempt budget. It returns INVALID_CREDENTIALS or TOO_MANY_ATTEMPTS.
func (s *Service) VerifyAccount(ctx context.Context, app *license.App, username, password, ip string) (*license.Account, error) {
	return s.verifyAccount(ctx, app, username, password, ip)
}

// checkAccount reserves a sign-in attempt (lockout.Guard.Reserve: counted
// per username and per IP before the comparison, so concurrent guesses get
// no more comparisons than the lockout allows) and compares the password. A
// wrong one leaves the attempt counted and is INVALID_CREDENTIALS; the right
// one returns the account and the reservation, which the caller gives back
// (redeem keeps it when the key turns out unknown).
func (s *Service) checkAccount(ctx context.Context, app *license.App, username, password, ip string) (*license.Account, *lockout.Reservation, error) {
	subs := s.signInSubjects(app.ID, username, ip)
	res, err := s.cfg.Guard.Reserve(ctx, subs...)
	if err != nil {
		return nil, nil, err
	}
	var a *license.Account
	if len(username) <= 64 {
		var err error
		a, err = s.store.AccountByUsername(ctx, app.ID, license.UsernameKey(username))
		if err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return nil, nil, res.Abandon(ctx, err)
		}
	}
	ok := false
	if a != nil {
		ok = bcrypt.CompareHashAndPassword([]byte(a.PasswordHash), []byte(password)) == nil
	} else {
		_ = bcrypt.CompareHashAndPassword(s.dummy, []byte(password))
	}
	if !ok {
		return nil, nil, errInvalidCredentials // the reservation stays: a failure
	}
	return a, res, nil
}

// lockAccount re-reads a verified account under a row lock and refuses it
// when its password changed since it was verified.
func lockAccount(ctx context.Context, tx Tx, verified *license.Account) (*license.Account, error) {
	a, err := tx.AccountByIDForUpdate(ctx, verified.AppID, verified.ID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errInvalidCredentials
	} else if err != nil {
		return nil, err
	}
	if a.PasswordHash != verified.PasswordHash {
		return nil, errInvalidCredentials
	}
	return a, nil
}

// AccountLoginRequest is the body of auth/account-login.
type AccountLoginRequest struct {
	Username string
	Password string
	HWID     string
	IP       string
}

// AccountLoginResult is a signed-in account with a new session.
type AccountLoginResult struct {
	SessionToken string
	Account      license.Account
}

// AccountLogin signs an app user in and opens a session on the device under
// the account's max_devices (the same rules as keys). Heartbeat and logout
// then work on that session; a banned, paused or expired account dies at its
// next heartbeat. It returns MISSING_FIELDS, ACCOUNTS_DISABLED, MAINTENANCE,
// TOO_MANY_ATTEMPTS, INVALID_CREDENTIALS, PASSWORD_RESET_REQUIRED, BANNED,
// PAUSED, EXPIRED, HWID_MISMATCH or DEVICE_LIMIT.
func (s *Service) AccountLogin(ctx context.Context, app *license.App, req AccountLoginRequest) (*AccountLoginResult, error) {
	switch {
	case req.Username == "":
		return nil, apperr.Missing("username")
	case req.Password == "":
		return nil, apperr.Missing("password")
	case req.HWID == "":
		return nil, apperr.Missing("hwid")
	case len(req.HWID) > 256:
		return nil, apperr.InvalidField("hwid", "longer than 256 characters")
	case !app.Settings.AccountsEnabled:
		return nil, errAccountsDisabled
	case app.Settings.Maintenance:
		return nil, license.MaintenanceError(app)
	}
	verified, err := s.verifyAccount(ctx, app, req.Username, req.Password, req.IP)
	if err != nil {
		return nil, err
	}
	if verified.PasswordResetRequired {
		return nil, errResetRequired
	}
	token, err := s.randomHex(32)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	var res *AccountLoginResult
	err = s.store.InTx(ctx, func(tx Tx) error {
		a, err := lockAccount(ctx, tx, verified)
		if err != nil {
			return err
		}
		if e := license.AccountStatusError(a.StatusAt(now)); e != nil {
			return e
		}
		st := accountSeats(ctx, tx, a, now)
		if err := st.BindDevice(req.HWID); err != nil {
			return err
		}
		if err := st.RetireOverflow(req.HWID, now.Add(-s.lic.SessionTimeout())); err != nil {
			return err
		}
		sess := &license.Session{ID: license.NewID(s.random), TokenHash: license.HashToken(token), AppID: app.ID, AccountID: &a.ID,
			HWID: req.HWID, IP: req.IP, CreatedAt: now, LastSeenAt: now}
		if err := tx.InsertSession(ctx, sess); err != nil {
			return err
		}
		a.LastLoginAt, a.UpdatedAt = &now, now
		if err := tx.UpdateAccount(ctx, a); err != nil {
			return err
		}
		res = &AccountLoginResult{SessionToken: token, Account: *a}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ChangePasswordRequest is the body of auth/change-password.
type ChangePasswordRequest struct {
	Username        string
	CurrentPassword string
	NewPassword     string
	IP              string
}

// ChangePassword verifies the current password (under the sign-in lockout),
// sets the new one, clears a forced reset and ends every session of the
// account (their next heartbeat answers SESSION_REVOKED).
func (s *Service) ChangePassword(ctx context.Context, app *license.App, req ChangePasswordRequest) error {
	switch {
	case req.Username == "":
		return apperr.Missing("username")
	case req.CurrentPassword == "":
		return apperr.Missing("current_password")
	case req.NewPassword == "":
		return apperr.Missing("new_password")
	case !app.Settings.AccountsEnabled:
		return errAccountsDisabled
	}
	if err := checkPassword("new_password", req.NewPassword, app.Settings.AccountPasswordMinLength); err != nil {
		return err
	}
	if req.NewPassword == req.CurrentPassword {
		return apperr.InvalidField("new_password", "must differ from the current password")
	}
	verified, err := s.verifyAccount(ctx, app, req.Username, req.CurrentPassword, req.IP)
	if err != nil {
		return err
	}
	hash, err := s.hashPassword(req.NewPassword)
	if err != nil {
		return err
	}
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		a, err := lockAccount(ctx, tx, verified)
		if err != nil {
			return err
		}
		a.PasswordHash, a.PasswordResetRequired, a.UpdatedAt = hash, false, now
		if _, err := tx.EndAccountSessions(ctx, a.ID, license.CodeSessionRevoked, now); err != nil {
			return err
		}
		return tx.UpdateAccount(ctx, a)
	})
}

// RedeemRequest is the body of auth/account-redeem: a username and password
// (accepted while the account is expired) or an account session's token.
type RedeemRequest struct {
	Username     string
	Password     string
	SessionToken string
	LicenseKey   string
	IP           string
}

// RedeemKey adds a key's time to an account (see redeem). Wrong passwords
// and unknown keys count toward the sign-in lockout: the attempt is reserved
// per username and per IP before the password or the key is compared, and
// given back unless one of them was wrong. It returns
// MISSING_FIELDS, ACCOUNTS_DISABLED, MAINTENANCE, TOO_MANY_ATTEMPTS,
// INVALID_CREDENTIALS, SESSION_EXPIRED (not a live account session),
// BANNED/PAUSED (of the account or the key), INVALID_KEY, KEY_ALREADY_USED,
// KEY_IN_USE, EXPIRED or ALREADY_LIFETIME.
func (s *Service) RedeemKey(ctx context.Context, app *license.App, req RedeemRequest) (*license.Account, *Grant, error) {
	bySession := req.Username == "" && req.SessionToken != ""
	switch {
	case req.LicenseKey == "":
		return nil, nil, apperr.Missing("license_key")
	case !bySession && req.Username == "":
		return nil, nil, apperr.Missing("username or session_id")
	case !bySession && req.Password == "":
		return nil, nil, apperr.Missing("password")
	case !app.Settings.AccountsEnabled:
		return nil, nil, errAccountsDisabled
	case app.Settings.Maintenance:
		return nil, nil, license.MaintenanceError(app)
	}
	now := s.Now()
	var verified *license.Account
	var accountID int64
	var res *lockout.Reservation
	if bySession {
		var err error
		if accountID, err = s.lic.AccountOfSession(ctx, app, req.SessionToken); err != nil {
			return nil, nil, err
		}
		// The account's username, to reserve the attempt on its counter
		// too before the key is looked up (outside the redeem transaction:
		// SQLite has one writer).
		var username string
		err = s.store.InTx(ctx, func(tx Tx) error {
			a, err := tx.AccountByIDForUpdate(ctx, app.ID, accountID)
			if err == nil {
				username = a.Username
			}
			return err
		})
		if errors.Is(err, apperr.ErrNotFound) {
			return nil, nil, license.ErrSessionGone
		} else if err != nil {
			return nil, nil, err
		}
		if res, err = s.cfg.Guard.Reserve(ctx, s.signInSubjects(app.ID, username, req.IP)...); err != nil {
			return nil, nil, err
		}
	} else {
		var err error
		// A correct password does not clear the count here: unknown keys
		// tried from a known account must add up to a lockout.
		if verified, res, err = s.checkAccount(ctx, app, req.Username, req.Password, req.IP); err != nil {
			return nil, nil, err
		}
		accountID = verified.ID
	}
	var out *license.Account
	var grant *Grant
	err := s.store.InTx(ctx, func(tx Tx) error {
		var a *license.Account
		var err error
		if verified != nil {
			a, err = lockAccount(ctx, tx, verified)
		} else if a, err = tx.AccountByIDForUpdate(ctx, app.ID, accountID); errors.Is(err, apperr.ErrNotFound) {
			err = license.ErrSessionGone
		}
		if err != nil {
			return err
		}
		out = a
		switch a.StatusAt(now) {
		case license.StatusBanned, license.StatusPaused:
			return license.AccountStatusError(a.StatusAt(now))
		}
		k, err := redeemableKey(ctx, tx, app.ID, req.LicenseKey, now)
		if apperr.CodeOf(err) == CodeKeyAlreadyUsed {
			if g, derr := duplicateRedeem(ctx, tx, app, a, req.LicenseKey, now); derr != nil || g != nil {
				grant = g
				return derr
			}
		}
		if err != nil {
			return err
		}
		if grant, err = redeem(ctx, tx, app, a, k, now); err != nil {
			return err
		}
		return tx.UpdateAccount(ctx, a)
	})
	switch {
	case apperr.CodeOf(err) == license.CodeInvalidKey:
		return nil, nil, err // the reservation stays: an unknown key is a failure
	case err != nil:
		return nil, nil, res.Abandon(ctx, err)
	}
	// Given back without forgetting: unknown keys tried from a known
	// account must add up to a lockout.
	if err := res.GiveBack(ctx); err != nil {
		return nil, nil, err
	}
	return out, grant, nil
}
