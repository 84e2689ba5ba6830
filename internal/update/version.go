package update

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a semantic version (semver 2.0): MAJOR.MINOR.PATCH with an
// optional pre-release and build metadata. A leading "v" is accepted.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // pre-release identifiers; empty for a release
	Build               string
}

// ParseVersion reads a strict semantic version; it never guesses (1.2 and
// 01.2.3 are errors).
func ParseVersion(s string) (Version, error) {
	var v Version
	in := strings.TrimPrefix(s, "v")
	if in == "" || len(in) > 128 {
		return v, fmt.Errorf("%q is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.4.2)", s)
	}
	core, build, hasBuild := strings.Cut(in, "+")
	if hasBuild {
		if !identifiers(build, false) {
			return v, fmt.Errorf("%q has invalid build metadata", s)
		}
		v.Build = build
	}
	core, pre, hasPre := strings.Cut(core, "-")
	if hasPre {
		if !identifiers(pre, true) {
			return v, fmt.Errorf("%q has an invalid pre-release tag", s)
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("%q is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.4.2)", s)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, ok := number(p)
		if !ok {
			return Version{}, fmt.Errorf("%q is not a semantic version: %q is not a number without leading zeros", s, p)
		}
		*nums[i] = n
	}
	return v, nil
}

// number reads a numeric identifier without leading zeros.
func number(p string) (uint64, bool) {
	if p == "" || (len(p) > 1 && p[0] == '0') {
		return 0, false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(p, 10, 64)
	return n, err == nil
}

// identifiers checks dot-separated [0-9A-Za-z-] identifiers; numeric ones
// in a pre-release may not have leading zeros.
func identifiers(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		digits := true
		for _, r := range id {
			switch {
			case r >= '0' && r <= '9':
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
				digits = false
			default:
				return false
			}
		}
		if pre && digits && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// IsPre reports whether v is a pre-release.
func (v Version) IsPre() bool { return len(v.Pre) > 0 }

// Compare orders by semver precedence (build metadata ignored): -1, 0, 1.
func (v Version) Compare(w Version) int {
	for _, d := range [][2]uint64{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := 0; i < min(len(v.Pre), len(w.Pre)); i++ {
		a, b := v.Pre[i], w.Pre[i]
		an, aNum := number(a)
		bn, bNum := number(b)
		switch {
		case aNum && bNum && an != bn:
			if an < bn {
				return -1
			}
			return 1
		case aNum != bNum:
			if aNum {
				return -1
			}
			return 1
		case !aNum && a != b:
			if a < b {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(v.Pre) < len(w.Pre):
		return -1
	case len(v.Pre) > len(w.Pre):
		return 1
	}
	return 0
}

// String formats v without a leading v.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}
