package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// tempPrefix marks files being written; a name that starts with it is never
// a key (keys do not start with '.'), so leftovers are told apart safely.
const tempPrefix = ".tmp-"

// Dir is a Store in a directory of the local filesystem. Every access goes
// through os.Root, so no key can reach outside the directory. A key's
// segments are directories, so unlike S3 a Dir cannot hold both "a" and
// "a/b"; keyward's keys (releases/<id>/<random>) never collide that way.
type Dir struct {
	root *os.Root
}

// OpenDir opens (creating it when needed) the directory dir as a Store and
// removes temporary files older than an hour that a crash left behind.
func OpenDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d := &Dir{root: root}
	if _, err := d.CleanTemps(time.Now().Add(-time.Hour)); err != nil {
		root.Close()
		return nil, err
	}
	return d, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// CleanTemps removes temporary files last written before cutoff (uploads
// that a crash or kill interrupted) and returns how many it removed.
func (d *Dir) CleanTemps(cutoff time.Time) (int, error) {
	n := 0
	err := fs.WalkDir(d.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if info.ModTime().Before(cutoff) {
			if err := d.root.Remove(p); err == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}

// Put writes r to a temporary file beside key, syncs it, and renames it over
// key, so readers see the whole object or none.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if !ValidKey(key) {
		return 0, errBadKey
	}
	dir := path.Dir(key)
	if dir != "." {
		if err := d.root.MkdirAll(dir, 0o700); err != nil {
			return 0, err
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp, key)
	}
	if err != nil {
		d.root.Remove(tmp)
		return 0, err
	}
	d.syncDir(dir)
	return n, nil
}

// syncDir makes a rename durable; failure only weakens durability on crash.
func (d *Dir) syncDir(dir string) {
	if f, err := d.root.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// Open opens key for reading.
func (d *Dir) Open(_ context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return nil, ErrNotFound
	}
	f, err := d.root.Open(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, ErrNotFound // a directory is a prefix of keys, not a key
	}
	return fileObject{f, info.Size()}, nil
}

type fileObject struct {
	*os.File
	size int64
}

func (o fileObject) Size() int64 { return o.size }

// Delete removes key.
func (d *Dir) Delete(_ context.Context, key string) error {
	if !ValidKey(key) {
		return nil
	}
	info, err := d.root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
		return nil // nothing stored under key (a directory is only a prefix)
	} else if err != nil {
		return err
	}
	err = d.root.Remove(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ctxReader stops a copy when its context ends, so an abandoned upload does
// not keep writing.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
