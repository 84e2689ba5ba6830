package clientapi_test

import (
	"context"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

func orEvents(t *testing.T, s *kwtest.Server, typ string) int {
	t.Helper()
	evs, err := s.DB.Events(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// A paid order delivers exactly one working key, however often and however
// concurrently the payment callback arrives.
func TestOrderFulfilmentIsIdempotent(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a, plan, secret := s.StoreApp(t)
		id := s.Order(t, a, plan)
		if orEvents(t, s, "new_order") != 1 {
			t.Fatal("new_order not recorded once")
		}
		kwtest.ExpectCode(t, s.Fulfil(id, "wrong"), 401, "INVALID_CREDENTIALS")
		kwtest.ExpectCode(t, s.Fulfil("ORD-NOPE0-NOPE0-NOPE0", secret), 401, "INVALID_CREDENTIALS")
		if n := len(s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID, nil).List(t, "keys")); n != 0 {
			t.Fatalf("%d keys after refused callbacks", n)
		}

		const callers = 8
		keys := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.Fulfil(id, secret)
				if r.Status == 200 && r.Str("status") == "fulfilled" {
					keys[i] = r.Str("license_key")
				}
			}()
		}
		wg.Wait()
		for i, k := range keys {
			if k == "" || k != keys[0] {
				t.Fatalf("caller %d got key %q, caller 0 %q", i, k, keys[0])
			}
		}
		list := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID, nil).List(t, "keys")
		if len(list) != 1 || list[0]["license_key"] != keys[0] || list[0]["max_devices"] != float64(2) || list[0]["duration"] != float64(30) {
			t.Fatalf("keys after fulfilment: %v", list)
		}
		if n := orEvents(t, s, "order.approved"); n != 1 {
			t.Fatalf("order.approved recorded %d times", n)
		}
		again := s.Fulfil(id, secret)
		again.OK(t)
		if again.Str("license_key") != keys[0] || again.Str("payment_ref") != "pay_123" {
			t.Fatalf("repeat fulfilment: %s", again)
		}
		// The key works and carries the plan's features.
		lr := a.LoginReply(keys[0], "pc")
		lr.OK(t)
		if f := lr.Obj("features"); f["pro"] != true {
			t.Fatalf("features = %v", f)
		}
		o := s.MustAdmin("GET", "/api/admin/orders.php?app_id="+a.ID, nil).List(t, "orders")
		if len(o) != 1 || o[0]["status"] != "fulfilled" || o[0]["email"] != "buyer@example.com" {
			t.Fatalf("orders = %v", o)
		}
	})
}

// Refunding bans the delivered key (its session dies at the next
// heartbeat); a refunded order cannot be fulfilled or refunded again.
// Owners approve by hand; a new fulfilment secret retires the old one.
func TestOrderRefundApproveAndSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a, plan, secret := s.StoreApp(t)
		id := s.Order(t, a, plan)
		s.Admin("POST", "/api/admin/orders.php?action=refund", map[string]any{"app_id": a.ID, "order_id": id}).JSONFail(t, 409, "CONFLICT")
		key := s.Fulfil(id, secret).Str("license_key")
		sid := a.Login(key, "pc")
		s.MustAdmin("POST", "/api/admin/orders.php?action=refund", map[string]any{"app_id": a.ID, "order_id": id, "reason": "chargeback"})
		a.Heartbeat(sid, key).Kill(t, "BANNED")
		kwtest.ExpectCode(t, s.Fulfil(id, secret), 409, "CONFLICT")
		s.Admin("POST", "/api/admin/orders.php?action=refund", map[string]any{"app_id": a.ID, "order_id": id}).JSONFail(t, 409, "CONFLICT")

		id2 := s.Order(t, a, plan)
		other := s.CreateApp("Other")
		s.Admin("POST", "/api/admin/orders.php?action=approve", map[string]any{"app_id": other.ID, "order_id": id2}).JSONFail(t, 404, "NOT_FOUND")
		ap := s.MustAdmin("POST", "/api/admin/orders.php?action=approve", map[string]any{"app_id": a.ID, "order_id": id2, "payment_ref": "bank"}).Obj("order")
		if ap["status"] != "fulfilled" || len(ap["license_keys"].([]any)) != 1 {
			t.Fatalf("approved order: %v", ap)
		}
		s.Admin("POST", "/api/admin/orders.php?action=ship", map[string]any{"app_id": a.ID, "order_id": id2}).JSONFail(t, 400, "MISSING_FIELDS")

		fresh := s.MustAdmin("POST", "/api/admin/orders.php?action=fulfillment-secret", map[string]any{"app_id": a.ID}).Str("fulfillment_secret")
		id3 := s.Order(t, a, plan)
		kwtest.ExpectCode(t, s.Fulfil(id3, secret), 401, "INVALID_CREDENTIALS")
		s.Fulfil(id3, fresh).OK(t)
	})
}

// Orders refuse unknown or inactive plans and bad input, changing nothing.
func TestOrderCreateRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a, plan, _ := s.StoreApp(t)
		other := s.CreateApp("Other")
		post := func(body map[string]any) *kwtest.Reply {
			return s.Do("POST", "/api/app/pricing.php", nil, kwtest.JSON(t, body))
		}
		kwtest.ExpectCode(t, post(map[string]any{"plan_id": plan, "email": "a@b.c"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, post(map[string]any{"app_id": a.ID, "email": "a@b.c"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, post(map[string]any{"app_id": a.ID, "plan_id": plan, "email": "nope"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, post(map[string]any{"app_id": a.ID, "plan_id": 9999, "email": "a@b.c"}), 404, "NOT_FOUND")
		kwtest.ExpectCode(t, post(map[string]any{"app_id": other.ID, "plan_id": plan, "email": "a@b.c"}), 404, "NOT_FOUND")
		kwtest.ExpectCode(t, post(map[string]any{"app_id": "nope", "plan_id": plan, "email": "a@b.c"}), 404, "NOT_FOUND")
		s.MustAdmin("PUT", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": plan, "active": false})
		kwtest.ExpectCode(t, post(map[string]any{"app_id": a.ID, "plan_id": plan, "email": "a@b.c"}), 404, "NOT_FOUND")
		if n := len(s.MustAdmin("GET", "/api/admin/orders.php?app_id="+a.ID, nil).List(t, "orders")); n != 0 {
			t.Fatalf("%d orders after refusals", n)
		}
		kwtest.ExpectCode(t, s.Do("POST", "/api/app/fulfill.php", nil, []byte(`{"order_id":"x"}`)), 400, "MISSING_FIELDS")
		if r := s.Do("GET", "/api/app/fulfill.php", nil, nil); r.Status != 405 {
			t.Fatalf("GET fulfill.php: %s", r)
		}
	})
}
