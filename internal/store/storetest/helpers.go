package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
)

// t0 has sub-millisecond digits and a non-UTC zone: the store keeps
// milliseconds and answers in UTC, and every comparison allows for exactly that.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 123_456_789, time.FixedZone("CET", 3600))

// stored is what a time reads back as.
func stored(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

func ptr[T any](v T) *T { return &v }

// storeTx is the store's one write transaction as every domain package
// sees it: license, account and trial declare overlapping views of it, and
// these tests exercise it whole.
type storeTx interface {
	license.Tx
	account.Tx
	trial.Tx
}

func inTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx storeTx) error) {
	t.Helper()
	ctx := context.Background()
	if err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return fn(ctx, tx.(storeTx)) }); err != nil {
		t.Fatalf("InTx: %v", err)
	}
}

// txErr runs fn in its own transaction and returns its error (PostgreSQL
// aborts a transaction after a failed statement, so each expected failure
// gets its own).
func txErr(db *store.DB, fn func(ctx context.Context, tx storeTx) error) error {
	ctx := context.Background()
	return db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return fn(ctx, tx.(storeTx)) })
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got error %v, want %v", what, err, sentinel)
	}
}

func newApp(id string, created time.Time) *license.App {
	s := license.DefaultSettings()
	return &license.App{ID: id, Name: "App " + id, Version: "1.0.0", Secret: "secret-" + id, Settings: s,
		CreatedAt: created, UpdatedAt: created}
}

func addApp(t *testing.T, db *store.DB, id string) *license.App {
	t.Helper()
	a := newApp(id, t0)
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.InsertApp(ctx, a, "hash-"+id) })
	return a
}

func newKey(appID, lk string) license.Key {
	return license.Key{AppID: appID, LicenseKey: lk, Status: license.StatusUnused, Type: license.TypeDays, Duration: 30,
		MaxDevices: 1, CreatedAt: t0, UpdatedAt: t0}
}

func addKeys(t *testing.T, db *store.DB, keys ...license.Key) []license.Key {
	t.Helper()
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.InsertKeys(ctx, keys) })
	for _, k := range keys {
		if k.ID == 0 {
			t.Fatalf("InsertKeys left key %s without an ID", k.LicenseKey)
		}
	}
	return keys
}

func newSession(id string, appID string, keyID int64, created time.Time) *license.Session {
	return &license.Session{ID: id, TokenHash: "tok-" + id, AppID: appID, KeyID: ptr(keyID), HWID: "hw-" + id, IP: "203.0.113.7",
		CreatedAt: created, LastSeenAt: created}
}

func addSessions(t *testing.T, db *store.DB, ss ...*license.Session) {
	t.Helper()
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, s := range ss {
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- comparisons ----

type diffs []string

func (d *diffs) time(name string, got, want time.Time) {
	if !got.Equal(stored(want)) {
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", name, got, stored(want)))
	}
}

func (d *diffs) optTime(name string, got, want *time.Time) {
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", name, got, want))
	default:
		d.time(name, *got, *want)
	}
}

func (d *diffs) eq(name string, got, want any) {
	if !reflect.DeepEqual(got, want) {
		*d = append(*d, fmt.Sprintf("%s = %#v, want %#v", name, got, want))
	}
}

func (d diffs) report(t *testing.T, what string) {
	t.Helper()
	if len(d) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(d, "\n  "))
	}
}

func checkApp(t *testing.T, what string, got *license.App, want *license.App) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("Name", got.Name, want.Name)
	d.eq("Version", got.Version, want.Version)
	d.eq("Secret", got.Secret, want.Secret)
	d.eq("Settings", got.Settings, want.Settings)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkKey(t *testing.T, what string, got *license.Key, want license.Key) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("LicenseKey", got.LicenseKey, want.LicenseKey)
	d.eq("Status", got.Status, want.Status)
	d.eq("Type", got.Type, want.Type)
	d.eq("Duration", got.Duration, want.Duration)
	d.eq("MaxDevices", got.MaxDevices, want.MaxDevices)
	d.eq("Note", got.Note, want.Note)
	d.eq("Features", string(got.Features), string(want.FeaturesJSON()))
	d.optTime("ActivatedAt", got.ActivatedAt, want.ActivatedAt)
	d.optTime("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	d.optTime("LastSelfResetAt", got.LastSelfResetAt, want.LastSelfResetAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkSession(t *testing.T, what string, got *license.Session, want *license.Session) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("TokenHash", got.TokenHash, want.TokenHash)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("KeyID", got.KeyID, want.KeyID)
	d.eq("HWID", got.HWID, want.HWID)
	d.eq("IP", got.IP, want.IP)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("LastSeenAt", got.LastSeenAt, want.LastSeenAt)
	d.optTime("EndedAt", got.EndedAt, want.EndedAt)
	d.eq("EndReason", got.EndReason, want.EndReason)
	d.report(t, what)
}

func keyIDs(keys []license.Key) []int64 {
	out := []int64{}
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

func sessionIDs(ss []license.Session) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// ---- apps ----

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ---- devices ----
