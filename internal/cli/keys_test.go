package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/signing"
)

// keys signing: init makes the first key active and prints its public key
// and SPKI hash; a second is announced until activated; public, list,
// activate and retire do what they say, over the --data directory.
func TestKeysSigning(t *testing.T) {
	data := t.TempDir()
	out := mustRun(t, "keys", "signing", "init", "--data", data)
	set, err := signing.Load(filepath.Join(data, "signing"))
	if err != nil || set == nil {
		t.Fatalf("after init: %v %v", set, err)
	}
	first := set.Active
	if !strings.Contains(out, first.SPKISHA256) || !strings.Contains(out, "BEGIN PUBLIC KEY") || !strings.Contains(out, "active") {
		t.Fatalf("init output:\n%s", out)
	}
	pub := mustRun(t, "keys", "signing", "public", "--data", data)
	if !strings.HasPrefix(pub, string(first.PublicPEM)) || !strings.Contains(pub, "SPKI SHA-256: "+first.SPKISHA256) {
		t.Fatalf("public output:\n%s", pub)
	}
	out = mustRun(t, "keys", "signing", "init", "--data", data)
	if !strings.Contains(out, "announced") {
		t.Fatalf("second init:\n%s", out)
	}
	set, _ = signing.Load(filepath.Join(data, "signing"))
	var next *signing.Key
	for _, k := range set.Keys {
		if k.ID != first.ID {
			next = k
		}
	}
	list := mustRun(t, "keys", "signing", "list", "--data", data)
	if !strings.Contains(list, first.ID+"  active") || !strings.Contains(list, next.ID+"  announced") {
		t.Fatalf("list:\n%s", list)
	}
	if code, _, _ := run(t, "keys", "signing", "retire", "--data", data, first.ID); code == 0 {
		t.Fatal("retired the active key")
	}
	mustRun(t, "keys", "signing", "activate", "--data", data, next.ID)
	mustRun(t, "keys", "signing", "retire", "--data", data, first.ID)
	if pub := mustRun(t, "keys", "signing", "public", "--data", data); !strings.Contains(pub, next.SPKISHA256) {
		t.Fatalf("public after rotation:\n%s", pub)
	}
	// --signing-dir overrides the place; an empty one says signing is off.
	other := filepath.Join(t.TempDir(), "keys")
	if out := mustRun(t, "keys", "signing", "list", "--signing-dir", other); !strings.Contains(out, "not signed") {
		t.Fatalf("empty list:\n%s", out)
	}
}
