package signing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// keyKind is what differs between the two key directories (reply-signing
// RSA keys and license-file Ed25519 keys): what a key is called in
// messages, how its PEM file parses, and its id. Everything else — the
// `<id>.pem` files, the `active` file, prefix lookup, activation and
// retirement — is the same code, here.
type keyKind[K comparable] struct {
	what  string // "signing key", "license-file key"
	parse func([]byte) (K, error)
	id    func(K) string
}

// errNoActive is wrapped by load's error for a directory with several keys
// and no `active` file.
var errNoActive = errors.New("activate one")

// load reads every key of dir, sorted by id, and the active one. No keys
// (dir missing or holding none) is nil keys and no error. With keys, the
// error may be errNoActive (several, none named active) or an active file
// naming a key that is not there; keys are returned with it.
func (kk keyKind[K]) load(dir string) (keys []K, active K, err error) {
	var zero K
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, zero, nil
	} else if err != nil {
		return nil, zero, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".pem") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since listed (a process that lost a first-key race)
		} else if err != nil {
			return nil, zero, err
		}
		k, err := kk.parse(b)
		if err != nil {
			return nil, zero, fmt.Errorf("%s %s: %w", kk.what, e.Name(), err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, zero, nil
	}
	sort.Slice(keys, func(i, j int) bool { return kk.id(keys[i]) < kk.id(keys[j]) })
	b, err := os.ReadFile(filepath.Join(dir, activeFile))
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if k, ok := kk.find(keys, id); ok {
			return keys, k, nil
		}
		return keys, zero, fmt.Errorf("the active %s %q is not in %s", kk.what, id, dir)
	case errors.Is(err, os.ErrNotExist) && len(keys) == 1:
		return keys, keys[0], nil
	case errors.Is(err, os.ErrNotExist):
		return keys, zero, fmt.Errorf("several %ss in %s and no active one: %w", kk.what, dir, errNoActive)
	}
	return nil, zero, err
}

// find returns the key whose id is id or starts with it (at least 8
// characters, and only one key may match).
func (kk keyKind[K]) find(keys []K, id string) (K, bool) {
	var found K
	ok := false
	if len(id) < 8 {
		return found, false
	}
	for _, k := range keys {
		if strings.HasPrefix(kk.id(k), id) {
			if ok {
				var zero K
				return zero, false // ambiguous
			}
			found, ok = k, true
		}
	}
	return found, ok
}

// activate makes the key id the one that signs: `active` is replaced
// atomically.
func (kk keyKind[K]) activate(dir, id string) error {
	keys, _, err := kk.load(dir)
	if err != nil && !errors.Is(err, errNoActive) && keys == nil {
		return err
	}
	k, ok := kk.find(keys, id)
	if !ok {
		return fmt.Errorf("no %s %q in %s", kk.what, id, dir)
	}
	tmp := filepath.Join(dir, activeFile+".tmp")
	if err := os.WriteFile(tmp, []byte(kk.id(k)+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, activeFile))
}

// retire deletes the key id, which must not be the active one.
func (kk keyKind[K]) retire(dir, id string) error {
	keys, active, err := kk.load(dir)
	if err != nil {
		return err
	}
	k, ok := kk.find(keys, id)
	if !ok {
		return fmt.Errorf("no %s %q in %s", kk.what, id, dir)
	}
	if k == active {
		return fmt.Errorf("key %s is the active one; activate another first", kk.id(k))
	}
	return os.Remove(filepath.Join(dir, kk.id(k)+".pem"))
}
