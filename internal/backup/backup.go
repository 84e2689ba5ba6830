// Package backup writes and restores keyward's backup archive: a tar.gz
// holding a consistent snapshot of the SQLite database (keyward.db), the
// artifact directory (blobs/…) and, when present, the reply-signing key
// directory (signing/…).
package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/store"
)

// Archive prefixes of the blob and signing directories.
const (
	blobsPrefix   = "blobs/"
	signingPrefix = "signing/"
)

// Paths locates an installation's files.
type Paths struct {
	Data    string // data directory: keyward.db
	Blobs   string // artifact directory (default <data>/blobs)
	Signing string // signing key directory (default <data>/signing)
	// SecretKey is the key file of the secrets sealed in the database
	// (--secret-key-file): never archived, even when it lies under the blob
	// or signing directory, or the archive would be as good as the database.
	SecretKey string
}

func (p Paths) withDefaults() Paths {
	if p.Blobs == "" {
		p.Blobs = filepath.Join(p.Data, "blobs")
	}
	if p.Signing == "" {
		p.Signing = filepath.Join(p.Data, "signing")
	}
	return p
}

// Summary tells what an archive holds.
type Summary struct {
	DBBytes      int64
	BlobFiles    int
	BlobBytes    int64
	SigningFiles int
}

// Create writes the backup archive of p to out, atomically (a temporary
// file beside out, synced, then renamed) and readable by its owner only:
// it holds the admin password hashes and, when present, the signing keys.
// The secrets in the database are sealed, and the secret key file that
// opens them (p.SecretKey) is never archived.
func Create(ctx context.Context, p Paths, out string) (Summary, error) {
	p = p.withDefaults()
	var sum Summary
	outDir := filepath.Dir(out)
	work, err := os.MkdirTemp(outDir, ".keyward-backup-")
	if err != nil {
		return sum, err
	}
	defer os.RemoveAll(work)
	snap := filepath.Join(work, store.DBFile)
	if err := store.SnapshotSQLite(ctx, p.Data, snap); err != nil {
		return sum, err
	}
	f, err := os.CreateTemp(outDir, filepath.Base(out)+".tmp-")
	if err != nil {
		return sum, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return sum, err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if sum.DBBytes, err = addFile(tw, snap, store.DBFile); err != nil {
		return sum, err
	}
	if err := addDir(ctx, tw, p.Blobs, blobsPrefix, p.SecretKey, func(n int64) { sum.BlobFiles++; sum.BlobBytes += n }); err != nil {
		return sum, fmt.Errorf("blob directory: %w", err)
	}
	if err := addDir(ctx, tw, p.Signing, signingPrefix, p.SecretKey, func(int64) { sum.SigningFiles++ }); err != nil {
		return sum, fmt.Errorf("signing directory: %w", err)
	}
	if err := tw.Close(); err != nil {
		return sum, err
	}
	if err := gz.Close(); err != nil {
		return sum, err
	}
	if err := f.Sync(); err != nil {
		return sum, err
	}
	if err := f.Close(); err != nil {
		return sum, err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return sum, err
	}
	ok = true
	return sum, nil
}

func addFile(tw *tar.Writer, src, name string) (int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: info.Size(), Mode: 0o600, ModTime: info.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return 0, err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != info.Size() {
		err = fmt.Errorf("%s changed while being archived", src)
	}
	return n, err
}

// addDir archives the regular files under dir (absent: nothing) with
// prefix, skipping the blob store's temporary files, the file skip (the
// secret key file) and anything that is not a regular file or a directory.
func addDir(ctx context.Context, tw *tar.Writer, dir, prefix, skip string, added func(int64)) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	skipInfo, _ := os.Stat(skip)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + p + "/", Mode: 0o700, ModTime: time.Now()})
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".tmp-") {
			return nil
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if info, err := os.Stat(full); skipInfo != nil && err == nil && os.SameFile(info, skipInfo) {
			return nil
		}
		n, err := addFile(tw, full, prefix+p)
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted since it was listed (a replaced artifact)
		}
		if err != nil {
			return err
		}
		added(n)
		return nil
	})
}

// entryName checks an archive entry's name: a local, clean, slash-separated
// path that is keyward.db or lies under blobs/ or signing/. It returns the
// prefix and the path below it.
func entryName(hdr *tar.Header) (prefix, rel string, err error) {
	name := strings.TrimSuffix(hdr.Name, "/")
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("archive entry %q: %s", hdr.Name, why)
	}
	if strings.Contains(name, `\`) || !filepath.IsLocal(name) || path.Clean(name) != name {
		return bad("not a local path")
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return bad("only regular files and directories are restored")
	}
	if name == store.DBFile {
		if hdr.Typeflag != tar.TypeReg {
			return bad("not a file")
		}
		return store.DBFile, "", nil
	}
	for _, p := range []string{blobsPrefix, signingPrefix} {
		if rel, ok := strings.CutPrefix(name, p); ok && rel != "" {
			return p, rel, nil
		}
		if name+"/" == p && hdr.Typeflag == tar.TypeDir {
			return p, ".", nil
		}
	}
	return bad("not part of a keyward backup")
}

// entries calls fn with each entry of the archive in file in.
func entries(in string, fn func(hdr *tar.Header, r io.Reader) error) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: not a keyward backup: %w", in, err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if err := fn(hdr, tr); err != nil {
			return err
		}
	}
}

// ErrExists is returned by Restore when the data directory already holds a
// database and force is off.
var ErrExists = errors.New("the data directory already holds a database (keyward.db): restore into an empty directory, or pass --force to replace it")

// Restore puts the archive in back into p. It checks every entry first
// (only keyward.db, blobs/… and signing/…; no absolute paths, no "..", no
// links), refuses when p.Data already holds a database unless force, and
// replaces the database last, by rename, after removing a stale WAL.
func Restore(ctx context.Context, p Paths, in string, force bool) (Summary, error) {
	p = p.withDefaults()
	var sum Summary
	hasDB := false
	if err := entries(in, func(hdr *tar.Header, _ io.Reader) error {
		prefix, _, err := entryName(hdr)
		if err == nil && prefix == store.DBFile {
			if hasDB {
				return fmt.Errorf("%s: two %s entries", in, store.DBFile)
			}
			hasDB = true
		}
		return err
	}); err != nil {
		return sum, err
	}
	if !hasDB {
		return sum, fmt.Errorf("%s: no %s in the archive", in, store.DBFile)
	}
	dbPath := filepath.Join(p.Data, store.DBFile)
	if _, err := os.Stat(dbPath); err == nil && !force {
		return sum, ErrExists
	}
	if err := os.MkdirAll(p.Data, 0o700); err != nil {
		return sum, err
	}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	root := func(prefix string) (*os.Root, error) {
		if r, ok := roots[prefix]; ok {
			return r, nil
		}
		dir := p.Blobs
		if prefix == signingPrefix {
			dir = p.Signing
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		roots[prefix] = r
		return r, nil
	}
	tmpDB, err := os.CreateTemp(p.Data, ".keyward.db.restore-")
	if err != nil {
		return sum, err
	}
	defer os.Remove(tmpDB.Name())
	defer tmpDB.Close()
	err = entries(in, func(hdr *tar.Header, r io.Reader) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		prefix, rel, err := entryName(hdr)
		if err != nil {
			return err
		}
		if prefix == store.DBFile {
			n, err := io.Copy(tmpDB, r)
			sum.DBBytes = n
			return err
		}
		rt, err := root(prefix)
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeDir {
			if rel == "." {
				return nil
			}
			return rt.MkdirAll(rel, 0o700)
		}
		if d := path.Dir(rel); d != "." {
			if err := rt.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		f, err := rt.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, r)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if prefix == signingPrefix {
			sum.SigningFiles++
		} else {
			sum.BlobFiles++
			sum.BlobBytes += n
		}
		return err
	})
	if err != nil {
		return sum, err
	}
	if err := tmpDB.Sync(); err != nil {
		return sum, err
	}
	if err := tmpDB.Close(); err != nil {
		return sum, err
	}
	// A WAL left by the replaced database would be replayed into the
	// restored one.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sum, err
		}
	}
	if err := os.Rename(tmpDB.Name(), dbPath); err != nil {
		return sum, err
	}
	return sum, nil
}
