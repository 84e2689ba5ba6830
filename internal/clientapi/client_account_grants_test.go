package clientapi_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Banning and unbanning redeemed keys in any order leaves an account with
// exactly the time of its unbanned keys: days withdrawn while the account is
// lifetime come off the expiry beneath the lifetime grant, and come back the
// same way.
func TestAccountGrantsBanOrders(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := uaStart(t, engine)
		ban := func(a *kwtest.App, k string) { a.MustKeyAction(t, "ban", k, nil) }
		unban := func(a *kwtest.App, k string) { a.MustKeyAction(t, "unban", k, nil) }

		t.Run("days banned under a lifetime grant stay withdrawn", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Order1", map[string]any{"account_signup_days": 10})
			base := s.Clock.Now().Add(10 * uaDay)
			k := uaKeys(t, a, 1, "days", 30, 1, nil)[0]
			l := uaKeys(t, a, 1, "lifetime", 0, 1, nil)[0]
			a.SignUp(t, "olga", "password1", k)
			uaRedeemOK(t, a, "olga", "password1", l)
			ban(a, k)
			if v := uaAccount(t, a, "olga")["expires_at"]; v != nil {
				t.Fatalf("still lifetime through l, expires_at = %v", v)
			}
			ban(a, l)
			uaEqualTime(t, "after both bans", uaAccount(t, a, "olga")["expires_at"], base)
			unban(a, k)
			uaEqualTime(t, "after unbanning k", uaAccount(t, a, "olga")["expires_at"], base.Add(30*uaDay))
		})

		t.Run("days given back under a lifetime grant survive its ban", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Order2", map[string]any{"account_signup_days": 10})
			base := s.Clock.Now().Add(10 * uaDay)
			k := uaKeys(t, a, 1, "days", 30, 1, nil)[0]
			l := uaKeys(t, a, 1, "lifetime", 0, 1, nil)[0]
			a.SignUp(t, "paul", "password1", k)
			ban(a, k)
			uaEqualTime(t, "k banned", uaAccount(t, a, "paul")["expires_at"], base)
			uaRedeemOK(t, a, "paul", "password1", l)
			unban(a, k)
			ban(a, l)
			uaEqualTime(t, "l banned, k not", uaAccount(t, a, "paul")["expires_at"], base.Add(30*uaDay))
		})

		t.Run("restart mode takes back only what the key added", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Restart", map[string]any{"account_signup_days": 10, "account_redeem_mode": "restart"})
			now := s.Clock.Now()
			k := uaKeys(t, a, 1, "days", 30, 1, nil)[0]
			a.SignUp(t, "rita", "password1", "")
			uaRedeemOK(t, a, "rita", "password1", k)
			uaEqualTime(t, "restarted", uaAccount(t, a, "rita")["expires_at"], now.Add(30*uaDay))
			ban(a, k)
			uaEqualTime(t, "k banned", uaAccount(t, a, "rita")["expires_at"], now.Add(10*uaDay))
			unban(a, k)
			uaEqualTime(t, "k unbanned", uaAccount(t, a, "rita")["expires_at"], now.Add(30*uaDay))
		})

		t.Run("a key of a deleted account stays redeemed through ban and unban", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "Deleted", map[string]any{"account_signup_days": 0})
			k := uaKeys(t, a, 1, "days", 30, 1, nil)[0]
			a.SignUp(t, "dora", "password1", k)
			s.MustAdmin("DELETE", "/api/admin/accounts.php", map[string]any{"app_id": a.ID, "username": "dora"})
			ban(a, k)
			unban(a, k)
			if st := a.KeyView(t, k)["status"]; st != "redeemed" {
				t.Fatalf("status after unban = %v, want redeemed", st)
			}
			a.LoginReply(k, "pc").SealedFail(t, "KEY_REDEEMED")
		})

		t.Run("keys.php lists redeemed keys and refuses rotating one", func(t *testing.T) {
			s := clSub(t, srv)
			a := s.AccountsApp(t, "List", nil)
			ks := uaKeys(t, a, 2, "days", 30, 1, nil)
			a.SignUp(t, "lena", "password1", ks[0])
			list := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+a.ID+"&status=redeemed", nil).List(t, "keys")
			if len(list) != 1 || list[0]["license_key"] != ks[0] {
				t.Fatalf("status=redeemed lists %v, want only %s", list, ks[0])
			}
			a.KeyAction("rotate", ks[0], nil).JSONFail(t, 409, "CONFLICT")
		})
	})
}

// A client that resends a register or redeem whose reply it lost gets the
// same answer within two minutes; later, or with another password, the
// usual refusal.
func TestAccountRetriedRequests(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := uaStart(t, engine)
		a := s.AccountsApp(t, "Retry", map[string]any{"account_signup_days": 0})
		ks := uaKeys(t, a, 3, "days", 30, 1, nil)
		body := map[string]any{"username": "ruth", "password": "password1", "license_key": ks[0]}
		first := a.Plain(uaRegister, body)
		first.OK(t)
		again := a.Plain(uaRegister, body)
		again.OK(t)
		if again.Obj("user")["id"] != first.Obj("user")["id"] || again.Obj("key")["days_added"] != first.Obj("key")["days_added"] {
			t.Fatalf("retried register answered %s, first %s", again, first)
		}
		a.Plain(uaRegister, map[string]any{"username": "ruth", "password": "password2"}).PlainFail(t, 409, "USERNAME_EXISTS")
		a.Plain(uaRegister, map[string]any{"username": "ruth", "password": "password1", "license_key": ks[1]}).PlainFail(t,
			409, "USERNAME_EXISTS")

		if n := len(uaAccount(t, a, "ruth")["redeemed_keys"].([]any)); n != 1 {
			t.Fatalf("redeemed_keys = %d after retries, want 1", n)
		}

		exp := uaExpiry(t, a, "ruth")
		uaRedeemOK(t, a, "ruth", "password1", ks[1])
		r := uaRedeemOK(t, a, "ruth", "password1", ks[1])
		if r.Body["days_added"] != float64(30) {
			t.Fatalf("retried redeem = %s", r)
		}
		uaEqualTime(t, "after a redeem and its retry", uaAccount(t, a, "ruth")["expires_at"], exp.Add(30*uaDay))

		s.Clock.Advance(3 * time.Minute)
		a.Plain(uaRedeem, map[string]any{"username": "ruth", "password": "password1", "license_key": ks[1]}).PlainFail(t,
			409, "KEY_ALREADY_USED")

		a.Plain(uaRegister, body).PlainFail(t, 409, "USERNAME_EXISTS")
	})
}
