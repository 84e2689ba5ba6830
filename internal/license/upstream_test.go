package license

import (
	"fmt"
	"testing"
	"time"
)

// The admin API's key object (GET keys.php?license_key=) reads into an
// import row with its state, terms, features and devices, under the key
// CSV's rules.
func TestUpstreamRow(t *testing.T) {
	t.Parallel()
	obj := `{"license_key":"TYBGC-WG8M9","status":"active","key_type":"days","duration":30,
		"activated_at":"2026-11-01T12:00:00Z","expires_at":"2026-12-01T12:00:00Z","days_remaining":30,"max_devices":2,
		"note":"from the shop","features":{"pro":true,"seats":3},"created_at":"2026-10-01T08:00:00Z","last_self_reset_at":null,
		"devices":[{"hwid":"dev-1","first_seen_at":"x","last_seen_at":"y"},{"hwid":"dev-2"}],"sessions":[]}`
	row, problems := upstreamRow(1, []byte(obj))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	k := row.Key
	if k.LicenseKey != "TYBGC-WG8M9" || k.Status != StatusActive || k.Type != TypeDays || k.Duration != 30 || k.MaxDevices != 2 ||
		k.Note != "from the shop" || string(k.Features) != `{"pro":true,"seats":3}` ||
		!k.ExpiresAt.Equal(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)) || !k.CreatedAt.Equal(time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("key: %+v features %s", k, k.Features)
	}
	if len(row.HWIDs) != 2 || row.HWIDs[0] != "dev-1" || row.HWIDs[1] != "dev-2" {
		t.Errorf("devices: %v", row.HWIDs)
	}
	lifetime := `{"license_key":"L-1","status":"unused","key_type":"lifetime","duration":0,"activated_at":null,"expires_at":null,
		"max_devices":1,"note":"","features":{},"created_at":"2026-10-01T08:00:00Z"}`
	if row, problems := upstreamRow(1, []byte(lifetime)); len(problems) > 0 || row.Key.ExpiresAt != nil || len(row.HWIDs) != 0 {
		t.Errorf("lifetime unused key: %+v %v", row, problems)
	}
	for name, bad := range map[string]string{
		"not an object":    `[1,2]`,
		"bad status":       `{"license_key":"A","status":"gone","key_type":"days","duration":1,"max_devices":1}`,
		"key string":       `{"license_key":"a b","status":"unused","key_type":"days","duration":1,"max_devices":1}`,
		"device with ';'":  `{"license_key":"A","status":"unused","key_type":"days","duration":1,"max_devices":1,"devices":[{"hwid":"a;b"}]}`,
		"devices not list": `{"license_key":"A","status":"unused","key_type":"days","duration":1,"max_devices":1,"devices":{}}`,
		"active no expiry": `{"license_key":"A","status":"active","key_type":"days","duration":1,"max_devices":1,"activated_at":"2026-11-01T12:00:00Z"}`,
	} {
		if _, problems := upstreamRow(1, []byte(bad)); len(problems) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The negative cache answers within its time, forgets after it, and stays
// bounded however many keys are refused.
func TestUpstreamMissCache(t *testing.T) {
	t.Parallel()
	u := &upstreamState{misses: map[string]time.Time{}}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	u.miss("app\x00K", now, upstreamMissTTL)
	if !u.missed("app\x00K", now.Add(upstreamMissTTL-time.Second)) {
		t.Errorf("forgotten within its time")
	}
	if u.missed("app\x00K", now.Add(upstreamMissTTL)) {
		t.Errorf("remembered after its time")
	}
	for i := range upstreamMissCap + 500 {
		u.miss(fmt.Sprintf("app\x00K%d", i), now, upstreamMissTTL)
	}
	if n := len(u.misses); n > upstreamMissCap {
		t.Errorf("%d entries, cap %d", n, upstreamMissCap)
	}
	if !u.missed(fmt.Sprintf("app\x00K%d", upstreamMissCap+499), now) {
		t.Errorf("the newest entry was dropped")
	}
	u.forget()
	if len(u.misses) != 0 {
		t.Errorf("forget left %d entries", len(u.misses))
	}
}

// The converter never panics, and what it accepts is a row the import
// would insert: a valid key string and no device listed twice.
func FuzzUpstreamRow(f *testing.F) {
	f.Add([]byte(`{"license_key":"A-1","status":"active","key_type":"days","duration":30,"activated_at":"2026-11-01T12:00:00Z",` +
		`"expires_at":"2026-12-01T12:00:00Z","max_devices":1,"note":"","features":{},"devices":[{"hwid":"d"}]}`))
	f.Add([]byte(`{"license_key":"L","status":"banned","key_type":"lifetime","duration":0,"max_devices":1,"features":null}`))
	f.Add([]byte(`{"devices":[{"hwid":5}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, obj []byte) {
		row, problems := upstreamRow(1, obj)
		if len(problems) > 0 {
			return
		}
		if !importKeyRE.MatchString(row.Key.LicenseKey) {
			t.Fatalf("accepted key string %q", row.Key.LicenseKey)
		}
		seen := map[string]bool{}
		for _, h := range row.HWIDs {
			if h == "" || seen[h] {
				t.Fatalf("accepted devices %q", row.HWIDs)
			}
			seen[h] = true
		}
	})
}
