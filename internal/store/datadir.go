package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// PrepareDataDir creates the data directory dir when it is missing and
// checks that the current user can write into it (and into keyward.db when
// that exists), so that a directory keyward cannot use is reported as such —
// naming the directory, the user keyward runs as, the directory's owner and
// what to do — rather than as SQLite's "unable to open database file (14)" or
// a failure to write the secret key file.
func PrepareDataDir(dir string) error {
	if dir == "" {
		return errors.New("data directory is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return dataDirError(dir, "does not exist and cannot be created", err)
	}
	probe, err := os.CreateTemp(dir, ".keyward-write-check-*")
	if err != nil {
		return dataDirError(dir, "is not writable", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	db := filepath.Join(dir, "keyward.db")
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return dataDirError(db, "is not writable", err)
	}
	return nil
}

// dataDirError is the refusal PrepareDataDir returns for path.
func dataDirError(path, what string, err error) error {
	path = filepath.Clean(path)
	name := userName()
	msg := fmt.Sprintf("data directory: %s %s by user %s (uid %d): %v", path, what, name, os.Geteuid(), unwrapPath(err))
	if owner := ownerOf(path); owner != "" {
		msg += "; " + owner
	}
	if errors.Is(err, syscall.ENOTDIR) {
		msg += ". Choose a directory with --data (KEYWARD_DATA) whose parents are directories"
	} else {
		msg += fmt.Sprintf(". Give it to the user keyward runs as (sudo install -d -o %s -m 700 %s, or sudo chown -R %s %s when it exists), run keyward as a user who may write there, or choose another directory with --data (KEYWARD_DATA)",
			name, path, name, path)
	}
	return errors.New(msg)
}

// unwrapPath drops the path from a *fs.PathError, which the message names
// already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// userName is the effective user's name, or its uid when it has none.
func userName() string {
	uid := strconv.Itoa(os.Geteuid())
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return u.Username
	}
	return uid
}

// ownerOf says who owns path, or its nearest existing parent, and its mode
// ("" when nothing can be read or the platform has no owner ids).
func ownerOf(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			uid, ok := ownerUID(fi)
			if !ok {
				return ""
			}
			name := uid
			if u, err := user.LookupId(uid); err == nil && u.Username != "" {
				name = u.Username
			}
			switch {
			case !fi.IsDir():
				return fmt.Sprintf("%s is a file (of %s, uid %s), not a directory", p, name, uid)
			case p == filepath.Clean(path):
				return fmt.Sprintf("it belongs to %s (uid %s), mode %#o", name, uid, fi.Mode().Perm())
			default:
				return fmt.Sprintf("%s belongs to %s (uid %s), mode %#o", p, name, uid, fi.Mode().Perm())
			}
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}
