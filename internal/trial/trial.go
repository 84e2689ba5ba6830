package trial

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Trial error codes (sdk-compat §2.1).
const (
	CodeTrialDisabled = wire.CodeTrialDisabled
	CodeTrialUsed     = wire.CodeTrialUsed
	CodeTrialLimit    = wire.CodeTrialLimit
)

var (
	errTrialDisabled = apperr.New(apperr.Forbidden, CodeTrialDisabled, "Trials are not available for this application.")
	errTrialUsed     = apperr.New(apperr.Forbidden, CodeTrialUsed, "The trial on this device has already been used.")
	errTrialLimit    = apperr.New(apperr.Forbidden, CodeTrialLimit, "Too many trials have been started from this network. Please try again later.")
)

// KeyPrefix starts every trial key: TRIAL-XXXXX-XXXXX-XXXXX.
const KeyPrefix = "TRIAL"

// Request is a device asking for a trial.
type Request struct {
	HWID string
	IP   string
}

// Result is an issued (or resumed) trial with a ready session.
type Result struct {
	Key          license.Key
	SessionToken string
	New          bool // false when the device got its running trial back
}

// Start gives a device its one trial of the app: a new, active trial key
// bound to the device with a session open on it, or — when the device already
// has a running trial — that key again with a new session. It returns
// MISSING_FIELDS, MAINTENANCE, TRIAL_DISABLED, TRIAL_USED (the device's trial
// is over or its key was deleted), TRIAL_LIMIT (the per-IP cap), BANNED or
// PAUSED (the owner stopped the trial key).
func (s *Service) Start(ctx context.Context, app *license.App, req Request) (*Result, error) {
	if req.HWID == "" {
		return nil, apperr.Missing("hwid")
	}
	if len(req.HWID) > 256 {
		return nil, apperr.InvalidField("hwid", "longer than 256 characters")
	}
	st := app.Settings
	if !st.TrialEnabled {
		return nil, errTrialDisabled
	}
	if st.Maintenance {
		return nil, license.MaintenanceError(app)
	}
	now := s.Now()
	token, err := s.randomHex(32)
	if err != nil {
		return nil, err
	}
	var res *Result
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.LockApp(ctx, app.ID); err != nil {
			return err
		}
		k, isNew, err := s.trialKey(ctx, tx, app, req, now)
		if err != nil {
			return err
		}
		seats := license.KeySeats(ctx, tx, k, now)
		if err := seats.BindDevice(req.HWID); err != nil {
			return err
		}
		if err := seats.RetireOverflow(req.HWID, now.Add(-s.lic.SessionTimeout())); err != nil {
			return err
		}
		sess := &license.Session{ID: license.NewID(s.random), TokenHash: license.HashToken(token), AppID: app.ID, KeyID: &k.ID,
			HWID: req.HWID, IP: req.IP, CreatedAt: now, LastSeenAt: now}
		if err := tx.InsertSession(ctx, sess); err != nil {
			return err
		}
		res = &Result{Key: *k, SessionToken: token, New: isNew}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// trialKey finds the device's running trial key or issues a new one.
func (s *Service) trialKey(ctx context.Context, tx Tx, app *license.App, req Request, now time.Time) (*license.Key, bool, error) {
	prior, err := tx.TrialOf(ctx, app.ID, req.HWID)
	switch {
	case err == nil:
		if prior.KeyID == nil {
			return nil, false, errTrialUsed
		}
		k, err := tx.KeyByIDForUpdate(ctx, app.ID, *prior.KeyID)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil, false, errTrialUsed
		} else if err != nil {
			return nil, false, err
		}
		st := k.StatusAt(now)
		if st == license.StatusExpired {
			return nil, false, errTrialUsed
		}
		if e := license.StatusError(st); e != nil {
			return nil, false, e
		}
		return k, false, nil
	case !errors.Is(err, apperr.ErrNotFound):
		return nil, false, err
	}
	st := app.Settings
	if st.TrialIPLimit > 0 {
		since := now.Add(-time.Duration(st.TrialIPWindowHours) * time.Hour)
		n, err := tx.CountTrialsFromIP(ctx, app.ID, req.IP, since)
		if err != nil {
			return nil, false, err
		}
		if n >= st.TrialIPLimit {
			return nil, false, errTrialLimit
		}
	}
	lk, err := license.NewKeyString(s.random, KeyPrefix)
	if err != nil {
		return nil, false, err
	}
	lk = lk[:len(lk)-6] // TRIAL- and three groups of five
	exp := now.Add(license.TrialLength(st))
	features, err := license.CheckFeatures(st.TrialFeatures)
	if err != nil {
		return nil, false, err
	}
	keys := []license.Key{{AppID: app.ID, LicenseKey: lk, Status: license.StatusActive, Type: license.TypeDays,
		Duration: int(math.Ceil(license.TrialLength(st).Hours() / 24)), MaxDevices: st.TrialMaxDevices,
		Note: "trial", Features: features, ActivatedAt: &now, ExpiresAt: &exp, CreatedAt: now, UpdatedAt: now}}
	if err := tx.InsertKeys(ctx, keys); err != nil {
		return nil, false, err
	}
	k := &keys[0]
	if err := tx.InsertTrial(ctx, &Trial{AppID: app.ID, HWID: req.HWID, KeyID: &k.ID, IP: req.IP, CreatedAt: now}); err != nil {
		return nil, false, err
	}
	err = tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.TrialCreated, CreatedAt: now, Subject: event.KeySubject(k.ID),
		Data: map[string]any{"app_id": app.ID, "license_key": lk, "hwid": req.HWID, "expires_at": license.Timestamp(exp)}})
	return k, true, err
}

// List lists an app's trials, newest first, and the cursor of the next page
// (0 at the end).
func (s *Service) List(ctx context.Context, appID string, before int64, limit int) ([]Trial, int64, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	ts, err := s.store.Trials(ctx, appID, before, limit)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(ts) == limit {
		next = ts[len(ts)-1].ID
	}
	return ts, next, nil
}

// ConvertInput turns a trial key into a full key: Type and Duration (days,
// counted from the conversion) as for generated keys; MaxDevices 0 keeps the
// trial's seats.
type ConvertInput struct {
	Type       license.KeyType
	Duration   int
	MaxDevices int
}

// Convert turns a trial key into a full key without changing its string,
// so the customer's running app keeps working: a days key runs Duration days
// from now, a lifetime key never expires, and an expired trial becomes active
// again. The device binding and open sessions stay. It returns NOT_FOUND,
// MISSING_FIELDS or CONFLICT (not a trial key, or banned).
func (s *Service) Convert(ctx context.Context, actor audit.Actor, appID, licenseKey string, in ConvertInput) (*license.Key, error) {
	if err := license.CheckTerms(in.Type, in.Duration, in.MaxDevices); err != nil {
		return nil, err
	}
	details := map[string]any{"key_type": in.Type, "duration": in.Duration}
	return s.convert(ctx, actor, appID, licenseKey, details, func(tx Tx, k *license.Key, now time.Time) error {
		isTrial, err := tx.IsTrialKey(ctx, k.ID)
		if err != nil {
			return err
		}
		if !isTrial {
			return conflict("Only trial keys can be converted.")
		}
		if k.Status == license.StatusBanned {
			return conflict("A banned key cannot be converted; unban it first.")
		}
		k.Type, k.Duration, k.ExpiresAt = in.Type, in.Duration, nil
		if in.Type == license.TypeDays {
			exp := now.Add(time.Duration(in.Duration) * 24 * time.Hour)
			k.ExpiresAt = &exp
		}
		if k.Status == license.StatusExpired {
			k.Status = license.StatusActive
		}
		if in.MaxDevices > 0 {
			k.MaxDevices = in.MaxDevices
			details["max_devices"] = in.MaxDevices
		}
		k.Note = "converted trial"
		return nil
	})
}

// convert is the key.convert action in one transaction (license's key
// action steps over trial's Tx).
func (s *Service) convert(ctx context.Context, actor audit.Actor, appID, licenseKey string, details map[string]any,
	fn func(Tx, *license.Key, time.Time) error) (*license.Key, error) {
	now := s.Now()
	var out *license.Key
	err := s.store.InTx(ctx, func(tx Tx) error {
		var err error
		out, err = license.MutateKeyIn(ctx, tx, actor, now, appID, licenseKey, "key.convert", details, fn)
		return err
	})
	return out, err
}

func conflict(msg string) error { return apperr.New(apperr.Conflict, license.CodeConflict, msg) }
