package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/store"
)

func testReplay(t *testing.T, db *store.DB) {
	ctx := context.Background()
	exp := t0.Add(5 * time.Minute)
	claim := func(app, mac string) (bool, []byte) {
		t.Helper()
		ok, reply, err := db.ClaimReplay(ctx, app, mac, exp)
		if err != nil {
			t.Fatalf("ClaimReplay(%s, %s): %v", app, mac, err)
		}
		return ok, reply
	}
	replyOf := func(app, mac string) []byte {
		t.Helper()
		r, err := db.ReplayReply(ctx, app, mac)
		if err != nil {
			t.Fatalf("ReplayReply(%s, %s): %v", app, mac, err)
		}
		return r
	}
	if r := replyOf("app", "m1"); r != nil {
		t.Errorf("ReplayReply of an unknown MAC = %q, want nil", r)
	}
	if ok, r := claim("app", "m1"); !ok || r != nil {
		t.Fatalf("first claim = %v, %q; want claimed", ok, r)
	}
	if ok, r := claim("app", "m1"); ok || r != nil {
		t.Errorf("second claim while pending = %v, %q; want not claimed, no reply", ok, r)
	}
	if r := replyOf("app", "m1"); r != nil {
		t.Errorf("ReplayReply while pending = %q, want nil", r)
	}
	// The same MAC under another app is another envelope.
	if ok, _ := claim("other", "m1"); !ok {
		t.Errorf("claim of the same MAC for another app was refused")
	}

	reply := []byte(`{"success":true,"session_id":"abc","message":"Grüße ✓"}`)
	if err := db.CompleteReplay(ctx, "app", "m1", reply); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m1"); ok || string(r) != string(reply) {
		t.Errorf("claim after completion = %v, %q; want not claimed with the first reply", ok, r)
	}
	if r := replyOf("app", "m1"); string(r) != string(reply) {
		t.Errorf("ReplayReply after completion = %q, want the first reply", r)
	}
	// Releasing a completed entry does nothing: its reply stays.
	if err := db.ReleaseReplay(ctx, "app", "m1"); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m1"); ok || string(r) != string(reply) {
		t.Errorf("claim after releasing a completed entry = %v, %q; want the first reply", ok, r)
	}

	// A released pending claim can be claimed again.
	claim("app", "m2")
	if err := db.ReleaseReplay(ctx, "app", "m2"); err != nil {
		t.Fatal(err)
	}
	if ok, r := claim("app", "m2"); !ok || r != nil {
		t.Errorf("claim after release = %v, %q; want claimed afresh", ok, r)
	}
	if err := db.ReleaseReplay(ctx, "app", "never-claimed"); err != nil {
		t.Errorf("ReleaseReplay of an unknown MAC: %v", err)
	}
}

// Database failures are reported, not mistaken for "no reply yet".
func testReplayErrors(t *testing.T, db *store.DB) {
	ctx := context.Background()
	if _, _, err := db.ClaimReplay(ctx, "app", "m", t0); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if r, err := db.ReplayReply(ctx, "app", "m"); err == nil {
		t.Errorf("ReplayReply on a closed database = %q, nil; want an error", r)
	}
	if _, _, err := db.ClaimReplay(ctx, "app", "m2", t0); err == nil {
		t.Errorf("ClaimReplay on a closed database returned no error")
	}
	if err := db.CompleteReplay(ctx, "app", "m", []byte("{}")); err == nil {
		t.Errorf("CompleteReplay on a closed database returned no error")
	}
	if err := db.ReleaseReplay(ctx, "app", "m"); err == nil {
		t.Errorf("ReleaseReplay on a closed database returned no error")
	}
}

// Entries are kept until ReapSessions deletes those whose envelope left the
// time window; until then a repeat is not claimable (its envelope could not
// verify anyway).
func testReplayExpiry(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := t0
	for _, c := range []struct {
		mac string
		exp time.Time
	}{{"expired", now.Add(-time.Second)}, {"live", now.Add(time.Minute)}, {"at-now", now}} {
		if ok, _, err := db.ClaimReplay(ctx, "app", c.mac, c.exp); err != nil || !ok {
			t.Fatalf("claim %s = %v, %v", c.mac, ok, err)
		}
	}
	if ok, _, err := db.ClaimReplay(ctx, "app", "expired", now.Add(5*time.Minute)); err != nil || ok {
		t.Errorf("claim of an expired, unreaped entry = %v, %v; want not claimed", ok, err)
	}
	if _, err := db.LicenseStore().ReapSessions(ctx, now.Add(-time.Hour), now, now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mac       string
		claimable bool
	}{{"expired", true}, {"live", false}, {"at-now", false}} {
		ok, _, err := db.ClaimReplay(ctx, "app", c.mac, now.Add(5*time.Minute))
		if err != nil || ok != c.claimable {
			t.Errorf("claim of %s after reaping = %v, %v; want claimed=%v", c.mac, ok, err, c.claimable)
		}
	}
}

func testReplayConcurrentClaims(t *testing.T, db *store.DB) {
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	claimed := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { claimed[i], _, errs[i] = db.ClaimReplay(ctx, "app", "mac", t0.Add(time.Minute)) })
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("claim %d: %v", i, errs[i])
		}
		if claimed[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d concurrent claims of one MAC succeeded, want exactly 1", winners, n)
	}
}

// ---- concurrency ----
