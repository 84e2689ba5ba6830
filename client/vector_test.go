package client

import (
	"encoding/hex"
	"os"
)

// readVector reads spec/vectors/signed-reply.json, the signed SDKs' own
// fixture, copied into testdata with the public key it verifies with (the
// key whose SPKI SHA-256 sdk-compat §3 records).
func readVector() ([]byte, error) { return os.ReadFile("testdata/signed-reply.json") }

func hexOf(b []byte) string { return hex.EncodeToString(b) }
