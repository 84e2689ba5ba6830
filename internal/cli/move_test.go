package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

func TestMoveToPostgres(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	clearEnv(t)
	in := populate(t)
	keysBefore := in.s.MustAdmin("GET", "/api/admin/keys.php?app_id="+in.app.ID, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	url := kwtest.PostgresURL(t)
	out := mustRun(t, "move", "--data", in.s.DataDir, "--to", url)
	if strings.Contains(out, "MISMATCH") || !strings.Contains(out, "counts and checksums match") {
		t.Fatalf("move report:\n%s", out)
	}
	for _, table := range []string{"apps", "license_keys", "devices", "sessions", "accounts", "webhook_destinations", "releases", "release_artifacts", "audit_log", "admin_users", "slides"} {
		if !strings.Contains(out, "\n"+table+" ") {
			t.Errorf("report has no line for %s:\n%s", table, out)
		}
	}
	t.Logf("move report:\n%s", out)
	sequencesPastRows(t, url)

	blobs := filepath.Join(in.s.DataDir, "blobs")
	s := kwtest.Start(t, kwtest.Options{DatabaseURL: url, Configure: func(c *config.Config) { c.BlobDir = blobs }})
	if r := s.NewApp(in.app.ID, in.app.Secret).Heartbeat(in.session, in.keys[0]); r.Body["success"] != true {
		t.Fatalf("heartbeat of a session from before the move: %v", r.Body)
	}
	a := in.check(t, s)
	in.checkArtifact(t, s)
	if r := a.Plain("/api/auth/account-login.php", map[string]any{"username": "alice", "password": "first-pass-123", "hwid": "hw-a"}); r.Body["success"] != true {
		t.Fatalf("account login after the move: %s", r)
	}
	keysAfter := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+in.app.ID, nil)
	if fmt.Sprint(keysAfter.Body["keys"]) == "" || len(keysAfter.Body["keys"].([]any)) != len(keysBefore.Body["keys"].([]any)) {
		t.Fatalf("admin key listing: %d keys after the move, %d before", len(keysAfter.Body["keys"].([]any)), len(keysBefore.Body["keys"].([]any)))
	}
	// Sequences moved past the copied ids: new rows get fresh ids.
	a.GenerateKeys(2, "lifetime", 0, 1)
	a.Release("1.2.0", []byte("next"), nil)

	code, _, errOut := run(t, "move", "--data", in.s.DataDir, "--to", url)
	if code != 1 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("second move: exit %d %s", code, errOut)
	}

	// A target already migrated (keyward migrate) but without rows is empty too.
	out = mustRun(t, "move", "--data", in.s.DataDir, "--to", kwtest.MigratedPostgresURL(t))
	if !strings.Contains(out, "counts and checksums match") {
		t.Fatalf("move into a migrated database:\n%s", out)
	}
	if code, _, errOut := run(t, "move", "--data", t.TempDir(), "--to", kwtest.PostgresURL(t)); code != 1 || !strings.Contains(errOut, "no SQLite database") {
		t.Fatalf("move without a source: exit %d %s", code, errOut)
	}

	// A source behind this binary's schema is refused before the target is touched.
	old := t.TempDir()
	mustRun(t, "migrate", "--data", old)
	db, err := sql.Open("sqlite", filepath.Join(old, "keyward.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	target := kwtest.PostgresURL(t)
	if code, _, errOut := run(t, "move", "--data", old, "--to", target); code != 1 || !strings.Contains(errOut, "run keyward migrate") {
		t.Fatalf("move of an older schema: exit %d %s", code, errOut)
	}
	pg, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var tables int
	if err := pg.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the refused move left %d tables in the target (%v)", tables, err)
	}
}

// move reads one SQLite snapshot: with a server still writing (its WAL not
// checkpointed), the copy still verifies.
func TestMoveReadsOneSnapshot(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	clearEnv(t)
	in := populate(t)
	stop := make(chan struct{})
	var logins atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := in.app.Env("/api/auth/login.php", map[string]any{"license_key": in.keys[3], "hwid": "hw-3"}); r.Body["success"] == true {
				logins.Add(1)
			}
		}
	}()
	for logins.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	out := mustRun(t, "move", "--data", in.s.DataDir, "--to", kwtest.PostgresURL(t))
	during := logins.Load()
	close(stop)
	wg.Wait()
	if during < 2 {
		t.Fatalf("%d logins while the move ran", during)
	}
	if !strings.Contains(out, "counts and checksums match") {
		t.Fatalf("move report:\n%s", out)
	}
}

// sequencesPastRows checks that every sequence-fed column of the PostgreSQL
// database at url, serial or identity, would give a new row a value above
// every copied one: after a move, the next session's seen key or the next
// key's id must not collide with a moved row.
func sequencesPastRows(t *testing.T, url string) {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name)
		FROM information_schema.columns WHERE table_schema = current_schema()
		AND pg_get_serial_sequence(quote_ident(table_name), column_name) IS NOT NULL ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ table, name, seq string }
	var cols []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.name, &c.seq); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	seen := false
	for _, c := range cols {
		var max, next int64
		if err := db.QueryRow(`SELECT COALESCE(MAX(` + c.name + `), 0) FROM ` + c.table).Scan(&max); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT nextval($1)`, c.seq).Scan(&next); err != nil {
			t.Fatal(err)
		}
		if next <= max {
			t.Errorf("after the move, %s.%s's sequence gives %d, not above the moved rows' %d", c.table, c.name, next, max)
		}
		seen = seen || c.table == "session_seen"
	}
	if !seen {
		t.Errorf("no sequence feeds session_seen.seen_key (columns with one: %v)", cols)
	}
}
