package signing

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/licensefile"
)

// TestLicenseKeyRotation: the first license-file key is active, a second
// is announced until activated, the active one cannot retire, files are
// 0600 in a 0700 directory, and ids are licensefile's kids.
func TestLicenseKeyRotation(t *testing.T) {
	signingDir := filepath.Join(t.TempDir(), "signing")
	dir := LicenseKeyDir(signingDir)
	if set, err := LoadLicenseKeys(dir); set != nil || err != nil {
		t.Fatalf("missing directory: %v %v", set, err)
	}
	first, err := CreateLicenseKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != licensefile.KidOf(first.Public) || string(first.PublicPEM) != string(licensefile.PublicPEM(first.Public)) {
		t.Fatalf("id %s is not the kid %s", first.ID, licensefile.KidOf(first.Public))
	}
	if st, err := os.Stat(filepath.Join(dir, first.ID+".pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, st)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", st.Mode().Perm())
	}
	second, err := CreateLicenseKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadLicenseKeys(dir)
	if err != nil || set.Active.ID != first.ID || len(set.Keys) != 2 || len(set.Publics()) != 2 {
		t.Fatalf("after second: %v %+v", err, set)
	}
	if err := RetireLicenseKey(dir, first.ID); err == nil {
		t.Fatal("retired the active key")
	}
	if err := ActivateLicenseKey(dir, second.ID[:8]); err != nil {
		t.Fatal(err)
	}
	if err := RetireLicenseKey(dir, first.ID); err != nil {
		t.Fatal(err)
	}
	set, _ = LoadLicenseKeys(dir)
	if set.Active.ID != second.ID || len(set.Keys) != 1 {
		t.Fatalf("after rotation: %+v", set)
	}
	// The reply-signing directory above is unaffected: no reply key.
	if rs, err := Load(signingDir); rs != nil || err != nil {
		t.Fatalf("reply keys: %v %v", rs, err)
	}
	// The active key signs files its public half verifies.
	text, err := licensefile.Sign(licensefile.Claims{AppID: "a", HWID: "h", Status: "active", IssuedAt: time.Unix(0, 0),
		ValidUntil: time.Unix(3600, 0), Kid: set.Active.ID}, set.Active.Private)
	if err != nil {
		t.Fatal(err)
	}
	f, err := licensefile.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(set.Publics(), time.Unix(60, 0), "h"); err != nil {
		t.Fatal(err)
	}
}

// TestEnsureLicenseKeysOnce: processes (here goroutines) starting together
// on one empty directory agree on a single key, and a later start
// generates nothing.
func TestEnsureLicenseKeysOnce(t *testing.T) {
	dir := LicenseKeyDir(filepath.Join(t.TempDir(), "signing"))
	var wg sync.WaitGroup
	ids := make([]string, 8)
	created := make([]bool, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set, c, err := EnsureLicenseKeys(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], created[i] = set.Active.ID, c
		}()
	}
	wg.Wait()
	n := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("active keys differ: %v", ids)
		}
		if created[i] {
			n++
		}
	}
	set, err := LoadLicenseKeys(dir)
	if n != 1 || err != nil || len(set.Keys) != 1 {
		t.Fatalf("created %d times; %v %+v", n, err, set)
	}
	if _, c, err := EnsureLicenseKeys(dir); c || err != nil {
		t.Fatalf("second start: created %v %v", c, err)
	}
}
