package kwtest

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"sync"

	"github.com/keyward/keyward/internal/store"
)

// The migrated template database is named after the migrations' digest,
// kw_tpl_<digest>, so each change to the migrations makes a new one. Old
// ones would pile up on a developer's PostgreSQL, one per change, so every
// test process drops those no live test process uses, and the builds
// (kw_tplb_…) a killed process left half done. Which are in use is told by
// advisory locks: a test process holds the lock (tplLockClass, hash of the
// template's name) shared for as long as it runs, and a build's lock
// shared while it builds; a process drops a database only when it can
// take that lock exclusively, and only while nobody is connected to it.

// tplLockClass is the first key of the templates' advisory locks; the
// second is the hash of the template's or build's name.
var tplLockClass = int32(fnv32("keyward kwtest template"))

func tplLockKey(name string) int32 { return int32(fnv32(name)) }

var template struct {
	once sync.Once
	name string
	err  error
	// hold is the connection holding this process's shared lock on its
	// template, open until the process exits.
	hold *sql.Conn
}

// migratedTemplate returns the name of the migrated template database on
// the server of base, building it when no test process has: migrated under
// a temporary name, then renamed, so a template that exists is complete.
// It then drops the templates of other digests that no process uses.
func migratedTemplate(base string) (string, error) {
	template.once.Do(func() {
		name := "kw_tpl_" + store.MigrationsDigest()[:16]
		admin, err := sql.Open("pgx", base)
		if err != nil {
			template.err = err
			return
		}
		ctx := context.Background()
		// The admin handle stays open with the lock's connection: closing
		// a *sql.DB closes its connections, and the lock with them.
		template.hold, err = admin.Conn(ctx)
		if err == nil {
			_, err = template.hold.ExecContext(ctx, `SELECT pg_advisory_lock_shared($1, $2)`, tplLockClass, tplLockKey(name))
		}
		if err != nil {
			admin.Close()
			template.err = err
			return
		}
		exists := func() bool {
			var one int
			return admin.QueryRow(`SELECT 1 FROM pg_database WHERE datname = $1`, name).Scan(&one) == nil
		}
		if !exists() {
			if err := buildTemplate(ctx, admin, base, name); err != nil && !exists() { // another process may have won the rename
				template.err = err
				return
			}
		}
		template.name = name
		template.err = dropStaleTemplates(ctx, admin, name)
	})
	return template.name, template.err
}

// buildTemplate migrates a new database and renames it name, holding its
// build's lock (on template.hold) meanwhile.
func buildTemplate(ctx context.Context, admin *sql.DB, base, name string) error {
	build := randomName("kw_tplb_")
	key := tplLockKey(build)
	if _, err := template.hold.ExecContext(ctx, `SELECT pg_advisory_lock_shared($1, $2)`, tplLockClass, key); err != nil {
		return err
	}
	defer template.hold.ExecContext(ctx, `SELECT pg_advisory_unlock_shared($1, $2)`, tplLockClass, key)
	if _, err := admin.Exec("CREATE DATABASE " + build); err != nil {
		return err
	}
	u, _ := url.Parse(base)
	u.Path = "/" + build
	db, err := store.Open(ctx, store.Options{URL: u.String()})
	if err == nil {
		_, err = db.Migrate(ctx)
		db.Close()
	}
	if err == nil {
		_, err = admin.Exec("ALTER DATABASE " + build + " RENAME TO " + name)
	}
	if err != nil {
		admin.Exec("DROP DATABASE IF EXISTS " + build + " WITH (FORCE)")
	}
	return err
}

// dropStaleTemplates drops the templates other than keep, and the builds,
// that no test process holds (see the top of this file). A database
// someone is connected to is left alone (and DROP DATABASE without FORCE
// refuses one someone connects to meanwhile).
func dropStaleTemplates(ctx context.Context, admin *sql.DB, keep string) error {
	stale, err := names(ctx, admin, `SELECT datname FROM pg_database
		WHERE (datname LIKE 'kw\_tpl\_%' AND datname <> $1) OR datname LIKE 'kw\_tplb\_%'`, keep)
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, name := range stale {
		if strings.ContainsFunc(name, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
			continue // not a name this package made
		}
		// DROP DATABASE waits up to five seconds for others to leave before
		// it refuses, so a database in use is passed over at once.
		var ok bool
		if conn.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = $1)`, name).Scan(&ok) != nil || !ok {
			continue
		}
		dropUnheld(ctx, conn, name, tplLockClass, tplLockKey(name))
	}
	return nil
}
