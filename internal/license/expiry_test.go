package license

import (
	"encoding/json"
	"testing"
)

// key_expired's data is encoded from a struct; its bytes must stay those of
// the map it replaced (the data webhook receivers have always been sent).
func TestExpiredDataEncodesAsTheMap(t *testing.T) {
	for _, k := range []string{"AAAA-BBBB", `we"ird\<&>` + "\u2028é\x01", ""} {
		m, err := json.Marshal(map[string]any{"app_id": "app-1", "license_key": k, "expires_at": "2026-11-01T12:00:00Z"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := json.Marshal(expiredData{AppID: "app-1", ExpiresAt: "2026-11-01T12:00:00Z", LicenseKey: k})
		if err != nil {
			t.Fatal(err)
		}
		if string(s) != string(m) {
			t.Errorf("key %q: struct encodes %s, the map %s", k, s, m)
		}
	}
}
