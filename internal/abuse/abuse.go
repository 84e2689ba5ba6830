// Package abuse watches for leaked keys and abusive clients. A key seen from
// more devices or addresses than the app allows within a window is reported
// as key.suspected_leak (and paused, if the owner chose so); bursts of
// invalid keys, rejected envelopes or trial requests from one address are
// reported as suspicious_activity. Reports are recorded as detections (the
// admin API lists them) and as events (webhooks) in one transaction.
// Detection is best effort: it never fails the request that fed it.
package abuse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/lockout"
)

// Reasons of suspicious_activity.
const (
	InvalidKeys      = "invalid_keys"      // INVALID_KEY refusals: key guessing
	EnvelopeFailures = "envelope_failures" // rejected envelopes: tampering or a broken client
	TrialFarming     = "trial_farming"     // trial requests across devices
)

// Detection is one report.
type Detection struct {
	ID        int64
	AppID     string
	Kind      string // event.KeySuspectedLeak or event.SuspiciousActivity
	Subject   string // the license key, or the client address
	Details   map[string]any
	CreatedAt time.Time
}

// Store is the persistence detection needs.
type Store interface {
	// Sight records that a key was seen from value (kind "hwid" or "ip") at
	// now and returns how many distinct values of that kind it was seen
	// from at or after since.
	Sight(ctx context.Context, appID, licenseKey, kind, value string, now, since time.Time) (int, error)
	// LastDetection returns when subject was last reported as kind (zero
	// time if never).
	LastDetection(ctx context.Context, appID, kind, subject string) (time.Time, error)
	Detections(ctx context.Context, appID, kind string, limit int) ([]Detection, error)
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx records a report.
type Tx interface {
	AddDetection(ctx context.Context, d *Detection) error
	journal.Journal
}

// Responder applies the owner's response to a suspected leak ("pause" or
// "rotate"; see license.AppSettings.LeakAction) to a key.
type Responder func(ctx context.Context, appID, licenseKey, action string) error

// Detector turns observations into reports.
type Detector struct {
	store   Store
	guard   *lockout.Guard
	respond Responder
	now     func() time.Time
	log     *slog.Logger

	mu     sync.Mutex
	seed   maphash.Seed
	recent map[uint64]int64 // sightings this process wrote: sightingKey → Unix nanoseconds
}

// New returns a Detector; burst counters live in guard's store (shared by
// every process).
func New(store Store, guard *lockout.Guard, respond Responder, now func() time.Time, log *slog.Logger) *Detector {
	return &Detector{store: store, guard: guard, respond: respond, now: now, log: log,
		seed: maphash.MakeSeed(), recent: map[uint64]int64{}}
}

func hashOf(appID, kind, v string) string {
	h := sha256.Sum256([]byte(appID + "|" + kind + "|" + v))
	return hex.EncodeToString(h[:16])
}

// SawKey records a login of a key from hwid and ip — successful or refused
// for its devices — and reports a suspected leak once per window.
func (d *Detector) SawKey(ctx context.Context, app *license.App, licenseKey, hwid, ip string) {
	if d == nil {
		return
	}
	st := app.Settings
	if licenseKey == "" || (st.LeakMaxHWIDs == 0 && st.LeakMaxIPs == 0) {
		return
	}
	now := d.now()
	window := time.Duration(st.LeakWindowHours) * time.Hour
	since := now.Add(-window)
	seen := map[string]int{}
	over := false
	for _, w := range []struct {
		kind, value string
		max         int
	}{{"hwid", hwid, st.LeakMaxHWIDs}, {"ip", ip, st.LeakMaxIPs}} {
		if w.max == 0 || w.value == "" {
			continue
		}
		value := hashOf(app.ID, w.kind, w.value)
		// A device or address this process recorded recently adds nothing
		// new: skip the write (and the count, which it cannot have raised).
		// Recorded times are so at most a quarter window stale.
		if !d.due(d.sightingKey(app.ID, licenseKey, value), now, window/4) {
			continue
		}
		n, err := d.store.Sight(ctx, app.ID, licenseKey, w.kind, value, now, since)
		if err != nil {
			d.log.WarnContext(ctx, "record key sighting", "app_id", app.ID, "err", err)
			return
		}
		seen[w.kind] = n
		over = over || n > w.max
	}
	if !over {
		return
	}
	if last, err := d.store.LastDetection(ctx, app.ID, event.KeySuspectedLeak, licenseKey); err != nil || now.Sub(last) < window {
		return // reported within this window already (or unknown: stay quiet)
	}
	details := map[string]any{"app_id": app.ID, "license_key": licenseKey, "hwids": seen["hwid"], "ips": seen["ip"],
		"window_hours": st.LeakWindowHours, "action": st.LeakAction}
	if !d.report(ctx, app.ID, event.KeySuspectedLeak, licenseKey, details, now) {
		return
	}
	if st.LeakAction != license.LeakActionNone && d.respond != nil {
		if err := d.respond(ctx, app.ID, licenseKey, st.LeakAction); err != nil {
			d.log.WarnContext(ctx, "respond to a suspected leak", "app_id", app.ID, "action", st.LeakAction, "err", err)
		}
	}
}

// maxRecent bounds the memory of recent sightings; when full it starts over
// (costing one write per device at worst).
const maxRecent = 200_000

// sightingKey names a sighting of a key from value in recent: a 64-bit hash
// under this process's random seed, so that the map holds no pointers. With
// strings (app, key and value, some 100 bytes each) it was 200 000 objects
// that every garbage collection marked, on a server whose fleet had logged
// in, for as long as it ran. Two sightings sharing a hash (about one chance
// in 10⁹ with the map full, and not steerable without the seed) would skip
// one write of the second within a quarter window: best effort, as all of
// detection is.
func (d *Detector) sightingKey(appID, licenseKey, value string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(appID)
	h.WriteByte('|')
	h.WriteString(licenseKey)
	h.WriteByte('|')
	h.WriteString(value)
	return h.Sum64()
}

// due reports whether a sighting should be written: not written by this
// process within every; it then counts as written at now.
func (d *Detector) due(k uint64, now time.Time, every time.Duration) bool {
	at := now.UnixNano()
	d.mu.Lock()
	defer d.mu.Unlock()
	if last, ok := d.recent[k]; ok && at-last < int64(every) && at >= last {
		return false
	}
	if len(d.recent) >= maxRecent {
		clear(d.recent)
	}
	d.recent[k] = at
	return true
}

// Burst records one occurrence of reason from ip and reports
// suspicious_activity when the app's threshold is reached within its
// window, once per window.
func (d *Detector) Burst(ctx context.Context, app *license.App, reason, ip string) {
	if d == nil {
		return
	}
	st := app.Settings
	limit := map[string]int{InvalidKeys: st.SuspiciousInvalidKeys, EnvelopeFailures: st.SuspiciousEnvelopeFailures,
		TrialFarming: st.SuspiciousTrials}[reason]
	if limit == 0 || ip == "" {
		return
	}
	window := time.Duration(st.SuspiciousWindowMinutes) * time.Minute
	tripped, err := d.guard.Trip(ctx, lockout.Subject{Scope: "abuse:" + reason + ":" + app.ID, ID: ip,
		Policy: lockout.Policy{MaxFailures: limit, Window: window, Lock: window}})
	if err != nil {
		d.log.WarnContext(ctx, "count suspicious activity", "app_id", app.ID, "err", err)
		return
	}
	if tripped {
		d.report(ctx, app.ID, event.SuspiciousActivity, ip, map[string]any{"app_id": app.ID, "reason": reason, "ip": ip,
			"count": limit, "window_minutes": st.SuspiciousWindowMinutes}, d.now())
	}
}

func (d *Detector) report(ctx context.Context, appID, kind, subject string, details map[string]any, now time.Time) bool {
	err := d.store.InTx(ctx, func(tx Tx) error {
		if err := tx.AddDetection(ctx, &Detection{AppID: appID, Kind: kind, Subject: subject, Details: details, CreatedAt: now}); err != nil {
			return err
		}
		return tx.AddEvent(ctx, event.Event{AppID: appID, Type: kind, CreatedAt: now, Data: details})
	})
	if err != nil {
		d.log.WarnContext(ctx, "record detection", "app_id", appID, "kind", kind, "err", err)
		return false
	}
	return true
}

// Detections lists an app's reports, newest first (kind "" for all).
func (d *Detector) Detections(ctx context.Context, appID, kind string, limit int) ([]Detection, error) {
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	return d.store.Detections(ctx, appID, kind, limit)
}
