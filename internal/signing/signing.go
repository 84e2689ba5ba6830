// Package signing implements PWF-REPLY-V1, the signed-reply scheme of the
// client SDKs (sdk-compat §3): the server signs, with an RSA-3072 key of the
// operator's, a seven-line canonical string binding the client's nonce, the
// request (method, path, body hash) and the exact reply (status, body hash).
// Forked SDKs pin the operator's public key and refuse replies that do not
// verify. The package is pure: keys, the canonical string, sign and verify,
// and the key directory the server and `keyward keys signing` share.
package signing

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Header names of the scheme.
const (
	NonceHeader     = "X-PWF-Nonce"
	SignatureHeader = "X-PWF-Signature"
	scheme          = "PWF-REPLY-V1"
	// Bits is the key size the SDKs expect.
	Bits = 3072
)

// Canonical returns the bytes signed for one exchange: seven lines joined
// by LF, no trailing newline — the literal PWF-REPLY-V1, the nonce as sent,
// the method, the request path (no query), the lowercase hex SHA-256 of the
// request body, the decimal status and the lowercase hex SHA-256 of the
// reply body.
func Canonical(nonce, method, path string, request []byte, status int, reply []byte) []byte {
	sum := sha256.Sum256(reply)
	return CanonicalHashed(nonce, method, path, request, status, sum[:])
}

// CanonicalHashed is Canonical with the reply body's SHA-256 already
// computed, for replies that are streamed rather than held in memory.
func CanonicalHashed(nonce, method, path string, request []byte, status int, replySHA256 []byte) []byte {
	return []byte(strings.Join([]string{scheme, nonce, method, path, hashHex(request), strconv.Itoa(status), hex.EncodeToString(replySHA256)}, "\n"))
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ValidNonce reports whether a request's nonce has the SDKs' form: 64
// lowercase hex characters. keyward signs only replies to such requests.
func ValidNonce(n string) bool {
	if len(n) != 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NewNonce returns a fresh nonce of the form ValidNonce accepts: 32 random
// bytes as 64 lowercase hex characters.
func NewNonce() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Key is a signing key with its identity.
type Key struct {
	Private *rsa.PrivateKey
	// ID is the first 16 hex characters of the SPKI SHA-256.
	ID string
	// SPKISHA256 is the lowercase hex SHA-256 of the public key's
	// SubjectPublicKeyInfo (DER): what a client pins.
	SPKISHA256 string
	// PublicPEM is the SubjectPublicKeyInfo as PEM ("PUBLIC KEY").
	PublicPEM []byte
}

// Generate makes a fresh RSA-3072 key.
func Generate() (*Key, error) {
	priv, err := rsa.GenerateKey(rand.Reader, Bits)
	if err != nil {
		return nil, err
	}
	return newKey(priv)
}

func newKey(priv *rsa.PrivateKey) (*Key, error) {
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := hashHex(der)
	return &Key{Private: priv, ID: sum[:16], SPKISHA256: sum,
		PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// MarshalPrivate encodes the key as a PKCS#8 PEM ("PRIVATE KEY").
func (k *Key) MarshalPrivate() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivate reads a PKCS#8 or PKCS#1 PEM RSA private key of 3072 bits.
func ParsePrivate(b []byte) (*Key, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var priv *rsa.PrivateKey
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		var ok bool
		if priv, ok = k.(*rsa.PrivateKey); !ok {
			return nil, errors.New("not an RSA key")
		}
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		priv = k
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if priv.N.BitLen() != Bits {
		return nil, fmt.Errorf("RSA key of %d bits; the SDKs expect %d", priv.N.BitLen(), Bits)
	}
	return newKey(priv)
}

// MinPublicBits is the smallest RSA public key ParsePublic accepts.
const MinPublicBits = 2048

// ParsePublic reads a SubjectPublicKeyInfo PEM ("PUBLIC KEY") RSA public key
// of at least MinPublicBits bits: what a client pins.
func ParsePublic(b []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM type %q, want PUBLIC KEY", block.Type)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%T is not an RSA key", k)
	}
	if pub.N.BitLen() < MinPublicBits {
		return nil, fmt.Errorf("%d-bit RSA is too small", pub.N.BitLen())
	}
	return pub, nil
}

// Sign returns the base64 signature (RSASSA-PKCS1-v1_5, SHA-256) of the
// canonical bytes, as sent in X-PWF-Signature.
func (k *Key) Sign(canonical []byte) (string, error) {
	sum := sha256.Sum256(canonical)
	sig, err := rsa.SignPKCS1v15(nil, k.Private, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// ErrBadSignature is returned by Verify and VerifyAny when the signature is
// not strict base64 or verifies with none of the keys.
var ErrBadSignature = errors.New("signature does not verify")

// Verify checks a base64 signature of the canonical bytes with pub. The
// base64 is decoded strictly, as the Python SDK does.
func Verify(pub *rsa.PublicKey, canonical []byte, signature string) error {
	return VerifyAny([]*rsa.PublicKey{pub}, canonical, signature)
}

// VerifyAny checks a base64 RSASSA-PKCS1-v1_5 SHA-256 signature of the
// canonical bytes with each of pubs (a client may pin several keys during a
// rotation) and returns nil when one verifies, ErrBadSignature otherwise.
// The base64 is decoded strictly and white space anywhere is refused, as the
// SDKs do (Go's strict decoder would skip CR and LF).
func VerifyAny(pubs []*rsa.PublicKey, canonical []byte, signature string) error {
	if strings.ContainsAny(signature, "\r\n\t ") {
		return ErrBadSignature
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil || len(sig) == 0 {
		return ErrBadSignature
	}
	sum := sha256.Sum256(canonical)
	for _, pub := range pubs {
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil {
			return nil
		}
	}
	return ErrBadSignature
}
