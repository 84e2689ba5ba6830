package commerce

import (
	"context"
	"errors"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Subscription states.
const (
	SubActive    = "active"
	SubCancelled = "cancelled" // no more renewals; the key runs out
)

// Subscription events (the API reference names the family subscription.*).
const (
	SubscriptionCreated             = "subscription.created"
	SubscriptionRenewed             = "subscription.renewed"
	SubscriptionCancelled           = "subscription.cancelled"
	SubscriptionRenewalOrderCreated = "subscription.renewal_order_created"
)

// RenewalLead is how long before renews_at the renewal order is made.
const RenewalLead = 3 * 24 * time.Hour

// Subscription renews the key a level order delivered, every PeriodDays,
// through renewal orders of AmountCents.
type Subscription struct {
	ID             int64
	AppID          string
	PlanID         *int64
	PlanName       string
	Period         string
	PeriodDays     int
	AmountCents    int64
	Currency       string
	LicenseKey     string
	Email          string
	Status         string
	RenewsAt       time.Time
	RenewalOrderID string // the pending renewal order, "" when none
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// subscribe starts the subscription of a fulfilled level order (in its
// transaction).
func subscribe(ctx context.Context, tx OrderTx, ord *Order, lk string, now time.Time) error {
	period := PeriodMonth
	if ord.Duration >= 365 {
		period = PeriodYear
	}
	sub := &Subscription{AppID: ord.AppID, PlanID: ord.PlanID, PlanName: ord.PlanName, Period: period, PeriodDays: ord.Duration,
		AmountCents: ord.AmountCents, Currency: ord.Currency, LicenseKey: lk, Email: ord.Email, Status: SubActive,
		RenewsAt: now.Add(days(ord.Duration)), CreatedAt: now, UpdatedAt: now}
	if err := tx.InsertSubscription(ctx, sub); err != nil {
		return err
	}
	return tx.AddEvent(ctx, event.Event{AppID: ord.AppID, Type: SubscriptionCreated, CreatedAt: now, Subject: event.SubscriptionSubject(sub.ID), Data: map[string]any{
		"app_id": ord.AppID, "subscription_id": sub.ID, "order_id": ord.ID, "license_key": lk, "plan": ord.PlanName,
		"renews_at": license.Timestamp(sub.RenewsAt)}})
}

// renew completes a paid renewal order (in its transaction): the key runs
// one more period and renews_at moves on.
func renew(ctx context.Context, tx OrderTx, ord *Order, now time.Time) error {
	sub, err := tx.SubscriptionForUpdate(ctx, ord.AppID, *ord.SubscriptionID)
	if err != nil {
		return err
	}
	if err := license.ExtendInTx(ctx, tx.License(), ord.AppID, sub.LicenseKey, sub.PeriodDays, now); err != nil {
		return err
	}
	ord.Keys = []string{sub.LicenseKey}
	sub.RenewsAt, sub.UpdatedAt = sub.RenewsAt.Add(days(sub.PeriodDays)), now
	if sub.RenewalOrderID == ord.ID {
		sub.RenewalOrderID = ""
	}
	if err := tx.UpdateSubscription(ctx, sub); err != nil {
		return err
	}
	return tx.AddEvent(ctx, event.Event{AppID: ord.AppID, Type: SubscriptionRenewed, CreatedAt: now, Subject: event.SubscriptionSubject(sub.ID), Data: map[string]any{
		"app_id": ord.AppID, "subscription_id": sub.ID, "order_id": ord.ID, "license_key": sub.LicenseKey,
		"renews_at": license.Timestamp(sub.RenewsAt)}})
}

// QueueRenewals makes the renewal order of every active subscription due
// within RenewalLead that has none yet (new_order and
// subscription.renewal_order_created). It returns how many it made. Run it
// periodically; a subscription is locked while its order is made, so
// several processes never make two.
func (o *Orders) QueueRenewals(ctx context.Context) (int, error) {
	now := o.now().UTC()
	due, err := o.store.DueSubscriptions(ctx, now.Add(RenewalLead), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		id, err := o.newOrderID()
		if err != nil {
			return n, err
		}
		made := false
		err = o.store.InOrderTx(ctx, func(tx OrderTx) error {
			sub, err := tx.SubscriptionForUpdate(ctx, d.AppID, d.ID)
			if err != nil || sub.Status != SubActive || sub.RenewalOrderID != "" {
				return err
			}
			ord := &Order{ID: id, AppID: sub.AppID, PlanID: sub.PlanID, PlanName: sub.PlanName, Kind: KindLevel,
				AmountCents: sub.AmountCents, Currency: sub.Currency, KeyType: license.TypeDays, Duration: sub.PeriodDays, MaxDevices: 1,
				Features: []byte("{}"), Email: sub.Email, Status: OrderPending, Keys: []string{}, SubscriptionID: &sub.ID,
				CreatedAt: now, UpdatedAt: now}
			if err := tx.InsertOrder(ctx, ord); err != nil {
				return err
			}
			sub.RenewalOrderID, sub.UpdatedAt = ord.ID, now
			if err := tx.UpdateSubscription(ctx, sub); err != nil {
				return err
			}
			if err := tx.AddEvent(ctx, event.Event{AppID: sub.AppID, Type: event.NewOrder, CreatedAt: now, Subject: event.OrderSubject(ord.ID), Data: map[string]any{
				"app_id": sub.AppID, "order_id": ord.ID, "plan_id": sub.PlanID, "plan": sub.PlanName, "amount_cents": sub.AmountCents,
				"currency": sub.Currency, "email": sub.Email, "subscription_id": sub.ID}}); err != nil {
				return err
			}
			made = true
			return tx.AddEvent(ctx, event.Event{AppID: sub.AppID, Type: SubscriptionRenewalOrderCreated, CreatedAt: now, Subject: event.SubscriptionSubject(sub.ID), Data: map[string]any{
				"app_id": sub.AppID, "subscription_id": sub.ID, "order_id": ord.ID, "license_key": sub.LicenseKey,
				"renews_at": license.Timestamp(sub.RenewsAt)}})
		})
		if err != nil {
			return n, err
		}
		if made {
			n++
		}
	}
	return n, nil
}

// CancelSubscription stops renewals: the key runs to the end of the paid
// period. Cancelling a cancelled subscription is a conflict.
func (o *Orders) CancelSubscription(ctx context.Context, actor audit.Actor, appID string, id int64) (*Subscription, error) {
	now := o.now().UTC()
	var out *Subscription
	err := o.store.InOrderTx(ctx, func(tx OrderTx) error {
		sub, err := tx.SubscriptionForUpdate(ctx, appID, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Subscription")
		} else if err != nil {
			return err
		}
		out = sub
		return CancelInTx(ctx, tx, sub, actor, now)
	})
	return out, err
}

// CancelInTx cancels sub, read and locked in tx by the caller (who decided
// the actor may), with its subscription.cancelled event and audit entry.
// It returns CONFLICT when sub is already cancelled.
func CancelInTx(ctx context.Context, tx OrderTx, sub *Subscription, actor audit.Actor, now time.Time) error {
	if sub.Status == SubCancelled {
		return apperr.New(apperr.Conflict, wire.CodeConflict, "The subscription is already cancelled.")
	}
	sub.Status, sub.UpdatedAt = SubCancelled, now
	if err := tx.UpdateSubscription(ctx, sub); err != nil {
		return err
	}
	if err := tx.AddEvent(ctx, event.Event{AppID: sub.AppID, Type: SubscriptionCancelled, CreatedAt: now, Subject: event.SubscriptionSubject(sub.ID), Data: map[string]any{
		"app_id": sub.AppID, "subscription_id": sub.ID, "license_key": sub.LicenseKey, "ends_at": license.Timestamp(sub.RenewsAt)}}); err != nil {
		return err
	}
	return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "subscription.cancel", AppID: sub.AppID, Target: sub.LicenseKey,
		Details: map[string]any{"id": sub.ID}})
}

// Subscriptions lists an app's subscriptions, newest first.
func (o *Orders) Subscriptions(ctx context.Context, appID string) ([]Subscription, error) {
	return o.store.Subscriptions(ctx, appID)
}

// SubscriptionOf returns the newest subscription of a license key, or nil.
func (o *Orders) SubscriptionOf(ctx context.Context, appID, licenseKey string) (*Subscription, error) {
	s, err := o.store.SubscriptionOfKey(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	return s, err
}

// Public is the subscription as the public check shows it (no key, no
// e-mail).
func (s *Subscription) Public() wire.PublicSubscription {
	v := wire.PublicSubscription{ID: s.ID, PlanID: s.PlanID, Level: s.PlanName, Interval: s.Period, PeriodDays: s.PeriodDays,
		Amount: float64(s.AmountCents) / 100, AmountCents: s.AmountCents, Currency: s.Currency, Status: s.Status,
		RenewsAt: wire.At(s.RenewsAt), CancelAtPeriodEnd: s.Status == SubCancelled, CreatedAt: wire.At(s.CreatedAt)}
	if s.RenewalOrderID != "" {
		id := s.RenewalOrderID
		v.RenewalOrderID = &id
	}
	return v
}

// Wire is the subscription as the admin API shows it.
func (s *Subscription) Wire() wire.Subscription {
	return wire.Subscription{PublicSubscription: s.Public(), LicenseKey: s.LicenseKey, Email: s.Email}
}
