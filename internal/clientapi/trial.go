package clientapi

import (
	"context"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/apperr"
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
