package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// gooseTable is goose's version table, filled by Migrate on the target and
// never copied.
const gooseTable = "goose_db_version"

// TableReport is the outcome of moving one table: the rows and the
// checksum each side holds (SHA-256 over a canonical rendering of every row,
// ordered by primary key).
type TableReport struct {
	Table                string
	SourceRows, DestRows int64
	SourceSum, DestSum   string
}

// OK reports whether both sides agree.
func (r TableReport) OK() bool {
	return r.SourceRows == r.DestRows && r.SourceSum == r.DestSum
}

// MoveReport is what MoveToPostgres did.
type MoveReport struct {
	Version int64
	Tables  []TableReport
}

// ErrNotEmpty is returned by MoveToPostgres when the target database holds
// rows.
var ErrNotEmpty = errors.New("the target PostgreSQL database is not empty")

type moveTable struct {
	name    string
	cols    []string
	pgTypes []string // information_schema data_type per column
	pk      []string // primary key columns in key order (all columns when none)
	deps    []string // tables its foreign keys reference
}

// MoveToPostgres copies the SQLite database in dataDir, opened read-only,
// into the PostgreSQL database at url, which must be empty (no tables, or
// keyward's tables without rows). It migrates the target to the source's
// schema version, copies every table in foreign-key order with COPY in one
// transaction (primary keys unchanged, SQLite integers turned into booleans
// where the PostgreSQL column is boolean), moves the sequences past the
// copied ids, and verifies every table's row count and checksum before
// committing. On a mismatch nothing is committed and the report says where.
func MoveToPostgres(ctx context.Context, dataDir, url string) (*MoveReport, error) {
	path := filepath.Join(dataDir, DBFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no SQLite database in %s: %w", dataDir, err)
	}
	srcDB, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	defer srcDB.Close()
	srcDB.SetMaxOpenConns(1)
	src := &DB{engine: SQLite, write: srcDB, read: srcDB, lockPath: filepath.Join(dataDir, "migrate.lock")}
	if err := src.CheckSchema(ctx); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	version, err := src.version(ctx)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}

	dst, err := openPostgres(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := dst.checkEmpty(ctx); err != nil {
		dst.Close()
		return nil, err
	}
	dstVersion, err := dst.Migrate(ctx)
	dst.Close()
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if dstVersion != version {
		return nil, fmt.Errorf("schema versions differ: SQLite at %d, PostgreSQL at %d", version, dstVersion)
	}

	// One read transaction: the copy and its verification see one snapshot.
	stx, err := srcDB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer stx.Rollback()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.Background())
	tables, err := moveTables(ctx, stx, conn)
	if err != nil {
		return nil, err
	}
	ptx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer ptx.Rollback(context.Background())
	if err := checkEmptyTx(ctx, ptx, tables); err != nil {
		return nil, err
	}
	rep := &MoveReport{Version: version}
	for _, t := range tables {
		r := TableReport{Table: t.name}
		cs := &copySource{t: t, h: sha256.New()}
		rows, err := stx.QueryContext(ctx, "SELECT "+quoteCols(t.cols)+" FROM "+quoteIdent(t.name)+" ORDER BY "+orderBy(t, false))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.name, err)
		}
		cs.rows = rows
		_, err = ptx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, cs)
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
		if cs.err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, cs.err)
		}
		// The source's own count, beside the rows the copy streamed.
		if err := stx.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(t.name)).Scan(&r.SourceRows); err != nil {
			return nil, err
		}
		if r.SourceRows != cs.n {
			return nil, fmt.Errorf("copy %s: read %d rows of %d", t.name, cs.n, r.SourceRows)
		}
		r.SourceSum = hex.EncodeToString(cs.h.Sum(nil))
		rep.Tables = append(rep.Tables, r)
	}
	if err := resetSequences(ctx, stx, ptx); err != nil {
		return nil, err
	}
	bad := 0
	for i, t := range tables {
		r := &rep.Tables[i]
		if r.DestRows, r.DestSum, err = pgChecksum(ctx, ptx, t); err != nil {
			return nil, fmt.Errorf("verify %s: %w", t.name, err)
		}
		if !r.OK() {
			bad++
		}
	}
	if bad > 0 {
		return rep, fmt.Errorf("verification failed for %d tables: nothing was committed", bad)
	}
	if err := ptx.Commit(ctx); err != nil {
		return rep, fmt.Errorf("commit: %w", err)
	}
	return rep, nil
}

// version is the schema version the database is at.
func (db *DB) version(ctx context.Context) (int64, error) {
	p, err := db.provider()
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// checkEmpty refuses a PostgreSQL database with rows in any table (goose's
// version table apart); its schema version is compared after Migrate.
func (db *DB) checkEmpty(ctx context.Context) error {
	rows, err := db.read.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range names {
		if n == gooseTable {
			continue
		}
		var any bool
		if err := db.read.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+quoteIdent(n)+")").Scan(&any); err != nil {
			return err
		}
		if any {
			return fmt.Errorf("%w: table %s has rows", ErrNotEmpty, n)
		}
	}
	return nil
}

func checkEmptyTx(ctx context.Context, tx pgx.Tx, tables []moveTable) error {
	for _, t := range tables {
		var any bool
		// LOCK: no other process may write into the target while it is filled.
		if _, err := tx.Exec(ctx, "LOCK TABLE "+quoteIdent(t.name)+" IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+quoteIdent(t.name)+")").Scan(&any); err != nil {
			return err
		}
		if any {
			return fmt.Errorf("%w: table %s has rows", ErrNotEmpty, t.name)
		}
	}
	return nil
}

// moveTables discovers the source's tables from sqlite_master, matches
// their columns with the target's and orders them so that every table
// comes after the tables its foreign keys reference.
func moveTables(ctx context.Context, stx *sql.Tx, conn *pgx.Conn) ([]moveTable, error) {
	names, err := stringsOf(stx.QueryContext(ctx, `SELECT name FROM sqlite_master
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> ? ORDER BY name`, gooseTable))
	if err != nil {
		return nil, fmt.Errorf("source tables: %w", err)
	}
	pgTables, err := pgStrings(ctx, conn, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> $1 ORDER BY table_name`, gooseTable)
	if err != nil {
		return nil, fmt.Errorf("target tables: %w", err)
	}
	if !slices.Equal(names, pgTables) {
		return nil, fmt.Errorf("the schemas differ: SQLite has tables %v, PostgreSQL %v", names, pgTables)
	}
	byName := map[string]*moveTable{}
	var all []*moveTable
	for _, n := range names {
		t := &moveTable{name: n}
		rows, err := stx.QueryContext(ctx, `SELECT name, pk FROM pragma_table_info(?) ORDER BY cid`, n)
		if err != nil {
			return nil, err
		}
		pk := map[int]string{}
		for rows.Next() {
			var c string
			var k int
			if err := rows.Scan(&c, &k); err != nil {
				rows.Close()
				return nil, err
			}
			t.cols = append(t.cols, c)
			if k > 0 {
				pk[k] = c
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for k := 1; k <= len(pk); k++ {
			t.pk = append(t.pk, pk[k])
		}
		if len(t.pk) == 0 {
			t.pk = t.cols
		}
		if t.deps, err = stringsOf(stx.QueryContext(ctx, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`, n)); err != nil {
			return nil, err
		}
		pgCols := map[string]string{}
		prow, err := conn.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1`, n)
		if err != nil {
			return nil, err
		}
		for prow.Next() {
			var c, typ string
			if err := prow.Scan(&c, &typ); err != nil {
				prow.Close()
				return nil, err
			}
			pgCols[c] = typ
		}
		prow.Close()
		if err := prow.Err(); err != nil {
			return nil, err
		}
		if len(pgCols) != len(t.cols) {
			return nil, fmt.Errorf("the schemas differ: %s has %d columns in SQLite, %d in PostgreSQL", n, len(t.cols), len(pgCols))
		}
		for _, c := range t.cols {
			typ, ok := pgCols[c]
			if !ok {
				return nil, fmt.Errorf("the schemas differ: PostgreSQL's %s has no column %s", n, c)
			}
			t.pgTypes = append(t.pgTypes, typ)
		}
		byName[n] = t
		all = append(all, t)
	}
	// Depth-first topological order; names are sorted, so it is stable.
	var out []moveTable
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(t *moveTable) error
	visit = func(t *moveTable) error {
		switch state[t.name] {
		case 1:
			return fmt.Errorf("foreign keys form a cycle through %s", t.name)
		case 2:
			return nil
		}
		state[t.name] = 1
		for _, d := range t.deps {
			if dt, ok := byName[d]; ok && d != t.name {
				if err := visit(dt); err != nil {
					return err
				}
			}
		}
		state[t.name] = 2
		out = append(out, *t)
		return nil
	}
	for _, t := range all {
		if err := visit(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copySource streams a source table into CopyFrom, converting each value to
// its PostgreSQL column's type and hashing the converted row.
type copySource struct {
	t    moveTable
	rows *sql.Rows
	h    hash.Hash
	vals []any
	n    int64
	err  error
}

func (c *copySource) Next() bool {
	if c.err != nil || !c.rows.Next() {
		return false
	}
	raw := make([]any, len(c.t.cols))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if c.err = c.rows.Scan(ptrs...); c.err != nil {
		return false
	}
	for i, v := range raw {
		if raw[i], c.err = convert(v, c.t.pgTypes[i]); c.err != nil {
			c.err = fmt.Errorf("column %s: %w", c.t.cols[i], c.err)
			return false
		}
	}
	c.vals = raw
	c.n++
	writeRow(c.h, raw)
	return true
}

func (c *copySource) Values() ([]any, error) { return c.vals, c.err }

func (c *copySource) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.rows.Err()
}

// convert turns a value SQLite returned into the Go value of the
// PostgreSQL column type: integers stay int64 (booleans for boolean
// columns), text stays string.
func convert(v any, pgType string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch pgType {
	case "boolean":
		switch x := v.(type) {
		case int64:
			if x != 0 && x != 1 {
				return nil, fmt.Errorf("%d is not a boolean", x)
			}
			return x == 1, nil
		case bool:
			return x, nil
		}
	case "bigint", "integer", "smallint":
		switch x := v.(type) {
		case int64:
			return x, nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case "text", "character varying":
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	default:
		return nil, fmt.Errorf("PostgreSQL type %s is not supported by the mover", pgType)
	}
	return nil, fmt.Errorf("SQLite value %T does not fit PostgreSQL type %s", v, pgType)
}

// writeRow adds a canonical rendering of a row to h: each value tagged by
// kind, text length-prefixed, so different rows never render alike.
func writeRow(h hash.Hash, vals []any) {
	var b []byte
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b = append(b, 'N')
		case int64:
			b = append(b, 'i')
			b = strconv.AppendInt(b, x, 10)
		case int32:
			b = append(b, 'i')
			b = strconv.AppendInt(b, int64(x), 10)
		case int16:
			b = append(b, 'i')
			b = strconv.AppendInt(b, int64(x), 10)
		case bool:
			if x {
				b = append(b, 'T')
			} else {
				b = append(b, 'F')
			}
		case string:
			b = append(b, 's')
			b = strconv.AppendInt(b, int64(len(x)), 10)
			b = append(b, ':')
			b = append(b, x...)
		default:
			b = fmt.Appendf(b, "?%T:%v", v, v)
		}
		b = append(b, ';')
	}
	b = append(b, '\n')
	h.Write(b)
}

// pgChecksum counts and hashes a target table as PostgreSQL returns it,
// ordered as the source was read (text in byte order, NULLs first).
func pgChecksum(ctx context.Context, tx pgx.Tx, t moveTable) (int64, string, error) {
	var n int64
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+quoteIdent(t.name)).Scan(&n); err != nil {
		return 0, "", err
	}
	rows, err := tx.Query(ctx, "SELECT "+quoteCols(t.cols)+" FROM "+quoteIdent(t.name)+" ORDER BY "+orderBy(t, true))
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	h := sha256.New()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return 0, "", err
		}
		writeRow(h, vals)
	}
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// resetSequences moves every PostgreSQL sequence owned by a column past the
// highest copied id, and past SQLite's AUTOINCREMENT counter, so ids of
// deleted rows are not handed out again either.
func resetSequences(ctx context.Context, stx *sql.Tx, ptx pgx.Tx) error {
	used := map[string]int64{}
	var has bool
	if err := stx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence')`).Scan(&has); err != nil {
		return err
	}
	if has {
		rows, err := stx.QueryContext(ctx, `SELECT name, seq FROM sqlite_sequence`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var n string
			var s int64
			if err := rows.Scan(&n, &s); err != nil {
				rows.Close()
				return err
			}
			used[n] = s
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	rows, err := ptx.Query(ctx, `SELECT table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name)
		FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%' ORDER BY table_name`)
	if err != nil {
		return err
	}
	type seq struct{ table, col, name string }
	var seqs []seq
	for rows.Next() {
		var s seq
		var name *string
		if err := rows.Scan(&s.table, &s.col, &name); err != nil {
			rows.Close()
			return err
		}
		if name != nil {
			s.name = *name
			seqs = append(seqs, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range seqs {
		var max int64
		if err := ptx.QueryRow(ctx, "SELECT COALESCE(MAX("+quoteIdent(s.col)+"), 0) FROM "+quoteIdent(s.table)).Scan(&max); err != nil {
			return err
		}
		if u := used[s.table]; u > max {
			max = u
		}
		if max > 0 {
			_, err = ptx.Exec(ctx, "SELECT setval($1, $2, true)", s.name, max)
		} else {
			_, err = ptx.Exec(ctx, "SELECT setval($1, 1, false)", s.name)
		}
		if err != nil {
			return fmt.Errorf("sequence of %s.%s: %w", s.table, s.col, err)
		}
	}
	return nil
}

func orderBy(t moveTable, pg bool) string {
	parts := make([]string, len(t.pk))
	for i, c := range t.pk {
		parts[i] = quoteIdent(c)
		if pg {
			if typ := t.pgTypes[slices.Index(t.cols, c)]; typ == "text" || typ == "character varying" {
				parts[i] += ` COLLATE "C"`
			}
			parts[i] += " NULLS FIRST"
		}
	}
	return strings.Join(parts, ", ")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteCols(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c)
	}
	return strings.Join(q, ", ")
}

func stringsOf(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func pgStrings(ctx context.Context, conn *pgx.Conn, q string, args ...any) ([]string, error) {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
