package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

func TestRoleAllows(t *testing.T) {
	perms := []Perm{PermRead, PermSupport, PermManage, PermOwner}
	for i, role := range []Role{RoleViewer, RoleSupport, RoleAdmin, RoleOwner} {
		for j, p := range perms {
			if got, want := role.Allows(p), j <= i; got != want {
				t.Errorf("%s allows perm %d: %v, want %v", role, p, got, want)
			}
		}
	}
	for _, r := range []Role{"", "root", "Owner"} {
		if r.Allows(PermRead) {
			t.Errorf("role %q allows reading", r)
		}
		if _, err := ParseRole(string(r)); err == nil {
			t.Errorf("ParseRole(%q) accepted", r)
		}
	}
}

func TestMatchTOTP(t *testing.T) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "keyward", AccountName: "a", Period: totpPeriod})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 10, 0, time.UTC)
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	code := func(at time.Time) string {
		c, err := totp.GenerateCodeCustom(key.Secret(), at, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cur := now.Unix() / totpPeriod
	for drift, want := range map[time.Duration]bool{0: true, -30 * time.Second: true, 30 * time.Second: true,
		-90 * time.Second: false, 90 * time.Second: false} {
		step, ok := matchTOTP(key.Secret(), code(now.Add(drift)), now)
		if ok != want {
			t.Errorf("drift %v: matched %v, want %v", drift, ok, want)
		}
		if ok && step != cur+int64(drift/time.Second)/totpPeriod {
			t.Errorf("drift %v: step %d, want %d", drift, step, cur+int64(drift/time.Second)/totpPeriod)
		}
	}
	for _, bad := range []string{"", "12345", "1234567", "abcdef"} {
		if _, ok := matchTOTP(key.Secret(), bad, now); ok {
			t.Errorf("code %q matched", bad)
		}
	}
}

func TestRecoveryCodes(t *testing.T) {
	codes, hashes, err := newRecoveryCodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != recoveryCodes || len(hashes) != recoveryCodes {
		t.Fatalf("%d codes, %d hashes", len(codes), len(hashes))
	}
	seen := map[string]bool{}
	for i, c := range codes {
		if len(c) != recoveryLength+1 || c[5] != '-' {
			t.Errorf("code %q is not xxxxx-xxxxx", c)
		}
		if seen[c] {
			t.Errorf("code %q twice", c)
		}
		seen[c] = true
		// Typed with capitals, spaces or without the dash, it is the same code.
		for _, typed := range []string{c, c[:5] + c[6:], " " + c[:5] + " " + c[6:] + " ", strings.ToUpper(c)} {
			if hashToken(normaliseRecovery(typed)) != hashes[i] {
				t.Errorf("typed %q does not match code %q", typed, c)
			}
		}
	}
}
