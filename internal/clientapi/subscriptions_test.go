package clientapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// A level order starts a subscription on its key; renewal orders are made
// ahead of renews_at (once), their payment extends the key by a period,
// and a cancelled subscription makes no more of them.
func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Subs")
		level := s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "level", "name": "Pro", "price": 5,
			"currency": "USD", "interval": "month"}).Obj("plan")
		secret := s.MustAdmin("POST", "/api/admin/orders.php?action=fulfillment-secret", map[string]any{"app_id": a.ID}).Str("fulfillment_secret")
		id := s.SubscriptionOrder(t, a, level["id"])
		t0 := s.Clock.Now()
		key := s.Fulfil(id, secret).Str("license_key")
		if orEvents(t, s, "subscription.created") != 1 {
			t.Fatal("subscription.created not recorded once")
		}
		check := func() map[string]any {
			r := s.Do("GET", "/api/app/pricing.php?action=check&app_id="+a.ID+"&license_key="+key, nil, nil)
			r.OK(t)
			return r.Body
		}
		c := check()
		sub, _ := c["subscription"].(map[string]any)
		if c["active"] != true || sub == nil || sub["level"] != "Pro" || sub["status"] != "active" {
			t.Fatalf("check: %v", c)
		}
		kwtest.WireTime(t, "renews_at", sub["renews_at"])
		if got := kwtest.WireTime(t, "renews_at", sub["renews_at"]); !got.Equal(t0.Add(30 * 24 * time.Hour)) {
			t.Fatalf("renews_at = %v, want %v", got, t0.Add(30*24*time.Hour))
		}
		queue := func() int {
			n, err := s.Orders.QueueRenewals(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := queue(); n != 0 {
			t.Fatalf("%d renewal orders a month ahead", n)
		}
		s.Clock.Advance(27*24*time.Hour + time.Minute)
		if n := queue(); n != 1 {
			t.Fatalf("%d renewal orders three days ahead, want 1", n)
		}
		if n := queue(); n != 0 {
			t.Fatalf("a second renewal order for the same period: %d", n)
		}
		subs := s.MustAdmin("GET", "/api/admin/subscriptions.php?app_id="+a.ID, nil).List(t, "subscriptions")
		renewal, _ := subs[0]["renewal_order_id"].(string)
		if len(subs) != 1 || renewal == "" || orEvents(t, s, "subscription.renewal_order_created") != 1 {
			t.Fatalf("subscriptions = %v", subs)
		}
		r := s.Fulfil(renewal, secret)
		r.OK(t)
		if r.Str("license_key") != key {
			t.Fatalf("renewal delivered %q, want the subscription's key %q", r.Str("license_key"), key)
		}
		if d := a.KeyView(t, key)["duration"]; d != float64(60) {
			t.Fatalf("key duration after one renewal = %v, want 60 (unused key: its time grows)", d)
		}
		if n := len(s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID, nil).List(t, "keys")); n != 1 {
			t.Fatalf("%d keys after a renewal, want 1", n)
		}
		sub = check()["subscription"].(map[string]any)
		if got := kwtest.WireTime(t, "renews_at", sub["renews_at"]); !got.Equal(t0.Add(60*24*time.Hour)) || sub["renewal_order_id"] != nil {
			t.Fatalf("after renewal: %v", sub)
		}
		if orEvents(t, s, "subscription.renewed") != 1 {
			t.Fatal("subscription.renewed not recorded once")
		}
		subID := subs[0]["id"]
		s.MustAdmin("POST", "/api/admin/subscriptions.php?action=cancel", map[string]any{"app_id": a.ID, "id": subID})
		s.Admin("POST", "/api/admin/subscriptions.php?action=cancel", map[string]any{"app_id": a.ID, "id": subID}).JSONFail(t, 409, "CONFLICT")
		s.Admin("POST", "/api/admin/subscriptions.php?action=pause", map[string]any{"app_id": a.ID, "id": subID}).JSONFail(t, 400, "MISSING_FIELDS")
		if c := check(); c["active"] != false || c["subscription"].(map[string]any)["status"] != "cancelled" {
			t.Fatalf("after cancel: %v", c)
		}
		s.Clock.Advance(30 * 24 * time.Hour)
		if n := queue(); n != 0 {
			t.Fatalf("%d renewal orders for a cancelled subscription", n)
		}
		if orEvents(t, s, "subscription.cancelled") != 1 {
			t.Fatal("subscription.cancelled not recorded once")
		}
		// A one-off plan starts no subscription; unknown keys have none.
		r = s.Do("GET", "/api/app/pricing.php?action=check&app_id="+a.ID+"&license_key=NOPE", nil, nil)
		if r.Body["subscription"] != nil || r.Body["active"] != false {
			t.Fatalf("unknown key: %s", r)
		}
		kwtest.ExpectCode(t, s.Do("GET", "/api/app/pricing.php?action=check&app_id="+a.ID, nil, nil), 400, "MISSING_FIELDS")
	})
}

// A subscription key redeemed onto an account renews the account: the
// renewal's days land on the account (and are taken back with the key), and
// the check finds the subscription by username.
func TestSubscriptionOfRedeemedKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.AccountsApp(t, "SubAcc", map[string]any{"account_signup_days": 0})
		level := s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "level", "name": "Pro", "price": 5,
			"currency": "USD", "interval": "month"}).Obj("plan")
		secret := s.MustAdmin("POST", "/api/admin/orders.php?action=fulfillment-secret", map[string]any{"app_id": a.ID}).Str("fulfillment_secret")
		key := s.Fulfil(s.SubscriptionOrder(t, a, level["id"]), secret).Str("license_key")
		t0 := s.Clock.Now()
		a.SignUp(t, "sam", "password1", key)
		uaEqualTime(t, "after redeeming", uaAccount(t, a, "sam")["expires_at"], t0.Add(30*uaDay))

		r := s.Do("GET", "/api/app/pricing.php?action=check&app_id="+a.ID+"&username=SAM", nil, nil)
		if r.Body["active"] != true || r.Obj("subscription")["level"] != "Pro" {
			t.Fatalf("check by username: %s", r)
		}
		// The public reply does not turn the username into the key, which
		// would sign in to the customer portal.
		if strings.Contains(string(r.Raw), key) || r.Obj("subscription")["license_key"] != nil {
			t.Fatalf("check by username carries the license key: %s", r)
		}
		s.Clock.Advance(28 * uaDay)
		if _, err := s.Orders.QueueRenewals(context.Background()); err != nil {
			t.Fatal(err)
		}
		renewal := s.MustAdmin("GET", "/api/admin/subscriptions.php?app_id="+a.ID, nil).List(t, "subscriptions")[0]["renewal_order_id"].(string)
		s.Fulfil(renewal, secret).OK(t)
		uaEqualTime(t, "after the renewal", uaAccount(t, a, "sam")["expires_at"], t0.Add(60*uaDay))
		a.MustKeyAction(t, "ban", key, nil)
		uaEqualTime(t, "after banning the key", uaAccount(t, a, "sam")["expires_at"], t0)

		r = s.Do("GET", "/api/app/pricing.php?action=check&app_id="+a.ID+"&username=nobody", nil, nil)
		if r.Body["subscription"] != nil {
			t.Fatalf("unknown user: %s", r)
		}
	})
}
