package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/wire"
)

// publicOrder is an order as its buyer sees it.
func publicOrder(o *commerce.Order) wire.Order {
	return wire.Order{OrderID: o.ID, Status: o.Status, PlanID: o.PlanID, Plan: o.PlanName, Type: o.Kind,
		Amount: float64(o.AmountCents) / 100, AmountCents: o.AmountCents, Currency: o.Currency, Email: o.Email,
		PaymentRef: o.PaymentRef, LicenseKeys: o.Keys, CreatedAt: wire.At(o.CreatedAt), FulfilledAt: wire.AtPtr(o.FulfilledAt)}
}

// orderView is an order as the admin API shows it (publicOrder's fields).
func orderView(o *commerce.Order) map[string]any {
	return map[string]any{"order_id": o.ID, "status": o.Status, "plan_id": o.PlanID, "plan": o.PlanName, "type": o.Kind,
		"amount": float64(o.AmountCents) / 100, "amount_cents": o.AmountCents, "currency": o.Currency, "email": o.Email,
		"payment_ref": o.PaymentRef, "license_keys": o.Keys, "created_at": optStamp(&o.CreatedAt), "fulfilled_at": optStamp(o.FulfilledAt)}
}

// createOrder: POST app/pricing.php {app_id, plan_id, email} (public) → a
// pending order; event new_order.
func (a *API) createOrder(w http.ResponseWriter, r *http.Request) {
	f, ok := a.PlainBody(w, r)
	if !ok {
		return
	}
	appID, err := f.Str("app_id")
	if err == nil && appID == "" {
		appID = r.URL.Query().Get("app_id")
	}
	if err == nil && strings.TrimSpace(appID) == "" {
		err = apperr.Missing("app_id")
	}
	var planID int64
	var email string
	if err == nil {
		planID, _, err = f.Int("plan_id")
	}
	if err == nil {
		email, err = f.Str("email")
	}
	if err == nil {
		_, err = a.liveApp(r.Context(), strings.TrimSpace(appID))
	}
	var o *commerce.Order
	if err == nil {
		o, err = a.orders.CreateOrder(r.Context(), strings.TrimSpace(appID), planID, email)
	}
	if err != nil {
		a.Error(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, &wire.OrderReply{Success: true, Message: "Order created.", Order: publicOrder(o)})
}

// pricingRoute: GET reads the price list, or with action=check a
// subscription (POST, creating an order, is createOrder).
func (a *API) pricingRoute(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("action") == "check" {
		a.subscriptionCheck(w, r)
		return
	}
	a.pricing(w, r)
}

// fulfill: POST app/fulfill.php {order_id, secret, payment_ref?}
// (server-to-server) → the fulfilled order with its keys; repeatable.
func (a *API) fulfill(w http.ResponseWriter, r *http.Request) {
	f, ok := a.PlainBody(w, r)
	if !ok {
		return
	}
	id, err := f.Str("order_id")
	var secret, ref string
	if err == nil {
		secret, err = f.Str("secret")
	}
	if err == nil {
		ref, err = f.Str("payment_ref")
	}
	var o *commerce.Order
	if err == nil {
		o, err = a.orders.Fulfil(r.Context(), strings.TrimSpace(id), strings.TrimSpace(secret), strings.TrimSpace(ref))
	}
	if err != nil {
		a.Error(w, r, err)
		return
	}
	res := &wire.FulfillReply{Success: true, Message: "Order fulfilled.", Order: publicOrder(o)}
	if len(o.Keys) > 0 {
		res.LicenseKey = o.Keys[0]
	}
	edge.WriteJSON(w, http.StatusOK, res)
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

// subscriptionCheck: GET app/pricing.php?action=check&app_id= with
// license_key= or username= (public) → the newest subscription of the key,
// or of the keys the account redeemed; null when there is none. Being
// public, the reply carries no credential: not the key (which signs in to
// the customer portal; a username is no secret) and not the e-mail.
func (a *API) subscriptionCheck(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	appID, lk, user := strings.TrimSpace(q.Get("app_id")), strings.TrimSpace(q.Get("license_key")), strings.TrimSpace(q.Get("username"))
	if appID == "" || (lk == "" && user == "") {
		a.Error(w, r, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Missing required field: app_id and license_key or username."))
		return
	}
	if _, err := a.liveApp(r.Context(), appID); err != nil {
		a.Error(w, r, err)
		return
	}
	keys := []string{lk}
	if lk == "" {
		keys = nil
		if d, err := a.accounts.GetAccount(r.Context(), appID, user); err == nil {
			for _, rd := range d.Redemptions {
				keys = append(keys, rd.LicenseKey)
			}
		} else if apperr.CodeOf(err) != wire.CodeNotFound {
			a.Error(w, r, err)
			return
		}
	}
	var sub *commerce.Subscription
	for _, k := range keys {
		s, err := a.orders.SubscriptionOf(r.Context(), appID, k)
		if err != nil {
			a.Error(w, r, err)
			return
		}
		if s != nil && (sub == nil || s.ID > sub.ID) {
			sub = s
		}
	}
	res := &wire.SubscriptionCheckReply{Success: true}
	if sub != nil {
		res.Subscription, res.Active = publicSubscription(sub), sub.Status == commerce.SubActive
	}
	edge.WriteJSON(w, http.StatusOK, res)
}

// publicSubscription is a subscription as the public check shows it: no
// key, no e-mail.
func publicSubscription(s *commerce.Subscription) *wire.PublicSubscription {
	v := &wire.PublicSubscription{ID: s.ID, PlanID: s.PlanID, Level: s.PlanName, Interval: s.Period, PeriodDays: s.PeriodDays,
		Amount: float64(s.AmountCents) / 100, AmountCents: s.AmountCents, Currency: s.Currency, Status: s.Status,
		RenewsAt: wire.At(s.RenewsAt), CancelAtPeriodEnd: s.Status == commerce.SubCancelled, CreatedAt: wire.At(s.CreatedAt)}
	if s.RenewalOrderID != "" {
		id := s.RenewalOrderID
		v.RenewalOrderID = &id
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
