package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

func memberView(m *admin.Member) wire.Member {
	return wire.Member{Username: m.Username, Email: m.Email, Role: string(m.Role), CreatedAt: license.Timestamp(m.CreatedAt)}
}

// listMembers: GET members.php?app_id= → the app's team.
func (a *API) listMembers(ctx context.Context, c *adminCall) (any, error) {
	ms, err := a.admins.Members(ctx, c.appID)
	if err != nil {
		return nil, err
	}
	list := make([]wire.Member, 0, len(ms))
	for i := range ms {
		list = append(list, memberView(&ms[i]))
	}
	return wire.MemberListReply{Success: true, Members: list}, nil
}

// putMember: POST or PUT members.php {app_id, username, role, password?}
// adds an admin to the team or changes its role; an unknown username is
// created with password (owners only).
func (a *API) putMember(ctx context.Context, c *adminCall) (any, error) {
	username, err := c.required("username")
	if err != nil {
		return nil, err
	}
	roleName, err := c.required("role")
	if err != nil {
		return nil, err
	}
	role, err := admin.ParseRole(roleName)
	if err != nil {
		return nil, err
	}
	password, err := c.f.Str("password")
	if err != nil {
		return nil, err
	}
	m, err := a.admins.SetMember(ctx, c.actor, c.appID, username, role, password)
	if err != nil {
		return nil, err
	}
	return wire.MemberReply{Success: true, Member: memberView(m)}, nil
}

// deleteMember: DELETE members.php {app_id, username}.
func (a *API) deleteMember(ctx context.Context, c *adminCall) (any, error) {
	username, err := c.required("username")
	if err != nil {
		return nil, err
	}
	if err := a.admins.RemoveMember(ctx, c.actor, c.appID, username); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Member removed."}, nil
}
