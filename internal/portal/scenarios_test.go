package portal_test

import (
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The customer and reseller portal as a scenario table.
func TestPortalScenarios(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		f := kwtest.NewFixture(t, engine)
		f.Run(t, []kwtest.Scenario{
			{Name: "customer sign-in with an unknown key", Method: "POST", Path: "/api/customer/login.php",
				Body: map[string]any{"app_id": "{app}", "license_key": "NOPE-NOPE"}, Status: 401, Code: "INVALID_CREDENTIALS", Absent: []string{"token"}},
			{Name: "customer sign-in with the key", Method: "POST", Path: "/api/customer/login.php",
				Body: map[string]any{"app_id": "{app}", "license_key": "{key}"}, Status: 200,
				Fields: map[string]any{"token": kwtest.Present, "token_type": "Bearer", "kind": "key"}},
			{Name: "the customer's key without a token", Method: "GET", Path: "/api/customer/key.php", Status: 401, Code: "UNAUTHORIZED"},
			{Name: "the customer's key", Method: "GET", Path: "/api/customer/key.php", As: kwtest.AsCustomer, Status: 200,
				Fields: map[string]any{"kind": "key", "app_id": "{app}", "key": kwtest.Present, "devices": kwtest.Present}},
			{Name: "the customer's orders", Method: "GET", Path: "/api/customer/orders.php", As: kwtest.AsCustomer, Status: 200,
				Fields: map[string]any{"orders": []any{}}},
			{Name: "PUT is not a method of key.php", Method: "PUT", Path: "/api/customer/key.php", As: kwtest.AsCustomer,
				Status: 405, Code: "METHOD_NOT_ALLOWED"},
			{Name: "a customer token is not an admin token", Method: "GET", Path: "/api/admin/keys.php?app_id={app}",
				As: kwtest.AsCustomer, Status: 401, Code: "UNAUTHORIZED"},
			{Name: "reseller without a token", Method: "GET", Path: "/api/reseller/me.php", Status: 401, Code: "UNAUTHORIZED"},
			{Name: "the reseller's own record", Method: "GET", Path: "/api/reseller/me.php", As: kwtest.AsReseller, Status: 200,
				Fields: map[string]any{"reseller": kwtest.Present, "app": kwtest.Present}, Absent: []string{"token"}},
			{Name: "generating without credit", Method: "POST", Path: "/api/reseller/keys.php", As: kwtest.AsReseller,
				Body: map[string]any{"product": "month", "count": 1}, Status: 409, Code: "INSUFFICIENT_CREDIT", Fields: map[string]any{"balance": 0.0}},
			{Name: "an unknown product", Method: "POST", Path: "/api/reseller/keys.php", As: kwtest.AsReseller,
				Body: map[string]any{"product": "nope", "count": 1}, Status: 404, Code: "NOT_FOUND"},
			{Name: "banning a key the reseller did not sell", Method: "POST", Path: "/api/reseller/keys.php?action=ban", As: kwtest.AsReseller,
				Body: map[string]any{"license_key": "{key}"}, Status: 404, Code: "NOT_FOUND"},
			{Name: "the reseller's ledger", Method: "GET", Path: "/api/reseller/ledger.php", As: kwtest.AsReseller, Status: 200,
				Fields: map[string]any{"balance": 0.0, "entries": kwtest.Present}},
		})
	})
}
