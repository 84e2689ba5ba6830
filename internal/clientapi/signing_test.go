package clientapi_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/signing"
)

func sgNonce(t *testing.T) string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Live replies carry X-PWF-Signature over their exact bytes, verified with
// the configured key's public half as a pinning client would: successes,
// enveloped business failures, plain refusals (bad secret, clock skew),
// 404s and admin replies alike. Requests without a well-formed nonce get no
// signature.
func TestSignedReplies(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		dir := filepath.Join(t.TempDir(), "signing")
		key, err := signing.Init(dir)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := signing.ParsePublic(key.PublicPEM)
		if err != nil {
			t.Fatal(err)
		}
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = dir }})
		a := s.CreateApp("Signed")
		lk := a.GenerateKeys(1, "lifetime", 0, 1)[0]

		// exchange sends body with a fresh nonce and checks the signature.
		exchange := func(name, method, path string, h http.Header, body []byte) *kwtest.Reply {
			t.Helper()
			if h == nil {
				h = http.Header{}
			}
			nonce := sgNonce(t)
			h.Set("X-PWF-Nonce", nonce)
			r := s.Do(method, path, h, body)
			sigs := r.Header.Values("X-PWF-Signature")
			if len(sigs) != 1 {
				t.Fatalf("%s: %d X-PWF-Signature headers, want exactly one", name, len(sigs))
			}
			if err := signing.Verify(pub, signing.Canonical(nonce, method, path, body, r.Status, r.Raw), sigs[0]); err != nil {
				t.Fatalf("%s: the signature does not verify: %v (%s)", name, err, r)
			}
			// The same signature over any other nonce, status or body fails.
			if signing.Verify(pub, signing.Canonical(sgNonce(t), method, path, body, r.Status, r.Raw), sigs[0]) == nil {
				t.Fatalf("%s: the signature ignores the nonce", name)
			}
			return r
		}
		secret := http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
		login := a.Seal(map[string]any{"license_key": lk, "hwid": "pc-1"}).Marshal()
		if r := exchange("login", "POST", "/api/auth/login.php", secret.Clone(), login); r.Status != 200 || r.Body["p"] == nil {
			t.Fatalf("login: %s", r)
		}
		bad := a.Seal(map[string]any{"license_key": "NOPE", "hwid": "pc-1"}).Marshal()
		if r := exchange("refused login", "POST", "/api/auth/login.php", secret.Clone(), bad); r.Body["p"] == nil {
			t.Fatalf("an enveloped refusal was not enveloped: %s", r)
		}
		wrong := http.Header{"X-App-Secret": {strings.Repeat("0", 64)}, "Content-Type": {"application/json"}}
		if r := exchange("bad secret", "POST", "/api/auth/trial.php", wrong, []byte(`{"hwid":"x"}`)); r.Status != 401 {
			t.Fatalf("bad secret: %s", r)
		}
		stale, err := a.Keys.Seal([]byte(`{"license_key":"x","hwid":"y"}`), s.Clock.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if r := exchange("clock refusal", "POST", "/api/auth/login.php", secret.Clone(), stale.Marshal()); r.Body["reason"] != "CLOCK_SKEW" {
			t.Fatalf("clock refusal: %s", r)
		}
		if r := exchange("404", "GET", "/api/nope.php", nil, nil); r.Status != 404 {
			t.Fatalf("unknown path: %s", r)
		}
		admin := http.Header{"Authorization": {"Bearer " + s.AdminToken()}}
		r := exchange("admin", "GET", "/api/admin/signing.php", admin, nil)
		keys, _ := r.Body["keys"].([]any)
		if len(keys) != 1 || keys[0].(map[string]any)["spki_sha256"] != key.SPKISHA256 || keys[0].(map[string]any)["active"] != true ||
			keys[0].(map[string]any)["public_key"] != string(key.PublicPEM) {
			t.Fatalf("signing.php: %s", r)
		}

		// No nonce, or one that is not 64 lowercase hex: no signature.
		for _, nonce := range []string{"", strings.ToUpper(sgNonce(t)), "abc"} {
			h := http.Header{"X-App-Secret": {a.Secret}, "Content-Type": {"application/json"}}
			if nonce != "" {
				h.Set("X-PWF-Nonce", nonce)
			}
			if r := s.Do("POST", "/api/auth/trial.php", h, []byte(`{"hwid":"x"}`)); r.Header.Get("X-PWF-Signature") != "" {
				t.Fatalf("nonce %q got a signature", nonce)
			}
		}
	})
}

// Without a key nothing is signed and signing.php says so.
func TestSigningOff(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	r := s.Do("GET", "/api/nope.php", http.Header{"X-PWF-Nonce": {sgNonce(t)}}, nil)
	if r.Header.Get("X-PWF-Signature") != "" {
		t.Fatal("signed without a key")
	}
	r = s.MustAdmin("GET", "/api/admin/signing.php", nil)
	if r.Body["signing"] != false || len(r.Body["keys"].([]any)) != 0 {
		t.Fatalf("signing.php without keys: %s", r)
	}
}
