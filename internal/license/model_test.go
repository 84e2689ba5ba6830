package license

import (
	"bytes"
	"crypto/rand"
	"regexp"
	"testing"
	"time"
)

func TestNewKeyStringFormat(t *testing.T) {
	re := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$`)
	seen := map[string]bool{}
	for range 2000 {
		k, err := NewKeyString(rand.Reader, "")
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(k) {
			t.Fatalf("NewKeyString() = %q, want XXXXX-XXXXX-XXXXX-XXXXX over Crockford base32", k)
		}
		if seen[k] {
			t.Fatalf("duplicate key %q in 2000 draws", k)
		}
		seen[k] = true
	}
	k, _ := NewKeyString(rand.Reader, "ACME")
	if !regexp.MustCompile(`^ACME-[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$`).MatchString(k) {
		t.Errorf("prefixed key = %q, want ACME-XXXXX-…", k)
	}
}

// Every byte value maps onto the alphabet without bias: 256 is 8 × 32.
func TestNewKeyStringUsesWholeAlphabet(t *testing.T) {
	all := make([]byte, 20)
	for i := range all {
		all[i] = byte(i)
	}
	k, _ := NewKeyString(bytes.NewReader(append(all, all...)), "")
	if got, want := k, "01234-56789-ABCDE-FGHJK"; got != want {
		t.Errorf("NewKeyString(0..19) = %q, want %q", got, want)
	}
}

func TestStatusAtAndDaysRemaining(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exp := now.Add(36 * time.Hour)
	past := now.Add(-time.Second)
	tests := []struct {
		name     string
		key      Key
		status   Status
		daysLeft *int
	}{
		{"unused", Key{Status: StatusUnused}, StatusUnused, nil},
		{"lifetime active", Key{Status: StatusActive}, StatusActive, nil},
		{"active, 1.5 days left rounds up", Key{Status: StatusActive, ExpiresAt: &exp}, StatusActive, ptr(2)},
		{"active past expiry is expired", Key{Status: StatusActive, ExpiresAt: &past}, StatusExpired, ptr(0)},
		{"at the exact expiry instant", Key{Status: StatusActive, ExpiresAt: &now}, StatusExpired, ptr(0)},
		{"banned stays banned past expiry", Key{Status: StatusBanned, ExpiresAt: &past}, StatusBanned, ptr(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.StatusAt(now); got != tt.status {
				t.Errorf("StatusAt = %s, want %s", got, tt.status)
			}
			got := tt.key.DaysRemaining(now)
			if (got == nil) != (tt.daysLeft == nil) || (got != nil && *got != *tt.daysLeft) {
				t.Errorf("DaysRemaining = %v, want %v", deref(got), deref(tt.daysLeft))
			}
		})
	}
}

func TestTruncateKeepsUTF8Whole(t *testing.T) {
	s := "ab€" // € is 3 bytes
	if got := truncate(s, 4); got != "ab" {
		t.Errorf("truncate(%q, 4) = %q, want %q", s, got, "ab")
	}
	if got := truncate(s, 5); got != s {
		t.Errorf("truncate(%q, 5) = %q", s, got)
	}
}

func TestCheckFeatures(t *testing.T) {
	for _, ok := range []string{``, `null`, `{}`, `{"pro":true,"seats":3,"tier":"gold"}`} {
		if _, err := CheckFeatures([]byte(ok)); err != nil {
			t.Errorf("CheckFeatures(%s) = %v, want ok", ok, err)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":{"b":1}}`, `{"a":[1]}`, `{"a":null}`, `{"":1}`} {
		if _, err := CheckFeatures([]byte(bad)); err == nil {
			t.Errorf("CheckFeatures(%s) = nil, want an error", bad)
		}
	}
}

func ptr(n int) *int { return &n }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
