// Package blob stores the binaries keyward serves (update artifacts) behind
// one small interface: a directory on the local filesystem by default, or an
// S3-compatible bucket when several keyward processes must see the same files.
// Objects are written once under a fresh key and never changed in place.
package blob

import (
	"context"
	"errors"
	"io"
	"regexp"
)

// ErrNotFound is returned by Open for a key that holds nothing.
var ErrNotFound = errors.New("blob: not found")

// Object is a stored blob opened for reading; Seek serves ranges without
// reading what comes before them.
type Object interface {
	io.ReadSeekCloser
	Size() int64
}

// Store keeps blobs by key.
type Store interface {
	// Put streams r to key and returns the bytes written. The object
	// appears whole or not at all: a failed or cancelled Put leaves nothing
	// under key. Put holds at most a bounded buffer in memory (none for a
	// Dir, one 16 MiB part for S3), never the whole content.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the object under key, or ErrNotFound.
	Open(ctx context.Context, key string) (Object, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// keyRE is the shape of keys: slash-separated segments of safe characters,
// so a key can never climb out of a directory or bucket prefix.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}(/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}){0,7}$`)

// ValidKey reports whether key is a well-formed blob key.
func ValidKey(key string) bool { return keyRE.MatchString(key) }

var errBadKey = errors.New("blob: malformed key")
