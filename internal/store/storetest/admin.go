package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

func testAudit(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	admin := audit.Actor{Kind: "admin", ID: "u-1", Name: "root", IP: "198.51.100.1"}
	in := []audit.Entry{
		{At: t0, Actor: admin, Action: "key.ban", AppID: "a", Target: "K-1", Details: map[string]any{"reason": "chargeback"}},
		{At: t0.Add(time.Second), Actor: audit.System, Action: "key.ban", AppID: "b", Target: "K-2"},
		{At: t0.Add(2 * time.Second), Actor: admin, Action: "app.update", AppID: "a", Target: "a"},
		{At: t0.Add(3 * time.Second), Actor: admin, Action: "admin.create", Target: "u-2"},
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, e := range in {
			if err := tx.AddAudit(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	all, err := db.Audit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("Audit = %d entries, want 4", len(all))
	}
	for i, got := range all { // newest first
		want := in[len(in)-1-i]
		var d diffs
		d.time("At", got.At, want.At)
		d.eq("Actor", got.Actor, want.Actor)
		d.eq("Action", got.Action, want.Action)
		d.eq("AppID", got.AppID, want.AppID)
		d.eq("Target", got.Target, want.Target)
		if len(want.Details) == 0 {
			d.eq("len(Details)", len(got.Details), 0)
		} else {
			d.eq("Details", got.Details, want.Details)
		}
		if i > 0 && got.ID >= all[i-1].ID {
			d = append(d, fmt.Sprintf("ID %d not before %d", got.ID, all[i-1].ID))
		}
		d.report(t, fmt.Sprintf("audit entry %d (newest first)", i))
	}
	targets := func(es []audit.Entry) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Target)
		}
		return out
	}
	cases := []struct {
		name string
		f    store.AuditFilter
		want []string
	}{
		{"app", store.AuditFilter{AppID: "a"}, []string{"a", "K-1"}},
		{"action", store.AuditFilter{Action: "key.ban"}, []string{"K-2", "K-1"}},
		{"app and action", store.AuditFilter{AppID: "b", Action: "key.ban"}, []string{"K-2"}},
		{"cursor", store.AuditFilter{Before: all[1].ID}, []string{"K-2", "K-1"}},
		{"limit", store.AuditFilter{Limit: 1}, []string{"u-2"}},
		{"cursor and limit", store.AuditFilter{Before: all[0].ID, Limit: 2}, []string{"a", "K-2"}},
		{"no match", store.AuditFilter{Action: "nope"}, []string{}},
	}
	for _, c := range cases {
		got, err := db.Audit(ctx, c.f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(targets(got), c.want) {
			t.Errorf("%s: Audit = %v, want %v", c.name, targets(got), c.want)
		}
	}
	// Without a limit, a page holds 100 entries.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i := range 100 {
			if err := tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "bulk", Target: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if got, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(got) != 100 || got[0].Target != "99" {
		t.Errorf("Audit without a limit = %d entries (%v), want the newest 100", len(got), err)
	}
}

func testResetRequests(t *testing.T, db *store.DB) {
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0]
	r1 := &license.ResetRequest{AppID: "app", KeyID: k.ID, LicenseKey: "K", Username: "zoë", HWID: "hw", Reason: "new pc", CreatedAt: t0}
	r2 := &license.ResetRequest{AppID: "app", KeyID: k.ID, LicenseKey: "K", CreatedAt: t0}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.InsertResetRequest(ctx, r1); err != nil {
			return err
		}
		return tx.InsertResetRequest(ctx, r2)
	})
	if r1.ID <= 0 || r2.ID <= r1.ID {
		t.Errorf("InsertResetRequest IDs %d, %d; want positive and increasing", r1.ID, r2.ID)
	}
}

// ---- admin store ----

func testAdmins(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	if n, err := as.CountAdmins(ctx); err != nil || n != 0 {
		t.Fatalf("CountAdmins on an empty database = %d, %v", n, err)
	}
	u := &admin.User{ID: "u-1", Username: "root", PasswordHash: "$2a$04$hash", CreatedAt: t0}
	e := audit.Entry{At: t0, Actor: audit.System, Action: "admin.create", Target: "u-1"}
	if err := adminWrite(db, e, func(ctx context.Context, tx admin.Tx) error { return tx.InsertAdmin(ctx, u) }); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *admin.User, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var d diffs
		d.eq("ID", got.ID, u.ID)
		d.eq("Username", got.Username, u.Username)
		d.eq("PasswordHash", got.PasswordHash, u.PasswordHash)
		d.time("CreatedAt", got.CreatedAt, u.CreatedAt)
		d.report(t, what)
	}
	got, err := as.AdminByUsername(ctx, "root")
	check("AdminByUsername", got, err)
	got, err = as.AdminByID(ctx, "u-1")
	check("AdminByID", got, err)
	_, err = as.AdminByUsername(ctx, "nobody")
	wantErr(t, "AdminByUsername(missing)", err, apperr.ErrNotFound)
	_, err = as.AdminByID(ctx, "missing")
	wantErr(t, "AdminByID(missing)", err, apperr.ErrNotFound)

	dup := &admin.User{ID: "u-2", Username: "root", PasswordHash: "x", CreatedAt: t0}
	err = adminWrite(db, audit.Entry{At: t0, Actor: audit.System, Action: "admin.create", Target: "u-2"}, func(ctx context.Context, tx admin.Tx) error { return tx.InsertAdmin(ctx, dup) })
	wantErr(t, "InsertAdmin with a taken username", err, apperr.ErrConflict)
	if n, err := as.CountAdmins(ctx); err != nil || n != 1 {
		t.Errorf("CountAdmins = %d, %v; want 1", n, err)
	}
	// The admin and its audit entry are one transaction: the refused one left no entry.
	es, err := db.Audit(ctx, store.AuditFilter{Action: "admin.create"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Target != "u-1" {
		t.Errorf("admin.create audit entries = %v, want only u-1's", es)
	}
}

func testServerSecret(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	v, err := as.ServerSecret(ctx, "jwt_key", func() (string, error) { return "first", nil })
	if err != nil || v != "first" {
		t.Fatalf("ServerSecret (new) = %q, %v; want the generated value", v, err)
	}
	v, err = as.ServerSecret(ctx, "jwt_key", func() (string, error) {
		t.Error("generate called for an existing secret")
		return "second", nil
	})
	if err != nil || v != "first" {
		t.Errorf("ServerSecret (existing) = %q, %v; want first", v, err)
	}
	_, err = as.ServerSecret(ctx, "other", func() (string, error) { return "", errBoom })
	if !errors.Is(err, errBoom) {
		t.Errorf("ServerSecret with a failing generator: %v, want its error", err)
	}
	// Concurrent first uses agree on one value.
	const n = 4
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = as.ServerSecret(ctx, "race", func() (string, error) { return fmt.Sprint("gen-", i), nil })
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Errorf("concurrent ServerSecret %d = %q, %v; want every caller to get %q", i, got[i], errs[i], got[0])
		}
	}
}

// ---- replay store ----
