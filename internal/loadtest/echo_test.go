package loadtest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/loadtest"
)

// TestEchoAnswersTheHeartbeatReply checks the echo baseline end to end on a
// handler: a valid envelope under any secret is answered with the heartbeat's
// reply sealed under the same secret's keys (the second request reuses the
// secret's Box and must answer the same), and anything it cannot open — a
// wrong secret, a stale envelope, a body that is no envelope — is a 400 with
// a JSON body.
func TestEchoAnswersTheHeartbeatReply(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	h := loadtest.EchoHandler(func() time.Time { return now })
	secrets := []string{strings.Repeat("a", 64), strings.Repeat("b", 64)}
	send := func(secret string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("X-App-Secret", secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	seal := func(secret string, at time.Time) []byte {
		env, err := envelope.Derive(secret).Seal([]byte(`{"session_id":"s","license_key":"k"}`), at)
		if err != nil {
			t.Fatal(err)
		}
		return env.Marshal()
	}
	for _, secret := range secrets {
		for round := range 2 {
			rec := send(secret, seal(secret, now))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("secret %c round %d: HTTP %d, Content-Type %q", secret[0], round, rec.Code, rec.Header().Get("Content-Type"))
			}
			env, err := envelope.Parse(rec.Body.Bytes())
			if err != nil {
				t.Fatalf("reply is not an envelope: %s", rec.Body)
			}
			plain, _, err := envelope.Derive(secret).Verify(env, now)
			if err != nil {
				t.Fatalf("reply does not open with the secret's keys: %v", err)
			}
			if string(plain) != `{"success":true,"message":"Heartbeat OK"}` {
				t.Errorf("reply %s", plain)
			}
		}
	}
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"wrong secret": send(secrets[1], seal(secrets[0], now)),
		"stale":        send(secrets[0], seal(secrets[0], now.Add(-envelope.Window-time.Minute))),
		"not JSON":     send(secrets[0], []byte("nope")),
	} {
		if rec.Code != http.StatusBadRequest || rec.Body.String() != `{"success":false}` {
			t.Errorf("%s: HTTP %d %s, want 400 {\"success\":false}", name, rec.Code, rec.Body)
		}
	}
}
