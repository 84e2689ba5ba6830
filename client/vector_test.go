package client

import (
	"encoding/hex"
	"os"
	"path/filepath"
)

// readVector reads spec/vectors/signed-reply.json from the shared spec
// (outside the module; KEYWARD_SPEC_DIR overrides its location).
func readVector() ([]byte, error) {
	dir := os.Getenv("KEYWARD_SPEC_DIR")
	if dir == "" {
		dir = "/work/shared/spec"
	}
	return os.ReadFile(filepath.Join(dir, "vectors", "signed-reply.json"))
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
