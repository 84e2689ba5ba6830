package license

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/event"
)

// Expiry sweeps: keys past their expiry become expired (key_expired), and
// keys entering a warning window before it are announced once per window
// (key_expiring). Both work in batches, one short transaction each, taking
// rows other processes hold (SKIP LOCKED on PostgreSQL) off the table, so
// any number of processes may run them at once and a million keys never
// sit under one long lock.

// ExpiringKey is a key inside the widest warning window.
type ExpiringKey struct {
	ID         int64
	AppID      string
	LicenseKey string
	ExpiresAt  time.Time
	NoticeFor  *time.Time // the expiry notices were sent for
	Notice     int64      // smallest window announced, in seconds (0: none)
}

// ExpiryTx is what the sweeps need of a write transaction.
type ExpiryTx interface {
	// ExpireDue sets up to limit active keys whose expiry is at or before
	// now, after the (expiresAt, id) cursor, to expired, ends their live
	// sessions with reason, and returns them in (expiresAt, id) order. On
	// PostgreSQL it passes over rows other transactions hold. The cursor
	// lets each batch start where the last ended rather than step over the
	// rows it changed (PostgreSQL keeps them in the index until vacuumed).
	ExpireDue(ctx context.Context, now, afterExp time.Time, afterID int64, limit int, reason string) ([]DueKey, error)
	// KeysExpiringBy returns up to limit active keys expiring in (now,
	// until], after the (expiresAt, id) cursor, that have not been told of
	// a window as small as minWindow for their current expiry, locked.
	KeysExpiringBy(ctx context.Context, now, until, afterExp time.Time, afterID int64, minWindow int64, limit int) ([]ExpiringKey, error)
	SetExpiryNotice(ctx context.Context, keyID int64, forExpiry time.Time, window int64) error
	// AddEvents writes several outbox rows in one statement.
	AddEvents(ctx context.Context, evs []event.Event) error
}

// DueKey is a key the expiry sweep expired.
type DueKey struct {
	ID         int64
	AppID      string
	LicenseKey string
	ExpiresAt  time.Time
}

// sweepBatch is the keys one ExpireKeys transaction expires. It bounds how
// long the transaction holds SQLite's one writer (on PostgreSQL, its row
// locks): a write queued behind it, a login say, waits that long. At the
// measured 11–12 µs of writer time a key, 1 000 keys are about 12 ms, which
// leaves a login room for its own commit inside its 25 ms p99; 2 000 keys
// would halve the commits (each an fsync at synchronous=FULL) but take
// nearly the whole budget (25 ms measured). See docs/performance.md.
const sweepBatch = 1000

// warnBatch is the keys one WarnExpiring transaction looks at: it writes a
// statement per key announced, so it keeps the smaller batch.
const warnBatch = 500

// expiredData is key_expired's data: a struct encodes in a third of a
// map's time, with the same bytes (encoding/json writes a map's keys
// sorted, as these fields are).
type expiredData struct {
	AppID      string `json:"app_id"`
	ExpiresAt  string `json:"expires_at"`
	LicenseKey string `json:"license_key"`
}

// eventChunk is the events one statement of the expiry sweep writes: every
// full chunk is the same statement, prepared once by SQLite's writer.
const eventChunk = 500

// ExpireKeys marks every active key past its expiry expired, ends its live
// sessions (their next heartbeat answers EXPIRED) and records key_expired.
// It returns how many keys it expired.
func (s *Service) ExpireKeys(ctx context.Context) (int, error) {
	total := 0
	now := s.Now()
	var afterExp time.Time
	var afterID int64
	for {
		n := 0
		err := s.store.InTx(ctx, func(tx Tx) error {
			keys, err := tx.ExpireDue(ctx, now, afterExp, afterID, sweepBatch, CodeExpired)
			if err != nil {
				return err
			}
			n = len(keys)
			if n == 0 {
				return nil
			}
			afterExp, afterID = keys[n-1].ExpiresAt, keys[n-1].ID
			evs := make([]event.Event, n)
			for i, k := range keys {
				data, err := json.Marshal(expiredData{AppID: k.AppID, ExpiresAt: Timestamp(k.ExpiresAt), LicenseKey: k.LicenseKey})
				if err != nil {
					return err
				}
				evs[i] = event.Event{AppID: k.AppID, Type: event.KeyExpired, CreatedAt: now, Subject: event.KeySubject(k.ID), Encoded: data}
			}
			for len(evs) > 0 {
				c := min(eventChunk, len(evs))
				if err := tx.AddEvents(ctx, evs[:c]); err != nil {
					return err
				}
				evs = evs[c:]
			}
			return nil
		})
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}

// WarnExpiring records key_expiring for every active key that entered one
// of the warning windows (durations before expiry, e.g. 7 days and 1 day)
// since it was last told, once per key, window and expiry. It returns how
// many notices it recorded.
func (s *Service) WarnExpiring(ctx context.Context, windows []time.Duration) (int, error) {
	if len(windows) == 0 {
		return 0, nil
	}
	ws := append([]time.Duration(nil), windows...)
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	now := s.Now()
	until := now.Add(ws[len(ws)-1])
	var afterExp time.Time
	var afterID int64
	total := 0
	for {
		n := 0
		err := s.store.InTx(ctx, func(tx Tx) error {
			keys, err := tx.KeysExpiringBy(ctx, now, until, afterExp, afterID, int64(ws[0]/time.Second), warnBatch)
			if err != nil {
				return err
			}
			n = len(keys)
			var evs []event.Event
			for _, k := range keys {
				afterExp, afterID = k.ExpiresAt, k.ID
				left := k.ExpiresAt.Sub(now)
				w := ws[sort.Search(len(ws), func(i int) bool { return ws[i] >= left })] // smallest window holding it
				secs := int64(w / time.Second)
				if k.NoticeFor != nil && k.NoticeFor.Equal(k.ExpiresAt) && k.Notice > 0 && k.Notice <= secs {
					continue // this window (or a smaller one) was announced for this expiry
				}
				if err := tx.SetExpiryNotice(ctx, k.ID, k.ExpiresAt, secs); err != nil {
					return err
				}
				days := int(math.Ceil(left.Hours() / 24))
				evs = append(evs, event.Event{AppID: k.AppID, Type: event.KeyExpiring, CreatedAt: now, Subject: event.KeySubject(k.ID),
					Data: map[string]any{"app_id": k.AppID, "license_key": k.LicenseKey, "expires_at": Timestamp(k.ExpiresAt),
						"days_left": days, "window": w.String()}})
			}
			total += len(evs)
			return tx.AddEvents(ctx, evs)
		})
		if err != nil || n < warnBatch {
			return total, err
		}
	}
}
