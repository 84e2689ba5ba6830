package update

import "testing"

// FuzzParseVersion feeds arbitrary text to the version parser (callers send
// it in update checks): no panic, and whatever parses prints back to a
// version of equal precedence.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "v1.2.3-beta.1+b", "01.2.3", "1.2", "1.2.3-", "99999999999999999999.0.0", "1.0.0-0.a.1-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := ParseVersion(s)
		if err != nil {
			return
		}
		y, err := ParseVersion(x.String())
		if err != nil {
			t.Fatalf("%q parsed, but its String %q does not: %v", s, x.String(), err)
		}
		if x.Compare(y) != 0 || y.Compare(x) != 0 {
			t.Fatalf("%q and %q compare unequal", s, x.String())
		}
	})
}
