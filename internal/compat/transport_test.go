package compat_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// §7.1: every client path answers at the same relative location under any
// base URL — the server's root, the root with a trailing slash, a path
// prefix behind a reverse proxy — over HTTP and HTTPS (and over the plain
// listener of a TLS deployment), never with a redirect.
func TestCompat01_PathsUnderAnyBase(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Base URLs")

		target, _ := url.Parse(s.URL)
		proxy := httptest.NewServer(http.StripPrefix("/licensing/v1", httputil.NewSingleHostReverseProxy(target)))
		t.Cleanup(proxy.Close)

		bases := []struct {
			name, url string
			gens      []Gen
		}{
			{"root", s.URL, allGens},
			// Configured with a trailing slash, which the clients strip
			// before appending "/api/…" (the helper does the same).
			{"trailing-slash", s.URL + "/", []Gen{PY11, NET, VBX}},
			{"path-prefix", proxy.URL + "/licensing/v1", []Gen{PY10, NET, CPP11, GENpy, JS3P}},
		}
		for _, b := range bases {
			for _, g := range b.gens {
				t.Run(b.name+"/"+g.Name, func(t *testing.T) { tour(t, NewClientAt(t, g, a.App, b.url, nil), a) })
			}
		}

		// A wrong method on a client route is a JSON 405, not a redirect.
		c := NewClient(t, PY11, a.App)
		for _, p := range []string{pLogin, pHeartbeat, pLogout, pCheckKey, pTrial, pReqReset, pSelfReset, pRegister,
			pAccLogin, pChangePw, pRedeem, pSlides, pUpdate, pSocial} {
			r := c.Get(p, nil)
			noRedirect(t, r, "GET "+p)
			if r.Status != 405 || r.Body["success"] != false {
				t.Fatalf("GET %s: want a JSON 405 success:false, got %s", p, r)
			}
		}

		// HTTPS: a second keyward process on the same database with a
		// certificate, and its plain-HTTP listener, which answers the client
		// API in place (no redirect to HTTPS: clients would not follow it).
		t.Run("https", func(t *testing.T) {
			cert, key, pool := selfSigned(t, t.TempDir())
			plainAddr := freeAddr(t)
			tlsSrv := kwtest.Start(t, kwtest.Options{Engine: engine, DatabaseURL: s.DatabaseURL, DataDir: s.DataDir, Clock: s.Clock,
				ReapEvery: time.Hour, Configure: func(c *config.Config) { c.TLSCert, c.TLSKey, c.HTTPAddr = cert, key, plainAddr }})
			if !strings.HasPrefix(tlsSrv.URL, "https://") {
				t.Fatalf("TLS server URL %s", tlsSrv.URL)
			}
			hc := newTransport(t, pool)
			for _, g := range []Gen{PY11, NET, CPP11, GENcs, JS3P} {
				tour(t, NewClientAt(t, g, a.App, tlsSrv.URL, hc), a)
			}
			for _, g := range []Gen{PY10, NET10, VBX} {
				tour(t, NewClientAt(t, g, a.App, "http://"+plainAddr, nil), a)
			}
		})
	})
}

// allRoutes are the client routes with the method their clients use.
var allRoutes = []struct{ method, path string }{
	{"POST", pLogin}, {"POST", pHeartbeat}, {"POST", pLogout}, {"POST", pCheckKey}, {"POST", pTrial},
	{"POST", pReqReset}, {"POST", pSelfReset}, {"POST", pRegister}, {"POST", pAccLogin}, {"POST", pChangePw},
	{"POST", pRedeem}, {"GET", pInfo}, {"GET", pText}, {"POST", pSlides}, {"POST", pUpdate}, {"POST", pSocial},
}

// §7.2: every app route but pricing needs X-App-Secret; a missing or wrong
// one is a plain 401 that every SDK reads as a transport error ({"detail"})
// or a failed reply (success:false + INVALID_APP). User-Agent is never
// filtered: Python-urllib, no UA at all, a browser's.
func TestCompat02_AppSecret(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Secrets")
		c := NewClient(t, NET, a.App)
		wrong := make([]byte, 32)
		rand.Read(wrong)
		for _, secret := range []string{"", hex.EncodeToString(wrong), strings.ToUpper(a.Secret[:10]) + "zz"} {
			for _, rt := range allRoutes {
				var body []byte
				if rt.method == "POST" {
					body = c.Seal(obj("license_key", "X"))
				}
				h := http.Header{"X-App-Secret": {secret}}
				if secret == "" {
					h["X-App-Secret"] = nil
				}
				r := c.Do(rt.method, rt.path, h, body)
				if r.Status != 401 || r.Sealed {
					t.Fatalf("%s %s with secret %q: want a plain 401, got %s", rt.method, rt.path, secret, r)
				}
				_, detail := r.Body["detail"].(string)
				if !detail && !(r.Body["success"] == false && r.Body["error_code"] == "INVALID_APP") {
					t.Fatalf("%s %s with secret %q: 401 body must be {\"detail\":…} or success:false + INVALID_APP, got %s",
						rt.method, rt.path, secret, r)
				}
			}
		}
		// pricing.php is public: no secret needed (GEN sends it anyway).
		for _, h := range []http.Header{{"X-App-Secret": nil}, nil} {
			r := c.Do("GET", pPricing+"?app_id="+a.ID, h, nil)
			ok(t, r, false)
		}

		// No User-Agent filtering: every generation's headers get through,
		// the ones the vendor's CDN blocked (Python-urllib, none) included.
		for _, g := range allGens {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
				login(t, c, key, "ua-"+g.Name)
				if g.Name == "VBX" || g.Name == "JS3P" {
					ok(t, c.Plain(pCheckKey, obj("license_key", key)), false)
				}
				ok(t, c.Plain(pTrial, obj("hwid", "ua-trial-"+g.Name)), false)
			})
		}
	})
}

// §7.3: the envelope exactly as every SDK builds it — keys from "enc:"/"mac:"
// + the secret text, AES-256-CBC/PKCS#7, p padded standard base64 of IV‖ct,
// integer t, lowercase hex s over p+t — in each generation's JSON (\u002B and
// \uXXXX from System.Text.Json, ", "/": " from GEN-py, raw UTF-8, extra
// white space), inside a ±300 s window.
func TestCompat03_Envelope(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := s.CreateApp("Envelope")
		// Non-ASCII, an astral character and characters System.Text.Json
		// escapes: the server must see exactly this string.
		hwidOf := func(g Gen) string { return "PC-Müller-東京-😀-<a&b>'+" + g.Name }
		for _, g := range allGens {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a)
				key := a.GenerateKeys(1, "days", 30, 1)[0]
				body := c.Seal(obj("license_key", key, "hwid", hwidOf(g)))
				switch g.Style {
				case netSTJ:
					if !bytes.Contains(body, []byte(`\u002B`)) || bytes.Contains(body, []byte("+")) {
						t.Fatalf("replay check: %s envelope should carry + as \\u002B: %s", g.Name, body)
					}
				case pySpaced:
					if !bytes.Contains(body, []byte(`", "t": `)) {
						t.Fatalf("replay check: %s envelope should use \", \" separators: %s", g.Name, body)
					}
				}
				r := c.Do("POST", pLogin, nil, body)
				ok(t, r, true)
				if got := wantStr(t, r, "user.hwid"); got != hwidOf(g) {
					t.Fatalf("%s: server read hwid %q, client sent %q (JSON escapes decoded wrongly)", g.Name, got, hwidOf(g))
				}
				checkReplyEnvelope(t, r)
			})
		}

		c := NewClient(t, PY11, a)
		key := a.GenerateKeys(1, "lifetime", 0, 10)[0]
		t.Run("whitespace", func(t *testing.T) {
			p := c.sealP([]byte(`{ "license_key" : "`+key+`" ,`+"\n\t"+`"hwid" : "ws-pc" }`), false)
			now := s.Clock.Now().Unix()
			body := "\r\n {\n  \"p\" :  \"" + p + "\" ,\n  \"t\" : " + strconv.FormatInt(now, 10) + " ,\n  \"s\" : \"" + c.sign(p, now) + "\"\n}\n\n"
			ok(t, c.Do("POST", pLogin, nil, []byte(body)), true)
		})
		t.Run("window", func(t *testing.T) {
			now := s.Clock.Now().Unix()
			for i, d := range []int64{-300, 300, 0} {
				r := c.Do("POST", pLogin, nil, c.SealAt(obj("license_key", key, "hwid", "win-"+strconv.Itoa(i)), now+d))
				ok(t, r, true)
			}
			for _, d := range []int64{-301, 301, -86400} {
				r := c.Do("POST", pLogin, nil, c.SealAt(obj("license_key", key, "hwid", "win-x"), now+d))
				fail(t, r, 400, "CRYPTO_ERROR", false)
				if r.Body["reason"] != "CLOCK_SKEW" {
					t.Fatalf("t off by %d s: want the clock refusal, got %s", d, r)
				}
			}
		})
		t.Run("secret-as-text", func(t *testing.T) {
			// A client deriving keys from the hex-decoded secret is not this
			// protocol: the server must refuse it (bad MAC), proving keys come
			// from the secret's text.
			raw, _ := hex.DecodeString(a.Secret)
			odd := NewClient(t, PY11, a)
			odd.Secret = a.Secret
			odd.enc = sha256Of("enc:" + string(raw))
			odd.mac = sha256Of("mac:" + string(raw))
			r := odd.Do("POST", pLogin, nil, odd.Seal(obj("license_key", key, "hwid", "hexpc")))
			fail(t, r, 400, "CRYPTO_ERROR", false)
		})
	})
}

// checkReplyEnvelope checks the wire form of a reply envelope beyond what
// opening it checked: exactly p, t, s; p padded base64; t the server clock.
func checkReplyEnvelope(t testing.TB, r *Reply) {
	t.Helper()
	var outer map[string]json.RawMessage
	json.Unmarshal(r.Raw, &outer)
	if len(outer) != 3 {
		t.Fatalf("reply envelope has members other than p, t, s: %s", r.Raw)
	}
	var p string
	json.Unmarshal(outer["p"], &p)
	if len(p)%4 != 0 || strings.ContainsAny(p, "-_\n\r ") {
		t.Fatalf("reply p is not padded standard base64: %q", p)
	}
}

// §7.4: on the envelope routes every verified request is answered with an
// envelope — successes and business failures alike, stamped with the
// server's clock — and only refusals before verification are plain, never
// a plain success:true.
func TestCompat04_EnvelopeEveryReply(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, nil)
		a := richApp(t, s, "Sealed replies")
		key := a.GenerateKeys(1, "days", 30, 10)[0]
		for _, g := range []Gen{PY11, NET, CPP11, GENpy, GENcs} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				c.Skew = 200 * time.Second // inside the window: the reply t must still be the server's clock
				sealed := func(r *Reply, what string, success bool) {
					t.Helper()
					if !r.Sealed || r.Status != 200 {
						t.Fatalf("%s: want an HTTP 200 envelope, got %s", what, r)
					}
					if r.EnvT != s.Clock.Now().Unix() {
						t.Fatalf("%s: reply t = %d, want the server clock %d", what, r.EnvT, s.Clock.Now().Unix())
					}
					if b, isBool := r.Body["success"].(bool); !isBool || b != success {
						t.Fatalf("%s: want success:%v, got %s", what, success, r)
					}
					if !success {
						if code, _ := r.Body["error_code"].(string); code == "" {
							t.Fatalf("%s: enveloped failure without error_code: %s", what, r)
						}
					}
					checkReplyEnvelope(t, r)
				}
				// Successes.
				lr := c.Env(pLogin, obj("license_key", key, "hwid", "pc-"+g.Name))
				sealed(lr, "login", true)
				sid := lr.Body["session_id"].(string)
				sealed(beat(c, sid, key), "heartbeat", true)
				sealed(c.Env(pCheckKey, obj("license_key", key)), "check-key (envelope)", true)
				sealed(c.Env(pSlides, obj("action", "get_slides")), "slides", true)
				sealed(c.Env(pUpdate, obj("v", "1.0.0", "channel", "stable", "hwid", "x", "license_key", key)), "update check", true)
				sealed(c.Env(pSocial, obj("link_id", a.LinkID)), "social-click", true)
				sealed(c.Get(pInfo, nil), "info GET", true)
				sealed(c.Get(pText, http.Header{"Authorization": {"Bearer " + key}}), "text GET", true)
				sealed(c.Env(pLogout, obj("session_id", sid, "license_key", key)), "logout", true)
				// Business failures.
				sealed(c.Env(pLogin, obj("license_key", "NOPE0-NOPE0-NOPE0-NOPE0", "hwid", "x")), "login INVALID_KEY", false)
				sealed(c.Env(pLogin, obj("hwid", "x")), "login MISSING_FIELDS", false)
				sealed(beat(c, sid, key), "heartbeat after logout", false)
				sealed(beat(c, "no-such-session", key), "heartbeat unknown session", false)
				sealed(c.Env(pCheckKey, obj("license_key", "NOPE0-NOPE0-NOPE0-NOPE0")), "check-key INVALID_KEY (envelope)", false)
				sealed(c.Env(pSlides, obj("action", "delete_everything")), "slides bad action", false)
				sealed(c.Env(pUpdate, obj("channel", "stable")), "update check without v", false)
				sealed(c.Env(pUpdate, obj("v", "1.0.0", "channel", "nightly")), "update check unknown channel", false)
				sealed(c.Env(pSocial, obj("link_id", 999999)), "social-click unknown link", false)
				sealed(c.Env(pSocial, obj()), "social-click without link", false)
			})
		}

		// Pre-verification refusals: plain, failures.
		c := NewClient(t, NET, a.App)
		tampered := c.Forge(obj("license_key", key, "hwid", "x"), s.Clock.Now().Unix())
		for _, path := range []string{pLogin, pHeartbeat, pLogout, pCheckKey, pSlides, pUpdate, pSocial} {
			for name, body := range map[string][]byte{
				"bad MAC":         tampered,
				"old stamp":       c.SealAt(obj("license_key", key), s.Clock.Now().Unix()-3600),
				"not an envelope": []byte(`{"p":"AAAA","t":"soon","s":"x"}`),
				"plain JSON":      []byte(`{"license_key":"` + key + `","session_id":"x","action":"get_slides","v":"1.0.0","link_id":1}`),
				"garbage":         []byte("<html>"),
			} {
				if path == pCheckKey && name == "plain JSON" {
					continue // check-key answers plain JSON in kind (§7.5)
				}
				r := c.Do("POST", path, nil, body)
				if r.Sealed || r.Status < 400 || r.Status >= 500 || r.Body["success"] != false {
					t.Fatalf("%s with %s: want a plain 4xx success:false, got %s", path, name, r)
				}
			}
		}
	})
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }
