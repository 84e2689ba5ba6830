package commerce

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Order states.
const (
	OrderPending   = "pending"
	OrderFulfilled = "fulfilled"
	OrderRefunded  = "refunded"
)

// Order is a purchase of a plan or level. The delivered key's terms are
// copied from the plan when the order is made, so editing or deleting the
// plan later does not change what a paid order delivers.
type Order struct {
	ID          string // ORD-…
	AppID       string
	PlanID      *int64
	PlanName    string
	Kind        string
	AmountCents int64
	Currency    string
	KeyType     license.KeyType
	Duration    int
	MaxDevices  int
	Features    json.RawMessage
	Email       string
	Status      string
	PaymentRef  string
	Keys        []string // delivered license keys
	// SubscriptionID marks a renewal order: it extends that subscription's
	// key instead of delivering a new one.
	SubscriptionID *int64
	CreatedAt      time.Time
	FulfilledAt    *time.Time
	UpdatedAt      time.Time
}

// OrderTx is what orders need of a write transaction. License is the same
// transaction seen by the license package, so delivering or banning a key
// commits together with the order.
type OrderTx interface {
	InsertOrder(ctx context.Context, o *Order) error
	OrderForUpdate(ctx context.Context, id string) (*Order, error)
	UpdateOrder(ctx context.Context, o *Order) error
	PlanForUpdate(ctx context.Context, appID string, id int64) (*Plan, error)
	SetFulfillmentSecretHash(ctx context.Context, appID, hash string) error
	InsertSubscription(ctx context.Context, s *Subscription) error
	SubscriptionForUpdate(ctx context.Context, appID string, id int64) (*Subscription, error)
	UpdateSubscription(ctx context.Context, s *Subscription) error
	journal.Journal
	// License is this transaction as the license package sees it: a
	// delivered key, a refund's ban and a renewal's extension commit with
	// the order.
	License() license.Tx
}

// OrderStore is the persistence of orders.
type OrderStore interface {
	// FulfillmentSecretHash returns the SHA-256 (hex) of the app's
	// fulfilment secret, "" when it has none (ErrNotFound: no such app).
	FulfillmentSecretHash(ctx context.Context, appID string) (string, error)
	// Orders returns an app's most recent orders, newest first.
	Orders(ctx context.Context, appID string, limit int) ([]Order, error)
	Subscriptions(ctx context.Context, appID string) ([]Subscription, error)
	// SubscriptionOfKey returns the key's newest subscription.
	SubscriptionOfKey(ctx context.Context, appID, licenseKey string) (*Subscription, error)
	// DueSubscriptions returns active subscriptions without a pending
	// renewal order whose renews_at is before cutoff.
	DueSubscriptions(ctx context.Context, cutoff time.Time, limit int) ([]Subscription, error)
	InOrderTx(ctx context.Context, fn func(OrderTx) error) error
}

// Orders sells plans: it creates orders and fulfils them exactly once.
type Orders struct {
	store  OrderStore
	now    func() time.Time
	random io.Reader
	prefix func(ctx context.Context, appID string) (string, error)
}

// NewOrders returns the order desk; prefix returns an app's key prefix.
func NewOrders(store OrderStore, now func() time.Time, random io.Reader, prefix func(ctx context.Context, appID string) (string, error)) *Orders {
	return &Orders{store: store, now: now, random: random, prefix: prefix}
}

// NewFulfillmentSecret gives the app a new fulfilment secret, returned once;
// only its SHA-256 is stored, and the old one stops working at once.
func (o *Orders) NewFulfillmentSecret(ctx context.Context, actor audit.Actor, appID string) (string, error) {
	secret, err := license.NewSecret(o.random)
	if err != nil {
		return "", err
	}
	now := o.now().UTC()
	err = o.store.InOrderTx(ctx, func(tx OrderTx) error {
		if err := tx.SetFulfillmentSecretHash(ctx, appID, license.HashToken(secret)); errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("App")
		} else if err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "app.fulfillment_secret", AppID: appID, Target: appID})
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// newOrderID returns ORD-XXXXX-XXXXX-XXXXX: 75 random bits.
func (o *Orders) newOrderID() (string, error) {
	id, err := license.NewKeyString(o.random, "ORD")
	if err != nil {
		return "", err
	}
	return id[:len(id)-6], nil // ORD- and three groups of five
}

// CreateOrder makes a pending order for an active plan of the app and
// records new_order. It returns MISSING_FIELDS or NOT_FOUND.
func (o *Orders) CreateOrder(ctx context.Context, appID string, planID int64, email string) (*Order, error) {
	if planID <= 0 {
		return nil, apperr.Missing("plan_id")
	}
	email = strings.TrimSpace(email)
	if email == "" {
		return nil, apperr.Missing("email")
	}
	if err := license.CheckEmail(email); err != nil {
		return nil, err
	}
	id, err := o.newOrderID()
	if err != nil {
		return nil, err
	}
	now := o.now().UTC()
	var out *Order
	err = o.store.InOrderTx(ctx, func(tx OrderTx) error {
		p, err := tx.PlanForUpdate(ctx, appID, planID)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && !p.Active) {
			return apperr.NotFoundOf("Plan")
		} else if err != nil {
			return err
		}
		ord := &Order{ID: id, AppID: appID, PlanID: &p.ID, PlanName: p.Name, Kind: p.Kind, AmountCents: p.PriceCents,
			Currency: p.Currency, KeyType: p.KeyType, Duration: p.Duration, MaxDevices: p.MaxDevices, Features: p.Features,
			Email: email, Status: OrderPending, Keys: []string{}, CreatedAt: now, UpdatedAt: now}
		if err := tx.InsertOrder(ctx, ord); err != nil {
			return err
		}
		out = ord
		return tx.AddEvent(ctx, event.Event{AppID: appID, Type: event.NewOrder, CreatedAt: now, Subject: event.OrderSubject(ord.ID), Data: map[string]any{
			"app_id": appID, "order_id": ord.ID, "plan_id": p.ID, "plan": p.Name, "amount_cents": p.PriceCents,
			"currency": p.Currency, "email": email}})
	})
	return out, err
}

var errBadFulfilSecret = apperr.New(apperr.Unauthenticated, wire.CodeInvalidCredentials, "Unknown order or wrong fulfilment secret.")

// Fulfil completes a paid order exactly once: it generates the key the
// order's terms say, records paymentRef, marks the order fulfilled and
// records order.approved. A repeated call answers the same order and keys
// and generates nothing. secret is the app's fulfilment secret, compared in
// constant time; an unknown order and a wrong secret are the same 401.
func (o *Orders) Fulfil(ctx context.Context, orderID, secret, paymentRef string) (*Order, error) {
	if orderID == "" || secret == "" {
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Missing required field: order_id and secret.")
	}
	if len(paymentRef) > 255 {
		return nil, apperr.InvalidField("payment_ref", "must be at most 255 characters")
	}
	var out *Order
	err := o.store.InOrderTx(ctx, func(tx OrderTx) error {
		ord, err := tx.OrderForUpdate(ctx, orderID)
		if errors.Is(err, apperr.ErrNotFound) {
			return errBadFulfilSecret
		} else if err != nil {
			return err
		}
		want, err := o.store.FulfillmentSecretHash(ctx, ord.AppID)
		if err != nil {
			return err
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(license.HashToken(secret))) != 1 {
			return errBadFulfilSecret
		}
		out = ord
		return o.complete(ctx, tx, ord, paymentRef, audit.System)
	})
	return out, err
}

// Approve fulfils an order by hand (the owner saw the payment elsewhere).
func (o *Orders) Approve(ctx context.Context, actor audit.Actor, appID, orderID, paymentRef string) (*Order, error) {
	var out *Order
	err := o.store.InOrderTx(ctx, func(tx OrderTx) error {
		ord, err := tx.OrderForUpdate(ctx, orderID)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && ord.AppID != appID) {
			return apperr.NotFoundOf("Order")
		} else if err != nil {
			return err
		}
		out = ord
		return o.complete(ctx, tx, ord, paymentRef, actor)
	})
	return out, err
}

// complete delivers a pending order's key; a fulfilled order is left as it
// is (idempotent); a refunded one is a conflict.
func (o *Orders) complete(ctx context.Context, tx OrderTx, ord *Order, paymentRef string, actor audit.Actor) error {
	switch ord.Status {
	case OrderFulfilled:
		return nil
	case OrderRefunded:
		return apperr.New(apperr.Conflict, wire.CodeConflict, "This order was refunded.")
	}
	now := o.now().UTC()
	lt := tx.License()
	if ord.SubscriptionID != nil {
		if err := renew(ctx, tx, ord, now); err != nil {
			return err
		}
	} else {
		prefix, err := o.prefix(ctx, ord.AppID)
		if err != nil {
			return err
		}
		lk, err := license.NewKeyString(o.random, prefix)
		if err != nil {
			return err
		}
		k := license.Key{AppID: ord.AppID, LicenseKey: lk, Status: license.StatusUnused, Type: ord.KeyType, Duration: ord.Duration,
			MaxDevices: ord.MaxDevices, Note: "order " + ord.ID, Features: ord.Features, CreatedAt: now, UpdatedAt: now}
		if err := lt.InsertKeys(ctx, []license.Key{k}); err != nil {
			return err
		}
		ord.Keys = []string{lk}
		if ord.Kind == KindLevel {
			if err := subscribe(ctx, tx, ord, lk, now); err != nil {
				return err
			}
		}
	}
	ord.Status, ord.PaymentRef, ord.FulfilledAt, ord.UpdatedAt = OrderFulfilled, paymentRef, &now, now
	if err := tx.UpdateOrder(ctx, ord); err != nil {
		return err
	}
	if err := tx.AddEvent(ctx, event.Event{AppID: ord.AppID, Type: event.OrderApproved, CreatedAt: now, Subject: event.OrderSubject(ord.ID), Data: map[string]any{
		"app_id": ord.AppID, "order_id": ord.ID, "license_keys": ord.Keys, "payment_ref": paymentRef, "email": ord.Email}}); err != nil {
		return err
	}
	return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "order.fulfil", AppID: ord.AppID, Target: ord.ID,
		Details: map[string]any{"payment_ref": paymentRef, "license_keys": ord.Keys}})
}

// Refund marks a fulfilled order refunded and bans its delivered keys
// (their sessions end with BANNED at the next heartbeat).
func (o *Orders) Refund(ctx context.Context, actor audit.Actor, appID, orderID, reason string) (*Order, error) {
	now := o.now().UTC()
	var out *Order
	err := o.store.InOrderTx(ctx, func(tx OrderTx) error {
		ord, err := tx.OrderForUpdate(ctx, orderID)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && ord.AppID != appID) {
			return apperr.NotFoundOf("Order")
		} else if err != nil {
			return err
		}
		if ord.Status != OrderFulfilled {
			return apperr.New(apperr.Conflict, wire.CodeConflict, "Only a fulfilled order can be refunded.")
		}
		for _, lk := range ord.Keys {
			if err := license.BanInTx(ctx, tx.License(), appID, lk, "order "+ord.ID+" refunded", now); err != nil {
				return err
			}
		}
		ord.Status, ord.UpdatedAt = OrderRefunded, now
		if err := tx.UpdateOrder(ctx, ord); err != nil {
			return err
		}
		out = ord
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "order.refund", AppID: appID, Target: ord.ID,
			Details: map[string]any{"reason": reason, "license_keys": ord.Keys}})
	})
	return out, err
}

// List returns an app's most recent orders (limit ≤ 1000, default 100),
// newest first.
func (o *Orders) List(ctx context.Context, appID string, limit int) ([]Order, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return o.store.Orders(ctx, appID, limit)
}

// Wire is the order as the client and admin routes show it.
func (o *Order) Wire() wire.Order {
	return wire.Order{OrderID: o.ID, Status: o.Status, PlanID: o.PlanID, Plan: o.PlanName, Type: o.Kind,
		Amount: float64(o.AmountCents) / 100, AmountCents: o.AmountCents, Currency: o.Currency, Email: o.Email,
		PaymentRef: o.PaymentRef, LicenseKeys: o.Keys, CreatedAt: wire.At(o.CreatedAt), FulfilledAt: wire.AtPtr(o.FulfilledAt)}
}
