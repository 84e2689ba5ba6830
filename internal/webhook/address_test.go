package webhook

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
)

// FuzzCheckAddress feeds arbitrary URLs to the registration check: it never
// panics; it refuses exactly the URLs whose host is an IP literal the guard
// refuses (here: every literal), with a bad-input error naming the flag;
// and host names always pass, to be checked when connecting.
func FuzzCheckAddress(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::127.0.0.1]:80/x", "http://[fec0::1]/", "http://[fe80::1%25eth0]/",
		"https://hooks.example.com/in", "http://[::1", "http://0x7f.1/", "http://2130706433/", "", "http://[::ffff:10.0.0.1]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var asked []netip.Addr
		s := &Service{allowed: func(ip netip.Addr) bool { asked = append(asked, ip); return false }}
		err := s.checkAddress(raw)
		u, perr := url.Parse(raw)
		var literal bool
		if perr == nil {
			_, aerr := netip.ParseAddr(u.Hostname())
			literal = aerr == nil
		}
		if literal != (err != nil) {
			t.Fatalf("checkAddress(%q) = %v; literal host: %v", raw, err, literal)
		}
		if err == nil {
			return
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != "MISSING_FIELDS" || !strings.Contains(ae.Error(), "--webhook-allow-networks") || len(asked) != 1 {
			t.Fatalf("checkAddress(%q) = %#v (asked %v), want one MISSING_FIELDS refusal naming --webhook-allow-networks", raw, err, asked)
		}
	})
}

// Without a guard (a Service built without GuardAddresses) nothing is
// refused at registration.
func TestCheckAddressWithoutGuard(t *testing.T) {
	if err := (&Service{}).checkAddress("http://127.0.0.1/"); err != nil {
		t.Errorf("no guard: %v", err)
	}
}
