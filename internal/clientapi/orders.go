package clientapi

import (
	"net/http"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/wire"
)

// publicOrder is an order as its buyer sees it.
func publicOrder(o *commerce.Order) wire.Order { return o.Wire() }

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
	v := s.Public()
	return &v
}
