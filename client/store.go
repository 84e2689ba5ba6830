package client

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Store keeps the client's offline trust across restarts, so an app started
// while its licence server is down can run within the grace it had (see
// WithStore). The client owns the bytes: the newest signed exchange, which
// it verifies again with the pinned keys when it loads them, so a record
// that was edited, or made for another app, key or pinned key, gives no
// trust. Keep it where the app keeps its own state.
type Store interface {
	// Load returns the saved bytes, or nil and no error when there are none.
	Load() ([]byte, error)
	// Save replaces the saved bytes; nil or empty means remove them.
	Save(data []byte) error
}

// WithStore makes the client read its offline trust from st when created
// and write it there as it changes (at most once a minute while beating,
// and at once when a refusal takes it away). It matters only with pinned
// keys: without them there is no trust to keep.
func WithStore(st Store) Option {
	return func(c *Client) error {
		if st == nil {
			return errors.New("nil Store")
		}
		c.store = st
		return nil
	}
}

// FileStore is a Store in one file (mode 0600), written atomically: a new
// file beside it is synced and renamed over it.
type FileStore string

// Load implements Store.
func (p FileStore) Load() ([]byte, error) {
	f, err := os.Open(string(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTrustRecord+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTrustRecord {
		return nil, fmt.Errorf("%s: over %d bytes", p, maxTrustRecord)
	}
	return b, nil
}

// Save implements Store.
func (p FileStore) Save(data []byte) error {
	path := string(p)
	if len(data) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing left to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
