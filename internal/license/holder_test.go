package license

import (
	"testing"
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
