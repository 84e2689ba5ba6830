package licensefile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

const testSecret = "app-secret-0123456789"

func makeRequest(t *testing.T) (*Request, string) {
	t.Helper()
	r, err := NewRequest("app_demo", "KW-DEMO-1234-ABCD", "HWID-0001", time.Date(2026, 11, 27, 10, 0, 0, 5, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	text, err := MakeRequest(r, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return r, text
}

// TestRequestRoundTrip: a request made with the app secret parses back to
// the same fields and verifies with that secret only; the nonce is 128
// fresh random bits.
func TestRequestRoundTrip(t *testing.T) {
	r, text := makeRequest(t)
	if !strings.HasPrefix(text, "-----BEGIN KEYWARD ACTIVATION REQUEST-----\nVersion: 1\nApp: app_demo\nDevice: HWID-0001\nCreated: 2026-11-27T10:00:00Z\n\n") {
		t.Fatalf("request text:\n%s", text)
	}
	if strings.Contains(text, "KW-DEMO") {
		t.Fatalf("license key shown in the headers:\n%s", text)
	}
	for _, in := range []string{text, strings.ReplaceAll(text, "\n", "\r\n"), "pasted:\n  " + strings.ReplaceAll(text, "\n", "\n  ")} {
		d, err := ParseRequest(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.AppID != "app_demo" || d.LicenseKey != "KW-DEMO-1234-ABCD" || d.HWID != "HWID-0001" || d.Nonce != r.Nonce || !d.CreatedAt.Equal(r.CreatedAt) {
			t.Fatalf("read back %+v, made %+v", d.Request, r)
		}
		if err := d.Verify(testSecret); err != nil {
			t.Fatal(err)
		}
		if err := d.Verify("another-secret"); !errors.Is(err, ErrBadMAC) {
			t.Fatalf("other secret: %v", err)
		}
	}
	if len(r.Nonce) != 32 {
		t.Fatalf("nonce %q", r.Nonce)
	}
	r2, _ := NewRequest("app_demo", "KW-DEMO-1234-ABCD", "HWID-0001", time.Now())
	if r2.Nonce == r.Nonce {
		t.Fatal("two requests share a nonce")
	}
}

// TestRequestTamper: changing the device (or anything else) in the payload
// breaks the MAC, so a request cannot be turned into one for another
// device.
func TestRequestTamper(t *testing.T) {
	_, text := makeRequest(t)
	d, _ := ParseRequest(text)
	edited := bytes.Replace(d.Payload, []byte(`"HWID-0001"`), []byte(`"HWID-0002"`), 1)
	forged := armor(RequestLabel, nil, edited, d.MAC)
	f, err := ParseRequest(forged)
	if err != nil {
		t.Fatal(err)
	}
	if f.HWID != "HWID-0002" {
		t.Fatal("edit not applied")
	}
	if err := f.Verify(testSecret); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("edited request verified: %v", err)
	}
}

// TestRequestMalformed: missing fields, a bad nonce, a short MAC and a
// license file in place of a request are ErrMalformed.
func TestRequestMalformed(t *testing.T) {
	mac := make([]byte, 32)
	for name, text := range map[string]string{
		"empty":        "",
		"license file": signVector(t),
		"no key":       armor(RequestLabel, nil, []byte(`{"v":1,"app_id":"a","hwid":"h","nonce":"00112233445566778899aabbccddeeff","created_at":"2026-01-01T00:00:00Z"}`), mac),
		"short nonce":  armor(RequestLabel, nil, []byte(`{"v":1,"app_id":"a","license_key":"k","hwid":"h","nonce":"0011","created_at":"2026-01-01T00:00:00Z"}`), mac),
		"upper nonce":  armor(RequestLabel, nil, []byte(`{"v":1,"app_id":"a","license_key":"k","hwid":"h","nonce":"00112233445566778899AABBCCDDEEFF","created_at":"2026-01-01T00:00:00Z"}`), mac),
		"short mac":    armor(RequestLabel, nil, []byte(`{"v":1}`), mac[:31]),
	} {
		if _, err := ParseRequest(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := MakeRequest(&Request{AppID: "a", LicenseKey: "k", HWID: "h", Nonce: "x", CreatedAt: time.Now()}, testSecret); err == nil {
		t.Error("made a request with a bad nonce")
	}
	r, _ := NewRequest("a", "k", "h", time.Now())
	if _, err := MakeRequest(r, ""); err == nil {
		t.Error("made a request without a secret")
	}
}

// FuzzParseRequest: ParseRequest never panics and fails only with
// ErrMalformed; what it accepts has a well-formed nonce.
func FuzzParseRequest(f *testing.F) {
	r, _ := NewRequest("app_demo", "KW-DEMO-1234-ABCD", "HWID-0001", time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	text, _ := MakeRequest(r, testSecret)
	f.Add(text)
	f.Add(strings.ReplaceAll(text, "\n", "\r\n"))
	f.Add("-----BEGIN KEYWARD ACTIVATION REQUEST-----\n\n-----END KEYWARD ACTIVATION REQUEST-----")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseRequest(text)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(d.Nonce) != 32 || d.HWID == "" {
			t.Fatalf("accepted %+v", d.Request)
		}
		d.Verify(testSecret)
	})
}
