package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// open runs the reference path: Parse, then Keys.Verify.
func open(k Keys, body []byte, now time.Time) ([]byte, error) {
	env, err := Parse(body)
	if err != nil {
		return nil, err
	}
	plain, _, err := k.Verify(env, now)
	return plain, err
}

// agree fails unless Box.Open and Parse+Verify give the same answer for body.
func agree(t *testing.T, b *Box, body []byte, now time.Time) {
	t.Helper()
	want, wantErr := open(b.Keys(), body, now)
	got, _, _, gotErr := b.Open(body, now)
	if !errors.Is(gotErr, wantErr) && gotErr != wantErr {
		t.Fatalf("Open(%q) error = %v, Parse+Verify %v", body, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Open(%q) = %q, Parse+Verify %q", body, got, want)
	}
}

func TestBoxKnownVector(t *testing.T) {
	b := NewBox(Derive(secret))
	out, err := b.SealWith(bytes.NewReader(make([]byte, 16)), []byte(`{"a":1}`), time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	env, err := Derive(secret).SealWith(bytes.NewReader(make([]byte, 16)), []byte(`{"a":1}`), time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), string(env.Marshal()); got != want {
		t.Fatalf("Box.SealWith = %s, want %s", got, want)
	}
	plain, mac, ts, err := b.Open(out, time.Unix(1700000100, 0))
	if err != nil || string(plain) != `{"a":1}` || ts != 1700000000 || fmt.Sprintf("%x", mac) != env.S {
		t.Fatalf("Open(vector) = %q %x %d %v", plain, mac, ts, err)
	}
}

func TestBoxAgreesWithParseVerify(t *testing.T) {
	k := Derive(secret)
	b := NewBox(k)
	now := time.Unix(1_790_000_000, 0)
	env, err := k.Seal([]byte(`{"session_id":"x"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	p, s, ts := env.P, env.S, fmt.Sprint(env.T)
	bodies := []string{
		string(env.Marshal()),
		`{"p": "` + p + `", "t": ` + ts + `, "s": "` + s + `"}`,                // Python's json.dumps
		"\n{ \"s\":\"" + s + "\",\t\"t\":" + ts + ",\"p\":\"" + p + "\" }\r\n", // any order, white space
		`{"p":"` + p + `","t":` + ts + `,"s":"` + s + `","x":1}`,               // extra member
		`{"p":"` + p + `","t":` + ts + `,"s":"` + s + `","p":"AAAA"}`,          // duplicate: last wins in Parse
		`{"p":"` + p[:4] + `\u002B` + p[5:] + `","t":` + ts + `,"s":"` + s + `"}`,
		`{"P":"` + p + `","T":` + ts + `,"S":"` + s + `"}`, // encoding/json matches names without case
		`{"p":"` + p + `","t":"` + ts + `","s":"` + s + `"}`,
		`{"p":"` + p + `","t":` + ts + `.0,"s":"` + s + `"}`,
		`{"p":"` + p + `","t":0` + ts + `,"s":"` + s + `"}`,
		`{"p":"` + p + `","t":-0,"s":"` + s + `"}`,
		`{"p":"` + p + `","t":` + ts + `,"s":"` + s[:62] + `"}`,
		`{"p":"` + p + `","t":` + ts + `,"s":"` + s + `"} x`,
		`{"p":"` + p + `","t":` + ts + `,"s":"` + s + `"`,
		`{"p":"` + p + `","t":` + ts + `}`,
		`{"p":"` + p + `","t":` + fmt.Sprint(env.T+301) + `,"s":"` + s + `"}`,
		`{"p":"` + p + `","t":99999999999999999999,"s":"` + s + `"}`,
		`{"p":"` + p + "\u00e9" + `","t":` + ts + `,"s":"` + s + `"}`,
		`[]`, ``, `{}`, `{"p":1,"t":1,"s":1}`,
	}
	for _, body := range bodies {
		agree(t, b, []byte(body), now)
	}
	// A valid MAC over a bad ciphertext and a stale timestamp.
	for _, body := range [][]byte{
		[]byte(`{"p":"AAAA","t":` + ts + `,"s":"` + k.Sign("AAAA", env.T) + `"}`),
		[]byte(`{"p":"` + p + `","t":` + fmt.Sprint(env.T-1000) + `,"s":"` + k.Sign(p, env.T-1000) + `"}`),
	} {
		agree(t, b, body, now)
	}
}

func TestBoxSealOpensWithVerify(t *testing.T) {
	b := NewBox(Derive(secret))
	now := time.Unix(1_790_000_000, 0)
	for _, plain := range []string{"", "x", "0123456789abcdef", `{"success":true,"message":"Heartbeat OK"}`} {
		out, err := b.Seal([]byte(plain), now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := open(b.Keys(), out, now)
		if err != nil || string(got) != plain {
			t.Fatalf("Verify(Box.Seal(%q)) = %q, %v", plain, got, err)
		}
	}
}

func FuzzBoxOpen(f *testing.F) {
	k := Derive(secret)
	now := time.Unix(1_790_000_000, 0)
	env, _ := k.Seal([]byte(`{"a":1}`), now)
	f.Add(env.Marshal())
	f.Add([]byte(`{"p": "AAAA", "t": 1, "s": "00"}`))
	b := NewBox(k)
	f.Fuzz(func(t *testing.T, body []byte) { agree(t, b, body, now) })
}

func BenchmarkBoxOpenSeal(b *testing.B) {
	box := NewBox(Derive(secret))
	now := time.Unix(1_790_000_000, 0)
	body, _ := box.Seal([]byte(`{"session_id":"0123456789abcdef0123456789abcdef","license_key":"KW-ABCD-EFGH"}`), now)
	b.ReportAllocs()
	for b.Loop() {
		plain, _, _, err := box.Open(body, now)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := box.Seal(plain, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveOpenSeal is the same work the way the echo baseline does it:
// derive the keys, Parse, Verify, Seal, Marshal.
func BenchmarkDeriveOpenSeal(b *testing.B) {
	now := time.Unix(1_790_000_000, 0)
	body, _ := NewBox(Derive(secret)).Seal([]byte(`{"session_id":"0123456789abcdef0123456789abcdef","license_key":"KW-ABCD-EFGH"}`), now)
	b.ReportAllocs()
	for b.Loop() {
		k := Derive(secret)
		env, err := Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		plain, _, err := k.Verify(env, now)
		if err != nil {
			b.Fatal(err)
		}
		out, err := k.Seal(plain, now)
		if err != nil {
			b.Fatal(err)
		}
		_ = out.Marshal()
	}
}
