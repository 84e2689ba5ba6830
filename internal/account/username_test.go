package account

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/license"
)

// Keys stored before UsernameKey folded were strings.ToLower of the
// username. On every name usernameRE admits the two agree, so no stored
// key needs recomputing. A wider usernameRE that admits a character on which
// they differ fails here: such a change needs a migration re-keying the
// stored accounts (and a plan for names that then collide).
func TestUsernameKeyASCII(t *testing.T) {
	checked := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		for _, u := range []string{string(r) + "ab", "ab" + string(r)} {
			if !usernameRE.MatchString(u) {
				continue
			}
			checked++
			if got, old := license.UsernameKey(u), strings.ToLower(u); got != old {
				t.Errorf("UsernameKey(%q) = %q, but the stored key (strings.ToLower) is %q", u, got, old)
			}
		}
	}
	// 62 letters and digits lead; those and . _ - follow.
	if checked != 62+65 {
		t.Fatalf("checked %d admitted names, want %d: usernameRE changed?", checked, 62+65)
	}
}
