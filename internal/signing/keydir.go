package signing

import (
	"errors"
	"os"
	"path/filepath"
)

// A key directory holds the operator's signing keys as `<id>.pem` (PKCS#8,
// mode 0600) and, in `active`, the id of the key that signs. Several keys
// let a rotation be announced before it happens: clients that pin both the
// active and the next key keep working when the next one is activated.
// Several keyward processes sign with the same key when they read copies of
// the same directory.

const activeFile = "active"

// Set is the loaded key directory: every key, and the one that signs.
type Set struct {
	Active *Key
	Keys   []*Key // sorted by ID
}

// Init generates a key into dir (created 0700 when missing) and returns
// it. The first key of a directory becomes the active one; later ones wait
// for Activate.
func Init(dir string) (*Key, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k, err := Generate()
	if err != nil {
		return nil, err
	}
	pemBytes, err := k.MarshalPrivate()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, k.ID+".pem")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(pemBytes); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	set, err := Load(dir)
	if err != nil && !errors.Is(err, errNoActive) {
		return nil, err
	}
	if len(set.Keys) == 1 {
		return k, Activate(dir, k.ID)
	}
	return k, nil
}

// replyKeys is the reply-signing key directory's kind.
var replyKeys = keyKind[*Key]{what: "signing key", parse: ParsePrivate, id: func(k *Key) string { return k.ID }}

// Load reads every key of dir. It returns (nil, nil) when dir does not
// exist or holds no key: signing is off.
func Load(dir string) (*Set, error) {
	keys, active, err := replyKeys.load(dir)
	if keys == nil {
		return nil, err
	}
	return &Set{Active: active, Keys: keys}, err
}

// Key returns the key with id (a prefix of at least 8 characters will do),
// or nil.
func (s *Set) Key(id string) *Key {
	if s == nil {
		return nil
	}
	k, _ := replyKeys.find(s.Keys, id)
	return k
}

// Activate makes the key id the one that signs.
func Activate(dir, id string) error { return replyKeys.activate(dir, id) }

// Retire deletes the key id, which must not be the active one.
func Retire(dir, id string) error { return replyKeys.retire(dir, id) }
