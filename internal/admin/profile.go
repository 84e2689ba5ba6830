package admin

import (
	"context"
	"net/mail"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/wire"
)

// Profile returns p's own account.
func (s *Service) Profile(ctx context.Context, p *Principal) (*User, error) {
	return s.store.AdminByID(ctx, p.UserID)
}

// checkPassword compares password with u's, counting a wrong one (and
// refusing while locked) like a failed sign-in, so a stolen token cannot
// be used to guess the password.
func (s *Service) checkPassword(ctx context.Context, u *User, password, ip string) error {
	subs := []lockout.Subject{{Scope: "admin", ID: strings.ToLower(u.Username), Policy: s.cfg.SignIn}, {Scope: "admin-ip", ID: ip, Policy: s.cfg.SignInIP}}
	res, err := s.cfg.Guard.Reserve(ctx, subs...)
	if err != nil {
		return err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return errBadPasswrd // the reservation stays: a failure
	}
	return res.GiveBack(ctx)
}

// credentialUser loads p's account for a credential change, which only a
// password sign-in (a JWT) may make.
func (s *Service) credentialUser(ctx context.Context, p *Principal) (*User, error) {
	if p.ViaToken() {
		return nil, ErrNeedsSignIn
	}
	return s.store.AdminByID(ctx, p.UserID)
}

// updateUser changes the account u, read earlier and checked (its
// password, its second factor, the caller's sign-in), as it is now: in one
// transaction it reads the row again, locked, applies change to it and
// writes the row, the recovery code hashes change returns (nil: unchanged)
// and change's audit entry together, and returns the account written. So
// a change never writes back a stale copy of the fields it did not mean to
// touch (an e-mail change undoing a password reset). When the account's
// sign-ins were ended since u was read (a password change or reset moved
// the token generation on, or the password hash changed), what was checked
// no longer holds and the caller's token is no longer valid: 401
// UNAUTHORIZED, nothing written.
func (s *Service) updateUser(ctx context.Context, u *User, change func(cur *User) ([]string, audit.Entry, error)) (*User, error) {
	var out *User
	err := s.store.InTx(ctx, func(tx Tx) error {
		cur, err := tx.AdminByIDForUpdate(ctx, u.ID)
		if err != nil {
			return err
		}
		if cur.TokenGen != u.TokenGen || cur.PasswordHash != u.PasswordHash {
			return errUnauthorized
		}
		codes, e, err := change(cur)
		if err != nil {
			return err
		}
		if err := tx.UpdateAdmin(ctx, cur, codes); err != nil {
			return err
		}
		out = cur
		return tx.AddAudit(ctx, e)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChangePassword replaces p's password after checking the current one. It
// ends every other sign-in (older JWTs stop working) and returns a fresh
// token for the caller. A password reset or another change committed after
// the current password was checked wins: this one is refused (401).
func (s *Service) ChangePassword(ctx context.Context, p *Principal, ip, current, next string) (string, error) {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return "", err
	}
	if err := s.checkPassword(ctx, u, current, ip); err != nil {
		return "", err
	}
	if err := ValidatePassword(next); err != nil {
		return "", err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), s.cfg.BcryptCost)
	if err != nil {
		return "", apperr.Wrap(err, "hash password")
	}
	u, err = s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		cur.PasswordHash = string(hash)
		cur.TokenGen++
		return nil, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.password", "", cur.Username, nil), nil
	})
	if err != nil {
		return "", err
	}
	return s.sign(u, "", s.cfg.TokenTTL)
}

// ChangeEmail sets p's e-mail address ("" clears it) after checking the
// password.
func (s *Service) ChangeEmail(ctx context.Context, p *Principal, ip, password, email string) (*User, error) {
	u, err := s.credentialUser(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.checkPassword(ctx, u, password, ip); err != nil {
		return nil, err
	}
	email = strings.TrimSpace(email)
	if email != "" {
		addr, err := mail.ParseAddress(email)
		if err != nil || addr.Address != email || len(email) > 254 {
			return nil, apperr.InvalidField("email", "not an e-mail address")
		}
	}
	return s.updateUser(ctx, u, func(cur *User) ([]string, audit.Entry, error) {
		before := cur.Email
		cur.Email = email
		return nil, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.email", "", cur.Username, map[string]any{"before": before, "after": email}), nil
	})
}

// Logout signs out the JWT p came with; an access token is revoked instead.
func (s *Service) Logout(ctx context.Context, p *Principal, ip string) error {
	if p.ViaToken() {
		return apperr.New(apperr.Forbidden, wire.CodeTokenNotAllowed, "An access token is not signed in; revoke it through tokens.php.")
	}
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.RevokeJWT(ctx, p.JTI, p.Expires); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.logout", "", p.Username, nil))
	})
}
