package update

import (
	"testing"

	"github.com/keyward/keyward/internal/apperr"
)

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

// FuzzParseRequest feeds arbitrary update-check fields to the request
// parser: no panic, refusals are MISSING_FIELDS, and what it accepts is
// canonical (a known channel, canonical os/arch, bounded ids).
func FuzzParseRequest(f *testing.F) {
	f.Add("1.0.0", "stable", "windows", "x64", "hw", "KEY")
	f.Add("v2.0.0-rc.1", "BETA", "darwin", "aarch64", "", "")
	f.Add("1.2", "nightly", "beos", "mips", "h", "k")
	f.Fuzz(func(t *testing.T, ver, ch, os, arch, hwid, key string) {
		req, err := ParseRequest(RawRequest{Version: ver, Channel: ch, OS: os, Arch: arch, HWID: hwid, LicenseKey: key})
		if err != nil {
			if apperr.CodeOf(err) != "MISSING_FIELDS" {
				t.Fatalf("refusal %v is not MISSING_FIELDS", err)
			}
			return
		}
		if _, ok := channelRank[req.Channel]; !ok {
			t.Fatalf("accepted channel %q", req.Channel)
		}
		if n, _ := NormalizeOS(req.OS); n != req.OS {
			t.Fatalf("os %q not canonical", req.OS)
		}
		if n, _ := NormalizeArch(req.Arch); n != req.Arch {
			t.Fatalf("arch %q not canonical", req.Arch)
		}
		if len(req.HWID) > 256 || len(req.LicenseKey) > 256 {
			t.Fatalf("oversized ids accepted")
		}
	})
}
