package backup_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/backup"
)

// FuzzRestore hands Restore archives of any entries: names, kinds and
// contents the fuzzer picks. Whatever the archive, Restore creates nothing
// outside the data directory (where the blob and signing directories lie by
// default) and nothing but regular files and directories; an archive with
// an entry the documented rule refuses (see allowed), or with no database
// or two, is refused before anything is written; a failed restore never
// installs a database; and a restore that succeeds has put back the
// database and every file byte for byte.
//
// spec holds one entry a line: its first byte the kind (f a file, d a
// directory, l a symbolic link, h a hard link, anything else a FIFO), the
// rest its name. A keyward.db entry's content is db, any other file's is
// content followed by its name.
func FuzzRestore(f *testing.F) {
	for _, spec := range []string{
		"fkeyward.db\nfblobs/a/b\ndsigning/\nfsigning/k.pem",
		"fkeyward.db\ndblobs/\ndblobs/x/\nfblobs/x/y",
		"fkeyward.db\nfblobs/../../evil",
		"fkeyward.db\nf../evil",
		"fkeyward.db\nf/tmp/evil",
		"fkeyward.db\nlblobs/link",
		"fkeyward.db\nhblobs/hard",
		"fkeyward.db\npblobs/fifo",
		"fkeyward.db\nfevil.sh",
		"fblobs/x",
		"fkeyward.db\nfkeyward.db",
		"fkeyward.db\nfblobs\\..\\evil",
		"fkeyward.db\nfblobs/a\nfblobs/a/b",
		"fkeyward.db\nfblobs/a\nfblobs/a",
		"dkeyward.db",
		"fkeyward.db\nfblobs/./a\nfblobs//a",
	} {
		f.Add(spec, []byte("SQLite format 3\x00"), []byte("bytes"))
	}
	f.Fuzz(func(t *testing.T, spec string, db, content []byte) {
		type entry struct {
			kind byte
			name string
		}
		var es []entry
		for _, line := range strings.Split(spec, "\n") {
			if line == "" || len(line) > 256 {
				continue
			}
			es = append(es, entry{line[0], line[1:]})
		}
		if len(es) == 0 || len(es) > 16 {
			return
		}
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, e := range es {
			h := tar.Header{Name: e.name, Mode: 0o600}
			var body []byte
			switch e.kind {
			case 'f':
				h.Typeflag, body = tar.TypeReg, fileBody(e.name, db, content)
			case 'd':
				h.Typeflag, h.Mode = tar.TypeDir, 0o700
			case 'l':
				h.Typeflag, h.Linkname = tar.TypeSymlink, "/etc"
			case 'h':
				h.Typeflag, h.Linkname = tar.TypeLink, "keyward.db"
			default:
				h.Typeflag = tar.TypeFifo
			}
			h.Size = int64(len(body))
			if err := tw.WriteHeader(&h); err != nil {
				return // a name the tar format cannot hold
			}
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			return
		}
		gz.Close()
		arch := filepath.Join(t.TempDir(), "backup.tar.gz")
		if err := os.WriteFile(arch, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}

		sandbox := t.TempDir()
		data := filepath.Join(sandbox, "data")
		_, err := backup.Restore(context.Background(), backup.Paths{Data: data}, arch, false)

		// Only the data directory, and in it only files and directories.
		written := 0
		filepath.WalkDir(sandbox, func(p string, d fs.DirEntry, werr error) error {
			if werr != nil || p == sandbox {
				return werr
			}
			written++
			if p != data && !strings.HasPrefix(p, data+string(filepath.Separator)) {
				t.Errorf("restore of %q created %s, outside the data directory", spec, p)
			}
			if !d.Type().IsRegular() && !d.IsDir() {
				t.Errorf("restore of %q created %s of type %v", spec, p, d.Type())
			}
			return nil
		})
		dbs, refused := 0, false
		for _, e := range es {
			refused = refused || !allowed(e.kind, e.name)
			if strings.TrimSuffix(e.name, "/") == "keyward.db" {
				dbs++
			}
		}
		if refused || dbs != 1 {
			if err == nil || written > 0 {
				t.Errorf("restore of %q: %v, %d paths written; want it refused before writing", spec, err, written)
			}
			return
		}
		if err != nil {
			// A failure while writing (a file where a directory must go):
			// the database, replaced last, is not installed.
			if _, serr := os.Lstat(filepath.Join(data, "keyward.db")); serr == nil {
				t.Errorf("restore of %q failed (%v) but installed a database", spec, err)
			}
			return
		}
		want := map[string][]byte{} // path below data → its last entry's content
		for _, e := range es {
			if e.kind == 'f' {
				want[filepath.FromSlash(e.name)] = fileBody(e.name, db, content)
			}
		}
		for rel, body := range want {
			got, rerr := os.ReadFile(filepath.Join(data, rel))
			if rerr != nil || !bytes.Equal(got, body) {
				t.Errorf("restore of %q: %s = %q, %v; want %q", spec, rel, got, rerr, body)
			}
		}
	})
}

// allowed is the rule Restore documents for an entry, stated apart from
// its code: a local, clean, slash-separated path; a regular file or a
// directory; keyward.db (a file), or under blobs/ or signing/ (or those
// two directories themselves).
func allowed(kind byte, name string) bool {
	name = strings.TrimSuffix(name, "/")
	if strings.Contains(name, `\`) || !filepath.IsLocal(name) || path.Clean(name) != name {
		return false
	}
	switch {
	case kind != 'f' && kind != 'd':
		return false
	case name == "keyward.db":
		return kind == 'f'
	case name == "blobs" || name == "signing":
		return kind == 'd'
	}
	return strings.HasPrefix(name, "blobs/") || strings.HasPrefix(name, "signing/")
}

// fileBody is the content FuzzRestore gives a file entry.
func fileBody(name string, db, content []byte) []byte {
	if name == "keyward.db" {
		return db
	}
	return append(append([]byte{}, content...), name...)
}
