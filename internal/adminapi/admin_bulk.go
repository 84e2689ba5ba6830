package adminapi

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// bulkKeys: POST keys-bulk.php {app_id, op: ban|pause|extend|delete, days?,
// status?, key_type?, q?, created_after?, created_before?, expires_before?,
// dry_run?, expect?}. A dry run (the default) answers how many keys the
// filter matches; the real run (dry_run false) needs that count as expect
// and answers what was changed, recorded as one audit entry.
func (a *API) bulkKeys(ctx context.Context, c *adminCall) (any, error) {
	op, err := c.required("op")
	if err != nil {
		return nil, err
	}
	var f license.BulkFilter
	status, err := c.f.Str("status")
	if err != nil {
		return nil, err
	}
	typ, err := c.f.Str("key_type")
	if err != nil {
		return nil, err
	}
	f.Status, f.Type = license.Status(status), license.KeyType(typ)
	if f.Query, err = c.f.Str("q"); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		name string
		dst  **time.Time
	}{{"created_after", &f.CreatedAfter}, {"created_before", &f.CreatedBefore}, {"expires_before", &f.ExpiresBefore}} {
		v, err := c.f.Str(t.name)
		if err != nil || v == "" {
			if err != nil {
				return nil, err
			}
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, apperr.InvalidField(t.name, "must be an ISO 8601 time such as 2026-11-20T00:00:00Z")
		}
		*t.dst = &at
	}
	days, _, err := c.f.Int("days")
	if err != nil {
		return nil, err
	}
	dry, given, err := c.f.Bool("dry_run")
	if err != nil {
		return nil, err
	}
	if !given || dry {
		n, err := a.lic.BulkCount(ctx, c.appID, f, op, int(days))
		if err != nil {
			return nil, err
		}
		return wire.BulkDryRunReply{Success: true, DryRun: true, Op: op, Count: n,
			Message: "Send the same request with dry_run false and expect set to this count to apply it."}, nil
	}
	expect, ok, err := c.f.Int("expect")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, apperr.Missing("expect (the dry run's count)")
	}
	res, err := a.lic.BulkKeys(ctx, c.actor, c.appID, f, op, int(days), int(expect))
	if err != nil {
		return nil, err
	}
	return wire.BulkReply{Success: true, DryRun: false, Op: op, Matched: res.Matched, Affected: res.Affected,
		Skipped: res.Skipped}, nil
}
