package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testRing(t testing.TB) *Keyring {
	t.Helper()
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	kr, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func TestRoundTrip(t *testing.T) {
	kr := testRing(t)
	v, err := kr.SealString("apps.secret", "app-1", "s3cret-value")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, Prefix+kr.PrimaryID()+":") || strings.Contains(v, "s3cret") {
		t.Fatalf("sealed value %q: want kw1:<kid>: and no plaintext", v)
	}
	got, err := kr.OpenString("apps.secret", "app-1", v)
	if err != nil || got != "s3cret-value" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	v2, _ := kr.SealString("apps.secret", "app-1", "s3cret-value")
	if v2 == v {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
	if e, err := kr.SealString("apps.secret", "app-1", ""); e != "" || err != nil {
		t.Errorf("Seal of empty = %q, %v; want empty", e, err)
	}
}

func TestWrongPlaceFails(t *testing.T) {
	kr := testRing(t)
	v, _ := kr.SealString("apps.secret", "app-1", "x")
	for _, c := range []struct{ purpose, id string }{{"apps.secret", "app-2"}, {"webhook.secret", "app-1"}, {"apps.secret", ""}} {
		if _, err := kr.Open(c.purpose, c.id, v); !errors.Is(err, ErrOpen) {
			t.Errorf("Open as %s/%s: %v, want ErrOpen", c.purpose, c.id, err)
		}
	}
}

func TestTamperingFails(t *testing.T) {
	kr := testRing(t)
	v, _ := kr.SealString("p", "1", "hello world")
	kid, blob, err := Parse(v)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blob {
		b := bytes.Clone(blob)
		b[i] ^= 1
		tv := Prefix + kid + ":" + base64.RawStdEncoding.EncodeToString(b)
		if _, err := kr.Open("p", "1", tv); !errors.Is(err, ErrOpen) {
			t.Fatalf("byte %d flipped: %v, want ErrOpen", i, err)
		}
	}
	if _, err := kr.Open("p", "1", v[:len(v)-4]); err == nil {
		t.Error("truncated value opened")
	}
}

func TestWrongKeyFails(t *testing.T) {
	a, b := testRing(t), testRing(t)
	v, _ := a.SealString("p", "1", "x")
	if _, err := b.Open("p", "1", v); !errors.Is(err, ErrNoKey) {
		t.Errorf("other key: %v, want ErrNoKey", err)
	}
	// Same key id, other key material: a forged id does not help.
	forged := Prefix + b.PrimaryID() + v[len(Prefix)+16:]
	if _, err := b.Open("p", "1", forged); !errors.Is(err, ErrOpen) {
		t.Errorf("forged key id: %v, want ErrOpen", err)
	}
	var none *Keyring
	if _, err := none.Open("p", "1", v); !errors.Is(err, ErrNoKey) {
		t.Errorf("nil keyring: %v, want ErrNoKey", err)
	}
	if _, err := none.SealString("p", "1", "x"); err == nil {
		t.Error("nil keyring sealed")
	}
}

func TestLegacyPlaintextPassesThrough(t *testing.T) {
	kr := testRing(t)
	for _, v := range []string{"JBSWY3DPEHPK3PXP", `{"success":true}`, "", "kw0:abc"} {
		got, err := kr.OpenString("p", "1", v)
		if err != nil || got != v {
			t.Errorf("Open(%q) = %q, %v; want it unchanged", v, got, err)
		}
	}
	var none *Keyring
	if got, err := none.OpenString("p", "1", "plain"); err != nil || got != "plain" {
		t.Errorf("nil keyring Open(plain) = %q, %v", got, err)
	}
	if _, err := kr.Open("p", "1", "kw1:nonsense"); !errors.Is(err, ErrMalformed) {
		t.Errorf("kw1: junk: %v, want ErrMalformed", err)
	}
}

// TestParseRefusesLineBreaks: a sealed value with a line break inside its
// base64 is not the text Seal wrote, though Go's base64 decoder (even
// strict) skips CR and LF and would decode it to the same blob.
func TestParseRefusesLineBreaks(t *testing.T) {
	kr := testRing(t)
	v, err := kr.SealString("p", "1", "secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Parse(v); err != nil {
		t.Fatalf("Parse(sealed) = %v", err)
	}
	cut := len(Prefix) + 16 + 1 + 8 // inside the base64
	for _, br := range []string{"\n", "\r", "\r\n"} {
		bent := v[:cut] + br + v[cut:]
		if _, _, err := Parse(bent); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse with %q inside the base64: %v, want ErrMalformed", br, err)
		}
		if _, err := kr.Open("p", "1", bent); !errors.Is(err, ErrMalformed) {
			t.Errorf("Open with %q inside the base64: %v, want ErrMalformed", br, err)
		}
	}
}

func TestRotationKeyring(t *testing.T) {
	old := testRing(t)
	v, _ := old.SealString("p", "1", "x")
	nk, _ := Generate()
	nkr, _ := New(nk)
	both, err := old.With(nkr)
	if err != nil {
		t.Fatal(err)
	}
	if both.PrimaryID() != KeyID(nk) || len(both.IDs()) != 2 {
		t.Fatalf("With: ids %v", both.IDs())
	}
	if got, err := both.OpenString("p", "1", v); err != nil || got != "x" {
		t.Fatalf("old value under the rotation keyring: %q, %v", got, err)
	}
	if only := both.Only(); only.PrimaryID() != KeyID(nk) || len(only.IDs()) != 1 {
		t.Errorf("Only: %v", only.IDs())
	}
	v2, _ := both.SealString("p", "1", "x")
	if !SealedWith(v2, KeyID(nk)) || SealedWith(v, KeyID(nk)) {
		t.Error("SealedWith does not tell the keys apart")
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	kr, created, err := LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("LoadOrCreate (new) = %v, %v", created, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v, %v; want 0600", st.Mode(), err)
	}
	again, created, err := LoadOrCreate(path)
	if err != nil || created || again.PrimaryID() != kr.PrimaryID() {
		t.Fatalf("LoadOrCreate (existing) = %v, %v, %v", again.IDs(), created, err)
	}
	nk, _ := Generate()
	nkr, _ := New(nk)
	both, _ := kr.With(nkr)
	if err := Write(path, both); err != nil {
		t.Fatal(err)
	}
	re, err := Load(path)
	if err != nil || strings.Join(re.IDs(), ",") != strings.Join(both.IDs(), ",") {
		t.Fatalf("Load after Write = %v, %v", re.IDs(), err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("rewritten key file mode %v", st.Mode())
	}
	for _, bad := range []string{"", "# only a comment\n", "not base64!\n", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := ParseFile([]byte(bad)); err == nil {
			t.Errorf("ParseFile(%q) accepted", bad)
		}
	}
}

func TestLoadOrCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kr, _, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = kr.PrimaryID()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing creators got different keys: %v", ids)
		}
	}
}

// FuzzParse: the parser of stored values never panics, accepts only the
// canonical form, and Open of anything never panics.
func FuzzParse(f *testing.F) {
	kr := testRing(f)
	v, _ := kr.SealString("p", "1", "seed")
	for _, s := range []string{v, "kw1:", "kw1:0123456789abcdef:", "kw1:0123456789ABCDEF:AAAA", "plain", "kw1:x:y:z", v + "="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kid, blob, err := Parse(s)
		if err == nil {
			if len(kid) != 16 || len(blob) < nonceSize+16 {
				t.Fatalf("Parse(%q) accepted kid %q, %d bytes", s, kid, len(blob))
			}
			if re := Prefix + kid + ":" + base64.RawStdEncoding.EncodeToString(blob); re != s {
				t.Fatalf("Parse(%q) accepted a non-canonical form", s)
			}
		}
		got, err := kr.Open("p", "1", s)
		if err == nil && IsSealed(s) && s != v {
			t.Fatalf("Open accepted a value it did not seal: %q → %q", s, got)
		}
	})
}

// BenchmarkOpenAppSecret is the cost an app-cache fill pays for the sealed
// app secret (a 64-character secret).
func BenchmarkOpenAppSecret(b *testing.B) {
	kr := testRing(b)
	v, _ := kr.SealString("apps.secret", "0b7c5f3e-4a1d-4c55-9a51-3f0c2b8d9e10", strings.Repeat("a1", 32))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Open("apps.secret", "0b7c5f3e-4a1d-4c55-9a51-3f0c2b8d9e10", v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealReply is the cost a login pays to store its reply sealed.
func BenchmarkSealReply(b *testing.B) {
	kr := testRing(b)
	reply := []byte(`{"success":true,"session_id":"` + strings.Repeat("f", 64) + `","expires_at":"2026-12-01T12:00:00Z","features":{"pro":true}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Seal("envelope_replays.reply", "app/0123456789abcdef", reply); err != nil {
			b.Fatal(err)
		}
	}
}
