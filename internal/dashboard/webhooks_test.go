package dashboard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// webhooksReceiver is a webhook endpoint on loopback (allowed for test
// servers) that records what arrives and answers with status and body.
type webhooksReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []webhooksHit
	status int
	answer string
}

type webhooksHit struct {
	ID, Attempt string
	Event       string
	Body        string // the delivery's raw JSON
	SignatureV2 string // its X-Webhook-Signature-V2 header
}

func newWebhooksReceiver(t *testing.T) *webhooksReceiver {
	rc := &webhooksReceiver{status: 200, answer: "ok"}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Event string `json:"event"`
		}
		json.Unmarshal(b, &body)
		rc.mu.Lock()
		rc.got = append(rc.got, webhooksHit{ID: r.Header.Get("X-Webhook-Id"), Attempt: r.Header.Get("X-Webhook-Attempt"), Event: body.Event,
			Body: string(b), SignatureV2: r.Header.Get("X-Webhook-Signature-V2")})
		status, answer := rc.status, rc.answer
		rc.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *webhooksReceiver) hits() []webhooksHit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]webhooksHit(nil), rc.got...)
}

func (rc *webhooksReceiver) set(status int, answer string) {
	rc.mu.Lock()
	rc.status, rc.answer = status, answer
	rc.mu.Unlock()
}

// webhooksDispatch fans out and sends what is due, as the dispatch job does.
func webhooksDispatch(t *testing.T, s *site) {
	t.Helper()
	if err := s.Dispatcher.Run(t.Context()); err != nil {
		t.Fatalf("Dispatcher.Run: %v", err)
	}
}

// webhooksList lists an app's destinations through the admin API.
func webhooksList(t *testing.T, s *site, appID string) []map[string]any {
	t.Helper()
	raw, _ := s.MustAdmin("GET", "/api/admin/webhooks.php?app_id="+url.QueryEscape(appID), nil).Body["webhooks"].([]any)
	out := []map[string]any{}
	for _, v := range raw {
		out = append(out, v.(map[string]any))
	}
	return out
}

// webhooksOne reads one destination (with its secret) through the admin API.
func webhooksOne(t *testing.T, s *site, appID, id string) map[string]any {
	t.Helper()
	return s.MustAdmin("GET", "/api/admin/webhooks.php?app_id="+url.QueryEscape(appID)+"&id="+id, nil).Obj("webhook")
}

var webhooksSecretRE = regexp.MustCompile(`id="webhook-secret-value"[^>]*>([^<]+)<`)

// webhooksShownSecret is the signing secret a page shows ("" for none).
func webhooksShownSecret(p *webPage) string {
	m := webhooksSecretRE.FindStringSubmatch(p.Body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestWebhooksDestinationsAndDeliveryLog(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Hooks")
	rc := newWebhooksReceiver(t)
	base := "/dashboard/apps/" + app.ID + "/webhooks"

	p := s.get(base).must(t)
	if !p.Has("No webhooks yet") || !p.Has("key.banned") || !p.Has("subscription.cancelled") {
		t.Fatalf("empty list: %s", p.Text())
	}

	// A bad URL: the API's message, nothing created.
	p = s.post(base, url.Values{"url": {"ftp://example.com/x"}, "events": {"key.banned"}}).must(t)
	if f := p.flash(); !strings.Contains(f, "must be an http(s) URL") || p.URL != base {
		t.Fatalf("bad URL: flash %q at %s", f, p.URL)
	}
	if n := len(webhooksList(t, s, app.ID)); n != 0 {
		t.Fatalf("bad URL created %d webhooks", n)
	}

	// Create: the secret is shown once.
	s.get(base)
	p = s.post(base, url.Values{"url": {rc.URL + "/hook"}, "events": {"key.banned", "test"}, "events_extra": {"subscription.*"},
		"description": {"billing <team>"}}).must(t)
	secret := webhooksShownSecret(p)
	if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(p.Body, `data-copy="webhook-secret-value"`) {
		t.Fatalf("create did not show the secret: %s", p.Text())
	}
	list := webhooksList(t, s, app.ID)
	if len(list) != 1 {
		t.Fatalf("webhooks after create: %v", list)
	}
	w := list[0]
	id := fmt.Sprint(w["id"])
	if evs := fmt.Sprint(w["events"]); evs != "[key.banned test subscription.*]" || w["url"] != rc.URL+"/hook" || w["description"] != "billing <team>" {
		t.Fatalf("created webhook: %v", w)
	}
	if webhooksOne(t, s, app.ID, id)["secret"] != secret {
		t.Fatalf("the secret shown %q is not the webhook%s: %v", secret, "'s", webhooksOne(t, s, app.ID, id))
	}
	whPath := base + "/" + id
	p = s.get(whPath).must(t)
	if webhooksShownSecret(p) != "" || strings.Contains(p.Text(), secret) {
		t.Fatal("the destination page shows the secret again")
	}
	if !p.Has("active") || !p.Has("Nothing delivered yet") || !strings.Contains(p.Body, `value="subscription.*"`) {
		t.Fatalf("destination page: %s", p.Text())
	}

	// Send test: the receiver answers 500 with markup; the log shows it escaped.
	rc.set(500, "<b>nope</b>")
	p = s.post(whPath+"/test", nil).must(t)
	if !p.Has("Test event queued") {
		t.Fatalf("test: %s", p.flash())
	}
	webhooksDispatch(t, s)
	hits := rc.hits()
	if len(hits) != 1 || hits[0].Event != "test" || hits[0].Attempt != "1" {
		t.Fatalf("receiver got %v", hits)
	}
	p = s.get(whPath).must(t)
	if !p.Has("HTTP 500") || !strings.Contains(p.Body, "&lt;b&gt;nope&lt;/b&gt;") || strings.Contains(p.Body, "<b>nope") || !p.Has(hits[0].ID) {
		t.Fatalf("log after the failed attempt: %s", p.Text())
	}
	p = s.get(base).must(t)
	if !p.Has("pending") || !p.Has("test") {
		t.Fatalf("list's last delivery: %s", p.Text())
	}

	// Redeliver: a new attempt, same X-Webhook-Id, now answered 200.
	rc.set(200, "thanks")
	s.get(whPath)
	p = s.post(whPath+"/redeliver", url.Values{"delivery_id": {hits[0].ID}}).must(t)
	if !p.Has("Delivery queued") {
		t.Fatalf("redeliver: %q", p.flash())
	}
	webhooksDispatch(t, s)
	hits = rc.hits()
	if len(hits) != 2 || hits[1].ID != hits[0].ID || hits[1].Attempt != "2" {
		t.Fatalf("receiver after redeliver: %v", hits)
	}
	d := s.MustAdmin("GET", "/api/admin/webhooks.php?action=delivery&delivery_id="+hits[0].ID, nil)
	if d.Obj("delivery")["status"] != "succeeded" || len(d.Body["attempts"].([]any)) != 2 {
		t.Fatalf("API delivery after redeliver: %s", d)
	}
	p = s.get(whPath).must(t)
	if !p.Has("HTTP 200") || !p.Has("thanks") || !p.Has("HTTP 500") || !p.Has("succeeded") {
		t.Fatalf("log after redeliver: %s", p.Text())
	}

	// Rotate asks first; confirmed, a new secret is shown once.
	p = s.post(whPath+"/rotate", nil).must(t)
	if !p.Has("Rotate the signing secret?") || webhooksOne(t, s, app.ID, id)["secret"] != secret {
		t.Fatalf("unconfirmed rotate: %s", p.Text())
	}
	p = s.post(whPath+"/rotate", url.Values{"confirm": {"yes"}}).must(t)
	rotated := webhooksShownSecret(p)
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret || webhooksOne(t, s, app.ID, id)["secret"] != rotated {
		t.Fatalf("rotate: shown %q, API %v", rotated, webhooksOne(t, s, app.ID, id)["secret"])
	}
	if p = s.get(whPath).must(t); webhooksShownSecret(p) != "" || strings.Contains(p.Text(), rotated) {
		t.Fatal("the rotated secret is shown again")
	}

	// Pause and resume.
	p = s.post(whPath+"/disable", nil).must(t)
	if !p.Has("Webhook paused") || webhooksOne(t, s, app.ID, id)["enabled"] != false || !strings.Contains(p.Body, "/enable") {
		t.Fatalf("pause: %s", p.Text())
	}
	p = s.post(whPath+"/enable", nil).must(t)
	if !p.Has("Webhook resumed") || webhooksOne(t, s, app.ID, id)["enabled"] != true {
		t.Fatalf("resume: %s", p.Text())
	}

	// Edit the filters; a bad URL changes nothing.
	p = s.post(whPath+"/edit", url.Values{"url": {rc.URL + "/v2"}, "events": {"order.approved"}, "description": {"orders"}}).must(t)
	got := webhooksOne(t, s, app.ID, id)
	if !p.Has("Webhook saved") || fmt.Sprint(got["events"]) != "[order.approved]" || got["url"] != rc.URL+"/v2" || got["description"] != "orders" {
		t.Fatalf("edit: %v", got)
	}
	p = s.post(whPath+"/edit", url.Values{"url": {"not a url"}, "description": {"changed"}}).must(t)
	got = webhooksOne(t, s, app.ID, id)
	if !strings.Contains(p.flash(), "must be an http(s) URL") || got["url"] != rc.URL+"/v2" || got["description"] != "orders" {
		t.Fatalf("bad edit: %q, %v", p.flash(), got)
	}
	// No event checked: every event.
	s.post(whPath+"/edit", url.Values{"url": {rc.URL + "/v2"}}).must(t)
	if evs := fmt.Sprint(webhooksOne(t, s, app.ID, id)["events"]); evs != "[]" {
		t.Fatalf("no events checked: %s", evs)
	}

	// Delete asks first.
	p = s.post(whPath+"/delete", nil).must(t)
	if !p.Has("Delete this webhook?") || len(webhooksList(t, s, app.ID)) != 1 {
		t.Fatalf("unconfirmed delete: %s", p.Text())
	}
	p = s.post(whPath+"/delete", url.Values{"confirm": {"yes"}}).must(t)
	if !p.Has("Webhook deleted") || p.URL != base || len(webhooksList(t, s, app.ID)) != 0 {
		t.Fatalf("delete: %s", p.Text())
	}
}

// A destination of another app is not shown under this app's pages.
func TestWebhooksOtherAppsDestination(t *testing.T) {
	s := newSite(t)
	s.signIn()
	a := s.CreateApp("A")
	b := s.CreateApp("B")
	w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": b.ID, "url": "https://example.com/b"}).Obj("webhook")
	p := s.get(fmt.Sprintf("/dashboard/apps/%s/webhooks/%v", a.ID, w["id"]))
	if (p.Status != 404 && p.Status != 403) || p.Has("example.com/b") {
		t.Fatalf("other app's webhook under A: %d %s", p.Status, p.Text())
	}
	p = s.get(fmt.Sprintf("/dashboard/apps/%s/webhooks/%v", b.ID, w["id"])).must(t)
	if !p.Has("https://example.com/b") {
		t.Fatalf("webhook page: %s", p.Text())
	}
}

// A URL whose host is a private IP literal is refused on the form with the
// API's message, which tells the owner about --webhook-allow-networks, and
// nothing is created; the same URL is taken once the network is allowed.
func TestWebhooksPrivateLiteralRefusedOnTheForm(t *testing.T) {
	for _, c := range []struct {
		allow   string
		refused bool
	}{{"", true}, {"127.0.0.0/8,::/96", false}} {
		s := newSite(t, kwtest.Options{Configure: func(cfg *config.Config) { cfg.WebhookAllowNetworks = c.allow }})
		s.signIn()
		app := s.CreateApp("Literal")
		base := "/dashboard/apps/" + app.ID + "/webhooks"
		for _, target := range []string{"http://127.0.0.1:9000/hook", "http://[::127.0.0.1]/hook"} {
			s.get(base)
			p := s.post(base, url.Values{"url": {target}, "events": {"key.banned"}}).must(t)
			f := p.flash()
			if c.refused {
				if !strings.Contains(f, "--webhook-allow-networks") || !strings.Contains(f, "private, loopback") || p.URL != base {
					t.Errorf("allow %q, %s: flash %q at %s; want the refusal naming --webhook-allow-networks", c.allow, target, f, p.URL)
				}
			} else if webhooksShownSecret(p) == "" {
				t.Errorf("allow %q, %s: not created: flash %q", c.allow, target, f)
			}
		}
		want := 2
		if c.refused {
			want = 0
		}
		if n := len(webhooksList(t, s, app.ID)); n != want {
			t.Errorf("allow %q: %d webhooks, want %d", c.allow, n, want)
		}
	}
}
