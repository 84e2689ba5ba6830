package adminapi

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

func points(ps []analytics.Point) []wire.Point {
	out := make([]wire.Point, len(ps))
	for i, p := range ps {
		out[i] = wire.Point{At: license.Timestamp(p.At), N: p.N}
	}
	return out
}

// getAnalytics: GET analytics.php?app_id=[&from=&to=][&step=hour|day] → the
// app's activity: live sessions now and sampled over time, logins,
// activations, new trials and logouts per step, refusals by code, keys by
// status, and the versions of checking clients. The range defaults to the
// last 7 days (hourly up to 2 days, daily beyond).
func (a *API) getAnalytics(ctx context.Context, c *adminCall) (any, error) {
	to, from := a.now().UTC(), time.Time{}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"to", &to}, {"from", &from}} {
		if v := c.q.Get(t.name); v != "" {
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return nil, apperr.InvalidField(t.name, "must be an ISO 8601 time such as 2026-11-20T00:00:00Z")
			}
			*t.dst = at
		}
	}
	if from.IsZero() {
		from = to.Add(-7 * 24 * time.Hour)
	}
	step := analytics.Daily
	switch c.q.Get("step") {
	case "hour":
		step = analytics.Hourly
	case "day":
	case "":
		if to.Sub(from) <= 2*24*time.Hour {
			step = analytics.Hourly
		}
	default:
		return nil, apperr.InvalidField("step", "use hour or day")
	}
	// What this process still holds in memory goes in first, so a report
	// right after activity shows it (other processes flush within a second).
	if err := a.updates.FlushChecks(ctx); err != nil {
		return nil, err
	}
	if a.usage != nil {
		if err := a.usage.Flush(ctx); err != nil {
			return nil, err
		}
	}
	r, err := a.reports.Report(ctx, c.appID, from, to, step)
	if err != nil {
		return nil, err
	}
	versions := make([]wire.VersionDevices, len(r.Versions))
	for i, v := range r.Versions {
		versions[i] = wire.VersionDevices{Version: v.Version, Devices: v.Devices}
	}
	stepName := "day"
	if r.Step == analytics.Hourly {
		stepName = "hour"
	}
	return wire.AnalyticsReply{Success: true, Analytics: wire.Analytics{
		AppID: c.appID, From: license.Timestamp(r.From), To: license.Timestamp(r.To), Step: stepName,
		ActiveNow: r.ActiveNow, ActiveSessions: points(r.Active),
		Logins: points(r.Logins), Activations: points(r.Activations), Trials: points(r.Trials), Logouts: points(r.Logouts),
		LoginFailures: r.LoginFailures, HeartbeatRefusals: r.HeartbeatRefusals,
		KeysByStatus: r.KeysByStatus, Versions: versions,
	}}, nil
}
