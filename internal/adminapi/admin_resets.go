package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

func resetRequestView(r *license.ResetRequest) wire.ResetRequest {
	return wire.ResetRequest{ID: r.ID, LicenseKey: r.LicenseKey, Username: r.Username, HWID: r.HWID, Reason: r.Reason,
		Status: r.Status, CreatedAt: license.Timestamp(r.CreatedAt), DecidedAt: license.OptTimestamp(r.DecidedAt), DecidedBy: r.DecidedBy}
}

// listResetRequests: GET hwid-resets.php?app_id=[&status=pending|approved|
// denied][&cursor=&limit=] → device-reset requests, newest first.
func (a *API) listResetRequests(ctx context.Context, c *adminCall) (any, error) {
	before, err := queryInt(c, "cursor")
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 500 { // the page size ResetRequests uses
		limit = 100
	}
	rs, err := a.lic.ResetRequests(ctx, c.appID, c.q.Get("status"), before, int(limit))
	if err != nil {
		return nil, err
	}
	list := make([]wire.ResetRequest, 0, len(rs))
	for i := range rs {
		list = append(list, resetRequestView(&rs[i]))
	}
	res := wire.ResetRequestListReply{Success: true, Requests: list}
	if n := len(rs); n > 0 && n == int(limit) {
		res.NextCursor = cursorString(rs[n-1].ID)
	}
	return res, nil
}

// decideResetRequest: POST hwid-resets.php {app_id, id, action: approve |
// deny}; approving clears the devices and ends the sessions (HWID_RESET).
func (a *API) decideResetRequest(ctx context.Context, c *adminCall) (any, error) {
	id, err := recordID(c)
	if err != nil {
		return nil, err
	}
	action, err := c.required("action")
	if err != nil {
		return nil, err
	}
	if action != "approve" && action != "deny" {
		return nil, apperr.InvalidField("action", "use approve or deny")
	}
	r, err := a.lic.DecideResetRequest(ctx, c.actor, c.appID, id, action == "approve")
	if err != nil {
		return nil, err
	}
	return wire.ResetRequestReply{Success: true, Request: resetRequestView(r)}, nil
}
