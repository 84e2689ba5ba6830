package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// respelled is tok with the lowest bit of its last character flipped: in an
// HS256 signature (32 bytes, 43 base64 characters) that bit is unused, so
// it is the same signature in another text.
func respelled(tok string) string {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return tok[:len(tok)-1] + string(b64[strings.IndexByte(b64, tok[len(tok)-1])^1])
}

// FuzzParseToken feeds arbitrary bearer tokens to the JWT check every
// admin request passes: none may panic, and only the exact text of a token
// this installation signed, current and with the audience asked for, is
// accepted: not another base64 spelling of its signature, not one longer
// than maxTokenLen. (The seeds are signed here with fixed claims rather than by
// sign, whose random jti would differ in each fuzzing process.)
func FuzzParseToken(f *testing.F) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	key := []byte("0123456789abcdef0123456789abcdef")
	s := &Service{key: key, now: func() time.Time { return now }}
	token := func(key []byte, method jwt.SigningMethod, edit func(jwt.MapClaims)) string {
		c := jwt.MapClaims{"iss": "keyward", "sub": "u1", "name": "owner", "gen": 3,
			"jti": "0b9f7f8e-2f64-4c55-9d7e-2b0d3c1e4a51", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		var k any = key
		if method == jwt.SigningMethodNone {
			k = jwt.UnsafeAllowNoneSignatureType
		}
		t, err := jwt.NewWithClaims(method, c).SignedString(k)
		if err != nil {
			f.Fatal(err)
		}
		return t
	}
	bearer := token(key, jwt.SigningMethodHS256, nil)
	step1 := token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { c["aud"] = audStep1 })
	refused := []string{
		token([]byte("another installation's key 32 b"), jwt.SigningMethodHS256, nil),
		token(key, jwt.SigningMethodHS512, nil),
		token(key, jwt.SigningMethodNone, nil),
		token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { c["iss"] = "someone" }),
		token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }),
		token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { delete(c, "exp") }),
		token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { c["aud"] = []string{audStep1, "x"} }),
		token(key, jwt.SigningMethodHS256, func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", maxTokenLen) }),
		respelled(bearer), respelled(step1),
		"", "a.b.c", "kw_pat_x",
	}
	for _, seed := range append([]string{bearer, step1}, refused...) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		for aud, valid := range map[string]string{"": bearer, audStep1: step1} {
			mc, err := s.parse(tok, aud)
			if (err == nil) != (tok == valid) {
				t.Fatalf("parse(%q, %q): claims %v, err %v; only %q is valid there", tok, aud, mc, err, valid)
			}
			if err != nil && err != errUnauthorized {
				t.Fatalf("parse(%q, %q): %v, want errUnauthorized", tok, aud, err)
			}
		}
	})
}
