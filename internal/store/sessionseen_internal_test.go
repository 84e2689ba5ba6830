package store

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// farFuture is what migration 00028 leaves in a live session's
// sessions.last_seen_at: 9999-12-31T23:59:59.999Z in milliseconds.
const farFuture = 253402300799999

// seenEngines runs f on a fresh, unmigrated database of each engine (the
// PostgreSQL one only when KEYWARD_TEST_DATABASE_URL is set, saying so).
func seenEngines(t *testing.T, f func(t *testing.T, db *DB)) {
	for _, e := range []Engine{SQLite, Postgres} {
		t.Run(string(e), func(t *testing.T) {
			if e == Postgres {
				postgresOnly(t)
			}
			db, err := Open(context.Background(), freshOptions(t, e))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			f(t, db)
		})
	}
}

// queryInt reads one integer on the reader pool.
func queryInt(t *testing.T, db *DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.read.QueryRowContext(context.Background(), db.rebind(q), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// sessionSeen reads session id's last-seen time as the store gives it.
func sessionSeen(t *testing.T, db *DB, id string) time.Time {
	t.Helper()
	var s *license.Session
	err := db.LicenseStore().InTx(context.Background(), func(tx license.Tx) (err error) {
		s, err = tx.SessionByID(context.Background(), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.LastSeenAt
}

// Migration 00028 moves each live session's last-seen time into
// session_seen and leaves ended sessions as they were. A keyward older than
// it, reading sessions.last_seen_at during a rolling upgrade, finds every
// live session fresh — its reaper ends none — and a session it opens gets
// its row like any other. Going down puts every time back.
func TestSessionSeenMigration(t *testing.T) {
	seenEngines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		p, err := db.provider()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, 27); err != nil {
			t.Fatal(err)
		}
		t0 := ms(cacheT0)
		exec(t, db, `INSERT INTO apps (id, name, secret, secret_hash, created_at, updated_at) VALUES ('app', 'App', 's', 'h', ?, ?)`, t0, t0)
		exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at) VALUES ('live', 'tok-live', 'app', 'hw', ?, ?)`, t0, t0+5000)
		exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at, ended_at, end_reason)
			VALUES ('ended', 'tok-ended', 'app', 'hw', ?, ?, ?, 'BANNED')`, t0, t0+2000, t0+3000)
		if _, err := p.UpTo(ctx, 28); err != nil {
			t.Fatal(err)
		}

		if got := sessionSeen(t, db, "live"); !got.Equal(fromMS(t0 + 5000)) {
			t.Errorf("a live session's last seen after the migration = %v, want %v", got, fromMS(t0+5000))
		}
		if got := sessionSeen(t, db, "ended"); !got.Equal(fromMS(t0 + 2000)) {
			t.Errorf("an ended session's last seen after the migration = %v, want %v", got, fromMS(t0+2000))
		}
		if n := queryInt(t, db, `SELECT COUNT(*) FROM session_seen`); n != 1 {
			t.Errorf("%d session_seen rows after the migration, want 1 (the live session's)", n)
		}
		// The older keyward's reaper: nothing is silent, even a year on.
		if n := queryInt(t, db, `SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL AND last_seen_at < ?`, t0+365*24*3_600_000); n != 0 {
			t.Errorf("an older keyward's reaper finds %d silent sessions, want 0", n)
		}
		if v := queryInt(t, db, `SELECT last_seen_at FROM sessions WHERE id = 'live'`); v != farFuture {
			t.Errorf("a live session's sessions.last_seen_at = %d, want %d", v, int64(farFuture))
		}
		// A session the older keyward opens, as it wrote them.
		exec(t, db, `INSERT INTO sessions (id, token_hash, app_id, hwid, created_at, last_seen_at) VALUES ('late', 'tok-late', 'app', 'hw', ?, ?)`, t0+6000, t0+7000)
		v, err := db.LicenseStore().HeartbeatView(ctx, "tok-late")
		if err != nil {
			t.Fatal(err)
		}
		if v.SeenKey == 0 || !v.Session.LastSeenAt.Equal(fromMS(t0+7000)) {
			t.Errorf("a session inserted without a key: seen key %d, last seen %v; want a key and %v", v.SeenKey, v.Session.LastSeenAt, fromMS(t0+7000))
		}
		if db.engine == Postgres {
			// The older keyward's last flush, through 00026's function.
			var tok string
			var at int64
			err := db.read.QueryRowContext(ctx, `SELECT touched_token, touched_at FROM keyward_touch_sessions($1, $2)`,
				[]string{"late"}, []int64{t0 + 8000}).Scan(&tok, &at)
			if err != nil || tok != "tok-late" || at != t0+8000 {
				t.Errorf("an older keyward's flush: %q %d %v; want tok-late, %d", tok, at, err, t0+8000)
			}
			if got := sessionSeen(t, db, "late"); !got.Equal(fromMS(t0 + 8000)) {
				t.Errorf("after an older keyward's flush, last seen = %v, want %v", got, fromMS(t0+8000))
			}
		}
		live, err := db.LicenseStore().HeartbeatView(ctx, "tok-live")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.LicenseStore().TouchSessions(ctx, []license.Touch{{SeenKey: live.SeenKey, TokenHash: "tok-live", At: fromMS(t0 + 9000)}}); err != nil {
			t.Fatal(err)
		}

		if _, err := p.DownTo(ctx, 27); err != nil {
			t.Fatal(err)
		}
		late := t0 + 7000
		if db.engine == Postgres {
			late = t0 + 8000
		}
		for id, want := range map[string]int64{"live": t0 + 9000, "late": late, "ended": t0 + 2000} {
			if got := queryInt(t, db, `SELECT last_seen_at FROM sessions WHERE id = ?`, id); got != want {
				t.Errorf("after going down, %s's last_seen_at = %d, want %d", id, got, want)
			}
		}
	})
}

// A session's session_seen row lives as long as it does: when it ends, the
// row's time moves into the session and the row goes, and deleting a live
// session (here with its app) deletes its row.
func TestSessionSeenFollowsTheSession(t *testing.T) {
	seenEngines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		ls := db.LicenseStore()
		t0 := ms(cacheT0)
		exec(t, db, `INSERT INTO apps (id, name, secret, secret_hash, created_at, updated_at) VALUES ('app', 'App', 's', 'h', ?, ?)`, t0, t0)
		err := ls.InTx(ctx, func(tx license.Tx) error {
			for _, id := range []string{"a", "b", "c"} {
				s := &license.Session{ID: id, TokenHash: "tok-" + id, AppID: "app", HWID: "hw", CreatedAt: cacheT0, LastSeenAt: cacheT0}
				if err := tx.InsertSession(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var touches []license.Touch
		for _, id := range []string{"a", "b"} {
			v, err := ls.HeartbeatView(ctx, "tok-"+id)
			if err != nil {
				t.Fatal(err)
			}
			touches = append(touches, license.Touch{SeenKey: v.SeenKey, TokenHash: "tok-" + id, At: fromMS(t0 + 9000)})
		}
		if err := ls.TouchSessions(ctx, touches); err != nil {
			t.Fatal(err)
		}
		err = ls.InTx(ctx, func(tx license.Tx) error {
			return tx.EndSession(ctx, "a", license.CodeSessionRevoked, fromMS(t0+10_000))
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := sessionSeen(t, db, "a"); !got.Equal(fromMS(t0 + 9000)) {
			t.Errorf("an ended session's last seen = %v, want its last heartbeat's %v", got, fromMS(t0+9000))
		}
		if n := queryInt(t, db, `SELECT COUNT(*) FROM session_seen`); n != 2 {
			t.Errorf("%d session_seen rows with two sessions live, want 2", n)
		}
		if n := queryInt(t, db, `SELECT COUNT(*) FROM sessions WHERE seen_key IS NOT NULL`); n != 2 {
			t.Errorf("%d sessions keep a seen key with two live, want 2", n)
		}
		err = ls.InTx(ctx, func(tx license.Tx) error { return tx.DeleteApp(ctx, "app") })
		if err != nil {
			t.Fatal(err)
		}
		if n := queryInt(t, db, `SELECT COUNT(*) FROM session_seen`); n != 0 {
			t.Errorf("%d session_seen rows after the app and its sessions were deleted, want 0", n)
		}
	})
}
