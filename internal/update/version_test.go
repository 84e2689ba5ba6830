package update

import "testing"

func TestParseVersion(t *testing.T) {
	for _, ok := range []string{"1.2.3", "v1.2.3", "0.0.0", "10.20.30", "1.2.3-beta.1", "1.2.3-0.a-b", "1.2.3+build.5", "1.2.3-rc.1+sha.abc"} {
		if _, err := ParseVersion(ok); err != nil {
			t.Errorf("ParseVersion(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "v", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.x", "1.2.3-", "1.2.3-beta..1", "1.2.3-01",
		"1.2.3+", "1.2.3-be ta", " 1.2.3", "1.2.3-beta_1", "-1.2.3"} {
		if v, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error (no guessing)", bad, v)
		}
	}
}

func TestVersionPrecedence(t *testing.T) {
	// Each version is lower than the next (the semver 2.0 example chain and more).
	chain := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.9.0", "1.10.0", "2.0.0"}
	vs := make([]Version, len(chain))
	for i, s := range chain {
		v, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	for i := range vs {
		for j := range vs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := vs[i].Compare(vs[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", chain[i], chain[j], got, want)
			}
		}
	}
	a, _ := ParseVersion("1.2.3+one")
	b, _ := ParseVersion("v1.2.3+two")
	if a.Compare(b) != 0 || a.String() != "1.2.3+one" {
		t.Errorf("build metadata must not order: %v vs %v", a, b)
	}
}
