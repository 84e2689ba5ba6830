package clientapi

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/wire"
)

// The heartbeat's reply with trust_until is the bytes encoding/json makes of
// the wire type, is built once per (TTL, second) — a second beat in the same
// second allocates nothing — and follows the clock and the TTL.
func TestTrustedBeatReply(t *testing.T) {
	a := &API{}
	now := time.Date(2026, 11, 1, 12, 0, 0, 700_000_000, time.UTC)
	for _, ttl := range []int{1, 168, 8760, 17} { // 1 and 17 share a cache slot
		until := now.Add(time.Duration(ttl) * time.Hour).Truncate(time.Second)
		want := edge.Marshal(&wire.HeartbeatReply{Success: true, Message: "Heartbeat OK", TrustUntil: &until})
		if got := a.trustedBeatReply(ttl, now); string(got) != string(want) {
			t.Fatalf("ttl %d: %s, want %s", ttl, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { a.trustedBeatReply(ttl, now) }); n != 0 {
			t.Errorf("ttl %d: a cached reply allocates %.0f times", ttl, n)
		}
	}
	later := now.Add(time.Second)
	until := later.Add(168 * time.Hour).Truncate(time.Second)
	want := edge.Marshal(&wire.HeartbeatReply{Success: true, Message: "Heartbeat OK", TrustUntil: &until})
	if got := a.trustedBeatReply(168, later); string(got) != string(want) {
		t.Fatalf("a second later: %s, want %s", got, want)
	}
}
