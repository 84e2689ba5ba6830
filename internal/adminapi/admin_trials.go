package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// listTrials: GET trials.php?app_id=[&cursor=&limit=], newest first.
func (a *API) listTrials(ctx context.Context, c *adminCall) (any, error) {
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
	out := make([]wire.Trial, len(ts))
	for i, t := range ts {
		out[i] = wire.Trial{ID: t.ID, HWID: t.HWID, IP: t.IP, CreatedAt: license.Timestamp(t.CreatedAt),
			ExpiresAt: license.OptTimestamp(t.ExpiresAt)}
		// license_key and status are null once the key was deleted.
		if t.KeyID != nil {
			k := license.Key{Status: t.Status, ExpiresAt: t.ExpiresAt}
			lk, status := t.LicenseKey, string(k.StatusAt(now))
			out[i].LicenseKey, out[i].Status = &lk, &status
		}
	}
	return wire.TrialListReply{Success: true, Trials: out, NextCursor: pageCursor(next)}, nil
}
