package client

import (
	"crypto/rsa"
	"fmt"

	"github.com/keyward/keyward/internal/signing"
)

// The PWF-REPLY-V1 scheme itself (the canonical string, strict base64,
// RSASSA-PKCS1-v1_5 SHA-256, pinned-key parsing, nonces) is keyward's one
// implementation in internal/signing, the package the server signs with.
// This file only gives it the SDK's exported names and errors.

// ReplyCanonical returns the bytes a PWF-REPLY-V1 signature covers: seven
// lines joined by LF, no trailing newline — the literal PWF-REPLY-V1, the
// nonce as sent, the method, the request path (no query), the lowercase hex
// SHA-256 of the request body, the decimal status and the lowercase hex
// SHA-256 of the reply body as received.
func ReplyCanonical(nonce, method, path string, requestBody []byte, status int, replyBody []byte) []byte {
	return signing.Canonical(nonce, method, path, requestBody, status, replyBody)
}

// ReplyCanonicalHashed is ReplyCanonical with the reply body's SHA-256
// already computed (for streamed replies).
func ReplyCanonicalHashed(nonce, method, path string, requestBody []byte, status int, replySHA256 []byte) []byte {
	return signing.CanonicalHashed(nonce, method, path, requestBody, status, replySHA256)
}

// VerifyReplySignature checks sigB64 (standard base64, strictly decoded) as
// an RSASSA-PKCS1-v1_5 SHA-256 signature of canonical by any of keys. It
// returns ErrUnsigned for an empty signature and ErrBadSignature for one
// that does not verify.
func VerifyReplySignature(keys []*rsa.PublicKey, canonical []byte, sigB64 string) error {
	if sigB64 == "" {
		return ErrUnsigned
	}
	if signing.VerifyAny(keys, canonical, sigB64) != nil {
		return ErrBadSignature
	}
	return nil
}

// parsePinnedKey parses a PEM "PUBLIC KEY" (PKIX SubjectPublicKeyInfo)
// holding an RSA key of at least 2048 bits.
func parsePinnedKey(p []byte) (*rsa.PublicKey, error) {
	k, err := signing.ParsePublic(p)
	if err != nil {
		return nil, fmt.Errorf("pinned key: %w", err)
	}
	return k, nil
}
