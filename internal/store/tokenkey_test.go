package store

import (
	"encoding/hex"
	"strings"
	"testing"
)

// A 64-character lowercase hex token hash is kept as the 32 bytes it
// stands for; any other string of at most 32 bytes as itself; anything
// else (uppercase hex, other 64-character strings, longer strings) is not
// cached. No two strings share a key.
func TestTokenKey(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("0123456789abcdef", 4)
	k, ok := tokenKeyOf(hash)
	want, _ := hex.DecodeString(hash)
	if !ok || k.n != 64 || string(k.b[:]) != string(want) {
		t.Fatalf("tokenKeyOf(hash) = %v, %v; want the decoded bytes", k, ok)
	}
	short, ok := tokenKeyOf("tok-1")
	if !ok || short.n != 5 || string(short.b[:5]) != "tok-1" {
		t.Fatalf("tokenKeyOf(tok-1) = %v, %v", short, ok)
	}
	raw32, ok := tokenKeyOf(string(want))
	if !ok || raw32 == k {
		t.Fatalf("the 32 raw bytes a hash stands for share its key (%v)", ok)
	}
	for _, bad := range []string{strings.ToUpper(hash), hash[:63] + "g", hash[:63] + "\xff", hash + "0", strings.Repeat("x", 33)} {
		if _, ok := tokenKeyOf(bad); ok {
			t.Errorf("tokenKeyOf(%q) cached", bad)
		}
	}
}

// FuzzTokenKey: two different strings never get the same key, and a key
// is given only to a string of at most 32 bytes or a lowercase hex hash.
func FuzzTokenKey(f *testing.F) {
	f.Add(strings.Repeat("ab", 32), "tok-1")
	f.Add(strings.Repeat("ab", 32), strings.Repeat("AB", 32))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, oka := tokenKeyOf(a)
		kb, okb := tokenKeyOf(b)
		if oka && okb && a != b && ka == kb {
			t.Fatalf("%q and %q share a key", a, b)
		}
		if oka && len(a) > 32 && (len(a) != 64 || strings.ToLower(a) != a) {
			t.Fatalf("%q got a key", a)
		}
	})
}
