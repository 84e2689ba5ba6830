package license_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// secretRE is what CheckSecret accepts, said another way.
var secretRE = regexp.MustCompile(`\A[0-9A-Fa-f]{64}\z`)

// CheckSecret accepts exactly 64 hexadecimal characters of either case and
// refuses everything else with MISSING_FIELDS naming the field, never
// repeating the input (it is a secret).
func FuzzCheckSecret(f *testing.F) {
	for _, seed := range []string{
		strings.Repeat("a", 64), strings.Repeat("F", 64), "0123456789ABCDEF0123456789abcdef" + "FEDCBA9876543210fedcba9876543210",
		strings.Repeat("a", 63), strings.Repeat("a", 65), "", strings.Repeat("g", 64), " " + strings.Repeat("a", 63),
		strings.Repeat("a", 63) + "\n", strings.Repeat("é", 32), strings.Repeat("a", 62) + "\x00a",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := license.CheckSecret(s)
		if want := secretRE.MatchString(s); (err == nil) != want {
			t.Fatalf("CheckSecret(%q) = %v, want accepted %v", s, err, want)
		}
		if err == nil {
			return
		}
		e := apperr.From(err)
		if e.Code != "MISSING_FIELDS" || !strings.Contains(e.Message, "secret") || !strings.Contains(e.Message, "64 hexadecimal") {
			t.Fatalf("CheckSecret(%q): %v, want MISSING_FIELDS about the secret", s, err)
		}
		// A near-secret (a run of 32 hex characters, which the message itself
		// never has) must not come back in the message.
		if len(s) >= 32 && secretRE.MatchString(strings.Repeat(s[:32], 2)) && strings.Contains(e.Message, s[:32]) {
			t.Fatalf("CheckSecret(%q): the message repeats the input: %q", s, e.Message)
		}
	})
}
