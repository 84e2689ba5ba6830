package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/store/storetest"
)

func pgEnabled() bool { return os.Getenv("KEYWARD_TEST_DATABASE_URL") != "" }

// engine is how a test opens a database on one engine: opts returns fresh
// Options (a new data directory or PostgreSQL database), migrated fresh
// Options on an already migrated database (a copy of the template the
// test harness migrated once, see kwtest: for tests that need a migrated
// database, not a migration), and raw opens a plain database/sql handle
// on the same database for inspecting it.
type engine struct {
	name     string
	opts     func(t *testing.T) store.Options
	migrated func(t *testing.T) store.Options
	raw      func(t *testing.T, o store.Options) *sql.DB
}

func engines(t *testing.T) []engine {
	out := []engine{{
		name:     "sqlite",
		opts:     func(t *testing.T) store.Options { return store.Options{DataDir: t.TempDir()} },
		migrated: func(t *testing.T) store.Options { return store.Options{DataDir: kwtest.MigratedSQLiteDir(t)} },
		raw: func(t *testing.T, o store.Options) *sql.DB {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(o.DataDir, "keyward.db")+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}}
	if pgEnabled() {
		out = append(out, engine{
			name:     "postgres",
			opts:     func(t *testing.T) store.Options { return store.Options{URL: kwtest.PostgresURL(t)} },
			migrated: func(t *testing.T) store.Options { return store.Options{URL: kwtest.MigratedPostgresURL(t)} },
			raw: func(t *testing.T, o store.Options) *sql.DB {
				db, err := sql.Open("pgx", o.URL)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			},
		})
	}
	return out
}

func open(t testing.TB, o store.Options) *store.DB {
	t.Helper()
	if o.Keys == nil {
		o.Keys = kwtest.SecretKeys
	}
	db, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openMigrated(t testing.TB, o store.Options) *store.DB {
	t.Helper()
	db := open(t, o)
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// TestConformance runs the storage conformance suite on every engine.
func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		storetest.Exercise(t, func(t *testing.T) *store.DB {
			db := openMigrated(t, store.Options{DataDir: kwtest.MigratedSQLiteDir(t)})
			if db.Engine() != store.SQLite {
				t.Fatalf("engine %s, want sqlite", db.Engine())
			}
			// As keyward serve runs it: heartbeats through the session cache.
			if err := db.CacheSessions(context.Background(), 1_000_000); err != nil {
				t.Fatal(err)
			}
			return db
		})
	})
	t.Run("postgres", func(t *testing.T) {
		if !pgEnabled() {
			t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
		}
		t.Parallel()
		storetest.Exercise(t, func(t *testing.T) *store.DB {
			db := openMigrated(t, store.Options{URL: kwtest.MigratedPostgresURL(t)})
			if db.Engine() != store.Postgres {
				t.Fatalf("engine %s, want postgres", db.Engine())
			}
			return db
		})
	})
}

// Migrating a migrated database changes nothing and reports the same
// version, from the same handle and from a second one.
func TestMigrateIsIdempotent(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			exp := time.Date(2026, 11, 1, 12, 5, 0, 0, time.UTC)
			o := e.opts(t)
			db := open(t, o)
			v1, err := db.Migrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v1 < 1 {
				t.Fatalf("Migrate reported version %d, want at least 1", v1)
			}
			// Data written after the first migration survives the second.
			// A replay claim is not waited for on SQLite (it commits with
			// the request's own write, queued after it); the empty
			// transaction after it is that write.
			if _, _, err := db.ClaimReplay(ctx, "app", "mac", exp); err != nil {
				t.Fatal(err)
			}
			if err := db.LicenseStore().InTx(ctx, func(license.Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			v2, err := db.Migrate(ctx)
			if err != nil || v2 != v1 {
				t.Fatalf("second Migrate = %d, %v; want %d, nil", v2, err, v1)
			}
			other := open(t, o)
			v3, err := other.Migrate(ctx)
			if err != nil || v3 != v1 {
				t.Fatalf("Migrate from a second handle = %d, %v; want %d, nil", v3, err, v1)
			}
			if err := other.CheckSchema(ctx); err != nil {
				t.Errorf("CheckSchema after migrating: %v", err)
			}
			if ok, _, err := other.ClaimReplay(ctx, "app", "mac", exp); err != nil || ok {
				t.Errorf("row written before re-migrating: claim = %v, %v; want it still there", ok, err)
			}
		})
	}
}

// CheckSchema says what to do when the schema is not the binary's: a fresh
// database needs `keyward migrate`, a newer one needs a newer keyward.
func TestCheckSchema(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := e.opts(t)
			db := open(t, o)
			if err := db.SchemaCurrent(ctx); err == nil {
				t.Error("SchemaCurrent on a fresh database = nil, want an error")
			}
			err := db.CheckSchema(ctx)
			if err == nil || !strings.Contains(err.Error(), "version 0") || !strings.Contains(err.Error(), "run keyward migrate") {
				t.Errorf("CheckSchema on a fresh database = %v, want version 0 and \"run keyward migrate\"", err)
			}
			v, err := db.Migrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CheckSchema(ctx); err != nil {
				t.Errorf("CheckSchema after Migrate: %v", err)
			}
			if err := db.SchemaCurrent(ctx); err != nil {
				t.Errorf("SchemaCurrent after Migrate: %v", err)
			}
			// A newer keyward migrated this database further.
			raw := e.raw(t, o)
			if _, err := raw.ExecContext(ctx, fmt.Sprintf(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, true)`, v+1)); err != nil {
				t.Fatal(err)
			}
			err = db.CheckSchema(ctx)
			if err == nil || !strings.Contains(err.Error(), "newer than this keyward") {
				t.Errorf("CheckSchema on a newer schema = %v, want \"newer than this keyward\"", err)
			}
			// The readiness probe's cheaper check agrees.
			if err := db.SchemaCurrent(ctx); err == nil || !strings.Contains(err.Error(), "newer than this keyward") {
				t.Errorf("SchemaCurrent on a newer schema = %v, want \"newer than this keyward\"", err)
			}
		})
	}
}

// Only postgres:// URLs select a server database; anything else is refused
// rather than silently falling back to SQLite.
func TestOpenRefusesOtherURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"mysql://root@localhost/keyward", "sqlite:///var/lib/keyward.db", "file:keyward.db", "postgres:/x"} {
		db, err := store.Open(context.Background(), store.Options{URL: u, DataDir: t.TempDir()})
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded, want a refusal", u)
			continue
		}
		if !strings.Contains(err.Error(), "only postgres:// URLs are supported") {
			t.Errorf("Open(%q) = %v, want the postgres-only explanation", u, err)
		}
	}
	if _, err := store.Open(context.Background(), store.Options{}); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Errorf("Open without URL or data directory = %v, want a data directory error", err)
	}
}

// Several keyward processes starting at once on one empty PostgreSQL
// database all migrate successfully: one applies, the others wait on the
// session lock and find nothing to do.
func TestConcurrentMigrationsPostgres(t *testing.T) {
	if !pgEnabled() {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	t.Parallel()
	for range 3 {
		url := kwtest.PostgresURL(t)
		const procs = 2
		var wg sync.WaitGroup
		versions := make([]int64, procs)
		errs := make([]error, procs)
		for i := range procs {
			wg.Go(func() {
				db, err := store.Open(context.Background(), store.Options{URL: url})
				if err != nil {
					errs[i] = err
					return
				}
				defer db.Close()
				versions[i], errs[i] = db.Migrate(context.Background())
			})
		}
		wg.Wait()
		for i := range procs {
			if errs[i] != nil {
				t.Fatalf("process %d: Migrate: %v", i, errs[i])
			}
			if versions[i] != versions[0] || versions[i] < 1 {
				t.Fatalf("versions %v, want every process at the same version ≥ 1", versions)
			}
		}
		if err := open(t, store.Options{URL: url}).CheckSchema(context.Background()); err != nil {
			t.Errorf("CheckSchema after concurrent migrations: %v", err)
		}
	}
}

// Several processes starting at once on a fresh database (or `keyward
// migrate` racing a starting server) must all come up: one migrates, the
// others wait and find the schema done.
func TestConcurrentFirstMigrations(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := e.opts(t)
			const n = 4
			dbs := make([]*store.DB, n)
			for i := range dbs {
				dbs[i] = open(t, o)
			}
			versions := make([]int64, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, db := range dbs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					versions[i], errs[i] = db.Migrate(ctx)
				}()
			}
			wg.Wait()
			for i := range dbs {
				if errs[i] != nil || versions[i] != versions[0] || versions[0] < 1 {
					t.Errorf("Migrate #%d = %d, %v; want version %d (≥ 1), nil", i, versions[i], errs[i], versions[0])
				}
				if err := dbs[i].CheckSchema(ctx); err != nil {
					t.Errorf("CheckSchema #%d: %v", i, err)
				}
			}
		})
	}
}

// TestHotReadRespectsCancellation checks the hot read's context rule on
// every engine: a request already cancelled is refused without a row (on
// SQLite the live request's read runs under a context that cannot be
// cancelled, which must not make a dead request read), and a live request
// reads (here: finds no session, apperr's not-found).
func TestHotReadRespectsCancellation(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ls := openMigrated(t, e.migrated(t)).LicenseStore()
			hash := strings.Repeat("0", 64)
			if _, err := ls.HeartbeatView(context.Background(), hash); !errors.Is(err, apperr.ErrNotFound) {
				t.Errorf("live context: err %v, want not found", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := ls.HeartbeatView(ctx, hash); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled context: err %v, want context.Canceled", err)
			}
		})
	}
}
