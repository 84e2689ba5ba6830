package signing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

var errNoActive = errors.New("several signing keys and no active one")

// Load reads every key of dir. It returns (nil, nil) when dir does not
// exist or holds no key: signing is off.
func Load(dir string) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	set := &Set{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".pem") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		k, err := ParsePrivate(b)
		if err != nil {
			return nil, fmt.Errorf("signing key %s: %w", e.Name(), err)
		}
		set.Keys = append(set.Keys, k)
	}
	if len(set.Keys) == 0 {
		return nil, nil
	}
	sort.Slice(set.Keys, func(i, j int) bool { return set.Keys[i].ID < set.Keys[j].ID })
	active, err := os.ReadFile(filepath.Join(dir, activeFile))
	switch {
	case err == nil:
		id := strings.TrimSpace(string(active))
		if set.Active = set.Key(id); set.Active == nil {
			return set, fmt.Errorf("the active signing key %q is not in %s", id, dir)
		}
	case errors.Is(err, os.ErrNotExist) && len(set.Keys) == 1:
		set.Active = set.Keys[0]
	case errors.Is(err, os.ErrNotExist):
		return set, errNoActive
	default:
		return nil, err
	}
	return set, nil
}

// Key returns the key with id (a prefix of at least 8 characters will do),
// or nil.
func (s *Set) Key(id string) *Key {
	if len(id) < 8 {
		return nil
	}
	var found *Key
	for _, k := range s.Keys {
		if strings.HasPrefix(k.ID, id) {
			if found != nil {
				return nil // ambiguous
			}
			found = k
		}
	}
	return found
}

// Activate makes the key id the one that signs.
func Activate(dir, id string) error {
	set, err := Load(dir)
	if err != nil && !errors.Is(err, errNoActive) {
		return err
	}
	if set == nil || set.Key(id) == nil {
		return fmt.Errorf("no signing key %q in %s", id, dir)
	}
	tmp := filepath.Join(dir, activeFile+".tmp")
	if err := os.WriteFile(tmp, []byte(set.Key(id).ID+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, activeFile))
}

// Retire deletes the key id, which must not be the active one.
func Retire(dir, id string) error {
	set, err := Load(dir)
	if err != nil {
		return err
	}
	if set == nil || set.Key(id) == nil {
		return fmt.Errorf("no signing key %q in %s", id, dir)
	}
	k := set.Key(id)
	if k == set.Active {
		return fmt.Errorf("key %s is the active one; activate another first", k.ID)
	}
	return os.Remove(filepath.Join(dir, k.ID+".pem"))
}
