package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Tests of the request limiters (limit.go) and of the per-app secret
// regeneration limit. Every test client is 127.0.0.1; with TrustProxy on,
// X-Forwarded-For stands for distinct client IPs. Helpers start with rl.

// rlLimits turns TrustProxy on and applies the given limits on top of the
// test defaults (where every per-IP limiter is off).
func rlLimits(fn func(l *config.Limits)) func(*config.Config) {
	return func(c *config.Config) {
		c.TrustProxy = true
		fn(&c.Limits)
	}
}

// rlDo sends a request as client ip (through the trusted proxy).
func rlDo(s *kwtest.Server, ip, method, path string, h http.Header, body []byte) *kwtest.Reply {
	s.T.Helper()
	if h == nil {
		h = http.Header{}
	}
	h = h.Clone()
	h.Set("X-Forwarded-For", ip)
	return s.Do(method, path, h, body)
}

func rlAppHeader(a *kwtest.App) http.Header {
	return http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
}

// rlCheck sends a plain check-key from ip.
func rlCheck(t testing.TB, a *kwtest.App, ip, key string) *kwtest.Reply {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"license_key": key})
	return rlDo(a.S, ip, "POST", kwtest.PathCheckKey, rlAppHeader(a), b)
}

// rlEnv sends inner sealed from ip and opens an enveloped answer.
func rlEnv(t testing.TB, a *kwtest.App, ip, path string, inner any) *kwtest.Reply {
	t.Helper()
	r := rlDo(a.S, ip, "POST", path, rlAppHeader(a), a.Seal(inner).Marshal())
	if r.Body == nil || !envelope.IsEnvelope(r.Raw) {
		return r
	}
	env, err := envelope.Parse(r.Raw)
	if err != nil {
		t.Fatalf("reply envelope: %v", err)
	}
	plain, _, err := a.Keys.Verify(env, a.S.Clock.Now())
	if err != nil {
		t.Fatalf("reply envelope does not verify: %v", err)
	}
	r.Body = nil
	if err := json.Unmarshal(plain, &r.Body); err != nil {
		t.Fatalf("inner reply is not a JSON object: %v: %s", err, plain)
	}
	r.Sealed = true
	return r
}

// rlLogin opens a session from ip and returns its session_id.
func rlLogin(t testing.TB, a *kwtest.App, ip, key, hwid string) string {
	t.Helper()
	r := rlEnv(t, a, ip, kwtest.PathLogin, map[string]any{"license_key": key, "hwid": hwid})
	if !r.Sealed || r.Body["success"] != true {
		t.Fatalf("login from %s: %s (body %v)", ip, r, r.Body)
	}
	return r.Str("session_id")
}

// rlBeat heartbeats a session from ip.
func rlBeat(t testing.TB, a *kwtest.App, ip, sid, key string) *kwtest.Reply {
	t.Helper()
	return rlEnv(t, a, ip, kwtest.PathHeartbeat, map[string]any{"session_id": sid, "license_key": key})
}

// rlBeatOK fails unless the heartbeat from ip is an enveloped success.
func rlBeatOK(t testing.TB, a *kwtest.App, ip, sid, key string) {
	t.Helper()
	r := rlBeat(t, a, ip, sid, key)
	if !r.Sealed {
		t.Fatalf("heartbeat reply not enveloped: %s", r)
	}
	r.OK(t)
}

// rlNot429 fails if r is a rate-limit refusal of any kind.
func rlNot429(t testing.TB, what string, r *kwtest.Reply) {
	t.Helper()
	if r.Status == http.StatusTooManyRequests || r.Body["error_code"] == "RATE_LIMITED" || r.Header.Get("Retry-After") != "" {
		t.Fatalf("%s: rate limited: %s (body %v)", what, r, r.Body)
	}
}

// The general limiter: a client IP gets RateBurst requests at once, whatever
// they are, then a plain 429 with Retry-After; the clock refills it; other
// IPs have their own buckets. 404s, 405s and bad secrets draw from it too.
func TestRateLimitGeneral(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) { l.RateLimit, l.RateBurst = 1, 3 }))
	app := s.CreateApp("Limited")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]

	const ipA = "198.51.100.10"
	for i := range 3 {
		r := rlCheck(t, app, ipA, key)
		if r.Status != 200 || r.Body["valid"] != true {
			t.Fatalf("check-key %d: %s", i+1, r)
		}
	}
	if ra := rlCheck(t, app, ipA, key).RateLimited(t); ra != 1 {
		t.Fatalf("retry_after %d at 1/s with an empty bucket, want 1", ra)
	}
	// Refused requests take nothing and keep being refused.
	rlCheck(t, app, ipA, key).RateLimited(t)
	rlCheck(t, app, ipA, "KW-NOT-A-KEY").RateLimited(t)

	s.Clock.Advance(time.Second)
	rlCheck(t, app, ipA, key).OK(t)
	rlCheck(t, app, ipA, key).RateLimited(t)

	// Another client IP is not limited by A's empty bucket.
	const ipB = "198.51.100.11"
	for i := range 3 {
		if r := rlCheck(t, app, ipB, key); r.Status != 200 {
			t.Fatalf("IP B check-key %d: %s", i+1, r)
		}
	}
	rlCheck(t, app, ipB, key).RateLimited(t)
	// IPv6 clients too.
	rlCheck(t, app, "2001:db8::7", key).OK(t)

	// Unknown routes, wrong methods and bad secrets are not free.
	const ipC = "198.51.100.12"
	if r := rlDo(s, ipC, "GET", "/api/nope.php", nil, nil); r.Status != 404 {
		t.Fatalf("unknown route: %s", r)
	}
	if r := rlDo(s, ipC, "GET", kwtest.PathCheckKey, rlAppHeader(app), nil); r.Status != 405 {
		t.Fatalf("wrong method: %s", r)
	}
	if r := rlDo(s, ipC, "POST", kwtest.PathCheckKey, http.Header{"X-App-Secret": {strings.Repeat("0", 64)}}, []byte(`{"license_key":"x"}`)); r.Status != 401 {
		t.Fatalf("bad secret: %s", r)
	}
	rlCheck(t, app, ipC, key).RateLimited(t)

	const ipD = "198.51.100.13"
	for i := range 3 {
		if r := rlDo(s, ipD, "POST", fmt.Sprintf("/flood/%d", i), nil, nil); r.Status != 404 {
			t.Fatalf("404 flood %d: %s", i+1, r)
		}
	}
	rlDo(s, ipD, "POST", "/flood/3", nil, nil).RateLimited(t)
	rlDo(s, ipD, "DELETE", "/api/auth/login.php", nil, nil).RateLimited(t)
	rlDo(s, ipD, "POST", "/api/admin/login.php", nil, []byte(`{"username":"admin","password":"x"}`)).RateLimited(t)

	// Sealed requests are refused before verification: plain 429.
	const ipE = "198.51.100.14"
	for range 3 {
		rlEnv(t, app, ipE, kwtest.PathCheckKey, map[string]any{"license_key": key})
	}
	r := rlDo(s, ipE, "POST", kwtest.PathLogin, rlAppHeader(app), app.Seal(map[string]any{"license_key": key, "hwid": "pc"}).Marshal())
	r.RateLimited(t)
}

// Signed-in admins have their own, higher ceiling: a valid bearer token draws
// from the admin bucket; a forged or expired one from the general bucket.
func TestRateLimitAdminCeiling(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 2
		l.AdminRateLimit, l.AdminRateBurst = 100, 50
	}))
	tok := s.AdminToken() // from 127.0.0.1: one of its two general tokens
	valid := kwtest.Bearer(tok)

	const ip = "192.0.2.10"
	for i := range 20 {
		r := rlDo(s, ip, "GET", "/api/admin/apps.php", valid, nil)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("admin request %d: %s", i+1, r)
		}
	}
	// 20 more straight from 127.0.0.1, whose general bucket has one token.
	for i := range 20 {
		if r := s.Admin("GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("admin request %d from 127.0.0.1: %s", i+1, r)
		}
	}

	// Forged tokens: the signature altered, garbage, none at all.
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("admin token %q is not a JWT", tok)
	}
	sig := []byte(parts[2])
	mid := len(sig) / 2
	if sig[mid] == 'A' {
		sig[mid] = 'B'
	} else {
		sig[mid] = 'A'
	}
	forged := parts[0] + "." + parts[1] + "." + string(sig)
	for i := range 2 {
		r := rlDo(s, ip, "GET", "/api/admin/apps.php", kwtest.Bearer(forged), nil)
		if r.Status != 401 {
			t.Fatalf("forged token %d: %s, want 401", i+1, r)
		}
	}
	rlDo(s, ip, "GET", "/api/admin/apps.php", kwtest.Bearer(forged), nil).RateLimited(t)
	rlDo(s, ip, "GET", "/api/admin/apps.php", kwtest.Bearer("garbage"), nil).RateLimited(t)
	rlDo(s, ip, "GET", "/api/admin/apps.php", nil, nil).RateLimited(t)
	rlDo(s, ip, "POST", "/api/admin/keys.php", http.Header{"Authorization": {tok}}, nil).RateLimited(t) // no "Bearer "
	// The signed-in admin at that IP is not locked out by the flood.
	if r := rlDo(s, ip, "GET", "/api/admin/apps.php", valid, nil); r.Status != 200 {
		t.Fatalf("valid token after the forged flood: %s", r)
	}

	// Garbage tokens from a fresh IP: 2 answered, then limited.
	const ip2 = "192.0.2.11"
	for i := range 2 {
		if r := rlDo(s, ip2, "DELETE", "/api/admin/apps.php", kwtest.Bearer(fmt.Sprintf("x.y.%d", i)), nil); r.Status != 401 {
			t.Fatalf("garbage token %d: %s", i+1, r)
		}
	}
	rlDo(s, ip2, "DELETE", "/api/admin/apps.php", kwtest.Bearer("x.y.z"), nil).RateLimited(t)

	// The admin bucket has a ceiling of its own: 50 at once from a fresh
	// IP, then 429.
	const ip3 = "192.0.2.12"
	for i := range 50 {
		if r := rlDo(s, ip3, "GET", "/api/admin/apps.php", valid, nil); r.Status != 200 {
			t.Fatalf("admin request %d of the burst: %s", i+1, r)
		}
	}
	if ra := rlDo(s, ip3, "GET", "/api/admin/apps.php", valid, nil).RateLimited(t); ra != 1 {
		t.Fatalf("admin retry_after %d at 100/s, want 1", ra)
	}
	s.Clock.Advance(time.Second) // 100 more tokens, capped at the burst
	for i := range 50 {
		if r := rlDo(s, ip3, "GET", "/api/admin/apps.php", valid, nil); r.Status != 200 {
			t.Fatalf("admin request %d after refill: %s", i+1, r)
		}
	}
	rlDo(s, ip3, "GET", "/api/admin/apps.php", valid, nil).RateLimited(t)
}

// An expired admin token is no longer "signed": it draws from the general
// bucket.
func TestRateLimitAdminExpiredToken(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 2
		l.AdminRateLimit, l.AdminRateBurst = 100, 50
	}))
	// A server whose tokens live one hour (kwtest.Boot sets ten years first).
	s2 := kwtest.Start(t, kwtest.Options{Clock: s.Clock, Configure: func(c *config.Config) {
		c.TrustProxy = true
		c.TokenTTL = time.Hour
		c.RateLimit, c.RateBurst = 1, 2
		c.AdminRateLimit, c.AdminRateBurst = 100, 50
	}})
	tok := s2.AdminToken()
	const ip = "192.0.2.20"
	for i := range 10 {
		if r := rlDo(s2, ip, "GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil); r.Status != 200 {
			t.Fatalf("admin request %d: %s", i+1, r)
		}
	}
	s2.Clock.Advance(2 * time.Hour)
	for i := range 2 {
		if r := rlDo(s2, ip, "GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil); r.Status != 401 {
			t.Fatalf("expired token %d: %s, want 401", i+1, r)
		}
	}
	rlDo(s2, ip, "GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil).RateLimited(t)

	// A token signed by another server (a different key) is forged too.
	other := s.AdminToken()
	const ip2 = "192.0.2.21"
	for i := range 2 {
		if r := rlDo(s2, ip2, "GET", "/api/admin/apps.php", kwtest.Bearer(other), nil); r.Status != 401 {
			t.Fatalf("foreign token %d: %s, want 401", i+1, r)
		}
	}
	rlDo(s2, ip2, "GET", "/api/admin/apps.php", kwtest.Bearer(other), nil).RateLimited(t)
}

// AdminRateLimit 0: signed-in admins are not limited at all, while the
// general bucket still limits everyone else at the same IP.
func TestRateLimitAdminOff(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 1
		l.AdminRateLimit, l.AdminRateBurst = 0, 0
	}))
	s.AdminToken() // takes 127.0.0.1's only general token
	for i := range 300 {
		if r := s.Admin("GET", "/api/admin/apps.php", nil); r.Status != 200 {
			t.Fatalf("admin request %d: %s", i+1, r)
		}
	}
	s.Do("GET", "/api/admin/apps.php", kwtest.Bearer("forged"), nil).RateLimited(t)
	s.Do("GET", "/api/nope", nil, nil).RateLimited(t)
}

// A client heartbeating at its interval is never limited, even with the
// general bucket of its IP empty: heartbeats have buckets of their own.
func TestHeartbeatBudgetSteadyClient(t *testing.T) {
	t.Parallel()
	def := config.DefaultLimits()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 1
		l.HeartbeatRateLimit, l.HeartbeatRateBurst = def.HeartbeatRateLimit, def.HeartbeatRateBurst
	}))
	app := s.CreateApp("Steady")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]

	const ip = "198.51.100.30"
	sid := rlLogin(t, app, ip, key, "pc-steady") // the general token
	rlCheck(t, app, ip, key).RateLimited(t)
	for i := range 50 {
		s.Clock.Advance(30 * time.Second)
		// Something else empties the general bucket first.
		rlCheck(t, app, ip, key)
		rlCheck(t, app, ip, key).RateLimited(t)
		r := rlBeat(t, app, ip, sid, key)
		rlNot429(t, fmt.Sprintf("beat %d", i+1), r)
		if !r.Sealed {
			t.Fatalf("beat %d not enveloped: %s", i+1, r)
		}
		r.OK(t)
		// …and the heartbeat took nothing from the general bucket.
		rlCheck(t, app, ip, key).RateLimited(t)
	}
	if n := len(app.Sessions(t, key)); n != 1 {
		t.Fatalf("%d live sessions after 50 beats, want 1", n)
	}
}

// A flood on one session: ten heartbeats at once, then an enveloped
// RATE_LIMITED (the request was verified); the session survives and one
// heartbeat a second is allowed again. Other sessions are not affected.
func TestHeartbeatBudgetSessionFlood(t *testing.T) {
	t.Parallel()
	def := config.DefaultLimits()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 1
		l.HeartbeatRateLimit, l.HeartbeatRateBurst = def.HeartbeatRateLimit, def.HeartbeatRateBurst
	}))
	app := s.CreateApp("Flood")
	keys := app.GenerateKeys(2, "lifetime", 0, 1)

	const ip = "198.51.100.31"
	sid := rlLogin(t, app, ip, keys[0], "pc-flood")
	other := rlLogin(t, app, "198.51.100.32", keys[1], "pc-other")
	for i := range 15 {
		r := rlBeat(t, app, ip, sid, keys[0])
		if i < 10 {
			if !r.Sealed {
				t.Fatalf("beat %d not enveloped: %s", i+1, r)
			}
			r.OK(t)
			continue
		}
		r.SealedFail(t, "RATE_LIMITED")
		if ra := kwtest.Num(t, "retry_after", r.Body["retry_after"]); ra != 1 {
			t.Fatalf("beat %d: retry_after %d, want 1", i+1, ra)
		}
	}
	// Another session behind the same IP is not affected.
	for range 10 {
		rlBeatOK(t, app, ip, other, keys[1])
	}
	// The flooded session is still alive.
	if n := len(app.Sessions(t, keys[0])); n != 1 {
		t.Fatalf("flooded key has %d live sessions, want 1", n)
	}
	s.Clock.Advance(time.Second)
	rlBeatOK(t, app, ip, sid, keys[0])
	rlBeat(t, app, ip, sid, keys[0]).SealedFail(t, "RATE_LIMITED")
	s.Clock.Advance(10 * time.Second)
	for range 10 {
		rlBeatOK(t, app, ip, sid, keys[0])
	}
	rlBeat(t, app, ip, sid, keys[0]).SealedFail(t, "RATE_LIMITED")
}

// The per-IP heartbeat bucket: HeartbeatRateBurst heartbeats at once from
// one IP, whatever they carry, then a plain 429. Heartbeats and the general
// bucket do not draw from each other.
func TestHeartbeatBudgetPerIP(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) {
		l.RateLimit, l.RateBurst = 1, 2
		l.HeartbeatRateLimit, l.HeartbeatRateBurst = 1, 5
	}))
	app := s.CreateApp("BeatIP")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]

	// Garbage: unknown session ids, a non-envelope body, no secret.
	const ip = "198.51.100.40"
	for i := range 3 {
		r := rlBeat(t, app, ip, fmt.Sprintf("garbage-%d", i), key)
		rlNot429(t, "garbage beat", r)
		if r.Body["success"] != false {
			t.Fatalf("garbage session heartbeat succeeded: %v", r.Body)
		}
	}
	rlNot429(t, "non-envelope beat", rlDo(s, ip, "POST", kwtest.PathHeartbeat, rlAppHeader(app), []byte(`{"session_id":"x"}`)))
	rlNot429(t, "secretless beat", rlDo(s, ip, "POST", kwtest.PathHeartbeat, nil, []byte(`{}`)))
	if ra := rlBeat(t, app, ip, "garbage-6", key).RateLimited(t); ra != 1 {
		t.Fatalf("heartbeat retry_after %d at 1/s, want 1", ra)
	}
	rlDo(s, ip, "GET", kwtest.PathHeartbeat, nil, nil).RateLimited(t)
	// The general bucket of that IP is untouched: two requests, then 429.
	rlCheck(t, app, ip, key).OK(t)
	rlCheck(t, app, ip, key).OK(t)
	rlCheck(t, app, ip, key).RateLimited(t)
	rlBeat(t, app, ip, "garbage-7", key).RateLimited(t)
	s.Clock.Advance(time.Second)
	rlBeat(t, app, ip, "garbage-8", key)
	rlBeat(t, app, ip, "garbage-9", key).RateLimited(t)

	// Vice versa: with the general bucket empty, heartbeats still pass.
	const ipB = "198.51.100.41"
	sid := rlLogin(t, app, ipB, key, "pc-b")
	rlCheck(t, app, ipB, key).OK(t)
	rlCheck(t, app, ipB, key).RateLimited(t)
	for range 5 {
		rlBeatOK(t, app, ipB, sid, key)
	}
	rlBeat(t, app, ipB, sid, key).RateLimited(t)
	rlCheck(t, app, ipB, key).RateLimited(t)

	// HeartbeatRateLimit 0 turns off the per-IP bucket and the session
	// budget.
	s2 := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) { l.RateLimit, l.RateBurst = 1, 1 }))
	app2 := s2.CreateApp("NoBeatLimit")
	key2 := app2.GenerateKeys(1, "lifetime", 0, 1)[0]
	sid2 := rlLogin(t, app2, ip, key2, "pc")
	for range 30 {
		rlBeatOK(t, app2, ip, sid2, key2)
	}
}

// SecretRegenLimit regenerations per app per hour, then 429 RATE_LIMITED
// with retry_after; the refused call changes nothing; other apps have their
// own count; an hour later it works again.
func TestSecretRegenLimit(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", func(c *config.Config) { c.SecretRegenLimit = 3 })
	a := s.CreateApp("RegenA")
	b := s.CreateApp("RegenB")
	keyA := a.GenerateKeys(1, "lifetime", 0, 1)[0]
	keyB := b.GenerateKeys(1, "lifetime", 0, 1)[0]

	secret := a.Secret
	for i := range 3 {
		next := s.RegenerateSecretOK(t, a.ID)
		if next == secret {
			t.Fatalf("regeneration %d kept the secret", i+1)
		}
		s.SecretDead(t, a.ID, secret, keyA)
		secret = next
	}
	r := s.RegenerateSecret(a.ID)
	ra := r.RateLimited(t)
	if ra < 3000 || ra > 3600 {
		t.Fatalf("retry_after %d, want about an hour", ra)
	}
	if !strings.Contains(r.Str("message"), "regenerated") {
		t.Logf("refusal message: %q", r.Str("message"))
	}
	// The refused call changed nothing: the last secret still works.
	s.SecretWorks(t, a.ID, secret, keyA)
	if n := len(s.Audit(t, "app_id="+a.ID+"&action=app.regenerate_secret")); n != 3 {
		t.Fatalf("%d app.regenerate_secret audit entries, want 3", n)
	}

	// Another app is unaffected.
	secretB := s.RegenerateSecretOK(t, b.ID)
	s.SecretWorks(t, b.ID, secretB, keyB)

	// Half an hour on: still refused, with about half the wait.
	s.Clock.Advance(30 * time.Minute)
	ra2 := s.RegenerateSecret(a.ID).RateLimited(t)
	if ra2 >= ra || ra2 < 1700 || ra2 > 1800 {
		t.Fatalf("retry_after %d after 30 min (was %d), want about 1800", ra2, ra)
	}
	s.SecretWorks(t, a.ID, secret, keyA)

	// An hour (and a minute) after the lock: regeneration works again.
	s.Clock.Advance(31 * time.Minute)
	next := s.RegenerateSecretOK(t, a.ID)
	s.SecretDead(t, a.ID, secret, keyA)
	s.SecretWorks(t, a.ID, next, keyA)
}

// SecretRegenLimit 0 is no limit.
func TestSecretRegenUnlimited(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", func(c *config.Config) { c.SecretRegenLimit = 0 })
	a := s.CreateApp("Unlimited")
	key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
	secret := a.Secret
	for range 10 {
		secret = s.RegenerateSecretOK(t, a.ID)
	}
	s.SecretWorks(t, a.ID, secret, key)
}

// IPv6 clients are limited per /64 (one host commonly holds a whole /64):
// addresses of one /64 share a bucket, another /64 has its own.
func TestRateLimitIPv6Per64(t *testing.T) {
	t.Parallel()
	s := kwtest.Boot(t, "sqlite", rlLimits(func(l *config.Limits) { l.RateLimit, l.RateBurst = 1, 2 }))
	app := s.CreateApp("IPv6")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	rlCheck(t, app, "2001:db8:1:2::1", key).OK(t)
	rlCheck(t, app, "2001:db8:1:2:ffff::9", key).OK(t)
	rlCheck(t, app, "2001:db8:1:2:abcd::77", key).RateLimited(t)
	rlCheck(t, app, "2001:db8:1:3::1", key).OK(t)
	rlCheck(t, app, "198.51.100.200", key).OK(t)
}
