package webhook

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

func TestDestinationWants(t *testing.T) {
	for _, c := range []struct {
		events []string
		typ    string
		want   bool
	}{
		{nil, "key.created", true},
		{[]string{}, "anything.at_all", true},
		{nil, "test", true},
		{[]string{"key.banned"}, "key.banned", true},
		{[]string{"key.banned"}, "key.unbanned", false},
		{[]string{"key.banned"}, "key.banned.extra", false},
		{[]string{"key.banned"}, "key", false},
		{[]string{"key.banned", "key_expired"}, "key_expired", true},
		{[]string{"key.banned", "key_expired"}, "key_expiring", false},
		{[]string{"subscription.*"}, "subscription.created", true},
		{[]string{"subscription.*"}, "subscription.renewal.failed", true},
		{[]string{"subscription.*"}, "subscription", false},
		{[]string{"subscription.*"}, "subscriptions.created", false},
		{[]string{"subscription.*"}, "subscription_created", false},
		{[]string{"subscription.*"}, "key.created", false},
		{[]string{"key.*"}, "key_expired", false},
		{[]string{"key.*"}, "key.suspected_leak", true},
		{[]string{"key.*", "new_order"}, "new_order", true},
		{[]string{"*"}, "key.created", false}, // not a pattern CheckDestination accepts
	} {
		d := &Destination{Events: c.events}
		if got := d.Wants(c.typ); got != c.want {
			t.Errorf("Destination{Events: %q}.Wants(%q) = %v, want %v", c.events, c.typ, got, c.want)
		}
	}
}

func TestResultOK(t *testing.T) {
	for _, c := range []struct {
		r    Result
		want bool
	}{
		{Result{StatusCode: 0}, false},
		{Result{StatusCode: 100}, false},
		{Result{StatusCode: 199}, false},
		{Result{StatusCode: 200}, true},
		{Result{StatusCode: 204}, true},
		{Result{StatusCode: 299}, true},
		{Result{StatusCode: 302}, true},
		{Result{StatusCode: 399}, true},
		{Result{StatusCode: 400}, false},
		{Result{StatusCode: 404}, false},
		{Result{StatusCode: 500}, false},
		{Result{StatusCode: 503}, false},
		{Result{Err: errors.New("connection refused")}, false},
		{Result{StatusCode: 200, Err: errors.New("body read failed")}, false},
	} {
		if got := c.r.OK(); got != c.want {
			t.Errorf("Result{StatusCode: %d, Err: %v}.OK() = %v, want %v", c.r.StatusCode, c.r.Err, got, c.want)
		}
	}
}

func TestCheckDestination(t *testing.T) {
	events := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "key." + strings.Repeat("x", i%10+1)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		d     Destination
		field string // "" when valid
	}{
		{"https", Destination{URL: "https://hooks.example.com/keyward"}, ""},
		{"http with port and query", Destination{URL: "http://10.0.0.1:8080/hook?x=1"}, ""},
		{"event names", Destination{URL: "https://e.com", Events: []string{"key.banned", "key_expired", "subscription.*", "test",
			"hwid_reset.requested"}}, ""},
		{"50 events", Destination{URL: "https://e.com", Events: events(50)}, ""},
		{"64-byte event", Destination{URL: "https://e.com", Events: []string{strings.Repeat("a", 64)}}, ""},
		{"500-byte description", Destination{URL: "https://e.com", Description: strings.Repeat("d", 500)}, ""},
		{"2048-byte URL", Destination{URL: "https://e.com/" + strings.Repeat("p", 2048-len("https://e.com/"))}, ""},

		{"empty URL", Destination{}, "url"},
		{"no scheme", Destination{URL: "hooks.example.com/x"}, "url"},
		{"ftp", Destination{URL: "ftp://hooks.example.com/x"}, "url"},
		{"javascript", Destination{URL: "javascript:alert(1)"}, "url"},
		{"file", Destination{URL: "file:///etc/passwd"}, "url"},
		{"no host", Destination{URL: "https:///path"}, "url"},
		{"unparsable", Destination{URL: "http://[::1"}, "url"},
		{"control character", Destination{URL: "https://e.com/\x7f"}, "url"},
		{"2049-byte URL", Destination{URL: "https://e.com/" + strings.Repeat("p", 2049-len("https://e.com/"))}, "url"},
		{"51 events", Destination{URL: "https://e.com", Events: events(51)}, "events"},
		{"65-byte event", Destination{URL: "https://e.com", Events: []string{strings.Repeat("a", 65)}}, "events"},
		{"uppercase event", Destination{URL: "https://e.com", Events: []string{"Key.Banned"}}, "events"},
		{"bare star", Destination{URL: "https://e.com", Events: []string{"*"}}, "events"},
		{"star in the middle", Destination{URL: "https://e.com", Events: []string{"key.*.x"}}, "events"},
		{"trailing dot", Destination{URL: "https://e.com", Events: []string{"key."}}, "events"},
		{"leading dot", Destination{URL: "https://e.com", Events: []string{".key"}}, "events"},
		{"double dot", Destination{URL: "https://e.com", Events: []string{"key..banned"}}, "events"},
		{"digits", Destination{URL: "https://e.com", Events: []string{"key2"}}, "events"},
		{"space", Destination{URL: "https://e.com", Events: []string{"key banned"}}, "events"},
		{"empty name", Destination{URL: "https://e.com", Events: []string{""}}, "events"},
		{"501-byte description", Destination{URL: "https://e.com", Description: strings.Repeat("d", 501)}, "description"},
	} {
		err := CheckDestination(&c.d)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: CheckDestination = %v, want nil", c.name, err)
			}
			continue
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.Invalid || !strings.Contains(ae.Message, "field "+c.field) {
			t.Errorf("%s: CheckDestination = %v, want an Invalid error about %s", c.name, err, c.field)
		}
	}
}

func newTestDispatcher(r io.Reader) *Dispatcher {
	return NewDispatcher(nil, nil, time.Now, r, slog.New(slog.DiscardHandler), DispatchConfig{})
}

// jitter spreads each wait over ±10 %: never beyond, not constant, and
// using most of the range.
func TestJitter(t *testing.T) {
	d := newTestDispatcher(rand.Reader)
	for _, w := range []time.Duration{time.Minute, 5 * time.Minute, 6 * time.Hour, 1500 * time.Millisecond} {
		lo, hi := w-w/10, w+w/10
		minSeen, maxSeen := hi, lo
		distinct := map[time.Duration]bool{}
		var below, above int
		const draws = 5000
		for range draws {
			j := d.jitter(w)
			if j < lo || j > hi {
				t.Fatalf("jitter(%v) = %v, outside [%v, %v]", w, j, lo, hi)
			}
			minSeen, maxSeen = min(minSeen, j), max(maxSeen, j)
			distinct[j] = true
			if j < w {
				below++
			} else if j > w {
				above++
			}
		}
		if len(distinct) < draws/2 {
			t.Errorf("jitter(%v): %d distinct values in %d draws, want it to vary", w, len(distinct), draws)
		}
		// 5000 uniform draws leave the outer 5 % of each side empty with
		// probability about (0.95)^5000: never.
		if minSeen > w-w/20 || maxSeen < w+w/20 {
			t.Errorf("jitter(%v) ranged only over [%v, %v], want most of [%v, %v]", w, minSeen, maxSeen, lo, hi)
		}
		if below < draws/3 || above < draws/3 {
			t.Errorf("jitter(%v): %d draws below, %d above; want both sides about equally", w, below, above)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// Without randomness the wait is left as it is rather than collapsing.
func TestJitterWithoutRandomness(t *testing.T) {
	d := newTestDispatcher(failingReader{})
	if got := d.jitter(time.Minute); got != time.Minute {
		t.Errorf("jitter with a failing reader = %v, want the wait unchanged", got)
	}
}

func TestNewDispatcherDefaults(t *testing.T) {
	d := newTestDispatcher(rand.Reader)
	if len(d.cfg.Schedule) != 5 || d.cfg.Schedule[0] != time.Minute || d.cfg.Schedule[4] != 6*time.Hour {
		t.Errorf("default schedule = %v, want 1m, 5m, 30m, 2h, 6h", d.cfg.Schedule)
	}
	// Two workers with 32 deliveries each, 8 at a time between them, 5 s
	// each: 40 s to send both batches; the lease covers it twice.
	if d.cfg.Concurrency != 8 || d.cfg.Batch != 32 || d.cfg.Workers != 2 || d.cfg.Timeout != 5*time.Second || d.cfg.Lease != 80*time.Second {
		t.Errorf("defaults = concurrency %d, batch %d, workers %d, timeout %v, lease %v; want 8, 32, 2, 5s, 80s",
			d.cfg.Concurrency, d.cfg.Batch, d.cfg.Workers, d.cfg.Timeout, d.cfg.Lease)
	}
	if one := NewDispatcher(nil, nil, time.Now, rand.Reader, nil, DispatchConfig{Workers: 1, Batch: 64, Timeout: 15 * time.Second}); one.cfg.Lease != 4*time.Minute {
		t.Errorf("lease of one worker with 64 at a 15 s timeout = %v, want 4m (8 rounds, twice)", one.cfg.Lease)
	}
	slow := NewDispatcher(nil, nil, time.Now, rand.Reader, nil, DispatchConfig{Timeout: 30 * time.Second, Concurrency: 16})
	if slow.cfg.Lease != 4*time.Minute {
		t.Errorf("lease at a 30 s timeout, 16 at a time = %v, want 4m (4 rounds, twice)", slow.cfg.Lease)
	}
	quick := NewDispatcher(nil, nil, time.Now, rand.Reader, nil, DispatchConfig{Timeout: time.Second})
	if quick.cfg.Lease != time.Minute {
		t.Errorf("lease at a 1 s timeout = %v, want the 1 minute floor", quick.cfg.Lease)
	}
}

func TestNewDeliveryID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := NewDeliveryID(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "whd_") || len(id) != 4+32 || seen[id] {
			t.Fatalf("NewDeliveryID = %q (seen before: %v), want a fresh whd_ and 32 hex digits", id, seen[id])
		}
		seen[id] = true
	}
}
