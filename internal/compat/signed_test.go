package compat_test

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

// The signed generations: the same wire as their unsigned predecessors,
// plus X-PWF-Nonce on every request (sdk-compat §3). Stock builds pin the
// vendor's key and origin; a vendor's fork pins its keyward key instead.
var (
	PY12 = Gen{Name: "PY1.2", UA: "pwfauth-python/1.2.0 (+https://pwfauth.com)", CT: "application/json", Style: pyCompact,
		Header: http.Header{"Accept-Encoding": {"identity"}, "Connection": {"close"}}, Corrects: true}
	NET14 = Gen{Name: "NET1.4", UA: "PWFAuth-dotnet/1.4.0 (+https://pwfauth.com)", CT: "application/json; charset=utf-8", Style: netSTJ,
		Corrects: true}
	CPPS = Gen{Name: "CPP-S", UA: "PwfAuthCpp/1.1 (+https://pwfauth.com)", CT: "application/json", Style: rawCompact, Corrects: true}
)

// §7 item 20: with an operator key, every reply to a nonce'd request — an
// enveloped success and refusal, a plain refusal, the clock refusal, a 404,
// a GET — carries exactly one X-PWF-Signature, standard base64, that
// verifies over PWF-REPLY-V1 with the exact bytes on the wire (so nothing is
// compressed), as each signed generation checks it before parsing.
func TestCompat20_SignedReplies(t *testing.T) {
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
		s := start(t, engine, func(c *config.Config) { c.SigningDir = dir })
		a := richApp(t, s, "Signed")
		for _, g := range []Gen{PY12, NET14, CPPS} {
			t.Run(g.Name, func(t *testing.T) {
				c := NewClient(t, g, a.App)
				exchange := func(what, method, path string, body []byte, extra http.Header) *Reply {
					t.Helper()
					n := make([]byte, 32)
					rand.Read(n)
					nonce := hex.EncodeToString(n)
					if extra == nil {
						extra = http.Header{}
					}
					extra.Set("X-PWF-Nonce", nonce)
					extra.Set("Accept-Encoding", "gzip, deflate")
					r := c.Do(method, path, extra, body)
					sigs := r.Header.Values("X-PWF-Signature")
					if len(sigs) != 1 {
						t.Fatalf("%s: %d signature headers, want one (%s)", what, len(sigs), r)
					}
					if strings.ContainsAny(sigs[0], " \r\n\t") || r.Header.Get("Content-Encoding") != "" {
						t.Fatalf("%s: signature %q, Content-Encoding %q", what, sigs[0], r.Header.Get("Content-Encoding"))
					}
					if err := signing.Verify(pub, signing.Canonical(nonce, method, path, body, r.Status, r.Raw), sigs[0]); err != nil {
						t.Fatalf("%s: %v (%s)", what, err, r)
					}
					return r
				}
				k := a.GenerateKeys(1, "days", 30, 1)[0]
				if r := exchange("login", "POST", pLogin, c.Seal(obj("license_key", k, "hwid", "pc-"+uniq())), nil); !r.Sealed || r.Body["success"] != true {
					t.Fatalf("login: %s", r)
				}
				if r := exchange("refused login", "POST", pLogin, c.Seal(obj("license_key", "NOPE-"+uniq(), "hwid", "x")), nil); !r.Sealed || r.Body["error_code"] != "INVALID_KEY" {
					t.Fatalf("refused login: %s", r)
				}
				if r := exchange("clock refusal", "POST", pLogin, c.SealAt(obj("license_key", k, "hwid", "x"), c.Now().Add(-time.Hour).Unix()), nil); r.Sealed || r.Body["reason"] != "CLOCK_SKEW" {
					t.Fatalf("clock refusal: %s", r)
				}
				if r := exchange("bad secret", "POST", pTrial, g.Marshal(obj("hwid", "x")), http.Header{"X-App-Secret": {strings.Repeat("0", 64)}}); r.Status != 401 {
					t.Fatalf("bad secret: %s", r)
				}
				if r := exchange("info", "GET", pInfo, nil, nil); !r.Sealed {
					t.Fatalf("info: %s", r)
				}
				if r := exchange("404", "GET", "/api/app/nothing.php", nil, nil); r.Status != 404 {
					t.Fatalf("404: %s", r)
				}
			})
		}
	})
}
