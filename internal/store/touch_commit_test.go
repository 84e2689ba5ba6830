package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// insertSessions adds n live sessions of app "app" (benchApp's), each of its
// own key with an expiry, as the heartbeat reads them: session i has id
// %032x of i and token hash "tok-<i>".
func insertSessions(tb testing.TB, db *store.DB, n int) {
	tb.Helper()
	ctx := context.Background()
	exp := benchT0.Add(1000 * time.Hour)
	for c := 0; c < n; c += 10_000 {
		err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error {
			keys := make([]license.Key, min(10_000, n-c))
			for i := range keys {
				keys[i] = license.Key{AppID: "app", LicenseKey: fmt.Sprintf("KEY-AAAA-BBBB-%08d", c+i), Status: license.StatusActive,
					Type: license.TypeLifetime, MaxDevices: 1, ExpiresAt: &exp, CreatedAt: benchT0, UpdatedAt: benchT0}
			}
			if err := tx.InsertKeys(ctx, keys); err != nil {
				return err
			}
			for i := range keys {
				s := &license.Session{ID: fmt.Sprintf("%032x", c+i), TokenHash: fmt.Sprintf("tok-%d", c+i), AppID: "app",
					KeyID: &keys[i].ID, HWID: "hw", CreatedAt: benchT0, LastSeenAt: benchT0}
				if err := tx.InsertSession(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// touchesOf is the heartbeat touches at at of the sessions whose token
// hashes are tokens, each with the seen key its view gives.
func touchesOf(tb testing.TB, ls license.Store, tokens []string, at time.Time) []license.Touch {
	tb.Helper()
	out := make([]license.Touch, len(tokens))
	for i, tok := range tokens {
		v, err := ls.FreshHeartbeatView(context.Background(), tok)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = license.Touch{SeenKey: v.SeenKey, TokenHash: tok, At: at}
	}
	return out
}

// insertedTokens is the token hashes of insertSessions' first n sessions.
func insertedTokens(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tok-%d", i)
	}
	return out
}

// On SQLite a heartbeat flush is one commit however many statements it
// takes: each commit costs every read connection its page cache and memory
// map (BenchmarkHeartbeatViewWrites), so the flush of 1 200 sessions (three
// statements of at most 500) must not commit three times. Every session's
// new time is written.
func TestTouchSessionsCommitsOnceOnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := benchApp(t)
	ls := db.LicenseStore()
	const n = 1200
	insertSessions(t, db, n)
	later := benchT0.Add(time.Minute).Truncate(time.Millisecond)
	seen := touchesOf(t, ls, insertedTokens(n), later)
	b0, _ := db.WriteBatches()
	if err := ls.TouchSessions(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if b1, _ := db.WriteBatches(); b1-b0 != 1 {
		t.Errorf("a flush of %d sessions took %d commits, want 1", n, b1-b0)
	}
	for _, i := range []int{0, 499, 500, 1199} {
		var s *license.Session
		err := ls.InTx(ctx, func(tx license.Tx) (err error) {
			s, err = tx.SessionByID(ctx, fmt.Sprintf("%032x", i))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !s.LastSeenAt.Equal(later) {
			t.Errorf("session %d last seen %v, want %v", i, s.LastSeenAt, later)
		}
	}
}
