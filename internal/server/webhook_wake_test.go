package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// A committed event wakes the dispatcher at once: with an hour-long
// interval the delivery still arrives, so it came from the wake-up.
func TestWebhookWakeOnEvent(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Webhook-Id")
	}))
	defer rcv.Close()
	s := kwtest.Start(t, kwtest.Options{Engine: "sqlite", DispatchEvery: time.Hour})
	a := s.CreateApp("Wake")
	s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": a.ID, "url": rcv.URL, "events": []string{"key.created"}})
	a.GenerateKeys(1, "lifetime", 0, 1)
	select {
	case id := <-got:
		if len(id) < 5 || id[:4] != "whd_" {
			t.Fatalf("X-Webhook-Id %q", id)
		}
	case <-time.After(30 * time.Second): // a bound on a hang, not a speed requirement
		t.Fatal("the event did not wake the dispatcher")
	}
}
