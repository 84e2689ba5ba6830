package httpapi

import (
	"context"
	"strconv"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

func resetRequestView(r *license.ResetRequest) map[string]any {
	return map[string]any{"id": r.ID, "license_key": r.LicenseKey, "username": r.Username, "hwid": r.HWID, "reason": r.Reason,
		"status": r.Status, "created_at": license.Timestamp(r.CreatedAt), "decided_at": optStamp(r.DecidedAt), "decided_by": r.DecidedBy}
}

// listResetRequests: GET hwid-resets.php?app_id=[&status=pending|approved|
// denied][&cursor=&limit=] → device-reset requests, newest first.
func (a *API) listResetRequests(ctx context.Context, c *adminCall) (map[string]any, error) {
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
	list := make([]map[string]any, 0, len(rs))
	for i := range rs {
		list = append(list, resetRequestView(&rs[i]))
	}
	res := map[string]any{"success": true, "requests": list, "next_cursor": nil}
	if n := len(rs); n > 0 && n == int(limit) {
		res["next_cursor"] = strconv.FormatInt(rs[n-1].ID, 10)
	}
	return res, nil
}

// decideResetRequest: POST hwid-resets.php {app_id, id, action: approve |
// deny}; approving clears the devices and ends the sessions (HWID_RESET).
func (a *API) decideResetRequest(ctx context.Context, c *adminCall) (map[string]any, error) {
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
	return map[string]any{"success": true, "request": resetRequestView(r)}, nil
}
