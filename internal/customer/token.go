package customer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Customer tokens are HS256 JWTs signed with their own installation key
// (server secret "customer_jwt_key", never the admin key), with audience
// "keyward-customer" and subject "key:<license key>" or
// "account:<username>"; "app" names the app and "hid" the holder's row, so
// a key deleted and made again under the same string does not inherit
// tokens. An account token carries a fingerprint of the password hash
// ("pw"): a password change ends it.

// Audience is the aud claim of every customer token.
const Audience = "keyward-customer"

const keyName = "customer_jwt_key"

// claims are the parts of a customer token keyward reads.
type claims struct {
	kind    string
	subject string
	app     string
	id      int64
	pw      string
	expires time.Time
}

func loadKey(ctx context.Context, store Store) ([]byte, error) {
	key, err := store.ServerSecret(ctx, keyName, func() (string, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return hex.EncodeToString(b), err
	})
	if err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(key)
	if err != nil || len(raw) < 32 {
		return nil, errors.New("stored customer_jwt_key is not 32 hex bytes")
	}
	return raw, nil
}

// fingerprint is a short digest of an account's password hash: enough to
// notice a change, useless for guessing the password.
func fingerprint(hash string) string {
	h := sha256.Sum256([]byte("customer-token:" + hash))
	return hex.EncodeToString(h[:8])
}

func (s *Service) sign(c claims, now time.Time) (string, error) {
	mc := jwt.MapClaims{"iss": "keyward", "aud": Audience, "sub": c.kind + ":" + c.subject, "app": c.app, "hid": c.id,
		"iat": now.Unix(), "exp": c.expires.Unix()}
	if c.pw != "" {
		mc["pw"] = c.pw
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, mc).SignedString(s.key)
}

// parse verifies a customer token's signature (HS256 only), issuer,
// audience and expiry and reads its claims. Anything else — another
// algorithm, an admin token, a malformed or expired one, another base64
// spelling of a token's signature (strict decoding) — is UNAUTHORIZED.
func (s *Service) parse(token string) (*claims, error) {
	if token == "" || len(token) > 4096 {
		return nil, errUnauthorized
	}
	parsed, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("keyward"), jwt.WithAudience(Audience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now), jwt.WithStrictDecoding())
	if err != nil || !parsed.Valid {
		return nil, errUnauthorized
	}
	mc, ok := parsed.Claims.(jwt.MapClaims)
	if !ok {
		return nil, errUnauthorized
	}
	sub, _ := mc["sub"].(string)
	app, _ := mc["app"].(string)
	hid, _ := mc["hid"].(float64)
	pw, _ := mc["pw"].(string)
	exp, err := mc.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, errUnauthorized
	}
	kind, subject, ok := strings.Cut(sub, ":")
	if !ok || subject == "" || app == "" || hid < 1 || hid != float64(int64(hid)) {
		return nil, errUnauthorized
	}
	switch kind {
	case KindKey:
	case KindAccount:
		if pw == "" {
			return nil, errUnauthorized
		}
	default:
		return nil, errUnauthorized
	}
	return &claims{kind: kind, subject: subject, app: app, id: int64(hid), pw: pw, expires: exp.Time}, nil
}
