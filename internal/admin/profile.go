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

// ChangePassword replaces p's password after checking the current one. It
// ends every other sign-in (older JWTs stop working) and returns a fresh
// token for the caller.
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
	u.PasswordHash = string(hash)
	u.TokenGen++
	if err := s.store.UpdateAdmin(ctx, u, nil, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.password", "", u.Username, nil)); err != nil {
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
	before := u.Email
	u.Email = email
	e := audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.email", "", u.Username, map[string]any{"before": before, "after": email})
	if err := s.store.UpdateAdmin(ctx, u, nil, e); err != nil {
		return nil, err
	}
	return u, nil
}

// Logout signs out the JWT p came with; an access token is revoked instead.
func (s *Service) Logout(ctx context.Context, p *Principal, ip string) error {
	if p.ViaToken() {
		return apperr.New(apperr.Forbidden, wire.CodeTokenNotAllowed, "An access token is not signed in; revoke it through tokens.php.")
	}
	return s.store.RevokeJWT(ctx, p.JTI, p.Expires, audit.NewEntry(p.Actor(ip), s.now().UTC(), "admin.logout", "", p.Username, nil))
}
