package portal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// Helpers of the customer self-service tests start with cu.

const (
	cuSess = "/api/customer/sessions.php"
	cuOrd  = "/api/customer/orders.php"
	cuSubs = "/api/customer/subscriptions.php"
)

// cuToken signs in with a key and returns the customer token.
func cuToken(t testing.TB, s *kwtest.Server, appID, key string) string {
	t.Helper()
	r := s.CustomerSignIn(map[string]any{"app_id": appID, "license_key": key})
	r.OK(t)
	if r.Str("token") == "" {
		t.Fatalf("sign-in without token: %s", r)
	}
	return r.Str("token")
}

// cuList returns the list field name of a successful reply.
func cuList(t testing.TB, r *kwtest.Reply, name string) []map[string]any {
	t.Helper()
	r.OK(t)
	return r.List(t, name)
}

// A key signs in: a one-hour token whose key view shows the key; a missing
// app_id is 400, and a revoked app 403 APP_REVOKED at sign-in and after.
func TestCustomerLoginWithKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Portal")
		key := a.GenerateKeys(1, "days", 30, 2)[0]
		r := s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": " " + key + " "})
		r.OK(t)
		if got := kwtest.WireTime(t, "expires_at", r.Body["expires_at"]); !got.Equal(s.Clock.Now().Add(time.Hour)) {
			t.Fatalf("expires_at = %v, want an hour from now", got)
		}
		tok := r.Str("token")
		if strings.Contains(r.String(), a.Secret) {
			t.Fatal("sign-in reply carries the app secret")
		}
		v := s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil)
		v.OK(t)
		k := v.Obj("key")
		if v.Str("kind") != "key" || k["license_key"] != key || k["status"] != "unused" || k["max_devices"] != float64(2) ||
			k["key_type"] != "days" || len(v.List(t, "devices")) != 0 || len(v.List(t, "sessions")) != 0 {
			t.Fatalf("key view: %s", v)
		}
		kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"license_key": key}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.BearerDo(tok, "PUT", kwtest.PathCustomerKey, nil), 405, "METHOD_NOT_ALLOWED")

		// A banned key does not sign in, and its earlier token stops
		// working; unbanned, both work again. An expired key signs in.
		a.MustKeyAction(t, "ban", key, map[string]any{"reason": "chargeback"})
		kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": key}), 403, "BANNED")
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil), 403, "BANNED")
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", cuOrd, nil), 403, "BANNED")
		a.MustKeyAction(t, "unban", key, nil)
		s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil).OK(t)
		short := a.GenerateKeys(1, "days", 1, 1)[0]
		a.Login(short, "pc")
		s.Clock.Advance(49 * time.Hour)
		if st := s.BearerDo(cuToken(t, s, a.ID, short), "GET", kwtest.PathCustomerKey, nil).Obj("key")["status"]; st != "expired" {
			t.Fatalf("expired key's status in the portal = %v", st)
		}
		tok = cuToken(t, s, a.ID, key)

		s.MustAdmin("POST", "/api/admin/apps.php?action=revoke&app_id="+a.ID, nil)
		kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": key}), 403, "APP_REVOKED")
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil), 403, "APP_REVOKED")
	})
}

// An app user account signs in with username and password and sees its
// account, devices and sessions.
func TestCustomerLoginWithAccount(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Accounts")
		a.RegisterUser(t, "alice")
		a.SignIn("alice", kwtest.LockoutPassword, "").OK(t)
		r := s.CustomerSignIn(map[string]any{"app_id": a.ID, "username": "Alice", "password": kwtest.LockoutPassword})
		r.OK(t)
		if r.Str("kind") != "account" {
			t.Fatalf("sign-in: %s", r)
		}
		v := s.BearerDo(r.Str("token"), "GET", kwtest.PathCustomerKey, nil)
		v.OK(t)
		acc := v.Obj("account")
		if v.Str("kind") != "account" || acc["username"] != "alice" || acc["status"] != "active" || acc["days_remaining"] != float64(30) {
			t.Fatalf("account view: %s", v)
		}
		if d, ss := v.List(t, "devices"), v.List(t, "sessions"); len(d) != 1 || d[0]["hwid"] != "pc-lockout" || len(ss) != 1 {
			t.Fatalf("account devices %v sessions %v", d, ss)
		}
		// Seats and license files are a key sign-in's; an account returns none.
		if _, ok := v.Body["seats"]; ok {
			t.Fatalf("account view has seats: %s", v)
		}
		if _, ok := v.Body["license_files"]; ok {
			t.Fatalf("account view has license_files: %s", v)
		}
		kwtest.ExpectCode(t, s.BearerDo(r.Str("token"), "POST", "/api/customer/license-files.php", map[string]any{"id": "f", "action": "return"}), 404, "NOT_FOUND")
		// A password change ends the token.
		a.Plain("/api/auth/change-password.php", map[string]any{"username": "alice", "current_password": kwtest.LockoutPassword,
			"new_password": "another password 2"}).OK(t)

		kwtest.ExpectCode(t, s.BearerDo(r.Str("token"), "GET", kwtest.PathCustomerKey, nil), 401, "UNAUTHORIZED")

		// A banned account does not sign in, and its token stops working.
		r = s.CustomerSignIn(map[string]any{"app_id": a.ID, "username": "alice", "password": "another password 2"})
		r.OK(t)
		s.MustAdmin("POST", "/api/admin/accounts.php?action=ban&app_id="+a.ID, map[string]any{"username": "alice"})
		kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"app_id": a.ID, "username": "alice", "password": "another password 2"}), 403, "BANNED")
		kwtest.ExpectCode(t, s.BearerDo(r.Str("token"), "GET", kwtest.PathCustomerKey, nil), 403, "BANNED")
	})
}

// Every failed sign-in is the same 401 body: unknown app, unknown key, key
// of another app, unknown username, wrong password.
func TestCustomerWrongCredentials(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.LockoutApp(t, "Wrong")
		b := s.CreateApp("Other")
		a.RegisterUser(t, "bob")
		other := b.GenerateKeys(1, "days", 30, 1)[0]
		var first string
		for what, body := range map[string]map[string]any{
			"unknown key":      {"app_id": a.ID, "license_key": "KEY-NOPE1-NOPE2-NOPE3"},
			"other app's key":  {"app_id": a.ID, "license_key": other},
			"unknown app":      {"app_id": "no-such-app", "license_key": other},
			"unknown username": {"app_id": a.ID, "username": "nobody", "password": kwtest.LockoutPassword},
			"wrong password":   {"app_id": a.ID, "username": "bob", "password": kwtest.WrongPassword},
		} {
			r := s.CustomerSignIn(body)
			kwtest.ExpectCode(t, r, 401, "INVALID_CREDENTIALS")
			if first == "" {
				first = string(r.Raw)
			} else if string(r.Raw) != first {
				t.Fatalf("%s: body %s differs from %s", what, r.Raw, first)
			}
		}
	})
}

// Repeated failures lock the key string (429 TOO_MANY_ATTEMPTS with
// Retry-After, even for the right key) until the lock runs out; failures
// from one address lock that address for every key.
func TestCustomerLockout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.LockoutFailures = 3; c.LockoutIPFailures = 6 })
		a := s.CreateApp("Locks")
		keys := a.GenerateKeys(2, "days", 30, 1)
		// A key string that does not exist locks like one that does.
		for range 3 {
			kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": keys[0] + "X"}), 401, "INVALID_CREDENTIALS")
		}
		s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": keys[0] + "X"}).Locked(t, "guessed key", int(kwtest.LockFor/time.Second))
		cuToken(t, s, a.ID, keys[0]) // another key string is not locked
		for range 3 {
			kwtest.ExpectCode(t, s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": keys[1] + "Y"}), 401, "INVALID_CREDENTIALS")
		}
		// Six failures from this address: every key is refused now.
		s.CustomerSignIn(map[string]any{"app_id": a.ID, "license_key": keys[1]}).Locked(t, "locked address", 0)
		s.Clock.Advance(kwtest.LockFor + time.Second)
		cuToken(t, s, a.ID, keys[1])
	})
}

// A token works for an hour on the clock, then is 401; so are garbage, an
// admin token, no token, and the token of a deleted key.
func TestCustomerTokenExpiry(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Expiry")
		keys := a.GenerateKeys(2, "days", 30, 1)
		tok := cuToken(t, s, a.ID, keys[0])
		s.Clock.Advance(59 * time.Minute)
		s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil).OK(t)
		s.Clock.Advance(time.Minute + time.Second)
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil), 401, "UNAUTHORIZED")
		for what, bad := range map[string]string{"none": "", "garbage": "not.a.token", "admin": s.AdminToken(), "tampered": tok[:len(tok)-2] + "xx"} {
			if r := s.BearerDo(bad, "GET", kwtest.PathCustomerKey, nil); r.Status != 401 || r.Body["error_code"] != "UNAUTHORIZED" {
				t.Fatalf("%s token: %s", what, r)
			}
		}
		tok = cuToken(t, s, a.ID, keys[1])
		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": keys[1]})
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil), 401, "UNAUTHORIZED")
	})
}

// The key view lists the client's devices and live sessions; the customer
// ends one of them (its heartbeat answers SESSION_REVOKED, audited as the
// customer), while another customer's session ID is 404 and that session
// goes on beating.
func TestCustomerSessions(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Sessions")
		keys := a.GenerateKeys(2, "days", 30, 2)
		// Clients hold session tokens; customers see and name sessions by
		// their public IDs.
		sid1 := a.Login(keys[0], "pc-one")
		sid2 := a.Login(keys[0], "pc-two")
		other := a.Login(keys[1], "pc-other")
		tok := cuToken(t, s, a.ID, keys[0])
		otherID := cuSessionID(t, s, cuToken(t, s, a.ID, keys[1]), "pc-other")
		id1, id2 := cuSessionID(t, s, tok, "pc-one"), cuSessionID(t, s, tok, "pc-two")
		v := s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil)
		v.OK(t)
		if v.Obj("key")["status"] != "active" || v.Obj("key")["days_remaining"] != float64(30) {
			t.Fatalf("key: %v", v.Obj("key"))
		}
		devices, sessions := v.List(t, "devices"), v.List(t, "sessions")
		if len(devices) != 2 || devices[0]["hwid"] != "pc-one" {
			t.Fatalf("devices = %v", devices)
		}
		kwtest.WireTime(t, "first_seen_at", devices[0]["first_seen_at"])
		kwtest.WireTime(t, "last_seen_at", devices[0]["last_seen_at"])
		if len(sessions) != 2 {
			t.Fatalf("sessions = %v", sessions)
		}
		for _, ss := range sessions {
			if ss["session_id"] == otherID || ss["session_id"] == sid1 || ss["ip"] != "127.0.0.1" {
				t.Fatalf("session %v", ss)
			}
			kwtest.WireTime(t, "started_at", ss["started_at"])
			kwtest.WireTime(t, "last_heartbeat_at", ss["last_heartbeat_at"])
		}

		kwtest.ExpectCode(t, s.BearerDo(tok, "DELETE", cuSess, map[string]any{"session_id": otherID}), 404, "NOT_FOUND")
		a.BeatOK(t, other, keys[1])
		kwtest.ExpectCode(t, s.BearerDo(tok, "DELETE", cuSess, map[string]any{}), 400, "MISSING_FIELDS")

		kwtest.ExpectCode(t, s.BearerDo(tok, "DELETE", cuSess, map[string]any{"session_id": sid1}), 404, "NOT_FOUND") // a token is no ID
		s.BearerDo(tok, "DELETE", cuSess, map[string]any{"session_id": id1}).OK(t)
		a.Heartbeat(sid1, keys[0]).Kill(t, "SESSION_REVOKED")
		a.BeatOK(t, sid2, keys[0])
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuSess, map[string]any{"session_id": id1}), 404, "NOT_FOUND")
		s.BearerDo(tok, "POST", cuSess+"?session_id="+id2, nil).OK(t)
		a.Heartbeat(sid2, keys[0]).Kill(t, "SESSION_REVOKED")
		a.BeatOK(t, other, keys[1])

		entries := s.Audit(t, "app_id="+a.ID+"&action=session.revoke")
		if len(entries) != 2 {
			t.Fatalf("%d session.revoke entries, want 2", len(entries))
		}
		actor, _ := entries[0]["actor"].(map[string]any)
		if actor["kind"] != "customer" || actor["name"] != "…"+keys[0][len(keys[0])-5:] || strings.Contains(entries[0]["target"].(string), keys[0]) {
			t.Fatalf("audit entry %v", entries[0])
		}
	})
}

// Orders and subscriptions: each customer sees the orders that delivered
// their key (and renewals of their subscription) and cancels only their own
// subscription; another's is 404.
func TestCustomerOrdersAndSubscriptions(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a, plan, secret := s.StoreApp(t)
		level := s.MustAdmin("POST", kwtest.PathAdminPricing, map[string]any{"app_id": a.ID, "type": "level", "name": "Pro", "price": 5,
			"currency": "USD", "interval": "month"}).Obj("plan")
		o1, o2 := s.Order(t, a, plan), s.Order(t, a, plan)
		k1, k2 := s.Fulfil(o1, secret).Str("license_key"), s.Fulfil(o2, secret).Str("license_key")
		o3, o4 := s.SubscriptionOrder(t, a, level["id"]), s.SubscriptionOrder(t, a, level["id"])
		k3, k4 := s.Fulfil(o3, secret).Str("license_key"), s.Fulfil(o4, secret).Str("license_key")
		t1, t2, t3, t4 := cuToken(t, s, a.ID, k1), cuToken(t, s, a.ID, k2), cuToken(t, s, a.ID, k3), cuToken(t, s, a.ID, k4)

		ords := cuList(t, s.BearerDo(t1, "GET", cuOrd, nil), "orders")
		if len(ords) != 1 || ords[0]["order_id"] != o1 || ords[0]["status"] != "fulfilled" || ords[0]["amount_cents"] != float64(499) {
			t.Fatalf("orders of key 1: %v", ords)
		}
		if ks := ords[0]["license_keys"].([]any); len(ks) != 1 || ks[0] != k1 {
			t.Fatalf("order keys %v", ks)
		}
		if _, ok := ords[0]["email"]; ok {
			t.Fatal("order view shows the buyer's e-mail")
		}
		if ords := cuList(t, s.BearerDo(t2, "GET", cuOrd, nil), "orders"); len(ords) != 1 || ords[0]["order_id"] != o2 {
			t.Fatalf("orders of key 2: %v", ords)
		}
		if subs := cuList(t, s.BearerDo(t1, "GET", cuSubs, nil), "subscriptions"); len(subs) != 0 {
			t.Fatalf("key 1 has subscriptions %v", subs)
		}
		subs3 := cuList(t, s.BearerDo(t3, "GET", cuSubs, nil), "subscriptions")
		subs4 := cuList(t, s.BearerDo(t4, "GET", cuSubs, nil), "subscriptions")
		if len(subs3) != 1 || subs3[0]["license_key"] != k3 || subs3[0]["status"] != "active" || len(subs4) != 1 {
			t.Fatalf("subscriptions: %v / %v", subs3, subs4)
		}
		id3, id4 := subs3[0]["id"], subs4[0]["id"]

		// A renewal order of key 3's subscription is key 3's order.
		s.Clock.Advance(27*24*time.Hour + time.Minute)
		if _, err := s.Orders.QueueRenewals(t.Context()); err != nil {
			t.Fatal(err)
		}
		ords3 := cuList(t, s.BearerDo(t3Refresh(t, s, a.ID, k3), "GET", cuOrd, nil), "orders")
		if len(ords3) != 2 || ords3[0]["status"] != "pending" || ords3[0]["subscription_id"] != id3 || ords3[1]["order_id"] != o3 {
			t.Fatalf("orders of key 3 after a renewal order: %v", ords3)
		}
		t3, t4 = cuToken(t, s, a.ID, k3), cuToken(t, s, a.ID, k4)

		kwtest.ExpectCode(t, s.BearerDo(t3, "POST", cuSubs, map[string]any{"id": id4, "action": "cancel"}), 404, "NOT_FOUND")
		kwtest.ExpectCode(t, s.BearerDo(t3, "POST", cuSubs, map[string]any{"id": id3, "action": "pause"}), 400, "MISSING_FIELDS")
		r := s.BearerDo(t3, "POST", cuSubs, map[string]any{"id": id3, "action": "cancel"})
		r.OK(t)
		if r.Obj("subscription")["status"] != "cancelled" {
			t.Fatalf("cancel: %s", r)
		}
		kwtest.ExpectCode(t, s.BearerDo(t3, "POST", cuSubs, map[string]any{"id": id3, "action": "cancel"}), 409, "CONFLICT")
		if subs4 := cuList(t, s.BearerDo(t4, "GET", cuSubs, nil), "subscriptions"); subs4[0]["status"] != "active" {
			t.Fatalf("key 4's subscription: %v", subs4)
		}
		if n := len(s.EventsOf(a.ID, "subscription.cancelled")); n != 1 {
			t.Fatalf("%d subscription.cancelled events, want 1", n)
		}
		entries := s.Audit(t, "app_id="+a.ID+"&action=subscription.cancel")
		actor, _ := entries[0]["actor"].(map[string]any)
		if len(entries) != 1 || actor["kind"] != "customer" || actor["name"] != "…"+k3[len(k3)-5:] {
			t.Fatalf("audit: %v", entries)
		}
	})
}

// cuSessionID is the public ID of the customer's live session on hwid.
func cuSessionID(t testing.TB, s *kwtest.Server, token, hwid string) string {
	t.Helper()
	for _, ss := range cuList(t, s.BearerDo(token, "GET", kwtest.PathCustomerKey, nil), "sessions") {
		if ss["hwid"] == hwid {
			return ss["session_id"].(string)
		}
	}
	t.Fatalf("no live session on %s", hwid)
	return ""
}

// t3Refresh signs a key in again (its first token expired with the clock).
func t3Refresh(t testing.TB, s *kwtest.Server, appID, key string) string {
	t.Helper()
	return cuToken(t, s, appID, key)
}

// An account's orders and subscriptions are those of the keys redeemed
// onto it.
func TestCustomerAccountOrders(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a, plan, secret := s.StoreApp(t)
		a.SetSettings(t, map[string]any{"accounts_enabled": true})
		o1, o2 := s.Order(t, a, plan), s.Order(t, a, plan)
		k1 := s.Fulfil(o1, secret).Str("license_key")
		s.Fulfil(o2, secret).OK(t)
		a.SignUp(t, "carol", kwtest.LockoutPassword, k1)
		r := s.CustomerSignIn(map[string]any{"app_id": a.ID, "username": "carol", "password": kwtest.LockoutPassword})
		r.OK(t)
		ords := cuList(t, s.BearerDo(r.Str("token"), "GET", cuOrd, nil), "orders")
		if len(ords) != 1 || ords[0]["order_id"] != o1 {
			t.Fatalf("account orders: %v", ords)
		}
		v := s.BearerDo(r.Str("token"), "GET", kwtest.PathCustomerKey, nil)
		if ks, _ := v.Obj("account")["redeemed_keys"].([]any); len(ks) != 1 || ks[0] != k1 {
			t.Fatalf("account view: %s", v)
		}
	})
}
