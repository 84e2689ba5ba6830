package httpapi

import (
	"context"
	"strconv"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/wire"
)

// trial: auth/trial.php (plain). The reply is a TrialResponse with the key as
// both trial_key and license_key (sdk-compat §7.14) and a ready session.
func (a *API) trial(ctx context.Context, c *edge.Call) (any, error) {
	hwid, err := c.F.Str("hwid")
	if err != nil {
		return nil, err
	}
	res, err := a.trials.Start(ctx, c.App, trial.Request{HWID: hwid, IP: c.IP})
	if (err == nil && res.New) || apperr.CodeOf(err) == wire.CodeTrialLimit {
		a.abuse.Burst(ctx, c.App, abuse.TrialFarming, c.IP) // new trials (or refused ones) from one address
	}
	if err == nil && res.New {
		a.count(c.App, analytics.Trial, "")
	}
	if err != nil {
		return nil, err
	}
	k := &res.Key
	info := keyInfo(k, a.lic.Now())
	msg := "Trial started"
	if !res.New {
		msg = "Trial resumed"
	}
	return &wire.TrialReply{
		Success:           true,
		Message:           msg,
		TrialKey:          k.LicenseKey,
		LicenseKey:        k.LicenseKey,
		SessionID:         res.SessionToken,
		HeartbeatInterval: c.App.Settings.HeartbeatInterval,
		ExpiresAt:         info.ExpiresAt,
		DaysRemaining:     info.DaysRemaining,
		User:              wire.KeyUser{KeyInfo: info, HWID: hwid},
		Features:          c.App.Features(k.Features),
		App:               appBlock(c.App),
	}, nil
}

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
