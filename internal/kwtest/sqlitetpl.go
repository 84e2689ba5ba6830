package kwtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/store"
)

// Migrating a fresh SQLite database is most of the CPU a test server's
// start costs (the pure-Go SQLite parses every migration; under the race
// detector that takes long). So a test server whose data directory is new
// starts from a copy of a database migrated once: a template kept in the
// temporary directory under the migrations' digest (built under another
// name and renamed, so a template that exists is complete, and shared by
// test processes), read once per process and written into each new data
// directory as keyward.db. The server's own migration step then finds
// nothing to do.
var sqliteTpl struct {
	once sync.Once
	db   []byte
	err  error
}

// sqliteTemplate returns the bytes of the migrated template database.
func sqliteTemplate() ([]byte, error) {
	sqliteTpl.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "kwtest-sqlite-"+store.MigrationsDigest()[:16])
		path := filepath.Join(dir, "keyward.db")
		if b, err := os.ReadFile(path); err == nil {
			sqliteTpl.db = b
			return
		}
		sqliteTpl.db, sqliteTpl.err = buildSQLiteTemplate(dir, path)
	})
	return sqliteTpl.db, sqliteTpl.err
}

func buildSQLiteTemplate(dir, path string) ([]byte, error) {
	build, err := os.MkdirTemp(os.TempDir(), "kwtest-sqlite-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(build)
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{DataDir: build, Keys: SecretKeys})
	if err != nil {
		return nil, err
	}
	_, err = db.Migrate(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("migrate the SQLite template: %w", err)
	}
	built := filepath.Join(build, "keyward.db")
	// Closing the last connection checkpoints the write-ahead log into
	// the database file and removes it; a copy of the file alone must be
	// the whole database.
	if _, err := os.Stat(built + "-wal"); err == nil {
		return nil, errors.New("the SQLite template kept a write-ahead log after closing")
	}
	b, err := os.ReadFile(built)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err == nil {
		// Another process may rename its copy first; either is complete.
		os.Rename(built, path)
	}
	return b, nil
}

// seedSQLite writes the migrated template database into the new data
// directory dir, unless a database is already there.
func seedSQLite(dir string) error {
	path := filepath.Join(dir, "keyward.db")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := sqliteTemplate()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// MigratedSQLiteDir returns a new data directory for this test whose
// keyward.db is a copy of the migrated template database: the SQLite
// counterpart of MigratedPostgresURL, for tests that need a migrated
// database rather than a migration (those open an empty directory and
// migrate it themselves).
func MigratedSQLiteDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := seedSQLite(dir); err != nil {
		t.Fatalf("SQLite template: %v", err)
	}
	return dir
}
