package signing

import (
	"os"
	"path/filepath"
	"testing"
)

// A rotation: the first key signs; a second is announced (listed, not
// signing) until activated; the old one can then retire, the active one
// cannot. Keys are written readable by their owner only.
func TestKeyDirRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "signing")
	if set, err := Load(dir); set != nil || err != nil {
		t.Fatalf("missing directory: %v %v, want signing off", set, err)
	}
	first, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, first.ID+".pem"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, st.Mode().Perm())
	}
	if d, _ := os.Stat(dir); d.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", d.Mode().Perm())
	}
	set, err := Load(dir)
	if err != nil || set.Active == nil || set.Active.ID != first.ID {
		t.Fatalf("after init: %v, active %v", err, set)
	}
	next, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err = Load(dir)
	if err != nil || len(set.Keys) != 2 || set.Active.ID != first.ID {
		t.Fatalf("announced key took over: %v %+v", err, set)
	}
	if err := Retire(dir, first.ID); err == nil {
		t.Fatal("the active key retired")
	}
	if err := Activate(dir, next.ID[:8]); err != nil {
		t.Fatal(err)
	}
	if set, _ = Load(dir); set.Active.ID != next.ID {
		t.Fatalf("active %s, want %s", set.Active.ID, next.ID)
	}
	if err := Retire(dir, first.ID); err != nil {
		t.Fatal(err)
	}
	if set, _ = Load(dir); len(set.Keys) != 1 || set.Active.ID != next.ID {
		t.Fatalf("after retiring: %+v", set)
	}
	if err := Activate(dir, "deadbeefdeadbeef"); err == nil {
		t.Fatal("activated an unknown key")
	}
	// A directory with a key that is not one is an error, not signing off.
	os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("not a key"), 0o600)
	if _, err := Load(dir); err == nil {
		t.Fatal("a broken key file loaded")
	}
}
