package trial

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
)

// memStore is an in-memory Store and Tx for the trial rules (one caller
// at a time; a failed transaction is not rolled back, so tests check
// refusals that come before any write).
type memStore struct {
	keys     map[int64]*license.Key
	trials   []Trial
	devices  map[int64][]license.Device
	sessions []license.Session
	events   []event.Event
	audits   []audit.Entry
}

func newMemStore() *memStore {
	return &memStore{keys: map[int64]*license.Key{}, devices: map[int64][]license.Device{}}
}

func (m *memStore) Trials(_ context.Context, appID string, before int64, limit int) ([]Trial, error) {
	var out []Trial
	for i := len(m.trials) - 1; i >= 0 && len(out) < limit; i-- {
		if t := m.trials[i]; t.AppID == appID && (before == 0 || t.ID < before) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (m *memStore) InTx(_ context.Context, fn func(Tx) error) error { return fn(m) }

func (m *memStore) LockApp(context.Context, string) error { return nil }

func (m *memStore) TrialOf(_ context.Context, appID, hwid string) (*Trial, error) {
	for _, t := range m.trials {
		if t.AppID == appID && t.HWID == hwid {
			return &t, nil
		}
	}
	return nil, apperr.ErrNotFound
}

func (m *memStore) IsTrialKey(_ context.Context, keyID int64) (bool, error) {
	for _, t := range m.trials {
		if t.KeyID != nil && *t.KeyID == keyID {
			return true, nil
		}
	}
	return false, nil
}

func (m *memStore) CountTrialsFromIP(_ context.Context, appID, ip string, since time.Time) (int, error) {
	n := 0
	for _, t := range m.trials {
		if t.AppID == appID && t.IP == ip && !t.CreatedAt.Before(since) {
			n++
		}
	}
	return n, nil
}

func (m *memStore) InsertTrial(_ context.Context, t *Trial) error {
	t.ID = int64(len(m.trials) + 1)
	m.trials = append(m.trials, *t)
	return nil
}

func (m *memStore) KeyByIDForUpdate(_ context.Context, appID string, id int64) (*license.Key, error) {
	if k, ok := m.keys[id]; ok && k.AppID == appID {
		c := *k
		return &c, nil
	}
	return nil, apperr.ErrNotFound
}

func (m *memStore) KeyForUpdate(_ context.Context, appID, licenseKey string) (*license.Key, error) {
	for _, k := range m.keys {
		if k.AppID == appID && k.LicenseKey == licenseKey {
			c := *k
			return &c, nil
		}
	}
	return nil, apperr.ErrNotFound
}

func (m *memStore) InsertKeys(_ context.Context, keys []license.Key) error {
	for i := range keys {
		keys[i].ID = int64(len(m.keys) + 1)
		c := keys[i]
		m.keys[c.ID] = &c
	}
	return nil
}

func (m *memStore) UpdateKey(_ context.Context, k *license.Key) error {
	c := *k
	m.keys[k.ID] = &c
	return nil
}

func (m *memStore) InsertSession(_ context.Context, s *license.Session) error {
	m.sessions = append(m.sessions, *s)
	return nil
}

func (m *memStore) Devices(_ context.Context, keyID int64) ([]license.Device, error) {
	return m.devices[keyID], nil
}

func (m *memStore) UpsertDevice(_ context.Context, keyID int64, hwid string, now time.Time) error {
	for _, d := range m.devices[keyID] {
		if d.HWID == hwid {
			return nil
		}
	}
	m.devices[keyID] = append(m.devices[keyID], license.Device{KeyID: keyID, HWID: hwid, CreatedAt: now})
	return nil
}

func (m *memStore) LiveSessionsOfKey(_ context.Context, keyID int64) ([]license.Session, error) {
	var out []license.Session
	for _, s := range m.sessions {
		if s.KeyID != nil && *s.KeyID == keyID && s.EndedAt == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memStore) EndSession(_ context.Context, id, reason string, now time.Time) error {
	for i := range m.sessions {
		if m.sessions[i].ID == id && m.sessions[i].EndedAt == nil {
			m.sessions[i].EndedAt, m.sessions[i].EndReason = &now, reason
		}
	}
	return nil
}

func (m *memStore) AddEvent(_ context.Context, e event.Event) error {
	m.events = append(m.events, e)
	return nil
}

func (m *memStore) AddAudit(_ context.Context, e audit.Entry) error {
	m.audits = append(m.audits, e)
	return nil
}

type timeout time.Duration

func (t timeout) SessionTimeout() time.Duration { return time.Duration(t) }

// clock is the tests' injected time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T) (*Service, *memStore, *clock) {
	t.Helper()
	m := newMemStore()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	return New(m, timeout(3*time.Minute), c.now, nil), m, c
}

func trialApp() *license.App {
	app := &license.App{ID: "app", Settings: license.DefaultSettings()}
	app.Settings.TrialEnabled = true
	return app
}

// A device gets one trial: a new active key bound to it with a session,
// the same key again while it runs, and TRIAL_USED once it is over.
func TestStartOneTrialPerDevice(t *testing.T) {
	s, m, c := newService(t)
	app := trialApp()
	ctx := context.Background()

	first, err := s.Start(ctx, app, Request{HWID: "pc-1", IP: "10.0.0.1"})
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	k := first.Key
	if !first.New || !strings.HasPrefix(k.LicenseKey, KeyPrefix+"-") || len(k.LicenseKey) != len("TRIAL-XXXXX-XXXXX-XXXXX") {
		t.Errorf("first trial: new %v, key %q; want a new TRIAL-XXXXX-XXXXX-XXXXX key", first.New, k.LicenseKey)
	}
	wantExp := c.t.Add(license.TrialLength(app.Settings))
	if k.Status != license.StatusActive || k.ExpiresAt == nil || !k.ExpiresAt.Equal(wantExp) {
		t.Errorf("trial key status %s, expiry %v; want active until %v", k.Status, k.ExpiresAt, wantExp)
	}
	if d := m.devices[k.ID]; len(d) != 1 || d[0].HWID != "pc-1" {
		t.Errorf("devices of the trial key: %+v, want pc-1", d)
	}
	if len(m.sessions) != 1 || m.sessions[0].TokenHash != license.HashToken(first.SessionToken) {
		t.Errorf("sessions %+v, want one holding the returned token", m.sessions)
	}
	if len(m.events) != 1 || m.events[0].Type != event.TrialCreated || m.events[0].Subject != event.KeySubject(k.ID) {
		t.Errorf("events %+v, want one trial.created about the key", m.events)
	}

	c.t = c.t.Add(time.Hour)
	again, err := s.Start(ctx, app, Request{HWID: "pc-1", IP: "10.0.0.1"})
	if err != nil {
		t.Fatalf("Start while the trial runs: %v", err)
	}
	if again.New || again.Key.ID != k.ID || again.SessionToken == first.SessionToken {
		t.Errorf("second Start: new %v, key %d, same token %v; want the running key %d with a new session",
			again.New, again.Key.ID, again.SessionToken == first.SessionToken, k.ID)
	}
	if len(m.keys) != 1 || len(m.events) != 1 {
		t.Errorf("resuming made %d keys and %d events, want 1 and 1", len(m.keys), len(m.events))
	}

	c.t = wantExp
	_, err = s.Start(ctx, app, Request{HWID: "pc-1", IP: "10.0.0.1"})
	if got := apperr.CodeOf(err); got != CodeTrialUsed {
		t.Errorf("Start after the trial expired: code %q (%v), want %s", got, err, CodeTrialUsed)
	}
}

// New trials from one address stop at the cap within the window, and
// start again once the window has passed; other addresses are not counted.
func TestStartIPCap(t *testing.T) {
	s, _, c := newService(t)
	app := trialApp()
	app.Settings.TrialIPLimit, app.Settings.TrialIPWindowHours = 2, 24
	ctx := context.Background()
	for _, hwid := range []string{"pc-1", "pc-2"} {
		if _, err := s.Start(ctx, app, Request{HWID: hwid, IP: "10.0.0.1"}); err != nil {
			t.Fatalf("Start(%s) under the cap: %v", hwid, err)
		}
	}
	_, err := s.Start(ctx, app, Request{HWID: "pc-3", IP: "10.0.0.1"})
	if got := apperr.CodeOf(err); got != CodeTrialLimit {
		t.Errorf("third trial from one address: code %q (%v), want %s", got, err, CodeTrialLimit)
	}
	if _, err := s.Start(ctx, app, Request{HWID: "pc-3", IP: "10.0.0.2"}); err != nil {
		t.Errorf("trial from another address: %v", err)
	}
	if _, err := s.Start(ctx, app, Request{HWID: "pc-1", IP: "10.0.0.1"}); err != nil {
		t.Errorf("resuming a running trial at the cap: %v", err)
	}
	c.t = c.t.Add(24*time.Hour + time.Second) // the window includes its first instant
	if _, err := s.Start(ctx, app, Request{HWID: "pc-4", IP: "10.0.0.1"}); err != nil {
		t.Errorf("trial after the window: %v", err)
	}
}

func TestStartRefusals(t *testing.T) {
	s, m, _ := newService(t)
	ctx := context.Background()
	off := trialApp()
	off.Settings.TrialEnabled = false
	maint := trialApp()
	maint.Settings.Maintenance = true
	cases := []struct {
		name string
		app  *license.App
		req  Request
		want string
	}{
		{"no hwid", trialApp(), Request{IP: "10.0.0.1"}, license.CodeMissingFields},
		{"trials off", off, Request{HWID: "pc-1"}, CodeTrialDisabled},
		{"maintenance", maint, Request{HWID: "pc-1"}, license.CodeMaintenance},
	}
	for _, c := range cases {
		_, err := s.Start(ctx, c.app, c.req)
		if got := apperr.CodeOf(err); got != c.want {
			t.Errorf("%s: code %q (%v), want %s", c.name, got, err, c.want)
		}
	}
	if len(m.keys)+len(m.trials)+len(m.sessions) != 0 {
		t.Errorf("refusals wrote keys %d, trials %d, sessions %d", len(m.keys), len(m.trials), len(m.sessions))
	}
}

// Convert turns a trial key into a full key under the same string and
// audits it; other keys are refused.
func TestConvert(t *testing.T) {
	s, m, c := newService(t)
	app := trialApp()
	ctx := context.Background()
	res, err := s.Start(ctx, app, Request{HWID: "pc-1", IP: "10.0.0.1"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	actor := audit.Actor{Kind: "admin", ID: "1", Name: "owner"}
	k, err := s.Convert(ctx, actor, "app", res.Key.LicenseKey, ConvertInput{Type: license.TypeDays, Duration: 30, MaxDevices: 2})
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	want := c.t.Add(30 * 24 * time.Hour)
	if k.LicenseKey != res.Key.LicenseKey || k.ExpiresAt == nil || !k.ExpiresAt.Equal(want) || k.MaxDevices != 2 || k.Note != "converted trial" {
		t.Errorf("converted key %+v; want the same string, expiry %v, 2 seats", k, want)
	}
	if len(m.audits) != 1 || m.audits[0].Action != "key.convert" || m.audits[0].Target != k.LicenseKey {
		t.Errorf("audit %+v, want one key.convert of the key", m.audits)
	}

	if err := m.InsertKeys(ctx, []license.Key{{AppID: "app", LicenseKey: "FULL-1", Status: license.StatusUnused, Type: license.TypeLifetime}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Convert(ctx, actor, "app", "FULL-1", ConvertInput{Type: license.TypeLifetime})
	if got := apperr.CodeOf(err); got != license.CodeConflict {
		t.Errorf("Convert of a key that is no trial: code %q (%v), want %s", got, err, license.CodeConflict)
	}
	_, err = s.Convert(ctx, actor, "app", "NOPE", ConvertInput{Type: license.TypeLifetime})
	if got := apperr.CodeOf(err); got != license.CodeNotFound {
		t.Errorf("Convert of an unknown key: code %q (%v), want %s", got, err, license.CodeNotFound)
	}
}
