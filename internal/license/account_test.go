package license

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// UsernameKey folds case by Unicode rules, so spellings that differ only in
// case — beyond ASCII too — are one username.
func TestUsernameKeyFolds(t *testing.T) {
	same := [][]string{
		{"Alice", "alice", "ALICE", "aLiCe"},
		{"STRASSE", "straße", "Straße", "strasse"}, // full folding: ß is ss
		{"kim", "\u212Aim"},                        // KELVIN SIGN folds to k
		{"sam", "\u017Fam"},                        // LATIN SMALL LETTER LONG S folds to s
		{"ΣΊΣΥΦΟΣ", "σίσυφος", "σίσυφοσ"},          // final sigma folds to σ
	}
	for _, group := range same {
		want := UsernameKey(group[0])
		for _, u := range group[1:] {
			if got := UsernameKey(u); got != want {
				t.Errorf("UsernameKey(%q) = %q, want %q (as for %q)", u, got, want, group[0])
			}
		}
	}
	for _, pair := range [][2]string{{"alice", "alice2"}, {"bob", "b0b"}, {"a.b", "a_b"}} {
		if UsernameKey(pair[0]) == UsernameKey(pair[1]) {
			t.Errorf("UsernameKey(%q) == UsernameKey(%q), want different", pair[0], pair[1])
		}
	}
}

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
			if got, old := UsernameKey(u), strings.ToLower(u); got != old {
				t.Errorf("UsernameKey(%q) = %q, but the stored key (strings.ToLower) is %q", u, got, old)
			}
		}
	}
	// 62 letters and digits lead; those and . _ - follow.
	if checked != 62+65 {
		t.Fatalf("checked %d admitted names, want %d: usernameRE changed?", checked, 62+65)
	}
}
