package adminapi

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// sameJSON fails unless a and b encode to the same JSON object (key order
// aside).
func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	var ma, mb any
	for _, p := range []struct {
		v   any
		dst *any
	}{{a, &ma}, {b, &mb}} {
		raw, err := json.Marshal(p.v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := json.Unmarshal(raw, p.dst); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if !reflect.DeepEqual(ma, mb) {
		t.Errorf("%s: wire encoding differs:\ngot  %v\nwant %v", what, mb, ma)
	}
}

// keyView, the admin API's key, encodes as license.Key.AdminView (which the
// reseller API still uses) does, for keys with and without their optional times.
func TestKeyViewMatchesAdminView(t *testing.T) {
	now := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	at, exp := now.Add(-48*time.Hour), now.Add(36*time.Hour)
	keys := []license.Key{
		{LicenseKey: "K-1", Status: license.StatusUnused, Type: license.TypeDays, Duration: 30, MaxDevices: 1, CreatedAt: now},
		{LicenseKey: "K-2", Status: license.StatusActive, Type: license.TypeDays, Duration: 3, MaxDevices: 2, Note: "n",
			Features: json.RawMessage(`{"pro":true}`), ActivatedAt: &at, ExpiresAt: &exp, LastSelfResetAt: &at, CreatedAt: at},
		{LicenseKey: "K-3", Status: license.StatusActive, Type: license.TypeDays, Duration: 1, ExpiresAt: &at, CreatedAt: at},
	}
	for i := range keys {
		sameJSON(t, keys[i].LicenseKey, keys[i].AdminView(now), keyView(&keys[i], now))
	}
}
