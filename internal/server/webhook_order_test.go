package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/webhook"
)

// orderReceiver is a webhook endpoint on 127.0.0.1 that keeps the bodies in
// the order they arrived. It answers after a short, varying pause, so that
// deliveries sent at once overtake each other as on a real network.
type orderReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	bad    int // bodies whose signature did not verify
}

func newOrderReceiver(t *testing.T, secret *atomic.Value, now func() time.Time) *orderReceiver {
	rc := &orderReceiver{}
	var n atomic.Int64
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s, _ := secret.Load().(string)
		ok := webhook.VerifyV2(s, r.Header.Get("X-Webhook-Signature-V2"), body, now())
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, body)
		if !ok {
			rc.bad++
		}
		rc.mu.Unlock()
		// A pause of 0–3 ms, varying request to request: what the old
		// dispatcher needed to deliver unban before ban.
		time.Sleep(time.Duration(n.Add(1)%4) * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *orderReceiver) count() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.bodies) }

// orderBody is the part of a delivery body the order checks read.
type orderBody struct {
	ID       string `json:"id"`
	Sequence int64  `json:"sequence"`
	Event    string `json:"event"`
	Data     struct {
		LicenseKey string `json:"license_key"`
	} `json:"data"`
}

// TestWebhookOrderPerSubject is keyward issue 20's scenario: 200 keys each
// banned then unbanned, one request at a time, each answered before the
// next, dispatched as in production (woken by each commit, 8 sends at
// once) to one endpoint over real HTTP. Every key's key.banned must arrive
// before its key.unbanned — the old dispatcher delivered 39/200 (SQLite)
// and 78/200 (PostgreSQL) the wrong way round — and each key's bodies
// carry strictly increasing sequence numbers in arrival order. Under load,
// a second client bans and unbans 40 other keys over and over at the same
// time; their events must keep their order too.
func TestWebhookOrderPerSubject(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		for _, load := range []bool{false, true} {
			name := "idle"
			if load {
				name = "load"
			}
			t.Run(name, func(t *testing.T) { webhookOrder(t, engine, load) })
		}
	})
}

func webhookOrder(t *testing.T, engine string, load bool) {
	const keys = 200
	s := kwtest.Start(t, kwtest.Options{Engine: engine, DispatchEvery: 50 * time.Millisecond})
	var secret atomic.Value
	secret.Store("")
	rc := newOrderReceiver(t, &secret, s.Clock.Now)
	app := s.CreateApp("Order")
	w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": rc.URL,
		"events": []string{"key.banned", "key.unbanned"}}).Obj("webhook")
	secret.Store(w["secret"].(string))
	main := app.GenerateKeys(keys, "lifetime", 0, 1)
	other := app.GenerateKeys(40, "lifetime", 0, 1)

	act := func(action, key string) bool {
		r := app.KeyAction(action, key, map[string]any{"reason": "order test"})
		if r.Status != http.StatusOK || r.Body["success"] != true {
			t.Errorf("%s %s: %d %v", action, key, r.Status, r.Body)
			return false
		}
		return true
	}
	var flooded atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if load {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := other[i%len(other)]
				action := "ban"
				if (i/len(other))%2 == 1 {
					action = "unban"
				}
				if !act(action, k) {
					return
				}
				flooded.Add(1)
			}
		})
	}
	for _, k := range main {
		if !act("ban", k) || !act("unban", k) {
			break
		}
	}
	close(stop)
	wg.Wait()
	want := 2*keys + int(flooded.Load())
	waitFor(t, "every delivery", 90*time.Second, func() bool { return rc.count() >= want },
		func() string { return fmt.Sprintf("%d of %d arrived", rc.count(), want) })

	rc.mu.Lock()
	bodies := rc.bodies
	bad := rc.bad
	rc.mu.Unlock()
	if len(bodies) != want {
		t.Errorf("%d deliveries arrived, want %d", len(bodies), want)
	}
	if bad > 0 {
		t.Errorf("%d deliveries failed signature verification", bad)
	}
	type seen struct {
		events []string
		last   int64
	}
	per := map[string]*seen{}
	ids := map[string]bool{}
	seqs := map[int64]bool{}
	var outOfOrder, seqBack int
	for _, raw := range bodies {
		var b orderBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatalf("body is not JSON: %v: %s", err, raw)
		}
		if ids[b.ID] || seqs[b.Sequence] || b.Sequence <= 0 {
			t.Errorf("body id %q / sequence %d repeated or not positive: %s", b.ID, b.Sequence, raw)
		}
		ids[b.ID], seqs[b.Sequence] = true, true
		p := per[b.Data.LicenseKey]
		if p == nil {
			p = &seen{}
			per[b.Data.LicenseKey] = p
		}
		if b.Sequence <= p.last {
			seqBack++
		}
		p.events, p.last = append(p.events, b.Event), b.Sequence
	}
	for _, k := range append(main, other...) {
		p := per[k]
		if p == nil {
			continue // a load key the flood did not reach
		}
		for i, e := range p.events {
			if wantEv := []string{"key.banned", "key.unbanned"}[i%2]; e != wantEv {
				outOfOrder++
				if outOfOrder <= 3 {
					t.Errorf("key %s: events arrived as %v, want banned, unbanned, … alternating", k, p.events)
				}
				break
			}
		}
	}
	for _, k := range main {
		if p := per[k]; p == nil || len(p.events) != 2 {
			t.Errorf("key %s: got %v, want key.banned then key.unbanned", k, per[k])
		}
	}
	if outOfOrder > 0 || seqBack > 0 {
		t.Errorf("%s, load %v: %d keys out of order, %d bodies with a sequence not above their key's previous one (of %d deliveries)",
			engine, load, outOfOrder, seqBack, len(bodies))
	}
	t.Logf("%s, load %v: %d deliveries (%d from the flood), %d out of order", engine, load, len(bodies), flooded.Load(), outOfOrder)
}
