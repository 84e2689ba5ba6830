package client

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

// ReplyCanonical returns the bytes a PWF-REPLY-V1 signature covers: seven
// lines joined by LF, no trailing newline — the literal PWF-REPLY-V1, the
// nonce as sent, the method, the request path (no query), the lowercase hex
// SHA-256 of the request body, the decimal status and the lowercase hex
// SHA-256 of the reply body as received.
func ReplyCanonical(nonce, method, path string, requestBody []byte, status int, replyBody []byte) []byte {
	rq := sha256.Sum256(requestBody)
	rp := sha256.Sum256(replyBody)
	return []byte(strings.Join([]string{
		"PWF-REPLY-V1", nonce, method, path,
		hex.EncodeToString(rq[:]), strconv.Itoa(status), hex.EncodeToString(rp[:]),
	}, "\n"))
}

// VerifyReplySignature checks sigB64 (standard base64, strictly decoded) as
// an RSASSA-PKCS1-v1_5 SHA-256 signature of canonical by any of keys.
func VerifyReplySignature(keys []*rsa.PublicKey, canonical []byte, sigB64 string) error {
	if sigB64 == "" {
		return ErrUnsigned
	}
	// Go's decoder skips CR and LF even in strict mode; the SDKs do not.
	if strings.ContainsAny(sigB64, "\r\n\t ") {
		return ErrBadSignature
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sigB64)
	if err != nil || len(sig) == 0 {
		return ErrBadSignature
	}
	sum := sha256.Sum256(canonical)
	for _, k := range keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil {
			return nil
		}
	}
	return ErrBadSignature
}

// parsePinnedKey parses a PEM "PUBLIC KEY" (PKIX SubjectPublicKeyInfo)
// holding an RSA key of at least 2048 bits.
func parsePinnedKey(p []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("pinned key: no PEM block")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("pinned key: PEM type %q, want PUBLIC KEY", block.Type)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pinned key: %w", err)
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("pinned key: %T is not an RSA key", k)
	}
	if rk.N.BitLen() < 2048 {
		return nil, fmt.Errorf("pinned key: %d-bit RSA is too small", rk.N.BitLen())
	}
	return rk, nil
}

// newNonce returns 32 random bytes as 64 lowercase hex characters.
func newNonce() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
