package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Opening sessions in chunks, the sessions already open get a heartbeat
// between chunks once keepAliveEvery has passed (here at once), so none
// expires while the rest open.
func TestProvisionKeepsOpenSessionsAlive(t *testing.T) {
	chunk, every := openChunk, keepAliveEvery
	openChunk, keepAliveEvery = 4, 0
	defer func() { openChunk, keepAliveEvery = chunk, every }()
	srv := kwtest.Start(t, kwtest.Options{})
	var progress strings.Builder
	tgt, err := Provision(context.Background(), Options{
		URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
		Mode: Heartbeat, Sessions: 10, Keys: 10, Conns: 3, Duration: time.Second, Now: srv.Clock.Now, Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close(context.Background(), false)
	got := strings.Count(progress.String(), "one heartbeat each")
	if got != 2 || !strings.Contains(progress.String(), "8 sessions open") {
		t.Fatalf("keep-alive passes %d, want 2 (after 4 and 8 of 10 sessions); progress:\n%s", got, progress.String())
	}
	for i, s := range tgt.Sessions {
		if s.ID.String() == "" {
			t.Fatalf("session %d not opened", i)
		}
	}
}
