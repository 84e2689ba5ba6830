package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// The customer store answers only for the holder it is given: its key (or
// the keys redeemed onto its account) in its app. Another key's devices,
// sessions, orders and subscriptions, and anything of the same key string
// in another app, are never returned.
func testCustomerHolder(t *testing.T, db *store.DB) {
	ctx := context.Background()
	cs := db.CustomerStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	// InsertKeys maps returned IDs by key string, so the other app's K-1
	// goes in its own batch.
	keys := append(addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2")), addKeys(t, db, newKey("other", "K-1"))...)
	addKeys(t, db, newKey("app", "K-1X"))
	mine, theirs := keys[0], keys[1]
	h := customer.Holder{AppID: "app", KeyID: mine.ID}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i, k := range keys[:3] {
			if err := tx.UpsertDevice(ctx, k.ID, "hw-"+k.LicenseKey, t0); err != nil {
				return err
			}
			s := newSession("s"+string(rune('a'+i)), k.AppID, k.ID, t0)
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return tx.InsertSession(ctx, newSession("ended", "app", mine.ID, t0))
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.EndSession(ctx, "ended", "LOGOUT", t0) })

	devs, err := cs.Devices(ctx, h)
	if err != nil || len(devs) != 1 || devs[0].HWID != "hw-K-1" || !devs[0].CreatedAt.Equal(stored(t0)) {
		t.Fatalf("Devices = %+v, %v", devs, err)
	}
	if devs, err := cs.Devices(ctx, customer.Holder{AppID: "other", KeyID: mine.ID}); err != nil || len(devs) != 0 {
		t.Fatalf("Devices of the key under another app = %+v, %v", devs, err)
	}
	sess, err := cs.LiveSessions(ctx, h)
	if err != nil || len(sess) != 1 || sess[0].ID != "sa" {
		t.Fatalf("LiveSessions = %+v, %v", sess, err)
	}
	lk, err := cs.HolderKeys(ctx, h)
	if err != nil || len(lk) != 1 || lk[0] != "K-1" {
		t.Fatalf("HolderKeys = %v, %v", lk, err)
	}
	for _, id := range []string{"sb", "sc", "ended", "nope"} {
		err := cs.InTx(ctx, func(tx customer.Tx) error { _, err := tx.LiveSession(ctx, h, id); return err })
		wantErr(t, "LiveSession "+id, err, apperr.ErrNotFound)
	}
	if err := cs.InTx(ctx, func(tx customer.Tx) error { _, err := tx.LiveSession(ctx, h, "sa"); return err }); err != nil {
		t.Fatalf("LiveSession of the holder: %v", err)
	}

	// Orders: one delivering K-1, one K-2, one K-1X (a longer string), one
	// K-1 of the other app, and a renewal of K-1's subscription.
	os := db.OrderStore()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	order := func(id, app string, keys []string, sub *int64, n int) *commerce.Order {
		return &commerce.Order{ID: id, AppID: app, PlanName: "P", Kind: "plan", AmountCents: 499, Currency: "USD",
			KeyType: license.TypeDays, Duration: 30, MaxDevices: 1, Features: []byte(`{}`), Status: commerce.OrderFulfilled,
			Keys: keys, SubscriptionID: sub, CreatedAt: at.Add(time.Duration(n) * time.Minute), UpdatedAt: at}
	}
	sub := func(app, lk string) *commerce.Subscription {
		return &commerce.Subscription{AppID: app, PlanName: "Pro", Period: "month", PeriodDays: 30, AmountCents: 500, Currency: "USD",
			LicenseKey: lk, Status: commerce.SubActive, RenewsAt: at, CreatedAt: at, UpdatedAt: at}
	}
	subMine, subTheirs, subElsewhere := sub("app", "K-1"), sub("app", "K-2"), sub("other", "K-1")
	err = os.InOrderTx(ctx, func(tx commerce.OrderTx) error {
		for _, s := range []*commerce.Subscription{subMine, subTheirs, subElsewhere} {
			if err := tx.InsertSubscription(ctx, s); err != nil {
				return err
			}
		}
		for _, o := range []*commerce.Order{order("O-1", "app", []string{"K-1"}, nil, 1), order("O-2", "app", []string{"K-2"}, nil, 2),
			order("O-3", "app", []string{"K-1X"}, nil, 3), order("O-4", "other", []string{"K-1"}, nil, 4),
			order("O-5", "app", []string{}, &subMine.ID, 5), order("O-6", "app", []string{}, &subTheirs.ID, 6),
			order("O-7", "app", []string{"K-2", "K-1"}, nil, 7)} {
			if err := tx.InsertOrder(ctx, o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ords, err := cs.Orders(ctx, h, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range ords {
		ids = append(ids, o.ID)
	}
	if len(ids) != 3 || ids[0] != "O-7" || ids[1] != "O-5" || ids[2] != "O-1" {
		t.Fatalf("Orders = %v, want O-7, O-5, O-1", ids)
	}
	if ords, _ := cs.Orders(ctx, h, 1); len(ords) != 1 {
		t.Fatalf("Orders with limit 1: %d", len(ords))
	}
	subs, err := cs.Subscriptions(ctx, h)
	if err != nil || len(subs) != 1 || subs[0].ID != subMine.ID {
		t.Fatalf("Subscriptions = %+v, %v", subs, err)
	}
	for _, id := range []int64{subTheirs.ID, subElsewhere.ID, 9999} {
		err := cs.InTx(ctx, func(tx customer.Tx) error { _, err := tx.SubscriptionForUpdate(ctx, h, id); return err })
		wantErr(t, "SubscriptionForUpdate of another", err, apperr.ErrNotFound)
	}
	err = cs.InTx(ctx, func(tx customer.Tx) error {
		s, err := tx.SubscriptionForUpdate(ctx, h, subMine.ID)
		if err != nil {
			return err
		}
		return commerce.CancelInTx(ctx, tx.Orders(), s, customerActor, at)
	})
	if err != nil {
		t.Fatalf("cancel own subscription: %v", err)
	}
	if subs, _ := cs.Subscriptions(ctx, h); subs[0].Status != commerce.SubCancelled {
		t.Fatalf("after cancel: %+v", subs[0])
	}
	if subs, _ := cs.Subscriptions(ctx, customer.Holder{AppID: "app", KeyID: theirs.ID}); len(subs) != 1 || subs[0].Status != commerce.SubActive {
		t.Fatalf("the other key's subscription: %+v", subs)
	}
}

var customerActor = audit.Actor{Kind: "customer", Name: "…K-1", IP: "203.0.113.9"}

// An account holder owns the keys redeemed onto it: their orders and
// subscriptions, its own devices and sessions, nothing of another account.
func testCustomerAccountHolder(t *testing.T, db *store.DB) {
	ctx := context.Background()
	cs := db.CustomerStore()
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	a1 := &license.Account{AppID: "app", Username: "alice", PasswordHash: "h", Status: license.StatusActive, MaxDevices: 1,
		Features: []byte(`{}`), CreatedAt: t0, UpdatedAt: t0}
	a2 := &license.Account{AppID: "app", Username: "bob", PasswordHash: "h", Status: license.StatusActive, MaxDevices: 1,
		Features: []byte(`{}`), CreatedAt: t0, UpdatedAt: t0}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i, a := range []*license.Account{a1, a2} {
			if err := tx.InsertAccount(ctx, a); err != nil {
				return err
			}
			if err := tx.InsertRedemption(ctx, &license.Redemption{KeyID: keys[i].ID, AccountID: a.ID, DaysAdded: 30, CreatedAt: t0}); err != nil {
				return err
			}
			if err := tx.UpsertAccountDevice(ctx, a.ID, "hw-"+a.Username, t0); err != nil {
				return err
			}
			s := &license.Session{ID: "s-" + a.Username, TokenHash: "t-" + a.Username, AppID: "app", AccountID: &a.ID, HWID: "hw-" + a.Username,
				CreatedAt: t0, LastSeenAt: t0}
			if err := tx.InsertSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	h := customer.Holder{AppID: "app", AccountID: a1.ID}
	if lk, err := cs.HolderKeys(ctx, h); err != nil || len(lk) != 1 || lk[0] != "K-1" {
		t.Fatalf("HolderKeys = %v, %v", lk, err)
	}
	if devs, err := cs.Devices(ctx, h); err != nil || len(devs) != 1 || devs[0].HWID != "hw-alice" {
		t.Fatalf("Devices = %+v, %v", devs, err)
	}
	if ss, err := cs.LiveSessions(ctx, h); err != nil || len(ss) != 1 || ss[0].ID != "s-alice" {
		t.Fatalf("LiveSessions = %+v, %v", ss, err)
	}
	err := cs.InTx(ctx, func(tx customer.Tx) error { _, err := tx.LiveSession(ctx, h, "s-bob"); return err })
	if !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("another account's session: %v", err)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	err = db.OrderStore().InOrderTx(ctx, func(tx commerce.OrderTx) error {
		for i, k := range []string{"K-1", "K-2"} {
			o := &commerce.Order{ID: "O-" + k, AppID: "app", PlanName: "P", Kind: "plan", Currency: "USD", KeyType: license.TypeDays,
				Duration: 30, MaxDevices: 1, Features: []byte(`{}`), Status: commerce.OrderFulfilled, Keys: []string{k},
				CreatedAt: at.Add(time.Duration(i) * time.Minute), UpdatedAt: at}
			if err := tx.InsertOrder(ctx, o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ords, err := cs.Orders(ctx, h, 100); err != nil || len(ords) != 1 || ords[0].ID != "O-K-1" {
		t.Fatalf("account Orders = %+v, %v", ords, err)
	}
}
