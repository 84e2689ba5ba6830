package license

import (
	"fmt"
	"testing"
	"time"
)

// The admin API's key object (GET keys.php?license_key=, a KeyDetail)
// reads into an import row with its state, terms, features and devices
// through ImportRowFromObject, the one converter lazy migration uses.
func TestUpstreamKeyObject(t *testing.T) {
	t.Parallel()
	obj := `{"license_key":"TYBGC-WG8M9","status":"active","key_type":"days","duration":30,
		"activated_at":"2026-11-01T12:00:00Z","expires_at":"2026-12-01T12:00:00Z","days_remaining":30,"max_devices":2,
		"note":"from the shop","features":{"pro":true,"seats":3},"created_at":"2026-10-01T08:00:00Z","last_self_reset_at":null,
		"devices":[{"hwid":"dev-1","first_seen_at":"2026-11-01T12:00:00Z","last_seen_at":"2026-11-02T12:00:00Z"},{"hwid":"dev-2"}],"sessions":[]}`
	row, problems := ImportRowFromObject(1, []byte(obj))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	row.Complete(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	k := row.Key
	if k.LicenseKey != "TYBGC-WG8M9" || k.Status != StatusActive || k.Type != TypeDays || k.Duration != 30 || k.MaxDevices != 2 ||
		k.Note != "from the shop" || string(k.Features) != `{"pro":true,"seats":3}` ||
		!k.ExpiresAt.Equal(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)) || !k.CreatedAt.Equal(time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("key: %+v features %s", k, k.Features)
	}
	if len(row.HWIDs) != 2 || row.HWIDs[0] != "dev-1" || row.HWIDs[1] != "dev-2" {
		t.Errorf("devices: %v", row.HWIDs)
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
