package portal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// rsOwner calls resellers.php as the bootstrap admin (the apps' owner).
func rsOwner(app *kwtest.App, method, query string, body map[string]any) *kwtest.Reply {
	app.S.T.Helper()
	path := "/api/admin/resellers.php?app_id=" + url.QueryEscape(app.ID) + query
	if body == nil {
		return app.S.Admin(method, path, nil)
	}
	body["app_id"] = app.ID
	return app.S.Admin(method, path, body)
}

func rsOK(t *testing.T, r *kwtest.Reply) *kwtest.Reply {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("got %s, want 200 success", r)
	}
	return r
}

func rsKeys(t *testing.T, r *kwtest.Reply) []string {
	t.Helper()
	var out []string
	for _, k := range r.List(t, "keys") {
		out = append(out, k["license_key"].(string))
	}
	return out
}

func TestResellerLifecycle(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Sold")
		other := s.CreateApp("Elsewhere")
		aID, aTok := app.CreateReseller(t, "Alpha")
		bID, bTok := app.CreateReseller(t, "Beta")
		cID, _ := other.CreateReseller(t, "Gamma")

		me := rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/me.php", nil))
		if me.Obj("reseller")["id"] != aID || me.Obj("reseller")["balance"] != 0.0 || me.Obj("app")["id"] != app.ID ||
			len(me.Obj("reseller")["products"].([]any)) != 2 {
			t.Fatalf("me.php: %s", me)
		}

		// Nothing to spend yet.
		r := s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "month", "count": 1})
		kwtest.ExpectCode(t, r, 409, "INSUFFICIENT_CREDIT")
		if r.Body["balance"] != 0.0 {
			t.Errorf("refusal without the balance: %s", r)
		}
		rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "topup", "id": aID, "amount": 20}))
		rsOK(t, rsOwner(app, "POST", "&action=topup", map[string]any{"id": bID, "amount": 4}))

		// Generating debits price × count and gives working keys.
		r = rsOK(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "month", "count": 3}))
		mine := rsKeys(t, r)
		if len(mine) != 3 || r.Body["charged"] != 12.0 || r.Body["balance"] != 8.0 {
			t.Fatalf("generate: %s", r)
		}
		if k := app.KeyView(t, mine[0]); k["key_type"] != "days" || k["duration"] != 30.0 || k["max_devices"] != 2.0 || k["status"] != "unused" {
			t.Errorf("generated key: %v", k)
		}
		session := app.Login(mine[0], "pc-1")
		if evs := s.EventsOf(app.ID, "key.created"); len(evs) == 0 || evs[len(evs)-1]["reseller_id"] != aID {
			t.Errorf("key.created events: %v", evs)
		}
		for _, c := range []struct {
			body   map[string]any
			status int
			code   string
		}{
			{map[string]any{"product": "life", "count": 1}, 409, "INSUFFICIENT_CREDIT"},
			{map[string]any{"product": "nope", "count": 1}, 404, "NOT_FOUND"},
			{map[string]any{"product": "month", "count": 0}, 400, "MISSING_FIELDS"},
			{map[string]any{"product": "month", "count": 1001}, 400, "MISSING_FIELDS"},
			{map[string]any{"product": "month"}, 400, "MISSING_FIELDS"},
			{map[string]any{"count": 1}, 400, "MISSING_FIELDS"},
			{map[string]any{"product": "month", "count": "x"}, 400, "MISSING_FIELDS"},
		} {
			kwtest.ExpectCode(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", c.body), c.status, c.code)
		}
		theirs := rsKeys(t, rsOK(t, s.BearerDo(bTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "month", "count": 1})))
		owners := app.GenerateKeys(1, "lifetime", 0, 1)

		// Each reseller sees only its own keys.
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/keys.php", nil))
		if got := rsKeys(t, r); strings.Join(got, ",") != strings.Join(mine, ",") || r.Body["next_cursor"] != nil {
			t.Errorf("A's keys = %v, want %v", got, mine)
		}
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/keys.php?status=active", nil))
		if got := rsKeys(t, r); len(got) != 1 || got[0] != mine[0] {
			t.Errorf("A's active keys = %v, want [%s]", got, mine[0])
		}
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/keys.php?limit=2", nil))
		if got := rsKeys(t, r); len(got) != 2 || r.Body["next_cursor"] == nil {
			t.Errorf("first page: %s", r)
		}
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/keys.php?limit=2&cursor="+r.Str("next_cursor"), nil))
		if got := rsKeys(t, r); len(got) != 1 || got[0] != mine[2] {
			t.Errorf("second page: %s", r)
		}
		kwtest.ExpectCode(t, s.BearerDo(aTok, "GET", "/api/reseller/keys.php?status=gone", nil), 400, "MISSING_FIELDS")

		// Banning: only its own keys.
		for _, lk := range []string{theirs[0], owners[0], "NOPE-NOPE"} {
			kwtest.ExpectCode(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php?action=ban", map[string]any{"license_key": lk}), 404, "NOT_FOUND")
		}
		if k := app.KeyView(t, theirs[0]); k["status"] != "unused" {
			t.Errorf("another reseller's key was touched: %v", k)
		}
		r = rsOK(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"action": "ban", "license_key": mine[0], "reason": "chargeback"}))
		if r.Obj("key")["status"] != "banned" {
			t.Errorf("ban: %s", r)
		}
		app.Heartbeat(session, mine[0]).Kill(t, "BANNED")
		if evs := s.EventsOf(app.ID, "key.banned"); len(evs) != 1 || evs[0]["license_key"] != mine[0] || evs[0]["reason"] != "chargeback" {
			t.Errorf("key.banned events: %v", evs)
		}

		// Adjustments never take a balance below zero.
		r = rsOwner(app, "POST", "", map[string]any{"action": "adjust", "id": aID, "amount": -9, "reason": "too much"})
		kwtest.ExpectCode(t, r, 409, "INSUFFICIENT_CREDIT")
		if r.Body["balance"] != 8.0 {
			t.Errorf("refused adjustment: %s", r)
		}
		kwtest.ExpectCode(t, rsOwner(app, "POST", "", map[string]any{"action": "adjust", "id": aID, "amount": -3}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, rsOwner(app, "POST", "", map[string]any{"action": "topup", "id": aID, "amount": 0}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, rsOwner(app, "POST", "", map[string]any{"action": "topup", "id": aID, "amount": -1}), 400, "MISSING_FIELDS")
		r = rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "adjust", "id": aID, "amount": -3, "reason": "refund of 1"}))
		if r.Obj("reseller")["balance"] != 5.0 {
			t.Errorf("adjust: %s", r)
		}

		// The owner sees the balances and every change; so does the reseller.
		r = rsOK(t, rsOwner(app, "GET", "", nil))
		list := r.List(t, "resellers")
		balances := map[any]any{}
		for _, v := range list {
			balances[v["id"]] = v["balance"]
		}
		if len(list) != 2 || balances[aID] != 5.0 || balances[bID] != 0.0 {
			t.Errorf("list: %s", r)
		}
		r = rsOK(t, rsOwner(app, "GET", "&id="+aID, nil))
		act := r.List(t, "activity")
		var reasons []string
		var sum float64
		for _, e := range act {
			reasons = append(reasons, e["reason"].(string))
			sum += e["delta"].(float64)
		}
		if strings.Join(reasons, ",") != "adjust,generate,topup" || sum != 5 || r.Obj("reseller")["balance"] != 5.0 ||
			act[0]["balance_after"] != 5.0 || act[0]["detail"] != "refund of 1" {
			t.Errorf("activity: %s", r)
		}
		r = rsOK(t, rsOwner(app, "GET", "&action=activity", nil))
		if got := len(r.List(t, "activity")); got != 5 {
			t.Errorf("app activity has %d entries, want 5: %s", got, r)
		}
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/ledger.php", nil))
		if got := r.List(t, "entries"); len(got) != 3 || r.Body["balance"] != 5.0 || got[1]["actor"] != "reseller:Alpha" {
			t.Errorf("ledger.php: %s", r)
		}
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/ledger.php?limit=1", nil))
		r = rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/ledger.php?limit=2&cursor="+r.Str("next_cursor"), nil))
		if got := r.List(t, "entries"); len(got) != 2 || got[0]["reason"] != "generate" || got[1]["reason"] != "topup" {
			t.Errorf("ledger.php second page: %s", r)
		}

		// Another app's reseller is not found through this app.
		for _, c := range []struct {
			method, query string
			body          map[string]any
		}{
			{"GET", "&id=" + cID, nil},
			{"POST", "", map[string]any{"action": "topup", "id": cID, "amount": 5}},
			{"POST", "", map[string]any{"action": "disable", "id": cID}},
			{"PUT", "", map[string]any{"id": cID, "name": "Stolen"}},
			{"DELETE", "", map[string]any{"id": cID}},
		} {
			kwtest.ExpectCode(t, rsOwner(app, c.method, c.query, c.body), 404, "NOT_FOUND")
		}

		// Products and profile; bad products are refused.
		r = rsOK(t, rsOwner(app, "PUT", "", map[string]any{"id": aID, "email": "alpha@shop.example",
			"products": []map[string]any{{"id": "week", "name": "Week", "key_type": "days", "duration_value": 7, "price": 1}}}))
		if v := r.Obj("reseller"); v["name"] != "Alpha" || v["email"] != "alpha@shop.example" || len(v["products"].([]any)) != 1 {
			t.Errorf("put: %s", r)
		}
		for _, ps := range []any{
			"x", []any{map[string]any{"id": "a", "name": "A", "key_type": "days", "price": 1}},
			[]any{map[string]any{"id": "a", "name": "A", "key_type": "lifetime", "price": 1.5}},
			[]any{map[string]any{"id": "a", "name": "A", "key_type": "lifetime", "price": 1, "duration": 3}},
			[]any{map[string]any{"id": "a", "name": "A", "key_type": "lifetime", "price": -1}},
			[]any{map[string]any{"id": "a", "name": "A", "key_type": "lifetime"}, map[string]any{"id": "a", "name": "B", "key_type": "lifetime"}},
		} {
			kwtest.ExpectCode(t, rsOwner(app, "PUT", "", map[string]any{"id": aID, "products": ps}), 400, "MISSING_FIELDS")
		}
		kwtest.ExpectCode(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "month", "count": 1}), 404, "NOT_FOUND")
		rsOK(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "week", "count": 2}))

		// Disabled, rotated, unknown, revoked.
		rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "disable", "id": aID}))
		kwtest.ExpectCode(t, s.BearerDo(aTok, "GET", "/api/reseller/me.php", nil), 403, "RESELLER_DISABLED")
		kwtest.ExpectCode(t, s.BearerDo(aTok, "POST", "/api/reseller/keys.php", map[string]any{"product": "week", "count": 1}), 403, "RESELLER_DISABLED")
		rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "enable", "id": aID}))
		rsOK(t, s.BearerDo(aTok, "GET", "/api/reseller/me.php", nil))
		r = rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "rotate_token", "id": aID}))
		newTok := r.Str("token")
		if !strings.HasPrefix(newTok, "kwr_") || newTok == aTok {
			t.Fatalf("rotate: %s", r)
		}
		kwtest.ExpectCode(t, s.BearerDo(aTok, "GET", "/api/reseller/me.php", nil), 401, "UNAUTHORIZED")
		rsOK(t, s.BearerDo(newTok, "GET", "/api/reseller/me.php", nil))
		kwtest.ExpectCode(t, s.BearerDo("", "GET", "/api/reseller/me.php", nil), 401, "UNAUTHORIZED")
		kwtest.ExpectCode(t, s.BearerDo("kwr_"+strings.Repeat("A", 43), "GET", "/api/reseller/ledger.php", nil), 401, "UNAUTHORIZED")
		kwtest.ExpectCode(t, s.BearerDo(s.AdminToken(), "GET", "/api/reseller/me.php", nil), 401, "UNAUTHORIZED")
		kwtest.ExpectCode(t, s.BearerDo(newTok, "PUT", "/api/reseller/keys.php", nil), 405, "METHOD_NOT_ALLOWED")
		kwtest.ExpectCode(t, s.Do("POST", "/api/reseller/keys.php", http.Header{"Authorization": {"Bearer " + newTok}}, []byte("[1")),
			400, "MISSING_FIELDS")
		s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "action": "revoke"})
		kwtest.ExpectCode(t, s.BearerDo(newTok, "GET", "/api/reseller/me.php", nil), 403, "APP_REVOKED")
		s.MustAdmin("POST", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "action": "restore"})

		// Deleting a reseller: its keys stay, its token is gone.
		rsOK(t, rsOwner(app, "DELETE", "", map[string]any{"id": bID}))
		kwtest.ExpectCode(t, s.BearerDo(bTok, "GET", "/api/reseller/me.php", nil), 401, "UNAUTHORIZED")
		if k := app.KeyView(t, theirs[0]); k["license_key"] != theirs[0] {
			t.Errorf("the deleted reseller's key: %v", k)
		}

		// Every owner and reseller action is in the audit log, resellers'
		// under their own name.
		seen := map[string]map[string]any{}
		for _, e := range s.Audit(t, "limit=1000&app_id="+app.ID) {
			if a := e["action"].(string); strings.HasPrefix(a, "reseller.") {
				if seen[a] == nil {
					seen[a] = e
				}
			}
		}
		for _, a := range []string{"reseller.create", "reseller.topup", "reseller.adjust", "reseller.update", "reseller.disable",
			"reseller.enable", "reseller.rotate_token", "reseller.delete", "reseller.generate", "reseller.ban"} {
			e := seen[a]
			if e == nil {
				t.Errorf("no %s audit entry", a)
				continue
			}
			actor := e["actor"].(map[string]any)
			switch a {
			case "reseller.generate", "reseller.ban":
				if actor["kind"] != "reseller" || actor["id"] != aID || actor["name"] != "Alpha" {
					t.Errorf("%s actor = %v, want reseller %s Alpha", a, actor, aID)
				}
			default:
				if actor["kind"] != "admin" {
					t.Errorf("%s actor = %v, want the admin", a, actor)
				}
			}
		}
		if e := seen["reseller.ban"]; e != nil && e["target"] != mine[0] {
			t.Errorf("reseller.ban target = %v", e["target"])
		}
		if got := s.Audit(t, "actor_id="+aID+"&app_id="+app.ID); len(got) != 3 { // two generates, one ban
			t.Errorf("%d audit entries by the reseller, want 3", len(got))
		}
	})
}

// rsResult is one concurrent request's outcome.
type rsResult struct {
	status int
	code   string
	count  int
	keys   []string
	err    error
}

func rsPost(url, token string, body any) rsResult {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(raw))
	if err != nil {
		return rsResult{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		return rsResult{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return rsResult{err: err}
	}
	var out struct {
		Success   bool   `json:"success"`
		ErrorCode string `json:"error_code"`
		Keys      []struct {
			LicenseKey string `json:"license_key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return rsResult{err: fmt.Errorf("%d %s: %w", resp.StatusCode, b, err)}
	}
	r := rsResult{status: resp.StatusCode, code: out.ErrorCode}
	for _, k := range out.Keys {
		r.keys = append(r.keys, k.LicenseKey)
	}
	return r
}

// TestResellerConcurrentGenerate: credit for 25 keys, 16 clients asking for
// 1–3 keys at a time over real HTTP, all at once. The balance never goes
// below zero and every credit spent is a key that exists and a ledger row.
func TestResellerConcurrentGenerate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		app := s.CreateApp("Busy")
		id, tok := app.CreateReseller(t, "Rush")
		const price, initial, workers, tries = 4, 100, 16, 4
		rsOK(t, rsOwner(app, "POST", "", map[string]any{"action": "topup", "id": id, "amount": initial}))

		results := make([][]rsResult, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				<-start
				for i := range tries {
					n := 1 + (w+i)%3
					r := rsPost(s.URL+"/api/reseller/keys.php", tok, map[string]any{"product": "month", "count": n})
					r.count = n
					results[w] = append(results[w], r)
				}
			})
		}
		close(start)
		wg.Wait()

		var ok, refused, generated int
		got := map[string]bool{}
		for _, rs := range results {
			for _, r := range rs {
				switch {
				case r.err != nil:
					t.Errorf("request: %v", r.err)
				case r.status == 200 && len(r.keys) == r.count:
					ok++
					generated += r.count
					for _, k := range r.keys {
						got[k] = true
					}
				case r.status == 409 && r.code == "INSUFFICIENT_CREDIT":
					refused++
				default:
					t.Errorf("request for %d keys: %d %s (%d keys)", r.count, r.status, r.code, len(r.keys))
				}
			}
		}
		if ok+refused != workers*tries {
			t.Errorf("%d successes + %d refusals, want %d requests", ok, refused, workers*tries)
		}
		final := rsOK(t, s.BearerDo(tok, "GET", "/api/reseller/me.php", nil)).Obj("reseller")["balance"].(float64)
		if final < 0 || int(initial-final) != generated*price {
			t.Errorf("final balance %v after %d keys at %d from %d", final, generated, price, initial)
		}
		if refused > 0 && final >= 3*price {
			t.Errorf("requests were refused with %v credits left", final)
		}
		// Exactly the keys paid for exist, all the reseller's.
		var listed []string
		cursor := ""
		for {
			r := rsOK(t, s.BearerDo(tok, "GET", "/api/reseller/keys.php?limit=7"+cursor, nil))
			listed = append(listed, rsKeys(t, r)...)
			if r.Body["next_cursor"] == nil {
				break
			}
			cursor = "&cursor=" + r.Str("next_cursor")
		}
		if len(listed) != int(initial-final)/price || len(listed) != len(got) {
			t.Errorf("%d keys listed, %d answered, want %d", len(listed), len(got), int(initial-final)/price)
		}
		for _, k := range listed {
			if !got[k] {
				t.Errorf("listed key %s was never answered", k)
			}
		}
		// The ledger accounts for every change.
		r := rsOK(t, s.BearerDo(tok, "GET", "/api/reseller/ledger.php?limit=1000", nil))
		var sum float64
		entries := r.List(t, "entries")
		for _, e := range entries {
			sum += e["delta"].(float64)
		}
		if sum != final || len(entries) != ok+1 {
			t.Errorf("ledger: %d entries summing to %v, want %d summing to %v", len(entries), sum, ok+1, final)
		}
		t.Logf("%s: %d generated in %d requests, %d refused, %v credits left", engine, generated, ok, refused, final)
	})
}
