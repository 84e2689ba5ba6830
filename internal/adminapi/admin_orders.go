package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
)

// orderView is an order as the admin API shows it (publicOrder's fields).
func orderView(o *commerce.Order) map[string]any {
	return map[string]any{"order_id": o.ID, "status": o.Status, "plan_id": o.PlanID, "plan": o.PlanName, "type": o.Kind,
		"amount": float64(o.AmountCents) / 100, "amount_cents": o.AmountCents, "currency": o.Currency, "email": o.Email,
		"payment_ref": o.PaymentRef, "license_keys": o.Keys, "created_at": optStamp(&o.CreatedAt), "fulfilled_at": optStamp(o.FulfilledAt)}
}

// listOrders: GET orders.php?app_id=[&limit=].
func (a *API) listOrders(ctx context.Context, c *adminCall) (map[string]any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	os, err := a.orders.List(ctx, appID, int(limit))
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(os))
	for i := range os {
		out[i] = orderView(&os[i])
	}
	return map[string]any{"success": true, "orders": out}, nil
}

// orderAction: POST orders.php?action=approve|refund {app_id, order_id,
// payment_ref?, reason?}; action=fulfillment-secret {app_id} makes a new
// fulfilment secret, shown once.
func (a *API) orderAction(ctx context.Context, c *adminCall) (map[string]any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	action := c.q.Get("action")
	if action == "fulfillment-secret" {
		secret, err := a.orders.NewFulfillmentSecret(ctx, c.actor, appID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "fulfillment_secret": secret}, nil
	}
	id, err := c.required("order_id")
	if err != nil {
		return nil, err
	}
	var o *commerce.Order
	switch action {
	case "approve":
		ref, err := c.f.Str("payment_ref")
		if err != nil {
			return nil, err
		}
		o, err = a.orders.Approve(ctx, c.actor, appID, id, ref)
		if err != nil {
			return nil, err
		}
	case "refund":
		reason, err := c.f.Str("reason")
		if err != nil {
			return nil, err
		}
		if o, err = a.orders.Refund(ctx, c.actor, appID, id, reason); err != nil {
			return nil, err
		}
	default:
		return nil, apperr.InvalidField("action", "must be approve, refund or fulfillment-secret")
	}
	return map[string]any{"success": true, "order": orderView(o)}, nil
}

func subscriptionView(s *commerce.Subscription) map[string]any {
	v := map[string]any{"id": s.ID, "plan_id": s.PlanID, "level": s.PlanName, "interval": s.Period, "period_days": s.PeriodDays,
		"amount": float64(s.AmountCents) / 100, "amount_cents": s.AmountCents, "currency": s.Currency, "license_key": s.LicenseKey,
		"email": s.Email, "status": s.Status, "renews_at": optStamp(&s.RenewsAt), "cancel_at_period_end": s.Status == commerce.SubCancelled,
		"renewal_order_id": nil, "created_at": optStamp(&s.CreatedAt)}
	if s.RenewalOrderID != "" {
		v["renewal_order_id"] = s.RenewalOrderID
	}
	return v
}

// listSubscriptions: GET subscriptions.php?app_id=, newest first.
func (a *API) listSubscriptions(ctx context.Context, c *adminCall) (map[string]any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	subs, err := a.orders.Subscriptions(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(subs))
	for i := range subs {
		out[i] = subscriptionView(&subs[i])
	}
	return map[string]any{"success": true, "subscriptions": out}, nil
}

// cancelSubscription: POST subscriptions.php?action=cancel {app_id, id}.
func (a *API) cancelSubscription(ctx context.Context, c *adminCall) (map[string]any, error) {
	if c.q.Get("action") != "cancel" {
		return nil, apperr.InvalidField("action", "must be cancel")
	}
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	sub, err := a.orders.CancelSubscription(ctx, c.actor, appID, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "subscription": subscriptionView(sub)}, nil
}
