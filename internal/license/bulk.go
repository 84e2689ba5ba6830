package license

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/wire"
)

// BulkFilter selects the keys of a bulk operation; zero fields do not
// filter. Status is the effective status, as in listing.
type BulkFilter struct {
	Status        Status
	Type          KeyType
	Query         string // a substring of the key string or the note
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	ExpiresBefore *time.Time
	Now           time.Time // set by the service
}

// Bulk operations.
const (
	BulkBan    = ActionBan
	BulkPause  = ActionPause
	BulkExtend = ActionExtend
	BulkDelete = "delete"
)

// MaxBulk is the most keys one bulk operation changes (one transaction).
const MaxBulk = 100_000

// BulkResult is what a bulk operation matched and did: keys whose state
// forbids the operation (pausing a banned key, extending a lifetime one)
// are skipped.
type BulkResult struct {
	Matched  int
	Affected int
	Skipped  int
}

func checkBulk(f BulkFilter, op string, days int) error {
	switch op {
	case BulkBan, BulkPause, BulkDelete:
	case BulkExtend:
		if days < 1 || days > 36500 {
			return apperr.InvalidField("days", "must be 1 to 36500")
		}
	default:
		return apperr.InvalidField("op", "use ban, pause, extend or delete")
	}
	switch f.Status {
	case "", StatusUnused, StatusActive, StatusPaused, StatusBanned, StatusExpired, StatusRedeemed:
	default:
		return apperr.InvalidField("status", "not a key status")
	}
	if f.Type != "" && f.Type != TypeDays && f.Type != TypeLifetime {
		return apperr.InvalidField("key_type", "use days or lifetime")
	}
	if len(f.Query) > 200 {
		return apperr.InvalidField("q", "at most 200 characters")
	}
	return nil
}

// BulkCount is the dry run of a bulk operation: how many keys of the app
// the filter matches now.
func (s *Service) BulkCount(ctx context.Context, appID string, f BulkFilter, op string, days int) (int, error) {
	if err := checkBulk(f, op, days); err != nil {
		return 0, err
	}
	f.Now = s.Now()
	return s.store.CountKeys(ctx, appID, f)
}

// BulkKeys applies op (ban, pause, extend by days, delete) to every key of
// the app the filter matches, in one transaction, recorded as one audit
// entry with the counts. expect is the dry run's count: when the filter
// now matches a different number of keys nothing changes (COUNT_CHANGED,
// with the new count), so an owner acts on what they were shown.
func (s *Service) BulkKeys(ctx context.Context, actor audit.Actor, appID string, f BulkFilter, op string, days, expect int) (*BulkResult, error) {
	if err := checkBulk(f, op, days); err != nil {
		return nil, err
	}
	now := s.Now()
	f.Now = now
	res := &BulkResult{}
	err := s.store.InTx(ctx, func(tx Tx) error {
		keys, err := tx.KeysForUpdate(ctx, appID, f, MaxBulk+1)
		if err != nil {
			return err
		}
		if len(keys) > MaxBulk {
			return apperr.New(apperr.Invalid, wire.CodeTooManyKeys, fmt.Sprintf("A bulk operation changes at most %d keys; narrow the filter.", MaxBulk))
		}
		res.Matched = len(keys)
		if res.Matched != expect {
			return apperr.New(apperr.Conflict, wire.CodeCountChanged, "The filter now matches a different number of keys; review the new count.").
				With("count", res.Matched)
		}
		details := map[string]any{}
		change := transition(ctx, appID, op, days, details, "")
		for i := range keys {
			k := &keys[i]
			if op == BulkDelete {
				if err := deleteInTx(ctx, tx, appID, k, now); err != nil {
					return err
				}
				res.Affected++
				continue
			}
			if err := change(tx, k, now); err != nil {
				var e *apperr.Error
				if errors.As(err, &e) && e.Kind == apperr.Conflict {
					res.Skipped++
					continue
				}
				return err
			}
			k.UpdatedAt = now
			if err := tx.UpdateKey(ctx, k); err != nil {
				return err
			}
			res.Affected++
		}
		entry := map[string]any{"op": op, "matched": res.Matched, "affected": res.Affected, "skipped": res.Skipped, "filter": bulkDetails(f)}
		if op == BulkExtend {
			entry["days"] = days
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.bulk_"+op, appID, fmt.Sprintf("%d keys", res.Affected), entry))
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// deleteInTx deletes a key loaded for update: its sessions end with
// SESSION_REVOKED and key.deleted is recorded.
func deleteInTx(ctx context.Context, tx Tx, appID string, k *Key, now time.Time) error {
	if _, err := tx.EndKeySessions(ctx, k.ID, CodeSessionRevoked, now); err != nil {
		return err
	}
	if err := tx.DeleteKey(ctx, k.ID); err != nil {
		return err
	}
	return tx.AddEvent(ctx, event.Event{AppID: appID, Type: event.KeyDeleted, CreatedAt: now, Subject: event.KeySubject(k.ID),
		Data: map[string]any{"app_id": appID, "license_key": k.LicenseKey}})
}

func bulkDetails(f BulkFilter) map[string]any {
	d := map[string]any{}
	if f.Status != "" {
		d["status"] = string(f.Status)
	}
	if f.Type != "" {
		d["key_type"] = string(f.Type)
	}
	if f.Query != "" {
		d["q"] = f.Query
	}
	for name, t := range map[string]*time.Time{"created_after": f.CreatedAfter, "created_before": f.CreatedBefore, "expires_before": f.ExpiresBefore} {
		if t != nil {
			d[name] = Timestamp(*t)
		}
	}
	return d
}
