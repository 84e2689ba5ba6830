package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestSealVerifyRoundTrip(t *testing.T) {
	k := Derive(secret)
	now := time.Unix(1_790_000_000, 0)
	env, err := k.Seal([]byte(`{"license_key":"K","hwid":"H"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(env.Marshal())
	if err != nil {
		t.Fatalf("Parse(Marshal()) = %v", err)
	}
	plain, mac, err := k.Verify(parsed, now.Add(299*time.Second))
	if err != nil {
		t.Fatalf("Verify = %v", err)
	}
	if got, want := string(plain), `{"license_key":"K","hwid":"H"}`; got != want {
		t.Errorf("plain = %q, want %q", got, want)
	}
	if len(mac) != 32 {
		t.Errorf("mac length = %d, want 32", len(mac))
	}
}

// TestKnownVector pins derivation, padding, layout and MAC against an envelope
// computed independently with openssl (AES-256-CBC, zero IV) and sha256sum.
func TestKnownVector(t *testing.T) {
	const (
		wantP = "AAAAAAAAAAAAAAAAAAAAABLUKIP5u2SEjcN0d2Z3oEg="
		wantS = "9cf47a504cce378ac22c32aac13068766e6ff80d00cb2e9f80ecc29322160664"
	)
	k := Derive(secret)
	env, err := k.SealWith(bytes.NewReader(make([]byte, 16)), []byte(`{"a":1}`), time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if env.P != wantP || env.S != wantS || env.T != 1700000000 {
		t.Fatalf("SealWith = %+v, want p=%s s=%s", env, wantP, wantS)
	}
	plain, _, err := k.Verify(Envelope{P: wantP, T: 1700000000, S: wantS}, time.Unix(1700000100, 0))
	if err != nil || string(plain) != `{"a":1}` {
		t.Fatalf("Verify(vector) = %q, %v", plain, err)
	}
}

func TestVerifyRejects(t *testing.T) {
	k := Derive(secret)
	now := time.Unix(1_790_000_000, 0)
	good, _ := k.Seal([]byte(`{}`), now)

	tamperedP := good
	tamperedP.P = flipBase64(good.P)

	wrongKey, _ := Derive(strings.Repeat("f", 64)).Seal([]byte(`{}`), now)

	// A correctly signed envelope whose ciphertext has bad padding.
	badPad := Envelope{P: base64.StdEncoding.EncodeToString(make([]byte, 32)), T: now.Unix()}
	badPad.S = k.Sign(badPad.P, badPad.T)

	shortP := Envelope{P: base64.StdEncoding.EncodeToString(make([]byte, 16)), T: now.Unix()}
	shortP.S = k.Sign(shortP.P, shortP.T)

	notBase64 := Envelope{P: "!!!", T: now.Unix()}
	notBase64.S = k.Sign(notBase64.P, notBase64.T)

	upperHex := good
	upperHex.S = strings.ToUpper(good.S)

	tests := []struct {
		name string
		env  Envelope
		now  time.Time
		want error
	}{
		{"tampered p", tamperedP, now, ErrBadMAC},
		{"other app's key", wrongKey, now, ErrBadMAC},
		{"empty s", Envelope{P: good.P, T: good.T}, now, ErrBadMAC},
		{"t changed", Envelope{P: good.P, T: good.T + 1, S: good.S}, now, ErrBadMAC},
		{"too old", good, now.Add(301 * time.Second), ErrClockSkew},
		{"too new", good, now.Add(-301 * time.Second), ErrClockSkew},
		{"bad padding", badPad, now, ErrDecrypt},
		{"iv only", shortP, now, ErrDecrypt},
		{"not base64", notBase64, now, ErrDecrypt},
		// Upper-case hex still decodes to the same MAC bytes; we accept it.
		{"upper-case hex", upperHex, now, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := k.Verify(tt.env, tt.now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseToleratesClientEncodings(t *testing.T) {
	k := Derive(secret)
	now := time.Unix(1_790_000_000, 0)
	env, _ := k.Seal([]byte(`{"x":"y"}`), now)
	// .NET escapes '+' as \u002B; Python's generated SDK uses ", " separators.
	escaped := strings.ReplaceAll(env.P, "+", `\u002B`)
	bodies := []string{
		`{"p":"` + escaped + `","t":` + itoa(env.T) + `,"s":"` + env.S + `"}`,
		`{"p": "` + env.P + `", "t": ` + itoa(env.T) + `, "s": "` + env.S + `"}`,
		"\n {\"s\":\"" + env.S + "\",\n\"t\":" + itoa(env.T) + ",\"p\":\"" + env.P + "\"}\n",
	}
	for _, b := range bodies {
		got, err := Parse([]byte(b))
		if err != nil {
			t.Fatalf("Parse(%q) = %v", b, err)
		}
		if _, _, err := k.Verify(got, now); err != nil {
			t.Errorf("Verify after Parse(%q) = %v", b, err)
		}
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	for _, b := range []string{
		``, `null`, `[]`, `{}`, `{"p":"a","t":1}`, `{"p":1,"t":1,"s":"x"}`,
		`{"p":"a","t":"1","s":"x"}`, `{"p":"a","t":1.5,"s":"x"}`, `{"p":"a","t":1,"s":"x"} {}`,
		`{"p":"a","t":1e3,"s":"x"}`,
	} {
		if _, err := Parse([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", b, err)
		}
	}
}

func TestIsEnvelope(t *testing.T) {
	if !IsEnvelope([]byte(`{"p":"x","t":1,"s":"y"}`)) {
		t.Error("envelope not recognised")
	}
	for _, b := range []string{`{"license_key":"K"}`, `{"p":"x"}`, `nope`} {
		if IsEnvelope([]byte(b)) {
			t.Errorf("IsEnvelope(%q) = true", b)
		}
	}
}

func TestMarshalIsValidJSON(t *testing.T) {
	env, _ := Derive(secret).Seal(bytes.Repeat([]byte("x"), 1000), time.Unix(5, 0))
	var back Envelope
	if err := json.Unmarshal(env.Marshal(), &back); err != nil || back != env {
		t.Fatalf("round trip through encoding/json: %v, %+v", err, back)
	}
}

func FuzzParseVerify(f *testing.F) {
	k := Derive(secret)
	now := time.Unix(1_790_000_000, 0)
	good, _ := k.Seal([]byte(`{"session_id":"s"}`), now)
	f.Add(good.Marshal())
	f.Add([]byte(`{"p":"","t":0,"s":""}`))
	f.Add([]byte(`{"p":"AAAA","t":1790000000,"s":"00"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := Parse(body)
		if err != nil {
			return
		}
		plain, _, err := k.Verify(env, now)
		if err == nil {
			// Anything that verifies must round-trip through Seal.
			again, err := k.Seal(plain, now)
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := k.Verify(again, now)
			if err != nil || !bytes.Equal(back, plain) {
				t.Fatalf("re-seal round trip failed: %v", err)
			}
		}
	})
}

func flipBase64(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
