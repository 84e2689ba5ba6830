package adminapi

import (
	"context"
	"strconv"

	"github.com/keyward/keyward/internal/license"
)

// listTrials: GET trials.php?app_id=[&cursor=&limit=], newest first.
func (a *API) listTrials(ctx context.Context, c *adminCall) (map[string]any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	if _, err := a.lic.App(ctx, appID); err != nil {
		return nil, err
	}
	before, err := queryInt(c, "cursor")
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	ts, next, err := a.trials.List(ctx, appID, before, int(limit))
	if err != nil {
		return nil, err
	}
	now := a.lic.Now()
	out := make([]map[string]any, len(ts))
	for i, t := range ts {
		// license_key, status and expires_at are null once the key was deleted.
		var lk, status, expires any
		if t.KeyID != nil {
			k := license.Key{Status: t.Status, ExpiresAt: t.ExpiresAt}
			lk, status = t.LicenseKey, k.StatusAt(now)
		}
		if t.ExpiresAt != nil {
			expires = license.Timestamp(*t.ExpiresAt)
		}
		out[i] = map[string]any{"id": t.ID, "hwid": t.HWID, "ip": t.IP, "created_at": license.Timestamp(t.CreatedAt),
			"license_key": lk, "status": status, "expires_at": expires}
	}
	res := map[string]any{"success": true, "trials": out, "next_cursor": nil}
	if next > 0 {
		res["next_cursor"] = strconv.FormatInt(next, 10)
	}
	return res, nil
}
