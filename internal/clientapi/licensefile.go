package clientapi

import (
	"context"

	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// licenseFile: auth/license-file.php (envelope, like login; docs/offline.md).
// {license_key, hwid} binds the device as a login does and answers a signed
// license file for this key and device ([wire.LicenseFileReply]; a floating
// key's file is a borrowed seat, its session_id the borrow to return);
// {session_id, return: true} returns a borrowed seat ([wire.Reply]).
func (a *API) licenseFile(ctx context.Context, c *edge.Call) (any, error) {
	actor := audit.Actor{Kind: "client", Name: "client", IP: c.IP}
	ret, _, err := c.F.Bool("return")
	if err != nil {
		return nil, err
	}
	if ret {
		sid, err := c.F.Str("session_id")
		if err != nil {
			return nil, err
		}
		if err := a.lic.ReturnFile(ctx, c.App, sid, actor); err != nil {
			return nil, err
		}
		return &wire.Reply{Success: true, Message: "License file returned; its seat is free"}, nil
	}
	lk, err := c.F.Key("license_key")
	if err != nil {
		return nil, err
	}
	hwid, err := c.F.Str("hwid")
	if err != nil {
		return nil, err
	}
	f, err := a.lic.IssueFile(ctx, c.App, license.FileRequest{LicenseKey: lk, HWID: hwid, Source: license.FileOnline, Actor: actor},
		a.FileSigner())
	a.sawKey(ctx, c, lk, hwid, err)
	if err != nil {
		return nil, err
	}
	if f.Activated {
		a.count(c.App, analytics.Activation, "")
	}
	return f.Reply(), nil
}
