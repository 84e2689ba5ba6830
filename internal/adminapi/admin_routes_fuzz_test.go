package adminapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// The admin JSON handlers are fuzzed the way the client routes are
// (FuzzClientRoutes): one SQLite server per family of handlers, fuzzed
// bodies sent over real HTTP with the operator's token to each of the
// family's method, path and action, and every answer must be a JSON object
// — never a 5xx (a panic, recovered, is a 500) — whose failures carry a
// client error_code. The seed corpus holds, for each field the family
// reads, every hostile JSON value (null, wrong types, huge and negative
// numbers, NUL, deep nesting), so the normal suite finds this class of bug
// without -fuzz.

// adminTarget is one method and path (query included) of a family.
type adminTarget struct{ method, path string }

// hostileValues are the JSON values each field of a family is seeded with.
var hostileValues = []string{
	`null`, `true`, `0`, `-1`, `1.5`, `1e400`, `-1e400`, `9223372036854775808`, `99999999999999999999999`,
	`""`, `"x\u0000y"`, `"\ud800"`, `"` + strings.Repeat("z", 5000) + `"`, `[]`, `[null]`, `{}`, `{"a":null}`,
	strings.Repeat(`[`, 600) + strings.Repeat(`]`, 600), strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300),
}

// hostileBodies are whole bodies that are not a usable object.
var hostileBodies = []string{``, `null`, `[]`, `"x"`, `1e999`, `{`, "\xff\xfe", `{"a":1}{"b":2}`,
	strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000)}

// fuzzAdmin runs one admin family: base bodies (valid ones, so the fuzzer
// starts from requests that get far), each field of fieldNames set to each
// hostile value over the first base body, and the hostile bodies, on every
// target.
func fuzzAdmin(f *testing.F, s *kwtest.Server, targets []adminTarget, base []map[string]any, fieldNames []string) {
	f.Helper()
	token := s.AdminToken()
	var bodies []string
	for _, b := range base {
		raw, _ := json.Marshal(b)
		bodies = append(bodies, string(raw))
	}
	for _, name := range fieldNames {
		for _, v := range hostileValues {
			m := map[string]json.RawMessage{}
			if len(base) > 0 {
				raw, _ := json.Marshal(base[0])
				json.Unmarshal(raw, &m)
			}
			m[name] = json.RawMessage(v)
			raw, err := json.Marshal(m)
			if err != nil { // a value json.Marshal will not pass through (1e400, deep nesting)
				raw = []byte(strings.TrimSuffix(string(kwtest.JSON(f, map[string]any{})), "}") + fmt.Sprintf("%q:%s}", name, v))
			}
			bodies = append(bodies, string(raw))
		}
	}
	bodies = append(bodies, hostileBodies...)
	for i, body := range bodies {
		// Every body on every target would make the seed run slow; each body
		// goes to one target in turn, and the base bodies and the hostile
		// whole bodies to all.
		if i < len(base) || i >= len(bodies)-len(hostileBodies) {
			for t := range targets {
				f.Add(uint8(t), []byte(body))
			}
			continue
		}
		for t := range targets {
			if (i+t)%len(targets) == 0 || len(targets) <= 3 {
				f.Add(uint8(t), []byte(body))
			}
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		tg := targets[int(target)%len(targets)]
		req, err := http.NewRequest(tg.method, s.URL+tg.path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := kwtest.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tg.method, tg.path, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s %q: %d %s", tg.method, tg.path, body, resp.StatusCode, raw)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s %q: Content-Type %q", tg.method, tg.path, body, ct)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s %q: reply is not a JSON object: %s", tg.method, tg.path, body, raw)
		}
		ok, isBool := m["success"].(bool)
		if !isBool {
			t.Fatalf("%s %s %q: success = %#v", tg.method, tg.path, body, m["success"])
		}
		if code, _ := m["error_code"].(string); !ok && (code == "" || code == "INTERNAL") {
			t.Fatalf("%s %s %q: failure without a client error code: %s", tg.method, tg.path, body, raw)
		}
		if ok != (resp.StatusCode < 400) {
			t.Fatalf("%s %s %q: status %d with success %v", tg.method, tg.path, body, resp.StatusCode, ok)
		}
	})
}

// fuzzServer is the SQLite server of one family, with an app and keys.
func fuzzServer(f *testing.F) (*kwtest.Server, *kwtest.App, []string) {
	s := kwtest.Start(f, kwtest.Options{Engine: "sqlite"})
	a := s.CreateApp("Fuzz")
	return s, a, a.GenerateKeys(3, "days", 30, 2)
}

// FuzzAdminApps: apps.php (create, settings — where a null settings object
// once panicked —, actions).
func FuzzAdminApps(f *testing.F) {
	s, a, _ := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"PUT", "/api/admin/apps.php" + q}, {"POST", "/api/admin/apps.php"},
		{"POST", "/api/admin/apps.php" + q}},
		[]map[string]any{{"settings": nil, "login_message": "x"}, {"name": "Renamed", "settings": map[string]any{"heartbeat_interval": 60}},
			{"maintenance_mode": true}, {"name": "New app", "version": "1.0"}},
		[]string{"settings", "name", "version", "action", "login_message", "heartbeat_interval", "key_prefix", "features",
			"accounts_enabled", "trial_days", "self_reset_cooldown_hours"})
}

// FuzzAdminKeys: keys.php generate, update and actions, keys-bulk.php,
// sessions.php and hwid-resets.php.
func FuzzAdminKeys(f *testing.F) {
	s, a, keys := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"POST", "/api/admin/keys.php" + q}, {"PUT", "/api/admin/keys.php" + q},
		{"POST", "/api/admin/keys.php" + q + "&action=extend"}, {"POST", "/api/admin/keys.php" + q + "&action=convert"},
		{"POST", "/api/admin/keys-bulk.php" + q}, {"DELETE", "/api/admin/sessions.php" + q},
		{"POST", "/api/admin/hwid-resets.php" + q}},
		[]map[string]any{{"count": 2, "key_type": "days", "days": 30, "max_devices": 1, "features": map[string]any{"pro": true}},
			{"license_key": keys[0], "max_devices": 3, "note": "n", "features": map[string]any{"a": 1}},
			{"license_key": keys[1], "days": 5, "reason": "r"},
			{"op": "extend", "days": 3, "q": "", "status": "unused", "dry_run": true}},
		[]string{"count", "key_type", "days", "duration_value", "max_devices", "features", "license_key", "note", "reason",
			"session_id", "op", "q", "status", "dry_run", "expect", "id", "action"})
}

// FuzzAdminContent: texts, slides, social links, changelog and feature
// flags.
func FuzzAdminContent(f *testing.F) {
	s, a, _ := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"PUT", "/api/admin/texts.php" + q}, {"POST", "/api/admin/slides.php" + q},
		{"PUT", "/api/admin/slides.php" + q}, {"POST", "/api/admin/social-links.php" + q}, {"PUT", "/api/admin/social-links.php" + q},
		{"POST", "/api/admin/changelog.php" + q}, {"PUT", "/api/admin/changelog.php" + q}, {"PUT", "/api/admin/feature-flags.php" + q},
		{"DELETE", "/api/admin/feature-flags.php" + q}},
		[]map[string]any{{"name": "welcome", "value": "Hi", "default": true, "type": "text", "id": 1, "published": true,
			"description": "d"}, {"name": "pro", "value": true, "description": "Pro flag"}},
		[]string{"name", "value", "default", "type", "id", "published", "description", "license_key", "url", "image_url",
			"title", "body", "version", "position", "platform", "enabled"})
}

// FuzzAdminCommerce: plans, orders and subscriptions.
func FuzzAdminCommerce(f *testing.F) {
	s, a, _ := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"POST", "/api/admin/pricing.php" + q}, {"PUT", "/api/admin/pricing.php" + q},
		{"POST", "/api/admin/orders.php" + q + "&action=approve"}, {"POST", "/api/admin/orders.php" + q + "&action=refund"},
		{"POST", "/api/admin/subscriptions.php" + q}},
		[]map[string]any{{"type": "level", "name": "Pro", "price": 9.99, "currency": "usd", "interval": "month", "key_type": "days",
			"duration": 30, "max_devices": 2, "features": map[string]any{"pro": true}, "order": 1, "active": true, "id": 1},
			{"order_id": "ORD-1", "payment_ref": "p", "reason": "r", "id": 1}},
		[]string{"type", "name", "price", "price_cents", "currency", "interval", "key_type", "duration", "max_devices", "features",
			"order", "active", "id", "order_id", "payment_ref", "reason", "description"})
}

// FuzzAdminTeamAndSelf: members, profile, tokens and two-factor.
func FuzzAdminTeamAndSelf(f *testing.F) {
	s, a, _ := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"PUT", "/api/admin/members.php" + q}, {"DELETE", "/api/admin/members.php" + q},
		{"PUT", "/api/admin/profile.php"}, {"POST", "/api/admin/tokens.php"}, {"DELETE", "/api/admin/tokens.php"},
		{"POST", "/api/admin/2fa.php"}},
		[]map[string]any{{"username": "helper", "role": "viewer", "password": "long enough password"}, {"name": "ci", "id": "x"},
			{"action": "enrol"}, {"current_password": "wrong", "new_password": "another long password"}},
		[]string{"username", "role", "password", "name", "id", "action", "code", "current_password", "new_password", "email"})
}

// FuzzAdminWebhooksAccountsResellers: webhooks, customer accounts,
// resellers and updates' JSON bodies.
func FuzzAdminWebhooksAccountsResellers(f *testing.F) {
	s, a, _ := fuzzServer(f)
	q := "?app_id=" + a.ID
	fuzzAdmin(f, s, []adminTarget{{"POST", "/api/admin/webhooks.php" + q}, {"PUT", "/api/admin/webhooks.php" + q},
		{"POST", "/api/admin/accounts.php" + q + "&action=set-expiry"}, {"POST", "/api/admin/accounts.php" + q + "&action=ban"},
		{"POST", "/api/admin/resellers.php" + q}, {"PUT", "/api/admin/resellers.php" + q},
		{"POST", "/api/admin/resellers.php" + q + "&action=topup"}, {"PUT", "/api/admin/updates.php" + q}},
		[]map[string]any{{"url": "http://127.0.0.1:9/hook", "events": []string{"key.activated"}, "description": "d", "id": 1, "enabled": true},
			{"username": "bob", "expires_at": "2027-01-01T00:00:00Z", "lifetime": false, "reason": "r"},
			{"name": "Shop", "email": "s@example.com", "products": []map[string]any{{"key_type": "days", "duration": 30, "price_cents": 100}},
				"amount": 5, "id": "x"},
			{"version": "1.0.0", "channel": "stable", "rollout": 50, "is_mandatory": true}},
		[]string{"url", "events", "description", "id", "enabled", "username", "expires_at", "lifetime", "reason", "name", "email",
			"products", "amount", "version", "channel", "rollout", "is_mandatory", "action"})
}
