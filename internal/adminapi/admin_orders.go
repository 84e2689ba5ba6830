package adminapi

import (
	"context"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/wire"
)

// listOrders: GET orders.php?app_id=[&limit=].
func (a *API) listOrders(ctx context.Context, c *adminCall) (any, error) {
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
	out := make([]wire.Order, len(os))
	for i := range os {
		out[i] = os[i].Wire()
	}
	return &wire.OrderListReply{Success: true, Orders: out}, nil
}

// orderAction: POST orders.php?action=approve|refund {app_id, order_id,
// payment_ref?, reason?}; action=fulfillment-secret {app_id} makes a new
// fulfilment secret, shown once.
func (a *API) orderAction(ctx context.Context, c *adminCall) (any, error) {
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
		return &wire.FulfillmentSecretReply{Success: true, FulfillmentSecret: secret}, nil
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
	return &wire.AdminOrderReply{Success: true, Order: o.Wire()}, nil
}

// listSubscriptions: GET subscriptions.php?app_id=, newest first.
func (a *API) listSubscriptions(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	subs, err := a.orders.Subscriptions(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Subscription, len(subs))
	for i := range subs {
		out[i] = subs[i].Wire()
	}
	return &wire.SubscriptionListReply{Success: true, Subscriptions: out}, nil
}

// cancelSubscription: POST subscriptions.php?action=cancel {app_id, id}.
func (a *API) cancelSubscription(ctx context.Context, c *adminCall) (any, error) {
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
	return &wire.SubscriptionReply{Success: true, Subscription: sub.Wire()}, nil
}
