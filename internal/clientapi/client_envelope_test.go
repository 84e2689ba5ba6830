package clientapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Envelope conformance (sdk-compat §4, §7.3, §7.4, §7.13, §7.19;
// api-reference "Envelope construction"): refusals before verification are
// plain 400 CRYPTO_ERROR (the clock one with reason and server_time), every
// verified reply is sealed, and a replayed envelope gets the first reply
// without running twice.

// clSealAt seals inner for a at the given time.
func clSealAt(t testing.TB, a *kwtest.App, inner any, at time.Time) envelope.Envelope {
	t.Helper()
	b, err := json.Marshal(inner)
	if err != nil {
		t.Fatal(err)
	}
	env, err := a.Keys.Seal(b, at)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// clCryptoError fails unless r is the plain bad-envelope refusal (no reason).
func clCryptoError(t testing.TB, r *kwtest.Reply) {
	t.Helper()
	r.PlainFail(t, 400, "CRYPTO_ERROR")
	if _, ok := r.Body["reason"]; ok {
		t.Fatalf("non-clock refusal carries a reason: %v", r.Body)
	}
	if _, ok := r.Body["server_time"]; ok {
		t.Fatalf("non-clock refusal carries server_time: %v", r.Body)
	}
	// Clients classify refusals mentioning "expired" as clock refusals.
	if strings.Contains(strings.ToLower(r.Str("message")), "expired") {
		t.Fatalf("non-clock refusal mentions expired: %q", r.Str("message"))
	}
}

// clClockSkew fails unless r is the plain clock refusal of §4 / §7.13.
func clClockSkew(t testing.TB, s *kwtest.Server, r *kwtest.Reply) {
	t.Helper()
	r.PlainFail(t, 400, "CRYPTO_ERROR")
	if r.Body["reason"] != "CLOCK_SKEW" {
		t.Fatalf("reason = %v, want CLOCK_SKEW", r.Body["reason"])
	}
	if n := kwtest.Int(t, "server_time", kwtest.Numbers(t, r.Raw)["server_time"]); n != s.Clock.Now().Unix() {
		t.Fatalf("server_time = %d, want the server clock %d", n, s.Clock.Now().Unix())
	}
	if !strings.Contains(strings.ToLower(r.Str("message")), "expired") {
		t.Fatalf("clock refusal message %q does not mention expired", r.Str("message"))
	}
}

// Every envelope route with a valid inner body for it; the login would
// activate fresh, the logout would end sid.
func clEnvelopeRoutes(key, fresh, sid string) map[string]map[string]any {
	return map[string]map[string]any{
		kwtest.PathLogin:     {"license_key": fresh, "hwid": "pc-x"},
		kwtest.PathHeartbeat: {"session_id": sid, "license_key": key},
		kwtest.PathLogout:    {"session_id": sid},
		kwtest.PathCheckKey:  {"license_key": key},
	}
}

func TestClientEnvelopeRefusals(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Env")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		key, fresh := keys[0], keys[1]
		sid := a.Login(key, "pc")

		for path, inner := range clEnvelopeRoutes(key, fresh, sid) {
			t.Run(path, func(t *testing.T) {
				a := clAppOn(t, a)
				s := a.S
				now := s.Clock.Now()
				send := func(env envelope.Envelope) *kwtest.Reply {
					return s.Do("POST", path, kwtest.AppHeader(a.Secret), env.Marshal())
				}

				// Bad MAC: one hex digit changed.
				env := clSealAt(t, a, inner, now)
				bad := env
				bad.S = clFlipHex(env.S)
				clCryptoError(t, send(bad))
				// The MAC covers t: a re-stamped envelope fails the MAC, not the clock.
				moved := env
				moved.T += 1000
				clCryptoError(t, send(moved))
				// Sealed with another app's keys.
				other := kwtest.App{S: s, Keys: envelope.Derive(strings.Repeat("ab", 32))}
				clCryptoError(t, send(clSealAt(t, &other, inner, now)))
				// A MAC that is not 64 hex digits.
				short := env
				short.S = env.S[:10]
				clCryptoError(t, send(short))

				// Clock: ±300 s pass, 301 s do not, in either direction.
				for _, d := range []time.Duration{-301 * time.Second, 301 * time.Second, -time.Hour, 24 * time.Hour} {
					clClockSkew(t, s, send(clSealAt(t, a, inner, now.Add(d))))
				}

				// Malformed envelopes.
				good := env.Marshal()
				for name, body := range map[string]string{
					"empty":           "",
					"not json":        "p=1&t=2&s=3",
					"array":           "[1,2,3]",
					"missing s":       fmt.Sprintf(`{"p":%q,"t":%d}`, env.P, env.T),
					"missing p":       fmt.Sprintf(`{"t":%d,"s":%q}`, env.T, env.S),
					"string t":        fmt.Sprintf(`{"p":%q,"t":"%d","s":%q}`, env.P, env.T, env.S),
					"fractional t":    fmt.Sprintf(`{"p":%q,"t":%d.5,"s":%q}`, env.P, env.T, env.S),
					"numeric p":       fmt.Sprintf(`{"p":1,"t":%d,"s":%q}`, env.T, env.S),
					"trailing object": string(good) + `{"p":"x"}`,
					"truncated":       string(good[:len(good)-2]),
					"plain inner":     string(kwtest.JSON(t, inner)),
				} {
					r := s.Do("POST", path, kwtest.AppHeader(a.Secret), []byte(body))
					if path == kwtest.PathCheckKey && !envelope.IsEnvelope([]byte(body)) {
						// check-key takes what is not an envelope as a plain
						// request (see the check-key tests): a plain answer.
						if r.Body["error_code"] == "CRYPTO_ERROR" || envelope.IsEnvelope(r.Raw) || r.Status >= 500 {
							t.Fatalf("%s: got %s", name, r)
						}
						continue
					}
					if r.Status != 400 || r.Body["error_code"] != "CRYPTO_ERROR" || envelope.IsEnvelope(r.Raw) || r.Body["success"] != false {
						t.Fatalf("%s: got %s", name, r)
					}
					if _, ok := r.Body["reason"]; ok {
						t.Fatalf("%s: malformed envelope refused with a reason: %s", name, r)
					}
				}
				// A valid MAC over p that cannot decrypt: 31 bytes is no whole
				// number of AES blocks after the IV. (32 zero bytes decrypt to
				// valid padding for about one app secret in 256.)
				junk := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==" // 31 zero bytes
				clCryptoError(t, send(envelope.Envelope{P: junk, T: now.Unix(), S: a.Keys.Sign(junk, now.Unix())}))
				notB64 := "%%%not base64%%%"
				clCryptoError(t, send(envelope.Envelope{P: notB64, T: now.Unix(), S: a.Keys.Sign(notB64, now.Unix())}))
			})
		}

		// None of the refusals above ran anything: the one session is still
		// live, no other was opened, the key has its one device.
		if live := a.Sessions(t, key); len(live) != 1 {
			t.Fatalf("%d live sessions after refused envelopes, want 1", len(live))
		}
		if d := a.Devices(t, key); len(d) != 1 || d[0] != "pc" {
			t.Fatalf("devices = %v", d)
		}
		if k := a.KeyView(t, fresh); k["status"] != "unused" || len(k["devices"].([]any)) != 0 {
			t.Fatalf("a refused login envelope activated a key: %v", k)
		}
		a.BeatOK(t, sid, key)
	})
}

func clFlipHex(s string) string {
	b := []byte(s)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}

// Envelopes at the edge of the window pass; whatever JSON encoding the SDKs
// use for the envelope is accepted (§5, §7.3); a verified envelope whose
// inner JSON is not an object gets a sealed MISSING_FIELDS.
func TestClientEnvelopeAccepted(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Accept")
		keys := a.GenerateKeys(8, "lifetime", 0, 1)
		now := s.Clock.Now()
		post := func(body []byte) *kwtest.Reply { return a.PostEnvelope(kwtest.PathCheckKey, body) }

		for i, d := range []time.Duration{-300 * time.Second, 300 * time.Second, 0} {
			env := clSealAt(t, a, map[string]any{"license_key": keys[0]}, now.Add(d))
			r := post(env.Marshal())
			r.OK(t)
			if !r.Sealed {
				t.Fatalf("window edge %d: reply not sealed", i)
			}
		}
		// Find an envelope whose p contains '+' and '/', then send it as
		// .NET (\u002B escapes), GEN-py (", " separators) and with other key
		// order and whitespace.
		var env envelope.Envelope
		for i := 0; ; i++ {
			env = clSealAt(t, a, map[string]any{"license_key": keys[1], "n": i}, now)
			if strings.Contains(env.P, "+") && strings.Contains(env.P, "/") {
				break
			}
		}
		escaped := strings.NewReplacer("+", `\u002B`, "/", `\/`).Replace(env.P)
		for name, body := range map[string]string{
			"dotnet escapes": fmt.Sprintf(`{"p":"%s","t":%d,"s":"%s"}`, escaped, env.T, env.S),
			"python spaces":  fmt.Sprintf(`{"p": "%s", "t": %d, "s": "%s"}`, env.P, env.T, env.S),
			"reordered":      fmt.Sprintf("\n{ \"s\" : \"%s\",\n\t\"t\" : %d , \"p\" : \"%s\" }\n", env.S, env.T, env.P),
		} {
			// Each must be answered: the MAC is the same, so after the first
			// they are replays of one another and get the same reply.
			r := post([]byte(body))
			if !r.Sealed || r.Body["success"] != true {
				t.Fatalf("%s: %s", name, r)
			}
		}
		// The inner JSON may use escapes too.
		inner := []byte(`{"license_key":"` + clEscapeAll(keys[2]) + `"}`)
		e2, err := a.Keys.Seal(inner, now)
		if err != nil {
			t.Fatal(err)
		}
		r := post(e2.Marshal())
		r.OK(t)
		if r.Obj("key")["license_key"] != keys[2] {
			t.Fatalf("escaped inner key read as %v", r.Obj("key")["license_key"])
		}
		// Verified envelopes with an inner body that is not an object.
		for _, in := range []string{`[1,2]`, `"text"`, `null`, `42`, `{"license_key":`, "\x00\xff"} {
			e, err := a.Keys.Seal([]byte(in), now)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{kwtest.PathLogin, kwtest.PathHeartbeat, kwtest.PathLogout, kwtest.PathCheckKey} {
				a.PostEnvelope(path, e.Marshal()).SealedFail(t, "MISSING_FIELDS")
			}
		}
		if n := len(a.Sessions(t, "")); n != 0 {
			t.Fatalf("%d sessions, want 0", n)
		}
	})
}

func clEscapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04X`, r)
	}
	return b.String()
}

// §7.2: a bad or missing secret is a plain 401 INVALID_APP on every client
// route, whatever the body.
func TestClientUnknownAppSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Secret")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		gone := s.CreateApp("Gone")
		s.MustAdmin("DELETE", "/api/admin/apps.php?app_id="+gone.ID, nil)
		old := a.Secret
		s.MustAdmin("POST", "/api/admin/apps.php?action=regenerate-secret&app_id="+a.ID, nil)

		secrets := map[string]string{
			"random":      strings.Repeat("0f", 32),
			"deleted app": gone.Secret,
			"regenerated": old,
			"short":       "abc",
			"empty":       "",
		}
		for _, path := range []string{kwtest.PathLogin, kwtest.PathHeartbeat, kwtest.PathLogout, kwtest.PathCheckKey, kwtest.PathValidate, kwtest.PathRequestHWID, kwtest.PathSelfReset} {
			for name, secret := range secrets {
				other := s.NewApp(a.ID, secret)
				env := other.Seal(map[string]any{"license_key": key, "hwid": "pc", "session_id": "x", "key": key})
				for _, body := range [][]byte{env.Marshal(), kwtest.JSON(t, map[string]any{"license_key": key, "key": key})} {
					r := s.Do("POST", path, kwtest.AppHeader(secret), body)
					if r.Status != 401 || r.Body["error_code"] != "INVALID_APP" || r.Body["success"] != false || envelope.IsEnvelope(r.Raw) {
						t.Fatalf("%s with %s secret: %s", path, name, r)
					}
				}
			}
		}
		if k := a.KeyView(t, key); k["status"] != "unused" {
			t.Fatalf("key touched by refused requests: %v", k)
		}
	})
}

// The same sealed request posted again (a client's retry after a dropped
// connection, or a replay) gets the first reply and runs once (§7.19).
func TestClientEnvelopeReplay(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Replay")
		keys := a.GenerateKeys(3, "lifetime", 0, 2)

		// Login posted twice: one session, the same session_id.
		env := a.Seal(map[string]any{"license_key": keys[0], "hwid": "pc"}).Marshal()
		r1 := a.PostEnvelope(kwtest.PathLogin, env)
		s.Clock.Advance(100 * time.Second) // still inside the window
		r2 := a.PostEnvelope(kwtest.PathLogin, env)
		r1.OK(t)
		r2.OK(t)
		if sid := r1.Str("session_id"); sid == "" || sid != r2.Str("session_id") {
			t.Fatalf("session_id %q then %q, want the same", r1.Str("session_id"), r2.Str("session_id"))
		}
		if !bytes.Equal(clInner(t, a, r1), clInner(t, a, r2)) {
			t.Fatalf("replayed login answered differently:\n%s\n%s", clInner(t, a, r1), clInner(t, a, r2))
		}
		if n := len(a.Sessions(t, keys[0])); n != 1 {
			t.Fatalf("%d sessions after a replayed login, want 1", n)
		}
		sid := r1.Str("session_id")
		a.BeatOK(t, sid, keys[0])

		// The same inner body in a fresh envelope is a new login.
		sid2 := a.Login(keys[0], "pc")
		if sid2 == sid {
			t.Fatal("a fresh envelope got the replayed session")
		}
		if n := len(a.Sessions(t, keys[0])); n != 2 {
			t.Fatalf("%d sessions, want 2", n)
		}

		// Logout posted twice: the same reply, the session ends once; the
		// replay does not touch a later session.
		out := a.Seal(map[string]any{"session_id": sid, "license_key": keys[0]}).Marshal()
		o1 := a.PostEnvelope(kwtest.PathLogout, out)
		o1.OK(t)
		s.Clock.Advance(time.Second)
		sid3 := a.Login(keys[0], "pc")
		o2 := a.PostEnvelope(kwtest.PathLogout, out)
		o2.OK(t)
		if !bytes.Equal(clInner(t, a, o1), clInner(t, a, o2)) {
			t.Fatalf("replayed logout answered differently")
		}
		a.Heartbeat(sid, keys[0]).Kill(t, "SESSION_EXPIRED")
		a.BeatOK(t, sid3, keys[0])

		// Many copies of one login at once: one runs, all get its reply.
		env = a.Seal(map[string]any{"license_key": keys[1], "hwid": "pc-c"}).Marshal()
		const n = 12
		raws := make([][]byte, n)
		statuses := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, err := http.NewRequest("POST", s.URL+kwtest.PathLogin, bytes.NewReader(env))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header = kwtest.AppHeader(a.Secret)
				resp, err := kwtest.HTTP.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
				raws[i], errs[i] = io.ReadAll(resp.Body)
			})
		}
		wg.Wait()
		var first string
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			r := &kwtest.Reply{Status: statuses[i], Raw: raws[i], Sealed: true}
			if statuses[i] != 200 || !envelope.IsEnvelope(raws[i]) {
				t.Fatalf("copy %d: %d %s", i, statuses[i], raws[i])
			}
			var inner map[string]any
			if err := json.Unmarshal(clInner(t, a, r), &inner); err != nil {
				t.Fatal(err)
			}
			sid, _ := inner["session_id"].(string)
			if inner["success"] != true || sid == "" || (first != "" && sid != first) {
				t.Fatalf("copy %d: %v (first session %q)", i, inner, first)
			}
			first = sid
		}
		if live := a.Sessions(t, keys[1]); len(live) != 1 {
			t.Fatalf("%d sessions after %d concurrent copies, want 1", len(live), n)
		}

		// check-key and heartbeat replays are answered from this process's
		// memory: the first reply, even though the key changed since; a
		// fresh envelope sees the change.
		ck := a.Seal(map[string]any{"license_key": keys[2]}).Marshal()
		hb := a.Seal(map[string]any{"session_id": sid3, "license_key": keys[0]}).Marshal()
		c1, h1 := a.PostEnvelope(kwtest.PathCheckKey, ck), a.PostEnvelope(kwtest.PathHeartbeat, hb)
		if c1.Body["valid"] != true || h1.Body["success"] != true {
			t.Fatalf("first check-key / heartbeat: %v / %v", c1.Body, h1.Body)
		}
		a.MustKeyAction(t, "ban", keys[2], nil)
		a.MustKeyAction(t, "ban", keys[0], nil)
		c2, h2 := a.PostEnvelope(kwtest.PathCheckKey, ck), a.PostEnvelope(kwtest.PathHeartbeat, hb)
		if !bytes.Equal(clInner(t, a, c1), clInner(t, a, c2)) || !bytes.Equal(clInner(t, a, h1), clInner(t, a, h2)) {
			t.Fatalf("replays answered anew: %v / %v", c2.Body, h2.Body)
		}
		if r := a.Env(kwtest.PathCheckKey, map[string]any{"license_key": keys[2]}); r.Body["valid"] != false {
			t.Fatalf("fresh check-key after the ban: %v", r.Body)
		}
		a.Heartbeat(sid3, keys[0]).Kill(t, "BANNED")

		// Once the window has passed the copy is refused by the clock.
		s.Clock.Advance(301 * time.Second)
		clClockSkew(t, s, s.Do("POST", kwtest.PathLogin, kwtest.AppHeader(a.Secret), env))
	})
}
