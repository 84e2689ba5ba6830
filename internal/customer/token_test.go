package customer

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// secretStore is a Store that only has the token key; parse needs nothing else.
type secretStore struct{ Store }

func (secretStore) ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error) {
	return generate()
}

const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var fuzzNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newTestService(t testing.TB) *Service {
	t.Helper()
	s, err := New(context.Background(), secretStore{}, nil, func() time.Time { return fuzzNow }, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A token of this service parses; one an hour old has expired; the same
// claims signed with another key, with "none", or without the audience do not.
func TestCustomerTokenParse(t *testing.T) {
	s, other := newTestService(t), newTestService(t)
	c := claims{kind: KindKey, subject: "KEY-AAAAA", app: "app", id: 7, expires: fuzzNow.Add(time.Hour)}
	tok, err := s.sign(c, fuzzNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.parse(tok)
	if err != nil || got.kind != KindKey || got.subject != "KEY-AAAAA" || got.app != "app" || got.id != 7 {
		t.Fatalf("parse = %+v, %v", got, err)
	}
	if _, err := other.parse(tok); err == nil {
		t.Fatal("a token of another installation key parsed")
	}
	for name, bad := range fuzzSeeds(t, s) {
		if _, err := s.parse(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// fuzzSeeds are tokens that must all be refused by s.
func fuzzSeeds(t testing.TB, s *Service) map[string]string {
	t.Helper()
	other := newTestService(t)
	valid := jwt.MapClaims{"iss": "keyward", "aud": Audience, "sub": "key:KEY-AAAAA", "app": "app", "hid": 7,
		"iat": fuzzNow.Unix(), "exp": fuzzNow.Add(time.Hour).Unix()}
	sign := func(key []byte, mc jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, mc).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	with := func(k string, v any) jwt.MapClaims {
		mc := jwt.MapClaims{}
		for a, b := range valid {
			mc[a] = b
		}
		if v == nil {
			delete(mc, k)
		} else {
			mc[k] = v
		}
		return mc
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, valid).SignedString(jwt.UnsafeAllowNoneSignatureType)
	good := sign(s.key, valid)
	parts := strings.Split(good, ".")
	return map[string]string{
		"empty":          "",
		"garbage":        "not-a-token",
		"other key":      sign(other.key, valid),
		"alg none":       none,
		"no audience":    sign(s.key, with("aud", nil)),
		"admin audience": sign(s.key, with("aud", "keyward-2fa")),
		"expired":        sign(s.key, with("exp", fuzzNow.Add(-time.Second).Unix())),
		"no expiry":      sign(s.key, with("exp", nil)),
		"other issuer":   sign(s.key, with("iss", "evil")),
		"bad subject":    sign(s.key, with("sub", "reseller:x")),
		"no app":         sign(s.key, with("app", nil)),
		"zero holder":    sign(s.key, with("hid", 0)),
		"float holder":   sign(s.key, with("hid", 1.5)),
		"account no pw":  sign(s.key, with("sub", "account:alice")),
		"swapped body":   parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"key:KEY-BBBBB"}`)) + "." + parts[2],
		"dropped sig":    parts[0] + "." + parts[1] + ".",
		// The signature's last character with its unused lowest bit
		// flipped: the same bytes, another text (strict decoding).
		"respelled": good[:len(good)-1] + string(b64url[strings.IndexByte(b64url, good[len(good)-1])^1]),
		"long":      strings.Repeat("a", 5000),
	}
}

// FuzzCustomerToken feeds arbitrary strings to the token verification: it
// never panics and never accepts anything but a token this installation
// signed (the corpus holds none, and the fuzzer cannot forge HMAC-SHA256).
func FuzzCustomerToken(f *testing.F) {
	s := newTestService(f)
	for _, seed := range fuzzSeeds(f, s) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if c, err := s.parse(tok); err == nil {
			t.Fatalf("parsed %q as %+v", tok, c)
		}
		if p, err := s.Authenticate(context.Background(), tok); err == nil {
			t.Fatalf("authenticated %q as %+v", tok, p)
		}
	})
}

func TestMaskKey(t *testing.T) {
	for in, want := range map[string]string{"KEY-ABCDE-FGHIJ": "…FGHIJ", "ABC": "…ABC", "": "…"} {
		if got := MaskKey(in); got != want {
			t.Errorf("MaskKey(%q) = %q, want %q", in, got, want)
		}
	}
}
