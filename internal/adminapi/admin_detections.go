package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// listDetections: GET detections.php?app_id=[&kind=&limit=] → what leak and
// abuse detection reported, newest first.
func (a *API) listDetections(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	kind := c.q.Get("kind")
	if kind != "" && kind != event.KeySuspectedLeak && kind != event.SuspiciousActivity {
		return nil, apperr.InvalidField("kind", "use key.suspected_leak or suspicious_activity")
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	ds, err := a.abuse.Detections(ctx, appID, kind, int(limit))
	if err != nil {
		return nil, err
	}
	list := make([]wire.Detection, 0, len(ds))
	for i := range ds {
		d := &ds[i]
		list = append(list, wire.Detection{ID: d.ID, Kind: d.Kind, Subject: d.Subject, Details: d.Details,
			CreatedAt: license.Timestamp(d.CreatedAt)})
	}
	return wire.DetectionListReply{Success: true, Detections: list}, nil
}
