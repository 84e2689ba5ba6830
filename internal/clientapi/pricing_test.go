package clientapi_test

import (
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The public price list shows the active levels and plans in the owner's
// order, with exact prices, and no secret is needed.
func TestPricingPublicList(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Shop")
		pro := s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "level", "name": "Pro", "price": 9.99,
			"currency": "usd", "interval": "month", "max_devices": 2, "features": map[string]any{"pro": true}, "order": 2}).Obj("plan")
		s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "level", "name": "Team", "price_cents": 9900,
			"currency": "EUR", "interval": "year", "order": 1})
		life := s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "plan", "name": "Lifetime", "price": 49,
			"currency": "USD", "key_type": "lifetime"}).Obj("plan")
		s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "plan", "name": "Hidden", "price": 1, "currency": "USD",
			"key_type": "days", "duration": 7, "active": false})

		if pro["duration"] != float64(30) || pro["key_type"] != "days" || pro["currency"] != "USD" || pro["price_cents"] != float64(999) {
			t.Fatalf("level defaults: %v", pro)
		}
		r := s.Do("GET", "/api/app/pricing.php?app_id="+a.ID, nil, nil)
		r.OK(t)
		levels, plans := r.List(t, "levels"), r.List(t, "plans")
		if len(levels) != 2 || levels[0]["name"] != "Team" || levels[1]["name"] != "Pro" {
			t.Fatalf("levels = %v", levels)
		}
		if levels[0]["duration"] != float64(365) || levels[1]["price"] != 9.99 || levels[1]["interval"] != "month" {
			t.Fatalf("level fields = %v", levels)
		}
		if len(plans) != 1 || plans[0]["id"] != life["id"] || plans[0]["interval"] != "once" || plans[0]["duration"] != float64(0) {
			t.Fatalf("plans = %v (inactive ones must not show)", plans)
		}
		if f := levels[1]["features"].(map[string]any); f["pro"] != true {
			t.Fatalf("features = %v", f)
		}
		only := s.Do("GET", "/api/app/pricing.php?app_id="+a.ID+"&type=plans", nil, nil)
		if _, has := only.Body["levels"]; has || len(only.List(t, "plans")) != 1 {
			t.Fatalf("type=plans: %s", only)
		}
		kwtest.ExpectCode(t, s.Do("GET", "/api/app/pricing.php?app_id="+a.ID+"&type=all", nil, nil), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.Do("GET", "/api/app/pricing.php", nil, nil), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.Do("GET", "/api/app/pricing.php?app_id=nope", nil, nil), 404, "NOT_FOUND")
		if r := s.Do("PUT", "/api/app/pricing.php?app_id="+a.ID, nil, nil); r.Status != 405 {
			t.Fatalf("PUT pricing.php: %s", r)
		}
	})
}

// Plans are validated; edits change only what they name; refusals and
// other apps' ids change nothing; every change is audited.
func TestPricingAdmin(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Shop")
		other := s.CreateApp("Other")
		base := map[string]any{"app_id": a.ID, "type": "plan", "name": "Basic", "price": 5, "currency": "USD", "key_type": "days", "duration": 30}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for kk, vv := range base {
				m[kk] = vv
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		for _, bad := range []map[string]any{
			with("type", "bundle"), with("name", ""), with("price", -1), with("price", 1.234), with("price", "five"),
			with("currency", "dollars"), with("key_type", "weeks"), with("duration", 0), with("max_devices", 0),
			with("interval", "month"), with("features", []any{1}),
			{"app_id": a.ID, "type": "level", "name": "L", "price": 1, "currency": "USD", "interval": "week"},
			{"app_id": a.ID, "type": "level", "name": "L", "price": 1, "currency": "USD", "interval": "month", "key_type": "lifetime"},
		} {
			s.Admin("POST", kwtest.PathAdminPricing, bad).JSONFail(t, 400, "MISSING_FIELDS")
		}
		if n := len(s.MustAdmin("GET", kwtest.PathAdminPricing+"?app_id="+a.ID, nil).List(t, "plans")); n != 0 {
			t.Fatalf("%d plans after refusals", n)
		}
		p := s.MustAdmin("POST", kwtest.PathAdminPricing, base).Obj("plan")
		id := p["id"]
		up := s.MustAdmin("PUT", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": id, "price": 7.5, "active": false}).Obj("plan")
		if up["price_cents"] != float64(750) || up["active"] != false || up["name"] != "Basic" || up["duration"] != float64(30) {
			t.Fatalf("after PUT: %v", up)
		}
		s.Admin("PUT", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": id, "name": "", "price": 8}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("PUT", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": id, "price": "x"}).JSONFail(t, 400, "MISSING_FIELDS")
		got := s.MustAdmin("GET", kwtest.PathAdminPricing+"?app_id="+a.ID, nil).List(t, "plans")[0]
		if got["price_cents"] != float64(750) || got["name"] != "Basic" {
			t.Fatalf("a refused PUT changed the plan: %v", got)
		}
		s.Admin("PUT", kwtest.PathAdminPricing, map[string]any{"app_id": other.ID, "id": id, "price": 1}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", kwtest.PathAdminPricing, map[string]any{"app_id": other.ID, "id": id}).JSONFail(t, 404, "NOT_FOUND")
		s.MustAdmin("DELETE", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": id})
		s.Admin("DELETE", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "id": id}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", kwtest.PathAdminPricing, nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", kwtest.PathAdminPricing+"?app_id=nope", nil).JSONFail(t, 404, "NOT_FOUND")
		if r := s.Do("GET", kwtest.PathAdminPricing+"?app_id="+a.ID, nil, nil); r.Status != 401 {
			t.Fatalf("no token: %s", r)
		}
		var actions []string
		for _, e := range s.Audit(t, "app_id="+a.ID) {
			if act, _ := e["action"].(string); len(act) > 8 && act[:8] == "pricing." {
				actions = append(actions, act)
			}
		}
		if len(actions) != 3 {
			t.Fatalf("pricing audit entries = %v, want create, update, delete", actions)
		}
	})
}
