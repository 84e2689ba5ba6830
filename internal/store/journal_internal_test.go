package store

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// openTempFiles counts this process's open SQLite temporary files (named
// etilqs_…, unlinked as soon as they are opened).
func openTempFiles() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, "etilqs_") {
			n++
		}
	}
	return n, nil
}

// A unit of a batch runs in a savepoint, and a statement that changes many
// rows keeps a statement journal: both copy each page before its first
// change into the sub-journal. SQLite spills a sub-journal over 64 KiB to a
// temporary file, which costs the heartbeat flush a file opened and a write
// system call per page (BenchmarkTouchSessionsCached: 66 ms against 58 with
// the sub-journal in memory). The write connection keeps it in memory.
func TestWriterKeepsSubJournalsInMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files through /proc/self/fd")
	}
	ctx := context.Background()
	db := sqliteForCommit(t)
	pad := strings.Repeat("x", 200)
	err := db.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
			INSERT INTO job_leases (name, holder, until) SELECT 'lease-' || i, ?, 0 FROM n`, pad)
		return translate(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	before, err := openTempFiles()
	if err != nil {
		t.Fatal(err)
	}
	var during int
	errs := runBatch(db,
		func(tx *wtx) error { return lease(ctx, db, tx, "other") },
		func(tx *wtx) error {
			// About 100 pages changed in the unit's savepoint: 400 KiB of
			// sub-journal.
			if _, err := tx.ExecContext(ctx, `UPDATE job_leases SET until = until + 1`); err != nil {
				return translate(err)
			}
			// The writer's goroutine, not the test's: no t.Fatal here.
			n, err := openTempFiles()
			during = n
			return err
		})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if during != before {
		t.Fatalf("%d SQLite temporary files open while the unit ran, %d before: the sub-journal went to a file", during, before)
	}
}
