package kwtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

// A test process drops the templates of other migration digests and the
// builds a killed process left, but not its own template, nor one another
// live process holds, nor a build under way, nor a database someone is
// connected to.
func TestDropStaleTemplates(t *testing.T) {
	base := os.Getenv("KEYWARD_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	ctx := context.Background()
	// This process's own template, held as every test process holds it.
	keep, err := migratedTemplate(base)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() }) // after the drops below: cleanups run last first

	suffix := randomName("")[:8]
	stale := "kw_tpl_stale" + suffix    // an old digest's: dropped
	held := "kw_tpl_held" + suffix      // a live process's: kept
	used := "kw_tpl_used" + suffix      // someone connected: kept
	leftover := "kw_tplb_left" + suffix // a killed build: dropped
	building := "kw_tplb_busy" + suffix // a build under way: kept
	made := []string{stale, held, used, leftover, building}
	for _, n := range made {
		if _, err := admin.Exec("CREATE DATABASE " + n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range made {
			admin.Exec("DROP DATABASE IF EXISTS " + n + " WITH (FORCE)")
		}
	})

	// Another live test process: the shared locks it holds on its template
	// and on its build.
	other, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, n := range []string{held, building} {
		if _, err := other.ExecContext(ctx, `SELECT pg_advisory_lock_shared($1, $2)`, tplLockClass, tplLockKey(n)); err != nil {
			t.Fatal(err)
		}
	}
	// Someone connected to a template no process holds.
	onUsed, err := sql.Open("pgx", dbURL(base, used))
	if err != nil {
		t.Fatal(err)
	}
	defer onUsed.Close()
	if err := onUsed.Ping(); err != nil {
		t.Fatal(err)
	}

	if err := dropStaleTemplates(ctx, admin, keep); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{keep: true, stale: false, held: true, used: true, leftover: false, building: true}
	for _, n := range append(made, keep) {
		var one int
		got := admin.QueryRow(`SELECT 1 FROM pg_database WHERE datname = $1`, n).Scan(&one) == nil
		if got != want[n] {
			t.Errorf("%s exists = %v, want %v", n, got, want[n])
		}
	}

	// The live process gone, its template goes at the next cleanup.
	other.Close()
	if err := dropStaleTemplates(ctx, admin, keep); err != nil {
		t.Fatal(err)
	}
	var one int
	if admin.QueryRow(`SELECT 1 FROM pg_database WHERE datname = $1`, held).Scan(&one) == nil {
		t.Errorf("%s outlived the process that held it", held)
	}
}
