package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/keyward/keyward/internal/kwtest"
)

// writeBreaker makes the database of a test server refuse writes, for
// real, and lets it take them again.
type writeBreaker struct {
	name         string
	break_, fix_ func()
}

// writeBreakers are the real ways each engine stops taking writes: on
// SQLite a database capped at its current size (PRAGMA max_page_count on
// the one writer connection: every write that needs a page fails with
// SQLITE_FULL, as on a full disk) and a read-only database (PRAGMA
// query_only: SQLITE_READONLY, as on a file system remounted read-only);
// on PostgreSQL a read-only database (default_transaction_read_only, as on
// a standby: SQLSTATE 25006), with the pool keeping no idle connection so
// each statement opens a session with the database's current setting.
func writeBreakers(t *testing.T, s *kwtest.Server) []writeBreaker {
	ctx := context.Background()
	exec := func(db *sql.DB, q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if s.DatabaseURL == "" {
		w := s.DB.Pools()["write"]
		return []writeBreaker{
			{"full", func() {
				exec(w, "VACUUM") // no free page left: the cap leaves no room at all
				var pages int64
				if err := w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
					t.Fatal(err)
				}
				exec(w, "PRAGMA max_page_count = "+strconv.FormatInt(pages, 10))
			}, func() { exec(w, "PRAGMA max_page_count = 1073741823") }},
			{"read-only", func() { exec(w, "PRAGMA query_only = 1") }, func() { exec(w, "PRAGMA query_only = 0") }},
		}
	}
	u, err := url.Parse(s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	raw, err := sql.Open("pgx", s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	pools := s.DB.Pools()
	return []writeBreaker{{"read-only", func() {
		exec(raw, "ALTER DATABASE "+name+" SET default_transaction_read_only = on")
		for _, p := range pools {
			p.SetMaxIdleConns(0)
		}
	}, func() {
		exec(raw, "ALTER DATABASE "+name+" RESET default_transaction_read_only")
		for _, p := range pools {
			p.SetMaxIdleConns(p.Stats().MaxOpenConnections)
		}
	}}}
}

// /readyz tells the truth about writes: while the database refuses writes,
// a failed write makes readiness fail (the "writes" check, reads still ok);
// it retries with one write probe per 5 s of the injected clock — failing
// while writes still fail — and comes back by itself once they work, on
// the probe or on any write that commits.
func TestReadinessFollowsWrites(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, FlushEvery: time.Hour, ReapEvery: time.Hour})
		app := s.CreateApp("Writes")
		ready := func(t *testing.T, step string) {
			t.Helper()
			r := s.Do("GET", "/readyz", nil, nil)
			if r.Status != http.StatusOK || r.Obj("checks")["writes"] != "ok" {
				t.Fatalf("%s: GET /readyz = %s, want 200 with writes ok", step, r)
			}
		}
		unready := func(t *testing.T, step string) {
			t.Helper()
			r := s.Do("GET", "/readyz", nil, nil)
			if r.Status != http.StatusServiceUnavailable || r.Obj("checks")["writes"] != "fail" || r.Obj("checks")["database"] != "ok" {
				t.Fatalf("%s: GET /readyz = %s, want 503 with writes failed and database ok", step, r)
			}
		}
		write := func() *kwtest.Reply {
			return s.Admin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 500, "key_type": "lifetime"})
		}
		ready(t, "at start")
		for _, b := range writeBreakers(t, s) {
			t.Run(b.name, func(t *testing.T) {
				b.break_()
				ready(t, "writes refused but none tried yet")
				if r := write(); r.Status != http.StatusInternalServerError {
					b.fix_()
					t.Fatalf("a write with the database refusing writes: %s, want 500", r)
				}
				unready(t, "after a failed write")
				s.Clock.Advance(4 * time.Second)
				unready(t, "4 s later")
				s.Clock.Advance(time.Second) // the probe runs, and fails
				unready(t, "5 s later, still refusing writes")
				b.fix_()
				unready(t, "fixed, but the next probe is not due") // the last probe failed just now
				s.Clock.Advance(5 * time.Second)
				ready(t, "fixed, at the next probe")
				if r := write(); r.Status != http.StatusOK {
					t.Fatalf("a write once fixed: %s", r)
				}

				// A write that commits clears the failure at once, without a probe.
				b.break_()
				if r := write(); r.Status != http.StatusInternalServerError {
					b.fix_()
					t.Fatalf("a write with the database refusing writes again: %s, want 500", r)
				}
				unready(t, "after another failed write")
				b.fix_()
				if r := write(); r.Status != http.StatusOK {
					t.Fatalf("a write once fixed again: %s", r)
				}
				ready(t, "after a write committed")
			})
		}
	})
}
