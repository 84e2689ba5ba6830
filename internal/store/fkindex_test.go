package store

import (
	"context"
	"slices"
	"testing"
)

// unindexedForeignKeys are the foreign keys allowed without an index that a
// lookup by the child column can use, and why: each is looked up once per
// deleted parent row, and these parents go one at a time or a few at once,
// so a deletion reads the child table once or a few times. A key, an
// account or a session is deleted by the thousand when an app goes (a
// cascade), so a foreign key to one of them must be indexed.
var unindexedForeignKeys = map[string]string{
	"sessions.app_id":       "an app is deleted alone (sessions_app_live holds its live sessions)",
	"license_files.app_id":  "an app is deleted alone",
	"orders.plan_id":        "an app has a few price plans",
	"subscriptions.plan_id": "an app has a few price plans",
}

// TestForeignKeysHaveIndexes: the column of every foreign key leads an
// index that is not partial (a foreign key's lookup cannot use a partial
// one), except those listed in unindexedForeignKeys. Without one, every
// parent row deleted reads the whole child table: deleting an app with
// 100 000 keys sets the key of its sessions to NULL one key at a time, each
// a full read of sessions, and does not finish on PostgreSQL.
func TestForeignKeysHaveIndexes(t *testing.T) {
	cacheEngines(t, func(t *testing.T, e Engine) {
		ctx := context.Background()
		db, _ := freshDB(t, e)
		q := sqliteUnindexedForeignKeys
		if e == Postgres {
			q = pgUnindexedForeignKeys
		}
		missing, err := stringsOf(db.read.QueryContext(ctx, q))
		if err != nil {
			t.Fatal(err)
		}
		for _, fk := range missing {
			if _, ok := unindexedForeignKeys[fk]; !ok {
				t.Errorf("foreign key %s has no index a lookup by it can use", fk)
			}
		}
		for fk := range unindexedForeignKeys {
			if !slices.Contains(missing, fk) {
				t.Errorf("unindexedForeignKeys lists %s, which is indexed (or gone): take it off the list", fk)
			}
		}
	})
}

// sqliteUnindexedForeignKeys lists table.column of each single-column
// foreign key whose column leads no full index (nor is the rowid).
const sqliteUnindexedForeignKeys = `
SELECT DISTINCT m.name || '.' || f."from"
FROM sqlite_schema m, pragma_foreign_key_list(m.name) f
WHERE m.type = 'table'
  AND NOT EXISTS (SELECT 1 FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id AND g.seq > 0)
  AND NOT EXISTS (
    SELECT 1 FROM pragma_index_list(m.name) il, pragma_index_info(il.name) ii
    WHERE il.partial = 0 AND ii.seqno = 0 AND ii.name = f."from")
  AND NOT EXISTS (
    SELECT 1 FROM pragma_table_info(m.name) c
    WHERE c.name = f."from" AND c.pk = 1 AND upper(c.type) = 'INTEGER')
ORDER BY 1`

// pgUnindexedForeignKeys is sqliteUnindexedForeignKeys on PostgreSQL, in
// the current schema.
const pgUnindexedForeignKeys = `
SELECT DISTINCT c.conrelid::regclass::text || '.' || a.attname
FROM pg_constraint c
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
WHERE c.contype = 'f' AND cardinality(c.conkey) = 1
  AND c.connamespace = current_schema()::regnamespace
  AND NOT EXISTS (
    SELECT 1 FROM pg_index i
    WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1] AND i.indpred IS NULL)
ORDER BY 1`
