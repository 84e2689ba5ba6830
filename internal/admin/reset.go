package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/wire"
)

// ResetResult says what a password reset changed besides the password.
type ResetResult struct {
	User *User
	// TwoFactorDisabled is set when the reset turned two-factor off (it
	// was asked to and the admin had it on or was enrolling).
	TwoFactorDisabled bool
	// ActiveTokens counts the admin's personal access tokens not revoked,
	// which the reset leaves working.
	ActiveTokens int
}

// ResetPassword sets username's password without the current one, for an
// operator at the server's command line who lost it (there is no such route
// in the admin API: whoever runs it already holds the database). Like a
// password change it moves the admin's token generation on, so every JWT
// issued before — API sign-ins, dashboard sessions, half-done two-factor
// sign-ins — is refused afterwards by every process sharing the database.
// It also clears the sign-in lockout of the username, whose failures were
// counted against the old password. Personal access tokens are kept: they
// are not sign-ins but credentials the admin made on purpose, each revocable
// on its own. Two-factor stays on unless disable2FA is set, which removes
// the TOTP secret (confirmed or pending) and every recovery code, for a
// lost authenticator. Unknown usernames are NOT_FOUND. The reset is audited
// as admin.password.reset by actor.
//
// The new password is hashed first; then one transaction reads the account
// again with its row locked, changes it and writes it with the audit entry.
// A password change committed before that read is overwritten (its token
// carries the generation this moves past); one that checked the old
// password but commits after is refused by its own transaction (see
// updateUser). So the reset is never lost and never undone, and no token
// minted around it survives it.
func (s *Service) ResetPassword(ctx context.Context, actor audit.Actor, username, password string, disable2FA bool) (*ResetResult, error) {
	notFound := apperr.New(apperr.NotFound, wire.CodeNotFound, fmt.Sprintf("No admin has the username %q.", username))
	u, err := s.store.AdminByUsername(ctx, username)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	if err := ValidatePassword(password); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.BcryptCost)
	if err != nil {
		return nil, apperr.Wrap(err, "hash password")
	}
	var res *ResetResult
	err = s.store.InTx(ctx, func(tx Tx) error {
		cur, err := tx.AdminByIDForUpdate(ctx, u.ID)
		if err != nil {
			return err
		}
		cur.PasswordHash = string(hash)
		cur.TokenGen++
		res = &ResetResult{User: cur}
		var codes []string // nil: recovery codes unchanged
		if disable2FA {
			res.TwoFactorDisabled = cur.TOTPSecret != "" || cur.TOTPPending != ""
			cur.TOTPSecret, cur.TOTPPending = "", ""
			codes = []string{}
		}
		if err := tx.UpdateAdmin(ctx, cur, codes); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, s.now().UTC(), "admin.password.reset", "", cur.Username,
			map[string]any{"sessions_ended": true, "two_factor_disabled": res.TwoFactorDisabled}))
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	u = res.User
	if toks, err := s.store.Tokens(ctx, u.ID); err == nil {
		for _, t := range toks {
			if t.RevokedAt == nil {
				res.ActiveTokens++
			}
		}
	}
	// The password is already reset; a failure here leaves a lock that
	// ends by itself, and is reported.
	if err := s.cfg.Guard.Clear(ctx, lockout.Subject{Scope: "admin", ID: strings.ToLower(u.Username)}); err != nil {
		return res, fmt.Errorf("the password was reset, but the sign-in lockout of %q was not cleared: %w", u.Username, err)
	}
	return res, nil
}
