package abuse

import (
	"testing"
	"time"
)

// TestDueSkipsRecentSightings checks the memo that spares the store a
// sighting this process wrote recently: due once, not again within every,
// due again after it or when the clock went back, each key on its own, and
// starting over when full.
func TestDueSkipsRecentSightings(t *testing.T) {
	d := New(nil, nil, nil, time.Now, nil)
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	every := 15 * time.Minute
	a := d.sightingKey("app", "KEY-A", "hwid-1")
	b := d.sightingKey("app", "KEY-A", "hwid-2")
	if a == b || a == d.sightingKey("app", "KEY-B", "hwid-1") || a == d.sightingKey("other", "KEY-A", "hwid-1") {
		t.Fatal("different sightings share a key")
	}
	if a != d.sightingKey("app", "KEY-A", "hwid-1") {
		t.Fatal("one sighting, two keys")
	}
	steps := []struct {
		k    uint64
		at   time.Duration
		want bool
	}{
		{a, 0, true},
		{a, time.Minute, false},
		{b, time.Minute, true},
		{a, every - time.Nanosecond, false},
		{a, every, true},                // written at t0: due again a whole every later
		{a, every + time.Minute, false}, // and that counts as the new write
		{a, 0, true},                    // the clock went back
	}
	for i, s := range steps {
		if got := d.due(s.k, t0.Add(s.at), every); got != s.want {
			t.Fatalf("step %d: due = %v, want %v", i, got, s.want)
		}
	}
	for k := range uint64(maxRecent) {
		d.due(k+1<<40, t0, every)
	}
	if len(d.recent) > maxRecent {
		t.Fatalf("%d remembered, bound %d", len(d.recent), maxRecent)
	}
	if !d.due(b, t0.Add(2*time.Minute), every) {
		t.Error("a full memo did not start over")
	}
}
