package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/vector.*")

// vectorKey is the test vector's key: the Ed25519 seed 00 01 02 … 1f.
func vectorKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// vectorClaims are the test vector's claims (docs/offline.md).
func vectorClaims() Claims {
	exp := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	return Claims{AppID: "app_demo", KeyID: 42, KeyHint: KeyHint("KW-DEMO-1234-ABCD"), KeySHA256: KeySHA256("KW-DEMO-1234-ABCD"),
		HWID: "HWID-0001", KeyType: "days", Status: "active", Features: []byte(`{"pro": true, "seats": 5}`),
		IssuedAt: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), ExpiresAt: &exp,
		ValidUntil: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC), Kid: KidOf(vectorKey().Public().(ed25519.PublicKey)), FileID: "lf_0001"}
}

func signVector(t *testing.T) string {
	t.Helper()
	text, err := Sign(vectorClaims(), vectorKey())
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func vectorPubs() map[string]ed25519.PublicKey {
	pub := vectorKey().Public().(ed25519.PublicKey)
	return map[string]ed25519.PublicKey{KidOf(pub): pub}
}

var inWindow = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// TestVector: signing the fixed claims with the fixed seed gives exactly
// the committed file, which verifies with the committed public key (the
// vector docs/offline.md publishes and its verifiers run against).
func TestVector(t *testing.T) {
	text := signVector(t)
	pubPEM := PublicPEM(vectorKey().Public().(ed25519.PublicKey))
	if *update {
		os.WriteFile(filepath.Join("testdata", "vector.lic"), []byte(text), 0o644)
		os.WriteFile(filepath.Join("testdata", "vector.pub.pem"), pubPEM, 0o644)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "vector.lic"))
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Fatalf("signed vector differs from testdata/vector.lic:\n%s\nwant\n%s", text, want)
	}
	wantPub, _ := os.ReadFile(filepath.Join("testdata", "vector.pub.pem"))
	if !bytes.Equal(pubPEM, wantPub) {
		t.Fatalf("public key PEM differs from testdata/vector.pub.pem")
	}
	pubs, err := ParsePublicKeys(wantPub)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(string(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(pubs, Expect{Now: inWindow, AppID: "app_demo", HWID: "HWID-0001"}); err != nil {
		t.Fatalf("vector does not verify: %v", err)
	}
	if f.Claims.KeyID != 42 || string(f.Claims.Features) != `{"pro":true,"seats":5}` || f.Claims.KeyHint != "...ABCD" || f.Headers["Device"] != "HWID-0001" {
		t.Fatalf("claims read back wrong: %+v", f.Claims)
	}
	if !strings.Contains(string(want), "Valid-Until: 2026-12-04T10:00:00Z\n") {
		t.Fatalf("headers missing:\n%s", want)
	}
}

// TestVerifyReasons: each way a file can fail is told apart by its typed
// error, in the documented order.
func TestVerifyReasons(t *testing.T) {
	good := signVector(t)
	sign := func(edit func(*Claims)) string {
		c := vectorClaims()
		edit(&c)
		text, err := Sign(c, vectorKey())
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	otherPub := otherKey.Public().(ed25519.PublicKey)
	byOther, err := Sign(func() Claims { c := vectorClaims(); c.Kid = KidOf(otherPub); return c }(), otherKey)
	if err != nil {
		t.Fatal(err)
	}
	// A payload byte changed, the file re-armored with the old signature.
	f, _ := Parse(good)
	tampered := bytes.Replace(f.Payload, []byte(`"pro":true`), []byte(`"pro":null`), 1)
	tamperedText := armor(Label, nil, tampered, f.Signature)
	// The signature of another file spliced in.
	g, _ := Parse(sign(func(c *Claims) { c.HWID = "HWID-0002" }))
	spliced := armor(Label, nil, f.Payload, g.Signature)
	past := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		text string
		want Expect
		err  error
	}{
		{"genuine", good, Expect{Now: inWindow, AppID: "app_demo", HWID: "HWID-0001"}, nil},
		{"genuine, no device asked", good, Expect{Now: inWindow}, nil},
		{"tampered payload", tamperedText, Expect{Now: inWindow}, ErrBadSignature},
		{"another file's signature", spliced, Expect{Now: inWindow}, ErrBadSignature},
		{"unknown kid", byOther, Expect{Now: inWindow}, ErrUnknownKid},
		{"wrong app", good, Expect{Now: inWindow, AppID: "app_other"}, ErrWrongApp},
		{"wrong device", good, Expect{Now: inWindow, HWID: "HWID-0002"}, ErrWrongDevice},
		{"at valid_until", good, Expect{Now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}, ErrExpired},
		{"license expired before the file", sign(func(c *Claims) { c.ExpiresAt = &past }), Expect{Now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, ErrExpired},
		{"lifetime", sign(func(c *Claims) { c.ExpiresAt = nil; c.KeyType = "lifetime" }), Expect{Now: inWindow}, nil},
		{"banned", sign(func(c *Claims) { c.Status = "banned" }), Expect{Now: inWindow}, ErrInactive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			err = f.Check(vectorPubs(), tc.want)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			if tc.err != nil && Reason(err) == "error" {
				t.Fatalf("untyped reason for %v", err)
			}
		})
	}
	if err := mustParse(t, good).Verify(vectorPubs(), inWindow, "HWID-0002"); Reason(err) != "wrong_device" {
		t.Fatalf("Verify wrong device: %v", err)
	}
}

func mustParse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestParseTolerant: what mail, Windows editors and hand pasting do to the
// text does not stop a genuine file from verifying.
func TestParseTolerant(t *testing.T) {
	good := signVector(t)
	f := mustParse(t, good)
	oneLine := "-----BEGIN KEYWARD LICENSE FILE-----\n" + base64.StdEncoding.EncodeToString(f.Payload) + base64.StdEncoding.EncodeToString(f.Signature) + "\n-----END KEYWARD LICENSE FILE-----"
	var rewrapped strings.Builder
	body := base64.StdEncoding.EncodeToString(f.Payload) + base64.StdEncoding.EncodeToString(f.Signature)
	rewrapped.WriteString("-----BEGIN KEYWARD LICENSE FILE-----\r\nversion:1\r\nvalid-until:   2026-12-04T10:00:00Z\r\nComment: from the vendor\r\n")
	for len(body) > 50 {
		rewrapped.WriteString("\t" + body[:50] + "  \r\n")
		body = body[50:]
	}
	rewrapped.WriteString(body + "\r\n-----END KEYWARD LICENSE FILE-----\r\n")
	for name, text := range map[string]string{
		"CRLF":              strings.ReplaceAll(good, "\n", "\r\n"),
		"CR":                strings.ReplaceAll(good, "\n", "\r"),
		"indented in mail":  "Hello,\n\nhere is your license:\n\n    " + strings.ReplaceAll(good, "\n", "\n    ") + "\nRegards\n",
		"no blank lines":    strings.ReplaceAll(good, "\n\n", "\n"),
		"no headers":        oneLine,
		"rewrapped, CRLF":   rewrapped.String(),
		"extra blank lines": strings.ReplaceAll(good, "\n", "\n\n"),
	} {
		t.Run(name, func(t *testing.T) {
			g, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(vectorPubs(), inWindow, "HWID-0001"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestParseMalformed: bad forms are ErrMalformed, a header that disagrees
// with the signed payload included.
func TestParseMalformed(t *testing.T) {
	good := signVector(t)
	for name, text := range map[string]string{
		"empty":             "",
		"no end":            strings.Split(good, "-----END")[0],
		"header lies":       strings.Replace(good, "Device: HWID-0001", "Device: HWID-0002", 1),
		"valid-until lies":  strings.Replace(good, "Valid-Until: 2026-12-04", "Valid-Until: 2036-12-04", 1),
		"added floating":    strings.Replace(good, "Version: 1\n", "Version: 1\nFloating: yes\n", 1),
		"not base64":        strings.Replace(good, "\n\n", "\n\n!!!!\n", 1),
		"truncated":         good[:len(good)/2] + "\n-----END KEYWARD LICENSE FILE-----\n",
		"too big":           strings.Repeat(" ", MaxSize+1) + good,
		"version 2 payload": armor(Label, nil, []byte(`{"v":2,"app_id":"a","hwid":"h","kid":"k","valid_until":"2026-01-01T00:00:00Z"}`), make([]byte, 64)),
		"missing hwid":      armor(Label, nil, []byte(`{"v":1,"app_id":"a","kid":"k","valid_until":"2026-01-01T00:00:00Z"}`), make([]byte, 64)),
		"short signature":   armor(Label, nil, []byte(`{"v":1}`), make([]byte, 63)),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(text); !errors.Is(err, ErrMalformed) || Reason(err) != "malformed" {
				t.Fatalf("got %v, want malformed", err)
			}
		})
	}
}

// TestUnknownMembersIgnored: a payload with members this version does not
// know still verifies (room for later fields).
func TestUnknownMembersIgnored(t *testing.T) {
	c := vectorClaims()
	key := vectorKey()
	payload := []byte(`{"v":1,"app_id":"app_demo","hwid":"HWID-0001","status":"active","kid":"` + c.Kid + `","valid_until":"2026-12-04T10:00:00Z","future":{"x":1}}`)
	text := armor(Label, nil, payload, ed25519.Sign(key, append([]byte(SignedPrefix), payload...)))
	if err := mustParse(t, text).Verify(vectorPubs(), inWindow, "HWID-0001"); err != nil {
		t.Fatal(err)
	}
}

// TestSignRefuses: Sign refuses claims it could not sign honestly.
func TestSignRefuses(t *testing.T) {
	for name, edit := range map[string]func(*Claims){
		"no app":           func(c *Claims) { c.AppID = "" },
		"no hwid":          func(c *Claims) { c.HWID = "" },
		"kid of other key": func(c *Claims) { c.Kid = "0000000000000000" },
		"valid_until past": func(c *Claims) { c.ValidUntil = c.IssuedAt },
		"features array":   func(c *Claims) { c.Features = []byte(`[1]`) },
		"version 2":        func(c *Claims) { c.V = 2 },
	} {
		c := vectorClaims()
		edit(&c)
		if _, err := Sign(c, vectorKey()); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	// A device id that cannot be shown on a header line is left out of the
	// headers and still signed (and verified).
	c := vectorClaims()
	c.HWID = "line1\nDevice: forged"
	text, err := Sign(c, vectorKey())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "forged") {
		t.Fatalf("unsafe value reached the headers:\n%s", text)
	}
	if err := mustParse(t, text).Verify(vectorPubs(), inWindow, c.HWID); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: Parse never panics, and whatever it accepts verifies or fails
// with a typed reason.
func FuzzParse(f *testing.F) {
	good, _ := Sign(vectorClaims(), vectorKey())
	f.Add(good)
	f.Add(strings.ReplaceAll(good, "\n", "\r\n"))
	f.Add("-----BEGIN KEYWARD LICENSE FILE-----\nVersion: 1\n\n=\n-----END KEYWARD LICENSE FILE-----\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped parse error %v", err)
			}
			return
		}
		if err := file.Verify(vectorPubs(), inWindow, ""); err != nil && Reason(err) == "error" {
			t.Fatalf("untyped verify error %v", err)
		}
	})
}
