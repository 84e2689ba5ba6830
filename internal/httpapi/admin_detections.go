package httpapi

import (
	"context"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
)

// listDetections: GET detections.php?app_id=[&kind=&limit=] → what leak and
// abuse detection reported, newest first.
func (a *API) listDetections(ctx context.Context, c *adminCall) (map[string]any, error) {
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
	list := make([]map[string]any, 0, len(ds))
	for i := range ds {
		d := &ds[i]
		list = append(list, map[string]any{"id": d.ID, "kind": d.Kind, "subject": d.Subject, "details": d.Details,
			"created_at": optStamp(&d.CreatedAt)})
	}
	return map[string]any{"success": true, "detections": list}, nil
}
