package adminapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// docPython returns the Python code block of docs/webhooks.md's section
// "Verifying in Python".
func docPython(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### Verifying in Python")
	if !ok {
		t.Fatal(`docs/webhooks.md has no section "Verifying in Python"`)
	}
	_, code, ok := strings.Cut(sec, "```python\n")
	code, _, ok2 := strings.Cut(code, "```")
	if !ok || !ok2 || !strings.Contains(code, "def verify(") {
		t.Fatal("no ```python block with def verify( under \"Verifying in Python\"")
	}
	return code
}

// The Python verifier of docs/webhooks.md, run by python3 on a real signed
// delivery from keyward to a receiver: it accepts the delivery with the
// headers as sent, lower-cased (AWS Lambda) and as ASGI's byte pairs, and
// answers False — without raising — for a missing or malformed header, a
// tampered body, a wrong secret and a stale timestamp.
func TestWebhookDocPythonVerifier(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to check the documented verifier: %v", err)
	}
	code := docPython(t)
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) { pyVerifyDelivery(t, python, code, engine) })
}

// pyVerifyDelivery is TestWebhookDocPythonVerifier on one engine.
func pyVerifyDelivery(t *testing.T, python, code, engine string) {
	s := kwtest.Boot(t, engine, nil)
	s.Clock.Set(time.Now()) // python checks the timestamp against its own clock
	rx := whNewReceiver(t)
	a := s.CreateApp("Python hooks")
	_, secret := whCreate(t, s, map[string]any{"app_id": a.ID, "url": rx.URL + "/hook", "events": []string{"key.created"}})
	a.GenerateKeys(1, "lifetime", 0, 1)
	whRun(t, s)
	reqs := rx.Requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if bad := whBadSignatures(req, secret); len(bad) != 0 {
		t.Fatalf("the delivery does not verify in Go: %v", bad)
	}
	sent := map[string]string{}
	for k := range req.Header {
		sent[k] = req.Header.Get(k)
	}
	if sent["X-Webhook-Signature-V2"] == "" {
		t.Fatalf("no X-Webhook-Signature-V2 in %v", req.Header)
	}
	lower := map[string]string{}
	without := map[string]string{}
	for k, v := range sent {
		lower[strings.ToLower(k)] = v
		if k != "X-Webhook-Signature-V2" {
			without[k] = v
		}
	}
	stale := map[string]string{"X-Webhook-Signature-V2": "t=1,v1=" + strings.Repeat("0", 64)}
	tampered := append([]byte(nil), req.Body...)
	tampered[len(tampered)-2] ^= 1
	type tc struct {
		Name    string            `json:"name"`
		Headers map[string]string `json:"headers"`
		ASGI    bool              `json:"asgi"` // pass the headers as a list of lower-cased byte pairs
		Body    string            `json:"body"`
		Secret  string            `json:"secret"`
		Want    bool              `json:"want"`
	}
	body := string(req.Body)
	cases := []tc{
		{"headers as sent", sent, false, body, secret, true},
		{"lower-cased header names (Lambda)", lower, false, body, secret, true},
		{"ASGI byte pairs", sent, true, body, secret, true},
		{"missing header", without, false, body, secret, false},
		{"missing header, ASGI", without, true, body, secret, false},
		{"no headers at all", map[string]string{}, false, body, secret, false},
		{"tampered body", sent, false, string(tampered), secret, false},
		{"wrong secret", lower, false, body, secret + "x", false},
		{"stale timestamp", stale, false, body, secret, false},
		{"non-ASCII digits and signature", map[string]string{"x-webhook-signature-v2": "t=²³,v1=é"}, false, body, secret, false},
		{"garbage header", map[string]string{"X-WEBHOOK-SIGNATURE-V2": "nonsense"}, false, body, secret, false},
	}
	in, _ := json.Marshal(cases)
	harness := code + `
import json, sys
results = []
for c in json.load(sys.stdin):
    h = c["headers"]
    if c["asgi"]:
        h = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in h.items()]
    try:
        results.append(verify(c["secret"], h, c["body"].encode("utf-8")))
    except Exception as e:
        results.append("raised %s: %s" % (type(e).__name__, e))
print(json.dumps(results))
`
	cmd := exec.Command(python, "-c", harness)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	var got []any
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("python3 printed %s (%v)", out, err)
	}
	for i, c := range cases {
		if got[i] != c.Want {
			t.Errorf("%s: verify returned %v, want %v", c.Name, got[i], c.Want)
		}
	}
}
