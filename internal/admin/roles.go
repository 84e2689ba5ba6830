package admin

import (
	"context"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/wire"
)

// Principal is who a verified bearer token speaks for.
type Principal struct {
	UserID   string
	Username string
	Operator bool
	// TokenID and TokenName name the personal access token used; both are
	// empty for a JWT.
	TokenID   string
	TokenName string
	// JTI and Expires identify the JWT used (empty for a token).
	JTI     string
	Expires time.Time
}

// ViaToken reports whether the caller used a personal access token.
func (p *Principal) ViaToken() bool { return p.TokenID != "" }

// Actor is the audit actor of p calling from ip: kind "admin" for a JWT,
// "token" (with the token's id and name) for a personal access token.
func (p *Principal) Actor(ip string) audit.Actor {
	a := audit.Actor{Kind: "admin", ID: p.UserID, Name: p.Username, IP: ip}
	if p.ViaToken() {
		a.Kind, a.Token = "token", p.TokenID+" "+p.TokenName
	}
	return a
}

// Role is what a member may do on an app.
type Role string

// The roles, from most to least powerful.
const (
	RoleOwner   Role = "owner"   // everything, including the team and deleting the app
	RoleAdmin   Role = "admin"   // everything but the team, deleting the app and resellers' credit
	RoleSupport Role = "support" // read, and act on keys, sessions, accounts and reset requests
	RoleViewer  Role = "viewer"  // read only, no secrets
)

// Perm is the least role an operation needs.
type Perm int

// The permission levels.
const (
	PermRead    Perm = iota + 1 // viewer and up
	PermSupport                 // support and up
	PermManage                  // admin and up
	PermOwner                   // owner only
)

func (r Role) rank() Perm {
	switch r {
	case RoleOwner:
		return PermOwner
	case RoleAdmin:
		return PermManage
	case RoleSupport:
		return PermSupport
	case RoleViewer:
		return PermRead
	}
	return 0
}

// Allows reports whether r may do what p guards.
func (r Role) Allows(p Perm) bool { return r.rank() >= p }

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() > 0 {
		return r, nil
	}
	return "", apperr.InvalidField("role", "use owner, admin, support or viewer")
}

// Member is an admin's role on an app.
type Member struct {
	AppID     string
	UserID    string
	Username  string
	Email     string
	Role      Role
	CreatedAt time.Time
}

// MemberStore reads app membership.
type MemberStore interface {
	// MemberRole returns userID's role on appID ("" when not a member) and
	// whether the app exists.
	MemberRole(ctx context.Context, appID, userID string) (Role, bool, error)
	// Roles returns userID's role on every app it is a member of.
	Roles(ctx context.Context, userID string) (map[string]Role, error)
	Members(ctx context.Context, appID string) ([]Member, error)
}

// MemberTx changes app membership in a Tx. Both lock the app row and fail
// with ErrLastOwner when the app would be left without an owner, and with
// ErrNotFound when the app does not exist.
type MemberTx interface {
	// PutMember adds or changes m (inserting newUser first when not nil;
	// ErrConflict when its username is taken).
	PutMember(ctx context.Context, m *Member, newUser *User) error
	// DeleteMember removes userID from appID (ErrNotFound when not a
	// member).
	DeleteMember(ctx context.Context, appID, userID string) error
}

// ErrLastOwner is returned by a store when a change would leave an app
// without an owner.
var ErrLastOwner = apperr.New(apperr.Conflict, wire.CodeLastOwner, "An app needs at least one owner.")

// ErrForbidden is the refusal of an authenticated caller who may not do
// what it asked on that app.
var ErrForbidden = apperr.New(apperr.Forbidden, wire.CodeForbidden, "You are not allowed to do this on that app.")

// Authorize checks that p may do what perm guards on appID and returns its
// role. An app p is not a member of is FORBIDDEN, one that does not exist
// NOT_FOUND.
func (s *Service) Authorize(ctx context.Context, p *Principal, appID string, perm Perm) (Role, error) {
	role, exists, err := s.store.MemberRole(ctx, appID, p.UserID)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", apperr.NotFoundOf("App")
	}
	if !role.Allows(perm) {
		return role, ErrForbidden
	}
	return role, nil
}

// Roles returns p's role on each app it is a member of.
func (s *Service) Roles(ctx context.Context, p *Principal) (map[string]Role, error) {
	return s.store.Roles(ctx, p.UserID)
}

// Members lists an app's team.
func (s *Service) Members(ctx context.Context, appID string) ([]Member, error) {
	return s.store.Members(ctx, appID)
}

// SetMember gives username role on appID. An admin who does not exist yet
// is created with password (required then) as a team member, not an
// operator; an existing admin's password is never touched here.
func (s *Service) SetMember(ctx context.Context, actor audit.Actor, appID, username string, role Role, password string) (*Member, error) {
	now := s.now().UTC()
	u, err := s.store.AdminByUsername(ctx, username)
	var fresh *User
	switch {
	case errors.Is(err, apperr.ErrNotFound):
		if password == "" {
			return nil, apperr.New(apperr.NotFound, wire.CodeNotFound, "No admin with that username; send a password to create one.")
		}
		if fresh, err = s.newUser(username, password); err != nil {
			return nil, err
		}
		u = fresh
	case err != nil:
		return nil, err
	}
	m := &Member{AppID: appID, UserID: u.ID, Username: u.Username, Email: u.Email, Role: role, CreatedAt: now}
	details := map[string]any{"role": string(role)}
	if fresh != nil {
		details["created_admin"] = true
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.PutMember(ctx, m, fresh); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "member.set", appID, u.Username, details))
	})
	if err != nil {
		if errors.Is(err, apperr.ErrConflict) {
			return nil, apperr.New(apperr.Conflict, wire.CodeConflict, "An admin with that username already exists.")
		}
		return nil, err
	}
	return m, nil
}

// RemoveMember takes username off appID's team.
func (s *Service) RemoveMember(ctx context.Context, actor audit.Actor, appID, username string) error {
	u, err := s.store.AdminByUsername(ctx, username)
	if err != nil {
		return apperr.NotFoundAs(err, "Member")
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.DeleteMember(ctx, appID, u.ID); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, s.now().UTC(), "member.remove", appID, u.Username, nil))
	})
	return apperr.NotFoundAs(err, "Member")
}
