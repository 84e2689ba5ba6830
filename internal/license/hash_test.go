package license

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestHashToken checks the stored form of a token (hex SHA-256, as the
// sessions and apps tables hold it) for a 64-character token and a longer
// one, and that hashing a token allocates only the returned string.
func TestHashToken(t *testing.T) {
	for _, tok := range []string{strings.Repeat("ab", 32), strings.Repeat("x", 100), ""} {
		sum := sha256.Sum256([]byte(tok))
		if got, want := HashToken(tok), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("HashToken(%q) = %s, want %s", tok, got, want)
		}
	}
	tok := strings.Repeat("ab", 32)
	if n := testing.AllocsPerRun(100, func() { _ = HashToken(tok) }); n != 1 {
		t.Errorf("HashToken allocates %v times, want 1", n)
	}
}
