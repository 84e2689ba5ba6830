package blob

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// writeAged creates dir/name (and its parents) with a modification time of
// age ago.
func writeAged(t *testing.T, dir, name string, age time.Duration) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("content of "+name), 0o600); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, dir, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
	if err == nil {
		return true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return false
}

func TestDirOpenDirCleansOldTemps(t *testing.T) {
	dir := t.TempDir()
	stale := []string{
		".tmp-0123456789abcdef",
		"releases/12/.tmp-aaaaaaaaaaaaaaaa",
		"a/b/c/.tmp-x",
	}
	kept := []string{
		".tmp-fresh",               // a Put in progress
		"releases/12/.tmp-fresh",   // idem, nested
		"releases/12/.tmp-58m",     // younger than an hour
		"releases/12/abc",          // a real key, however old
		"old-key",                  // idem, top level
		"releases/12/not.tmp-file", // ".tmp-" only counts as a prefix
	}
	for _, n := range stale {
		writeAged(t, dir, n, 2*time.Hour)
	}
	writeAged(t, dir, ".tmp-fresh", 0)
	writeAged(t, dir, "releases/12/.tmp-fresh", 0)
	writeAged(t, dir, "releases/12/.tmp-58m", 58*time.Minute)
	writeAged(t, dir, "releases/12/abc", 48*time.Hour)
	writeAged(t, dir, "old-key", 365*24*time.Hour)
	writeAged(t, dir, "releases/12/not.tmp-file", 48*time.Hour)

	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for _, n := range stale {
		if exists(t, dir, n) {
			t.Errorf("stale temp file %s survived OpenDir", n)
		}
	}
	for _, n := range kept {
		if !exists(t, dir, n) {
			t.Errorf("%s was removed by OpenDir", n)
		}
	}
	// Directories are left alone, even when cleaning empties them.
	if !exists(t, dir, "a/b/c") {
		t.Error("OpenDir removed a directory")
	}
	// The real keys are still served.
	o, err := d.Open(t.Context(), "releases/12/abc")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if b, _ := io.ReadAll(o); string(b) != "content of releases/12/abc" {
		t.Errorf("releases/12/abc holds %q", b)
	}
}

func TestDirCleanTempsCount(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	writeAged(t, dir, ".tmp-1", 3*time.Hour)
	writeAged(t, dir, "x/.tmp-2", 2*time.Hour)
	writeAged(t, dir, "x/y/.tmp-3", 90*time.Minute)
	writeAged(t, dir, "x/y/.tmp-4", 10*time.Minute)
	writeAged(t, dir, "x/key", 5*time.Hour)

	n, err := d.CleanTemps(time.Now().Add(-time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("CleanTemps(1h ago) = %d, %v; want 3, nil", n, err)
	}
	n, err = d.CleanTemps(time.Now().Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("second CleanTemps(1h ago) = %d, %v; want 0, nil", n, err)
	}
	n, err = d.CleanTemps(time.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("CleanTemps(now) = %d, %v; want 1, nil", n, err)
	}
	if !exists(t, dir, "x/key") {
		t.Error("CleanTemps removed a key")
	}
	if files := dirFiles(t, d); len(files) != 1 || files[0] != "x/key" {
		t.Errorf("store holds %q, want only x/key", files)
	}
}

func TestDirOpenDirCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		t.Fatalf("OpenDir did not create %s: %v", dir, err)
	}
	mustPut(t, d, "k", []byte("v"))
	checkContent(t, d, "k", []byte("v"))
}

func TestDirOpenDirOnFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenDir(p); err == nil {
		d.Close()
		t.Fatal("OpenDir on a regular file succeeded")
	}
}

// TestDirPutFlatMemory checks that Put streams: a 64 MiB upload may not
// allocate more than a small, fixed amount.
func TestDirPutFlatMemory(t *testing.T) {
	const size = 64 << 20
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := newGenReader(11, size)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := d.Put(t.Context(), "flat/memory", src)
	runtime.ReadMemStats(&after)

	if err != nil || n != size {
		t.Fatalf("Put = %d, %v; want %d, nil", n, err, size)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew >= 8<<20 {
		t.Errorf("Put of %d MiB allocated %d bytes, want < 8 MiB", size>>20, grew)
	} else {
		t.Logf("Put of %d MiB allocated %d bytes", size>>20, grew)
	}

	o := mustOpen(t, d, "flat/memory")
	if o.Size() != size {
		t.Fatalf("Size() = %d, want %d", o.Size(), size)
	}
	got, want := sha256.New(), sha256.New()
	if _, err := io.Copy(got, o); err != nil {
		t.Fatal(err)
	}
	io.Copy(want, newGenReader(11, size))
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("content read back differs from content put")
	}
}
