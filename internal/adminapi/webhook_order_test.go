package adminapi_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// whSeen is one delivery body as the order tests read it.
type whSeen struct {
	Event    string `json:"event"`
	ID       string `json:"id"`
	Sequence int64  `json:"sequence"`
	Data     struct {
		LicenseKey string `json:"license_key"`
	} `json:"data"`
}

func whSeenAll(t *testing.T, reqs []whReq) []whSeen {
	t.Helper()
	out := make([]whSeen, len(reqs))
	for i, r := range reqs {
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
	}
	return out
}

func (w whSeen) String() string {
	return fmt.Sprintf("%s %s #%d", w.Event, w.Data.LicenseKey, w.Sequence)
}

// A later delivery about a key waits while the earlier one retries, goes in
// the same dispatcher run as the earlier one's success, and goes once the
// earlier one failed for good; other keys are not held back. Retries are
// driven by the injected clock.
func TestWebhookOrderRetries(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		rx := whNewReceiver(t)
		rx.Default(whReply{Status: 500, Body: "down"})
		a := s.CreateApp("Order")
		_, secret := whCreate(t, s, map[string]any{"app_id": a.ID, "url": rx.URL, "events": []string{"key.banned", "key.unbanned"}})
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		k1, k2 := keys[0], keys[1]
		act := func(action, key string) {
			t.Helper()
			if r := a.KeyAction(action, key, map[string]any{"reason": "order"}); r.Body["success"] != true {
				t.Fatalf("%s %s: %v", action, key, r.Body)
			}
		}
		act("ban", k1)
		act("unban", k1)
		act("ban", k2)

		// k1's ban fails: its unban waits; k2 is not held back.
		whRun(t, s)
		got := whSeenAll(t, rx.Requests())
		if len(got) != 2 || got[0].Data.LicenseKey == got[1].Data.LicenseKey || got[0].Event != "key.banned" || got[1].Event != "key.banned" {
			t.Fatalf("first run sent %v, want k1's and k2's key.banned only", got)
		}
		for _, r := range rx.Requests() {
			whVerify(t, r, secret, 1, s.Clock.Now().Unix())
		}

		// The retry succeeds a minute later, and k1's unban follows in the
		// same run, after it.
		rx.Default(whReply{Status: 200, Body: "ok"})
		s.Clock.Advance(67 * time.Second)
		whRun(t, s)
		got = whSeenAll(t, rx.Requests())
		var k1Got []whSeen
		for _, g := range got[2:] {
			if g.Data.LicenseKey == k1 {
				k1Got = append(k1Got, g)
			}
		}
		if len(got) != 5 || len(k1Got) != 2 || k1Got[0].Event != "key.banned" || k1Got[1].Event != "key.unbanned" {
			t.Fatalf("after the retry: %v; want k1's ban retried, then its unban, and k2's ban retried", got)
		}
		if k1Got[1].Sequence <= k1Got[0].Sequence || k1Got[1].ID == k1Got[0].ID {
			t.Errorf("k1's unban %v (id %s) not after its ban %v (id %s)", k1Got[1], k1Got[1].ID, k1Got[0], k1Got[0].ID)
		}

		// k2's unban fails all six attempts; its next ban waits through all
		// of them and goes at once after the last.
		rx.Script(whReply{Status: 500}, whReply{Status: 500}, whReply{Status: 500}, whReply{Status: 500}, whReply{Status: 500}, whReply{Status: 500})
		act("unban", k2)
		act("ban", k2)
		before := rx.Count()
		whRun(t, s)
		for i, wait := range []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour} {
			if rx.Count() != before+i+1 {
				t.Fatalf("before attempt %d of k2's unban: %d requests, want %d (the ban must wait)", i+2, rx.Count()-before, i+1)
			}
			s.Clock.Advance(whScaled(wait, 111))
			whRun(t, s)
		}
		got = whSeenAll(t, rx.Requests())[before:]
		if len(got) != 7 {
			t.Fatalf("k2: %d requests %v, want 6 attempts at the unban then the ban", len(got), got)
		}
		for i, g := range got[:6] {
			if g.Event != "key.unbanned" || g.Data.LicenseKey != k2 || g.Sequence != got[0].Sequence {
				t.Fatalf("k2 request %d: %v, want the unban (attempt %d)", i+1, g, i+1)
			}
		}
		if got[6].Event != "key.banned" || got[6].Data.LicenseKey != k2 || got[6].Sequence <= got[0].Sequence {
			t.Fatalf("after the unban failed for good: %v, want k2's ban with a later sequence", got[6])
		}
	})
}
