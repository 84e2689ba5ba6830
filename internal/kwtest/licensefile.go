package kwtest

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/wire"
)

// Floating seats and license files, which the client API issues and
// returns, the admin API lists and the customer portal shows and returns.

// FloatingKey generates one floating lifetime key of the app with seats
// seats.
func (a *App) FloatingKey(t *testing.T, seats int) string {
	t.Helper()
	r := a.S.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "count": 1, "key_type": "lifetime",
		"max_devices": seats, "floating": true})
	k := r.Body["keys"].([]any)[0].(map[string]any)
	if k["floating"] != true {
		t.Fatalf("generated key is not floating: %v", k)
	}
	return k["license_key"].(string)
}

// SeatsFull fails unless r is the DEVICE_LIMIT refusal of a floating key
// with seats seats, all held.
func (r *Reply) SeatsFull(t *testing.T, seats int) {
	t.Helper()
	ExpectCode(t, r, 200, "DEVICE_LIMIT")
	want := fmt.Sprintf("All %d seats of this license are in use", seats)
	if msg := r.Str("message"); !strings.Contains(msg, want) {
		t.Fatalf("message %q does not say %q", msg, want)
	}
	if r.Body["devices_used"] != float64(seats) || r.Body["max_devices"] != float64(seats) {
		t.Fatalf("devices_used/max_devices = %v/%v, want %d/%d", r.Body["devices_used"], r.Body["max_devices"], seats, seats)
	}
}

// OfflineOn turns offline use on for the app with a TTL of ttl hours.
func (a *App) OfflineOn(t *testing.T, ttl int) {
	t.Helper()
	a.S.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"offline_enabled": true, "offline_ttl_hours": ttl}})
}

// PublicKeys is the reply of GET app/public-keys.php, failing unless it is
// a success with a key list.
func (s *Server) PublicKeys(t *testing.T) wire.PublicKeysReply {
	t.Helper()
	r := s.Do("GET", "/api/app/public-keys.php", nil, nil)
	if r.Status != 200 {
		t.Fatalf("public-keys.php: %d %s", r.Status, r.Raw)
	}
	var res wire.PublicKeysReply
	if err := json.Unmarshal(r.Raw, &res); err != nil || !res.Success || res.Keys == nil {
		t.Fatalf("reply %s: %v", r.Raw, err)
	}
	return res
}

// licensePins are the license-file keys the server publishes.
func (s *Server) licensePins(t *testing.T) map[string]ed25519.PublicKey {
	t.Helper()
	pins := map[string]ed25519.PublicKey{}
	for _, k := range s.PublicKeys(t).Keys {
		if k.Use != "license-file" {
			continue
		}
		p, err := licensefile.ParsePublicKeys([]byte(k.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		for kid, pub := range p {
			pins[kid] = pub
		}
	}
	return pins
}

// FileRequest asks auth/license-file.php for a file of key for hwid.
func (a *App) FileRequest(key, hwid string) *Reply {
	return a.Env("/api/auth/license-file.php", map[string]any{"license_key": key, "hwid": hwid})
}

// MustFile asks for a file and checks it verifies, with the served keys,
// for the app and hwid at the server's time; it returns the parsed file and
// the reply.
func (a *App) MustFile(t *testing.T, key, hwid string) (*licensefile.File, *Reply) {
	t.Helper()
	r := a.FileRequest(key, hwid)
	if !r.Sealed || r.Body["success"] != true {
		t.Fatalf("license-file %s/%s: %s", key, hwid, r)
	}
	return a.CheckFile(t, r, hwid), r
}

// CheckFile fails unless the reply's license file parses and verifies, with
// the served keys, for the app and hwid at the server's time, and the
// reply's file_id and valid_until are the file's; it returns the file.
func (a *App) CheckFile(t *testing.T, r *Reply, hwid string) *licensefile.File {
	t.Helper()
	f, err := licensefile.Parse(r.Str("license_file"))
	if err != nil {
		t.Fatalf("license_file does not parse: %v\n%s", err, r.Str("license_file"))
	}
	if err := f.Check(a.S.licensePins(t), licensefile.Expect{Now: a.S.Clock.Now(), AppID: a.ID, HWID: hwid}); err != nil {
		t.Fatalf("license file does not verify for %s: %v", hwid, err)
	}
	if f.Claims.FileID != r.Str("file_id") || !f.Claims.ValidUntil.Equal(mustTime(t, r.Str("valid_until"))) {
		t.Fatalf("reply file_id/valid_until %s/%s, file %s/%s", r.Str("file_id"), r.Str("valid_until"), f.Claims.FileID, f.Claims.ValidUntil)
	}
	return f
}

// mustTime parses an RFC 3339 time, failing the test if it cannot.
func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return v
}

// KeyFiles are the license files the key detail lists.
func (a *App) KeyFiles(t *testing.T, key string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range a.KeyView(t, key)["license_files"].([]any) {
		out = append(out, f.(map[string]any))
	}
	return out
}
