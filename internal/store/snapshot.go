package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DBFile is the name of the SQLite database file in the data directory.
const DBFile = "keyward.db"

// SnapshotSQLite writes a consistent copy of the SQLite database in dataDir
// to dst (which must not exist) with VACUUM INTO: one read transaction, so
// it is safe while a server writes, and the copy is compact and holds no
// WAL. It refuses when dataDir has no database.
func SnapshotSQLite(ctx context.Context, dataDir, dst string) error {
	path := filepath.Join(dataDir, DBFile)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no SQLite database in %s", dataDir)
		}
		return err
	}
	// No journal_mode pragma: the database is already in WAL mode, and this
	// connection only reads it.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}
