package client

import (
	"encoding/hex"
	"os"
	"path/filepath"
)

// vectorDir holds spec/vectors/signed-reply.json, the signed SDKs' own
// fixture, with the public key it verifies with (the key whose SPKI SHA-256
// sdk-compat §3 records). It is internal/signing's testdata: the SDK and the
// server test the one PWF-REPLY-V1 implementation against one copy.
const vectorDir = "../internal/signing/testdata"

func readVector() ([]byte, error) { return os.ReadFile(filepath.Join(vectorDir, "signed-reply.json")) }

func readVectorKey() ([]byte, error) {
	return os.ReadFile(filepath.Join(vectorDir, "vector-public.pem"))
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
