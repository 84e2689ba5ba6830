package clientapi_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/wire"
)

// trustCall sends inner to an app's client route (sealed, or plain for
// check-key when plain is set), with a fresh X-PWF-Nonce when signed, and
// returns the inner reply and whether it carried a signature.
func trustCall(t *testing.T, a *kwtest.App, path string, inner any, signed, plain bool) (map[string]any, json.RawMessage, bool) {
	t.Helper()
	h := http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
	if signed {
		h.Set("X-PWF-Nonce", sgNonce(t))
	}
	b, _ := json.Marshal(inner)
	body := b
	if !plain {
		body = a.Seal(inner).Marshal()
	}
	r := a.S.Do("POST", path, h, body)
	raw := r.Raw
	if !plain {
		env, err := envelope.Parse(r.Raw)
		if err != nil {
			t.Fatalf("%s: not an envelope: %s", path, r)
		}
		if raw, _, err = a.Keys.Verify(env, a.S.Clock.Now()); err != nil {
			t.Fatalf("%s: reply envelope: %v", path, err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v: %s", path, err, raw)
	}
	return m, raw, r.Header.Get("X-PWF-Signature") != ""
}

// Every signed reply to login, heartbeat and check-key of an app with
// offline trust on carries trust_until = the server's (injected) clock plus
// offline_ttl_hours, as an ISO 8601 UTC timestamp; with offline trust off,
// or on an unsigned exchange, the member is absent (not null) and the
// replies are byte for byte what they were. A heartbeat with trust is the
// fast path's bytes and equal to what encoding/json makes of the wire type.
func TestTrustUntil(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		dir := filepath.Join(t.TempDir(), "signing")
		if _, err := signing.Init(dir); err != nil {
			t.Fatal(err)
		}
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = dir }})
		a := s.CreateApp("Trust")
		keys := a.GenerateKeys(2, "lifetime", 0, 5)
		lk := keys[0]

		type step struct {
			name, path string
			inner      map[string]any
			plain      bool
		}
		sid := a.Login(lk, "pc-0")
		steps := func() []step {
			return []step{
				{"login", "/api/auth/login.php", map[string]any{"license_key": lk, "hwid": "pc-1"}, false},
				{"heartbeat", "/api/auth/heartbeat.php", map[string]any{"session_id": sid, "license_key": lk}, false},
				{"check-key (envelope)", "/api/auth/check-key.php", map[string]any{"license_key": lk}, false},
				{"check-key (plain)", "/api/auth/check-key.php", map[string]any{"license_key": lk}, true},
			}
		}
		absent := func(label string) {
			t.Helper()
			for _, st := range steps() {
				for _, signed := range []bool{true, false} {
					m, _, got := trustCall(t, a, st.path, st.inner, signed, st.plain)
					if m["success"] != true || got != signed {
						t.Fatalf("%s %s signed=%v: %v (signature %v)", label, st.name, signed, m, got)
					}
					if _, ok := m["trust_until"]; ok {
						t.Errorf("%s %s signed=%v: trust_until present: %v", label, st.name, signed, m)
					}
				}
			}
		}
		absent("offline off (default)")

		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"offline_enabled": true, "offline_ttl_hours": 48}})
		s.Clock.Advance(1234 * time.Millisecond) // the value follows the injected clock, cut to the second
		want := s.Clock.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		for _, st := range steps() {
			m, raw, signed := trustCall(t, a, st.path, st.inner, true, st.plain)
			if !signed || m["success"] != true || m["trust_until"] != want {
				t.Errorf("offline on, signed %s: trust_until %v, want %s (%s)", st.name, m["trust_until"], want, raw)
			}
			if st.name == "heartbeat" {
				until, _ := time.Parse(time.RFC3339, want)
				exp, _ := json.Marshal(wire.HeartbeatReply{Success: true, Message: "Heartbeat OK", TrustUntil: &until})
				if string(raw) != string(exp) {
					t.Errorf("heartbeat reply %s, want %s", raw, exp)
				}
			}
			// Unsigned: no promise an attacker could have forged.
			if m, raw, _ := trustCall(t, a, st.path, st.inner, false, st.plain); m["success"] != true || m["trust_until"] != nil {
				t.Errorf("offline on, unsigned %s: %s", st.name, raw)
			}
		}
		// A later second gets a later trust_until (the heartbeat's cached
		// bytes follow the clock).
		s.Clock.Advance(90 * time.Second) // within the session timeout
		want = s.Clock.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		if m, raw, _ := trustCall(t, a, "/api/auth/heartbeat.php", map[string]any{"session_id": sid, "license_key": lk}, true, false); m["trust_until"] != want {
			t.Errorf("heartbeat 90 s later: %s, want %s", raw, want)
		}
		// A key that is not valid gets no trust from check-key, and a
		// refused login none either.
		a.KeyAction("ban", keys[1], nil)
		if m, raw, _ := trustCall(t, a, "/api/auth/check-key.php", map[string]any{"license_key": keys[1]}, true, false); m["valid"] != false || m["trust_until"] != nil {
			t.Errorf("check-key of a banned key: %s", raw)
		}
		if m, raw, _ := trustCall(t, a, "/api/auth/login.php", map[string]any{"license_key": keys[1], "hwid": "pc-1"}, true, false); m["success"] != false || m["trust_until"] != nil {
			t.Errorf("refused login: %s", raw)
		}

		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"offline_enabled": false}})
		absent("offline turned off again")
	})
}

// Without a signing key there is nothing to sign, so no trust_until even
// with offline trust on and a nonce sent.
func TestTrustUntilNeedsSigningKey(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	a := s.CreateApp("No key")
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{"offline_enabled": true}})
	lk := a.GenerateKeys(1, "lifetime", 0, 1)[0]
	m, raw, signed := trustCall(t, a, "/api/auth/login.php", map[string]any{"license_key": lk, "hwid": "pc"}, true, false)
	if signed || m["success"] != true || m["trust_until"] != nil {
		t.Fatalf("login without a signing key: %s (signed %v)", raw, signed)
	}
	if r := s.MustAdmin("GET", "/api/admin/apps.php?app_id="+a.ID, nil); r.Obj("app")["settings"].(map[string]any)["offline_ttl_hours"] != float64(168) {
		t.Fatalf("offline_ttl_hours default: %s", r)
	}
}
