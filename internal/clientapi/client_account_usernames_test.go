package clientapi_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Usernames are one name in any case (Unicode case folding) on every surface
// that takes one, and the spelling given at sign-up is what is shown.

// uaSpellings are spellings of the account "Sam" (\u017F is LATIN SMALL
// LETTER LONG S, which folds to s), each working wherever "Sam" does.
var uaSpellings = []string{"sam", "SAM", "sAm", "\u017Fam", "\u017FAM"}

func TestAccountUsernameAnyCase(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.LockoutFailures = 3 })
		a := s.AccountsApp(t, "Cases", map[string]any{"account_signup_days": 30})
		keys := uaKeys(t, a, len(uaSpellings), "days", 10, 1, nil)
		u := a.SignUp(t, "Sam", "password1", "")
		id := u["id"]

		// Sign-up: another spelling is taken, whatever the password — even
		// the same one within the retry grace, which would otherwise pass for
		// a retry of the first sign-up. The exact spelling is a retry. (Sign-up
		// admits ASCII names only, so \u017F is for the other surfaces.)
		for _, name := range []string{"sam", "SAM", "sAM"} {
			for _, pw := range []string{"password1", "password2"} {
				a.Plain(uaRegister, map[string]any{"username": name, "password": pw}).PlainFail(t, 409, "USERNAME_EXISTS")
			}
		}
		r := a.Plain(uaRegister, map[string]any{"username": "Sam", "password": "password1"})
		r.OK(t)
		if r.Obj("user")["id"] != id {
			t.Fatalf("retried sign-up answered %s, want account %v", r, id)
		}
		if names := uaAccounts(t, a); len(names) != 1 || names[0] != "Sam" {
			t.Fatalf("accounts = %v, want [Sam]", names)
		}

		password := "password1"
		for i, name := range uaSpellings {
			// Login shows the stored spelling.
			r := uaSignIn(a, name, password, "pc")
			r.OK(t)
			if got := r.Obj("user")["username"]; got != "Sam" {
				t.Fatalf("login as %q: user.username = %v, want Sam", name, got)
			}
			// Redeem onto the same account (counted at the end).
			if r = uaRedeemOK(t, a, name, password, keys[i]); r.Body["license_key"] != keys[i] {
				t.Fatalf("redeem as %q: %s", name, r)
			}
			// Change-password.
			next := fmt.Sprintf("password-%d", i+2)
			a.Plain(uaChange, map[string]any{"username": name, "current_password": password, "new_password": next}).OK(t)
			password = next
			// Portal sign-in.
			p := s.CustomerSignIn(map[string]any{"app_id": a.ID, "username": name, "password": password})
			p.OK(t)
			v := s.BearerDo(p.Str("token"), "GET", kwtest.PathCustomerKey, nil)
			v.OK(t)
			if got := v.Obj("account")["username"]; got != "Sam" {
				t.Fatalf("portal as %q: account.username = %v, want Sam", name, got)
			}
		}
		acc := uaAccount(t, a, "\u017FAM")
		if acc["username"] != "Sam" || len(acc["redeemed_keys"].([]any)) != len(uaSpellings) {
			t.Fatalf("account after every spelling: %v", acc)
		}

		// Reset request by any spelling queues one for the account, shown as stored.
		a.RequestHWIDReset(t, map[string]any{"username": "\u017FAM", "reason": "new pc"})
		if req := s.OneResetRequest(t, a.ID, "pending"); req["username"] != "Sam" {
			t.Fatalf("reset request %v, want username Sam", req)
		}

		// The lockout counts every spelling as one username.
		uaSignIn(a, "sam", "wrong-pass", "pc").BadCredentials(t, "wrong password as sam")
		uaSignIn(a, "SAM", "wrong-pass", "pc").BadCredentials(t, "wrong password as SAM")
		uaSignIn(a, "\u017Fam", "wrong-pass", "pc").BadCredentials(t, "wrong password as \u017Fam")
		uaSignIn(a, "Sam", password, "pc").Locked(t, "right password as Sam after three spellings failed", 900)
	})
}

// uaRace sends the bodies as account-register at once and returns the replies.
func uaRace(a *kwtest.App, bodies []map[string]any) []*kwtest.Reply {
	out := make([]*kwtest.Reply, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			<-start
			out[i] = a.Plain(uaRegister, b)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// Twenty identical sign-ups at once (a client retrying before its first
// answer) all get the success of the one that created the account; twenty at
// once for one username with different passwords create one account and
// refuse the rest.
func TestAccountRegisterConcurrent(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.AccountsApp(t, "Race", map[string]any{"account_signup_days": 3})
		key := uaKeys(t, a, 1, "days", 30, 1, nil)[0]
		const n = 20

		for _, c := range []struct{ name, key string }{{"Twin", ""}, {"KeyTwin", key}} {
			body := map[string]any{"username": c.name, "password": "password1"}
			if c.key != "" {
				body["license_key"] = c.key
			}
			bodies := make([]map[string]any, n)
			for i := range bodies {
				bodies[i] = body
			}
			var first map[string]any
			for i, r := range uaRace(a, bodies) {
				if r.Status != 200 || r.Body["success"] != true {
					t.Fatalf("%s: identical sign-up %d of %d: %s", c.name, i+1, n, r)
				}
				u, k := r.Obj("user"), r.Obj("key")
				if first == nil {
					first = map[string]any{"id": u["id"], "expires_at": u["expires_at"], "days_added": k["days_added"]}
				}
				if u["id"] != first["id"] || u["expires_at"] != first["expires_at"] || k["days_added"] != first["days_added"] {
					t.Fatalf("%s: sign-up %d answered %s, another %v", c.name, i+1, r, first)
				}
			}
			if c.key != "" && first["days_added"] != float64(30) {
				t.Fatalf("%s: days_added = %v, want 30", c.name, first["days_added"])
			}
		}

		bodies := make([]map[string]any, n)
		for i := range bodies {
			bodies[i] = map[string]any{"username": "Contested", "password": fmt.Sprintf("password-%02d", i)}
		}
		won := -1
		for i, r := range uaRace(a, bodies) {
			switch {
			case r.Status == 200 && r.Body["success"] == true:
				if won >= 0 {
					t.Fatalf("sign-ups %d and %d with different passwords both succeeded", won, i)
				}
				won = i
			case r.Status != 409 || r.Body["error_code"] != "USERNAME_EXISTS":
				t.Fatalf("contested sign-up %d: %s, want 200 or 409 USERNAME_EXISTS", i, r)
			}
		}
		if won < 0 {
			t.Fatalf("no contested sign-up succeeded")
		}
		uaSignIn(a, "contested", fmt.Sprintf("password-%02d", won), "pc").OK(t)
		if names := uaAccounts(t, a); len(names) != 3 {
			t.Fatalf("accounts = %v, want Twin, KeyTwin and Contested", names)
		}
	})
}
