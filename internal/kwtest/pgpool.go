package kwtest

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// A PostgreSQL test database costs about a second to copy from the
// migrated template (CREATE DATABASE writes and syncs every file), which
// was most of the time of a PostgreSQL test. So migrated test databases
// come from a pool instead: databases named kw_pool_<digest>_<n>, each
// copied from the template once and then kept. A test claims one by
// taking the session advisory lock (poolLockClass, n) on the server's base
// database, which holds it for the rest of the test; a test process that
// dies releases it with its connection. The claimer empties the database
// before use (every table but goose's emptied and every sequence
// restarted, in one transaction, ~20 ms), after checking that its schema is
// still exactly the template's; a database whose schema a test changed is
// dropped and copied again.

// poolLockClass is the first key of the pool's advisory locks; the second
// is the pool database's number.
var poolLockClass = int32(fnv32("keyward kwtest pool"))

func fnv32(s string) uint32 { h := fnv.New32a(); h.Write([]byte(s)); return h.Sum32() }

var pool struct {
	once   sync.Once
	admin  *sql.DB // on the base database: claims, creates, drops
	prefix string  // kw_pool_<digest>_
	schema string  // fingerprint of the template's schema
	err    error
}

// poolInit opens the pool's admin handle and takes the template's
// fingerprint, once per process; it also drops unclaimed pool databases of
// other migration digests (left by earlier versions of the code).
func poolInit(base, tpl string) error {
	pool.once.Do(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			pool.err = err
			return
		}
		pool.admin = admin
		pool.prefix = "kw_pool_" + strings.TrimPrefix(tpl, "kw_tpl_") + "_"
		t, err := sql.Open("pgx", dbURL(base, tpl))
		if err != nil {
			pool.err = err
			return
		}
		defer t.Close()
		t.SetMaxOpenConns(1)
		pool.schema, pool.err = schemaFingerprint(context.Background(), t)
		// Copying from the template needs no one connected to it.
		t.Close()
		pool.err = firstErr(pool.err, dropStalePools(admin, pool.prefix))
	})
	return pool.err
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// dropStalePools drops pool databases of other migration digests that no
// test holds.
func dropStalePools(admin *sql.DB, keep string) error {
	ctx := context.Background()
	stale, err := names(ctx, admin, `SELECT quote_ident(datname) FROM pg_database WHERE datname LIKE 'kw\_pool\_%' AND datname NOT LIKE $1`,
		strings.ReplaceAll(keep, "_", `\_`)+"%")
	if err != nil {
		return err
	}
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, name := range stale {
		// Only a database nobody holds: its number's lock is free (the
		// numbers are shared by every digest), and no session is on it.
		var n int32
		if _, err := fmt.Sscanf(name[strings.LastIndexByte(name, '_')+1:], "%d", &n); err != nil {
			continue
		}
		dropUnheld(ctx, conn, name, poolLockClass, n)
	}
	return nil
}

// dropUnheld drops database name if nobody holds the advisory lock (class,
// key), holding it itself meanwhile. A drop that fails (someone is
// connected) leaves the database for a later cleanup.
func dropUnheld(ctx context.Context, conn *sql.Conn, name string, class, key int32) {
	var ok bool
	if conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, class, key).Scan(&ok) != nil || !ok {
		return
	}
	conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, class, key)
}

// names runs a query of one text column on admin and returns its rows.
func names(ctx context.Context, admin *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := admin.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// dbURL is base with its database name replaced by name.
func dbURL(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	return u.String()
}

// pooledDB claims an empty, migrated pool database for t (see the comment
// at the top of this file) and returns its URL.
func pooledDB(t testing.TB, base, tpl string) string {
	t.Helper()
	if err := poolInit(base, tpl); err != nil {
		t.Fatalf("test database pool: %v", err)
	}
	ctx := context.Background()
	conn, err := pool.admin.Conn(ctx)
	if err != nil {
		t.Fatalf("test database pool: %v", err)
	}
	for n := 0; n < 10000; n++ {
		var ok bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, poolLockClass, n).Scan(&ok); err != nil {
			conn.Close()
			t.Fatalf("test database pool: %v", err)
		}
		if !ok {
			continue
		}
		name := fmt.Sprintf("%s%d", pool.prefix, n)
		t.Cleanup(func() {
			conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, poolLockClass, n)
			conn.Close()
		})
		if err := poolPrepare(ctx, base, tpl, name); err != nil {
			t.Fatalf("test database %s: %v", name, err)
		}
		return dbURL(base, name)
	}
	conn.Close()
	t.Fatal("test database pool: no free database")
	return ""
}

// poolPrepare makes the claimed database name an empty copy of the
// template: it copies the template when the database does not exist or
// its schema differs, and otherwise empties it.
func poolPrepare(ctx context.Context, base, tpl, name string) error {
	var one int
	exists := pool.admin.QueryRowContext(ctx, `SELECT 1 FROM pg_database WHERE datname = $1`, name).Scan(&one) == nil
	if exists {
		// Sessions an earlier holder left behind (a server it did not
		// close, a process that died) would see or block the emptying.
		if _, err := pool.admin.ExecContext(ctx,
			`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
			return err
		}
		err := poolEmpty(ctx, dbURL(base, name))
		if err == nil {
			return nil
		}
		if _, err := pool.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return createFrom(pool.admin, name, tpl)
}

// errSchemaChanged reports a pool database whose schema is no longer the
// template's.
var errSchemaChanged = fmt.Errorf("schema differs from the template")

// poolEmpty empties the database at u when its schema is the template's:
// every table but goose's loses its rows (children before parents, so the
// foreign keys hold) and every sequence restarts, in one transaction.
func poolEmpty(ctx context.Context, u string) error {
	db, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	fp, err := schemaFingerprint(ctx, db)
	if err != nil {
		return err
	}
	if fp != pool.schema {
		return errSchemaChanged
	}
	tables, err := deleteOrder(ctx, db)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Nothing is lost if the server crashes before this commit is on disk.
	if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return err
	}
	// Triggers that guard rows (audit_log is append-only) are off while
	// the rows go, and back on before the commit.
	triggers, err := userTriggers(ctx, tx)
	if err != nil {
		return err
	}
	for _, tr := range triggers {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+tr[0]+" DISABLE TRIGGER "+tr[1]); err != nil {
			return err
		}
	}
	for _, tb := range tables {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+tb); err != nil {
			return err
		}
	}
	for _, tr := range triggers {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+tr[0]+" ENABLE TRIGGER "+tr[1]); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `SELECT setval(s.seqrelid::regclass, s.seqstart, false)
		FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid WHERE c.relnamespace = 'public'::regnamespace`); err != nil {
		return err
	}
	return tx.Commit()
}

// userTriggers lists the enabled user triggers of public tables as
// {table, trigger} pairs, quoted.
func userTriggers(ctx context.Context, tx *sql.Tx) ([][2]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT quote_ident(c.relname), quote_ident(t.tgname) FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal AND t.tgenabled = 'O'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var tr [2]string
		if err := rows.Scan(&tr[0], &tr[1]); err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, rows.Err()
}

// deleteOrder lists the public tables except goose_db_version, every
// table before the tables its foreign keys reference.
func deleteOrder(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT quote_ident(c.relname),
			COALESCE((SELECT string_agg(quote_ident(p.relname), ' ') FROM pg_constraint f JOIN pg_class p ON p.oid = f.confrelid
				WHERE f.contype = 'f' AND f.conrelid = c.oid AND f.confrelid <> c.oid), '')
		FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
			AND c.relname <> 'goose_db_version' ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	refs := map[string][]string{} // table -> tables it references
	for rows.Next() {
		var n, r string
		if err := rows.Scan(&n, &r); err != nil {
			return nil, err
		}
		names = append(names, n)
		refs[n] = strings.Fields(r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Tables nothing unvisited references come first.
	referencedBy := map[string]int{}
	for _, n := range names {
		for _, r := range refs[n] {
			referencedBy[r]++
		}
	}
	var order []string
	done := map[string]bool{}
	for len(order) < len(names) {
		progress := false
		for _, n := range names {
			if done[n] || referencedBy[n] > 0 {
				continue
			}
			done[n], progress = true, true
			order = append(order, n)
			for _, r := range refs[n] {
				referencedBy[r]--
			}
		}
		if !progress {
			return nil, fmt.Errorf("foreign keys form a cycle")
		}
	}
	return order, nil
}

// schemaFingerprint digests what a test could change about a migrated
// database's schema: schemas, relations, columns, constraints, indexes,
// functions, triggers and the applied migrations.
func schemaFingerprint(ctx context.Context, db *sql.DB) (string, error) {
	var fp string
	err := db.QueryRowContext(ctx, `SELECT md5(COALESCE(string_agg(x, E'\n' ORDER BY x), '')) FROM (
		SELECT 'n ' || nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
		UNION ALL SELECT 'r ' || c.relname || ' ' || c.relkind::text FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
		UNION ALL SELECT 'a ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text
			|| ' ' || COALESCE(pg_get_expr(d.adbin, d.adrelid), '')
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
		UNION ALL SELECT 'c ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		UNION ALL SELECT 'i ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'f ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
		UNION ALL SELECT 't ' || tgrelid::regclass::text || ' ' || tgname || ' ' || tgenabled::text FROM pg_trigger t
			JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
		UNION ALL SELECT 'g ' || version_id || ' ' || is_applied FROM goose_db_version
	) f(x)`).Scan(&fp)
	return fp, err
}

// createFrom creates database name as a copy of tpl (or an empty
// database when tpl is ""). Copies of one template are taken one at a
// time; another copy in progress shows as the template being "accessed".
//
// Sessions on the database commit without waiting for the commit record
// to reach the disk (synchronous_commit off): what a session sees and
// what others see is unchanged, only a crash of the PostgreSQL server
// could lose the last commits, and a test server's many small
// transactions no longer wait for a disk flush each.
func createFrom(admin *sql.DB, name, tpl string) error {
	create := "CREATE DATABASE " + name
	if tpl != "" {
		create += " TEMPLATE " + tpl
	}
	var err error
	for try := 0; ; try++ {
		_, err = admin.Exec(create)
		if err == nil || try == 250 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	_, err = admin.Exec("ALTER DATABASE " + name + " SET synchronous_commit = off")
	return err
}
