package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

func newPlan(appID, name string, pos int) *commerce.Plan {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return &commerce.Plan{AppID: appID, Kind: commerce.KindPlan, Name: name, Description: "d", PriceCents: 499, Currency: "USD",
		Period: commerce.PeriodOnce, KeyType: license.TypeDays, Duration: 30, MaxDevices: 2, Features: []byte(`{"pro":true}`),
		Position: pos, Active: true, CreatedAt: t0, UpdatedAt: t0}
}

func commerceTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx commerce.Tx) error) error {
	t.Helper()
	return db.CommerceStore().InTx(context.Background(), func(tx commerce.Tx) error { return fn(context.Background(), tx) })
}

// Plans round-trip every field, list by position then id, stay inside their
// app, and update and delete only what exists.
func testPlans(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	addApp(t, db, "other")
	b, a, c := newPlan("app", "B", 1), newPlan("app", "A", 0), newPlan("other", "C", 0)
	for _, p := range []*commerce.Plan{b, a, c} {
		if err := commerceTx(t, db, func(ctx context.Context, tx commerce.Tx) error { return tx.InsertPlan(ctx, p) }); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := db.CommerceStore().Plans(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].ID != a.ID || ps[1].ID != b.ID {
		t.Fatalf("Plans = %+v, want A then B", ps)
	}
	got := ps[1]
	if got.Name != "B" || got.PriceCents != 499 || got.Currency != "USD" || got.Period != "once" || got.KeyType != license.TypeDays ||
		got.Duration != 30 || got.MaxDevices != 2 || string(got.Features) != `{"pro":true}` || !got.Active || !got.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("round trip: %+v", got)
	}
	err = commerceTx(t, db, func(ctx context.Context, tx commerce.Tx) error {
		p, err := tx.PlanForUpdate(ctx, "app", b.ID)
		if err != nil {
			return err
		}
		p.PriceCents, p.Active, p.Name = 999, false, "B2"
		return tx.UpdatePlan(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ = db.CommerceStore().Plans(ctx, "app")
	if ps[1].PriceCents != 999 || ps[1].Active || ps[1].Name != "B2" {
		t.Fatalf("after update: %+v", ps[1])
	}
	for what, fn := range map[string]func(ctx context.Context, tx commerce.Tx) error{
		"PlanForUpdate of another app's plan": func(ctx context.Context, tx commerce.Tx) error {
			_, err := tx.PlanForUpdate(ctx, "app", c.ID)
			return err
		},
		"UpdatePlan of a missing plan": func(ctx context.Context, tx commerce.Tx) error {
			p := *b
			p.ID = 99999
			return tx.UpdatePlan(ctx, &p)
		},
		"DeletePlan of another app's plan": func(ctx context.Context, tx commerce.Tx) error { return tx.DeletePlan(ctx, "app", c.ID) },
	} {
		if err := commerceTx(t, db, fn); !errors.Is(err, apperr.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", what, err)
		}
	}
	if err := commerceTx(t, db, func(ctx context.Context, tx commerce.Tx) error { return tx.DeletePlan(ctx, "app", a.ID) }); err != nil {
		t.Fatal(err)
	}
	if ps, _ = db.CommerceStore().Plans(ctx, "app"); len(ps) != 1 {
		t.Fatalf("after delete: %d plans", len(ps))
	}
}

// Orders round-trip, keep their terms when the plan goes, and a key
// inserted through License() commits with the order.
func testOrders(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	p := newPlan("app", "P", 0)
	if err := commerceTx(t, db, func(ctx context.Context, tx commerce.Tx) error { return tx.InsertPlan(ctx, p) }); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	o := &commerce.Order{ID: "ORD-1", AppID: "app", PlanID: &p.ID, PlanName: "P", Kind: "plan", AmountCents: 499, Currency: "USD",
		KeyType: license.TypeDays, Duration: 30, MaxDevices: 2, Features: []byte(`{"pro":true}`), Email: "a@b.c",
		Status: commerce.OrderPending, CreatedAt: t0, UpdatedAt: t0}
	os := db.OrderStore()
	err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { return tx.InsertOrder(ctx, o) })
	if err != nil {
		t.Fatal(err)
	}
	if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { return tx.InsertOrder(ctx, o) }); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("duplicate order id: %v, want ErrConflict", err)
	}
	err = os.InOrderTx(ctx, func(tx commerce.OrderTx) error {
		got, err := tx.OrderForUpdate(ctx, "ORD-1")
		if err != nil {
			return err
		}
		if got.Status != "pending" || got.PlanID == nil || *got.PlanID != p.ID || len(got.Keys) != 0 || got.FulfilledAt != nil ||
			string(got.Features) != `{"pro":true}` || got.Email != "a@b.c" {
			t.Fatalf("round trip: %+v", got)
		}
		k := newKey("app", "K-1")
		if err := tx.License().InsertKeys(ctx, []license.Key{k}); err != nil {
			return err
		}
		got.Status, got.Keys, got.PaymentRef, got.FulfilledAt = commerce.OrderFulfilled, []string{"K-1"}, "pay", &t0
		return tx.UpdateOrder(ctx, got)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.LicenseStore().Key(ctx, "app", "K-1"); err != nil {
		t.Fatalf("the key delivered with the order: %v", err)
	}
	if err := commerceTx(t, db, func(ctx context.Context, tx commerce.Tx) error { return tx.DeletePlan(ctx, "app", p.ID) }); err != nil {
		t.Fatal(err)
	}
	list, err := os.Orders(ctx, "app", 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("Orders = %v, %v", list, err)
	}
	if g := list[0]; g.PlanID != nil || g.Status != "fulfilled" || len(g.Keys) != 1 || g.Keys[0] != "K-1" || g.PaymentRef != "pay" ||
		g.FulfilledAt == nil || g.Duration != 30 {
		t.Fatalf("after the plan was deleted: %+v", g)
	}
	if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { _, err := tx.OrderForUpdate(ctx, "nope"); return err }); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	if h, err := os.FulfillmentSecretHash(ctx, "app"); err != nil || h != "" {
		t.Fatalf("fresh app's secret hash = %q, %v", h, err)
	}
	if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { return tx.SetFulfillmentSecretHash(ctx, "app", "abc") }); err != nil {
		t.Fatal(err)
	}
	if h, _ := os.FulfillmentSecretHash(ctx, "app"); h != "abc" {
		t.Fatalf("secret hash = %q", h)
	}
	if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { return tx.SetFulfillmentSecretHash(ctx, "nope", "x") }); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown app: %v", err)
	}
}

// Subscriptions round-trip; due ones are active, without a pending renewal
// order and renewing before the cutoff; the newest of a key is found.
func testSubscriptions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(key string, renews time.Time) *commerce.Subscription {
		return &commerce.Subscription{AppID: "app", PlanName: "Pro", Period: "month", PeriodDays: 30, AmountCents: 500, Currency: "USD",
			LicenseKey: key, Email: "e@x.y", Status: commerce.SubActive, RenewsAt: renews, CreatedAt: t0, UpdatedAt: t0}
	}
	os := db.OrderStore()
	a, b, c := mk("K1", t0.Add(24*time.Hour)), mk("K2", t0.Add(48*time.Hour)), mk("K1", t0.Add(72*time.Hour))
	for _, s := range []*commerce.Subscription{a, b, c} {
		if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { return tx.InsertSubscription(ctx, s) }); err != nil {
			t.Fatal(err)
		}
	}
	due, err := os.DueSubscriptions(ctx, t0.Add(60*time.Hour), 10)
	if err != nil || len(due) != 2 || due[0].ID != a.ID || due[1].ID != b.ID {
		t.Fatalf("DueSubscriptions = %+v, %v", due, err)
	}
	got := due[0]
	if got.LicenseKey != "K1" || got.PeriodDays != 30 || got.AmountCents != 500 || !got.RenewsAt.Equal(a.RenewsAt) || got.RenewalOrderID != "" ||
		got.PlanID != nil || got.Email != "e@x.y" {
		t.Fatalf("round trip: %+v", got)
	}
	err = os.InOrderTx(ctx, func(tx commerce.OrderTx) error {
		s, err := tx.SubscriptionForUpdate(ctx, "app", a.ID)
		if err != nil {
			return err
		}
		s.RenewalOrderID = "ORD-R"
		if err := tx.UpdateSubscription(ctx, s); err != nil {
			return err
		}
		s2, err := tx.SubscriptionForUpdate(ctx, "app", b.ID)
		if err != nil {
			return err
		}
		s2.Status = commerce.SubCancelled
		return tx.UpdateSubscription(ctx, s2)
	})
	if err != nil {
		t.Fatal(err)
	}
	if due, _ := os.DueSubscriptions(ctx, t0.Add(100*time.Hour), 10); len(due) != 1 || due[0].ID != c.ID {
		t.Fatalf("due after a renewal order and a cancel: %+v", due)
	}
	newest, err := os.SubscriptionOfKey(ctx, "app", "K1")
	if err != nil || newest.ID != c.ID {
		t.Fatalf("SubscriptionOfKey = %+v, %v", newest, err)
	}
	if _, err := os.SubscriptionOfKey(ctx, "app", "K9"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	all, err := os.Subscriptions(ctx, "app")
	if err != nil || len(all) != 3 || all[0].ID != c.ID || all[2].RenewalOrderID != "ORD-R" {
		t.Fatalf("Subscriptions = %+v, %v", all, err)
	}
	if err := os.InOrderTx(ctx, func(tx commerce.OrderTx) error { _, err := tx.SubscriptionForUpdate(ctx, "other", a.ID); return err }); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("another app's subscription: %v", err)
	}
}
