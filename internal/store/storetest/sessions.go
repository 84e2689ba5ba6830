package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

func testSessions(t *testing.T, db *store.DB) {
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	k, k2 := keys[0].ID, keys[1].ID
	// IDs sort differently from creation times: oldest first means by time.
	s1 := newSession("s-b", "app", k, t0)
	s2 := newSession("s-c", "app", k, t0.Add(time.Second))
	s3 := newSession("s-a", "app", k, t0.Add(-time.Second))
	sOther := newSession("s-other", "app", k2, t0)
	addSessions(t, db, s1, s2, s3, sOther)

	wantErr(t, "InsertSession with a taken ID", txErr(db, func(ctx context.Context, tx storeTx) error {
		s := newSession("s-b", "app", k, t0)
		s.TokenHash = "fresh"
		return tx.InsertSession(ctx, s)
	}), apperr.ErrConflict)
	wantErr(t, "InsertSession with a taken token hash", txErr(db, func(ctx context.Context, tx storeTx) error {
		s := newSession("s-new", "app", k, t0)
		s.TokenHash = s1.TokenHash
		return tx.InsertSession(ctx, s)
	}), apperr.ErrConflict)

	end := t0.Add(time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if err != nil {
			return err
		}
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-a", "s-b", "s-c"}) {
			t.Errorf("LiveSessionsOfKey = %v, want s-a, s-b, s-c (oldest first)", got)
		}
		if len(live) == 3 {
			checkSession(t, "LiveSessionsOfKey[1]", &live[1], s1)
		}
		got, err := tx.SessionByTokenHash(ctx, s1.TokenHash)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByTokenHash(live)", got, s1)
		got, err = tx.SessionByID(ctx, s2.ID)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByID(live)", got, s2)
		_, err = tx.SessionByTokenHash(ctx, "missing")
		wantErr(t, "SessionByTokenHash(missing)", err, apperr.ErrNotFound)
		_, err = tx.SessionByID(ctx, "missing")
		wantErr(t, "SessionByID(missing)", err, apperr.ErrNotFound)
		return tx.EndSession(ctx, s1.ID, license.CodeBanned, end)
	})

	// Ending an ended session changes nothing.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.EndSession(ctx, s1.ID, license.CodeSessionRevoked, end.Add(time.Hour)); err != nil {
			return err
		}
		return tx.EndSession(ctx, "missing", license.CodeSessionRevoked, end)
	})
	ended := *s1
	ended.EndedAt, ended.EndReason = &end, license.CodeBanned
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.SessionByTokenHash(ctx, s1.TokenHash)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByTokenHash(ended)", got, &ended)
		got, err = tx.SessionByID(ctx, s1.ID)
		if err != nil {
			return err
		}
		checkSession(t, "SessionByID(ended)", got, &ended)
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-a", "s-c"}) {
			t.Errorf("LiveSessionsOfKey after EndSession = %v, want s-a, s-c", got)
		}
		return err
	})

	reset := t0.Add(2 * time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		n, err := tx.EndKeySessions(ctx, k, license.CodeHWIDReset, reset)
		if err != nil {
			return err
		}
		if n != 2 {
			t.Errorf("EndKeySessions = %d, want 2 (the ended one is not counted)", n)
		}
		n, err = tx.EndKeySessions(ctx, k, license.CodeHWIDReset, reset)
		if n != 0 {
			t.Errorf("EndKeySessions again = %d, want 0", n)
		}
		return err
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		live, err := tx.LiveSessionsOfKey(ctx, k)
		if err != nil {
			return err
		}
		if len(live) != 0 {
			t.Errorf("LiveSessionsOfKey after EndKeySessions = %v, want none", sessionIDs(live))
		}
		for _, s := range []*license.Session{s2, s3} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			want := *s
			want.EndedAt, want.EndReason = &reset, license.CodeHWIDReset
			checkSession(t, "session after EndKeySessions", got, &want)
		}
		got, err := tx.SessionByID(ctx, s1.ID)
		if err != nil {
			return err
		}
		checkSession(t, "earlier ended session after EndKeySessions", got, &ended)
		live, err = tx.LiveSessionsOfKey(ctx, k2)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"s-other"}) {
			t.Errorf("other key's live sessions = %v, want s-other", got)
		}
		return err
	})
}

func testSessionListing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	ko := addKeys(t, db, newKey("other", "K-1"))[0]
	addSessions(t, db,
		newSession("s-1", "app", keys[0].ID, t0),
		newSession("s-2", "app", keys[1].ID, t0),
		newSession("s-3", "app", keys[0].ID, t0),
		newSession("s-4", "app", keys[0].ID, t0),
		newSession("s-5", "app", keys[1].ID, t0),
		newSession("s-o", "other", ko.ID, t0),
	)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.EndSession(ctx, "s-3", license.CodeSessionRevoked, t0); err != nil {
			return err
		}
		return tx.DeleteKey(ctx, keys[1].ID) // s-2, s-5 stay live without a key
	})
	cases := []struct {
		name string
		f    license.SessionFilter
		want []string
	}{
		{"live sessions of the app", license.SessionFilter{}, []string{"s-1", "s-2", "s-4", "s-5"}},
		{"of one key", license.SessionFilter{KeyID: keys[0].ID}, []string{"s-1", "s-4"}},
		{"cursor and limit", license.SessionFilter{After: "s-1", Limit: 2}, []string{"s-2", "s-4"}},
		{"cursor at the end", license.SessionFilter{After: "s-5"}, []string{}},
	}
	for _, c := range cases {
		f := c.f
		f.AppID = "app"
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := ls.Sessions(ctx, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(sessionIDs(got), c.want) {
			t.Errorf("%s: Sessions = %v, want %v", c.name, sessionIDs(got), c.want)
		}
	}
	got, err := ls.Sessions(ctx, license.SessionFilter{AppID: "app", Limit: 100})
	if err != nil || len(got) != 4 {
		t.Fatalf("Sessions = %v, %v", got, err)
	}
	want := newSession("s-1", "app", keys[0].ID, t0)
	checkSession(t, "listed session", &got[0], want)
	if got[0].LicenseKey != "K-1" {
		t.Errorf("listed session's LicenseKey = %q, want K-1 (joined)", got[0].LicenseKey)
	}
	if got[1].KeyID != nil || got[1].LicenseKey != "" {
		t.Errorf("session of a deleted key: KeyID %v, LicenseKey %q; want nil and empty", got[1].KeyID, got[1].LicenseKey)
	}
}

func testHeartbeatView(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	active := newKey("app", "K-ACTIVE")
	active.Status, active.ActivatedAt, active.ExpiresAt = license.StatusActive, ptr(t0), ptr(t0.Add(48*time.Hour))
	lifetime := newKey("app", "K-LIFE")
	lifetime.Status, lifetime.Type, lifetime.ActivatedAt = license.StatusActive, license.TypeLifetime, ptr(t0)
	keys := addKeys(t, db, active, lifetime)
	s1 := newSession("s-1", "app", keys[0].ID, t0)
	s2 := newSession("s-2", "app", keys[1].ID, t0)
	addSessions(t, db, s1, s2)

	view := func(hash string) *license.HeartbeatView {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, hash)
		if err != nil {
			t.Fatalf("HeartbeatView(%s): %v", hash, err)
		}
		return v
	}
	v := view(s1.TokenHash)
	// The view carries only the session fields the heartbeat decides on.
	var d diffs
	d.eq("Session.ID", v.Session.ID, s1.ID)
	d.eq("Session.TokenHash", v.Session.TokenHash, s1.TokenHash)
	d.eq("Session.AppID", v.Session.AppID, s1.AppID)
	d.eq("Session.KeyID", v.Session.KeyID, s1.KeyID)
	d.time("Session.LastSeenAt", v.Session.LastSeenAt, s1.LastSeenAt)
	d.optTime("Session.EndedAt", v.Session.EndedAt, s1.EndedAt)
	d.eq("Session.EndReason", v.Session.EndReason, s1.EndReason)
	d.eq("KeyExists", v.KeyExists, true)
	d.eq("KeyStatus", v.KeyStatus, license.StatusActive)
	d.optTime("KeyExpiry", v.KeyExpiry, active.ExpiresAt)
	d.eq("KeyString", v.KeyString, "K-ACTIVE")
	d.report(t, "HeartbeatView of a live session")
	if v := view(s2.TokenHash); v.KeyExpiry != nil || v.KeyStatus != license.StatusActive || v.KeyString != "K-LIFE" {
		t.Errorf("HeartbeatView of a lifetime key = %+v, want active, no expiry", v)
	}

	// The key's state is read fresh: a ban shows at once.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		k, err := tx.KeyForUpdate(ctx, "app", "K-ACTIVE")
		if err != nil {
			return err
		}
		k.Status = license.StatusBanned
		return tx.UpdateKey(ctx, k)
	})
	if v := view(s1.TokenHash); v.KeyStatus != license.StatusBanned || v.Session.EndedAt != nil {
		t.Errorf("HeartbeatView after a ban: status %s, ended %v; want banned, live", v.KeyStatus, v.Session.EndedAt)
	}

	// An ended session is still found, with its reason.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.EndSession(ctx, s1.ID, license.CodeBanned, t0.Add(time.Second))
	})
	if v := view(s1.TokenHash); v.Session.EndedAt == nil || v.Session.EndReason != license.CodeBanned {
		t.Errorf("HeartbeatView of an ended session: ended %v, reason %q; want ended, BANNED", v.Session.EndedAt, v.Session.EndReason)
	}

	// A deleted key leaves the session without key state.
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, keys[1].ID) })
	v = view(s2.TokenHash)
	if v.KeyExists || v.KeyStatus != "" || v.KeyExpiry != nil || v.KeyString != "" || v.Session.KeyID != nil {
		t.Errorf("HeartbeatView after the key was deleted = %+v, want no key state and a nil KeyID", v)
	}
	if v.Session.EndedAt != nil {
		t.Errorf("deleting a key ended its session in the store (ended_at %v)", v.Session.EndedAt)
	}

	_, err := ls.HeartbeatView(ctx, "missing")
	wantErr(t, "HeartbeatView(missing)", err, apperr.ErrNotFound)
}

func testTouchSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0].ID
	s1 := newSession("s-1", "app", k, t0)
	s2 := newSession("s-2", "app", k, t0)
	s3 := newSession("s-3", "app", k, t0)
	addSessions(t, db, s1, s2, s3)
	seen := func(s *license.Session) time.Time {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, s.TokenHash)
		if err != nil {
			t.Fatal(err)
		}
		return v.Session.LastSeenAt
	}
	// touchOf is the heartbeat's Touch of s at at, with the key its view
	// gives now.
	touchOf := func(s *license.Session, at time.Time) license.Touch {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, s.TokenHash)
		if err != nil {
			t.Fatal(err)
		}
		return license.Touch{SeenKey: v.SeenKey, TokenHash: s.TokenHash, At: at}
	}
	later := t0.Add(10 * time.Second)
	// s3's heartbeat is buffered, then s3 ends before the flush.
	t1, t2, t3 := touchOf(s1, later), touchOf(s2, t0.Add(5*time.Second)), touchOf(s3, later)
	if t1.SeenKey == 0 || t1.SeenKey == t2.SeenKey || t2.SeenKey == t3.SeenKey {
		t.Fatalf("seen keys of three live sessions: %d %d %d, want three", t1.SeenKey, t2.SeenKey, t3.SeenKey)
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.EndSession(ctx, s3.ID, license.CodeSessionRevoked, t0)
	})
	if k := touchOf(s3, later).SeenKey; k != 0 {
		t.Errorf("an ended session's view has seen key %d, want 0", k)
	}
	// A session opened after s3 ended never gets s3's key.
	s4 := newSession("s-4", "app", k, t0)
	addSessions(t, db, s4)
	t4 := touchOf(s4, t0.Add(7*time.Second))
	if t4.SeenKey == t3.SeenKey {
		t.Errorf("a new session got seen key %d of a session that ended", t4.SeenKey)
	}

	if err := ls.TouchSessions(ctx, nil); err != nil {
		t.Fatalf("TouchSessions(empty): %v", err)
	}
	missing := license.Touch{SeenKey: 1 << 40, TokenHash: "missing", At: later}
	if err := ls.TouchSessions(ctx, []license.Touch{t1, t2, t3, t4, missing, {TokenHash: "no key", At: later}}); err != nil {
		t.Fatal(err)
	}
	var d diffs
	d.time("s-1", seen(s1), later)
	d.time("s-2", seen(s2), t0.Add(5*time.Second))
	d.time("s-3 (ended)", seen(s3), t0)
	d.time("s-4", seen(s4), t0.Add(7*time.Second))
	d.report(t, "last seen after TouchSessions")

	// A time never moves backwards.
	if err := ls.TouchSessions(ctx, []license.Touch{touchOf(s1, t0.Add(time.Second))}); err != nil {
		t.Fatal(err)
	}
	if got := seen(s1); !got.Equal(stored(later)) {
		t.Errorf("an older touch moved last seen back to %v (was %v)", got, stored(later))
	}

	// A batch of several statements (the store writes 500 sessions a
	// statement), each session with its own time so a mixed-up pairing of
	// keys and times shows, with sessions ended after their touch was
	// taken, sessions already seen later than the touch, and unknown keys
	// spread through every chunk.
	const n = 1234
	var batch []*license.Session
	for i := range n {
		s := newSession(fmt.Sprintf("b-%04d", i), "app", k, t0)
		if i%7 == 3 {
			s.LastSeenAt = t0.Add(time.Hour) // seen later than the touch
		}
		batch = append(batch, s)
	}
	addSessions(t, db, batch...)
	var touch []license.Touch
	for i, s := range batch {
		touch = append(touch, touchOf(s, t0.Add(10*time.Second+time.Duration(i)*time.Millisecond)))
		if i%50 == 0 {
			touch = append(touch, license.Touch{SeenKey: 1<<40 + int64(i), TokenHash: "missing", At: t0.Add(time.Hour)})
		}
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i := 5; i < n; i += 11 {
			if err := tx.EndSession(ctx, batch[i].ID, license.CodeSessionRevoked, t0); err != nil {
				return err
			}
		}
		return nil
	})
	if err := ls.TouchSessions(ctx, touch); err != nil {
		t.Fatalf("TouchSessions(%d sessions): %v", len(touch), err)
	}
	var bd diffs
	for i, s := range batch {
		want := t0.Add(10*time.Second + time.Duration(i)*time.Millisecond)
		if i%11 == 5 || i%7 == 3 { // ended, or already seen later
			want = s.LastSeenAt
		}
		bd.time(s.ID, seen(s), want)
	}
	bd.report(t, "last seen after a multi-statement TouchSessions")
}

func testReapSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	now := t0
	cutoff, purge := now.Add(-180*time.Second), now.Add(-24*time.Hour)
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K"))[0].ID
	stale := newSession("stale", "app", k, now.Add(-time.Hour))
	stale.LastSeenAt = cutoff.Add(-time.Millisecond)
	boundary := newSession("boundary", "app", k, now.Add(-time.Hour))
	boundary.LastSeenAt = cutoff
	fresh := newSession("fresh", "app", k, now.Add(-100*time.Second))
	oldTomb := newSession("old-tomb", "app", k, now.Add(-48*time.Hour))
	newTomb := newSession("new-tomb", "app", k, now.Add(-48*time.Hour))
	addSessions(t, db, stale, boundary, fresh, oldTomb, newTomb)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.EndSession(ctx, oldTomb.ID, license.CodeBanned, purge.Add(-time.Millisecond)); err != nil {
			return err
		}
		return tx.EndSession(ctx, newTomb.ID, license.CodeBanned, purge.Add(time.Hour))
	})

	n, err := ls.ReapSessions(ctx, cutoff, now, purge)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("ReapSessions = %d, want 1 (only the stale session)", n)
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.SessionByID(ctx, stale.ID)
		if err != nil {
			return err
		}
		want := *stale
		want.EndedAt, want.EndReason = &now, license.CodeSessionExpired
		checkSession(t, "reaped session", got, &want)
		for _, s := range []*license.Session{boundary, fresh} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			if got.EndedAt != nil {
				t.Errorf("session %s (last seen %v, cutoff %v) was reaped", s.ID, s.LastSeenAt, cutoff)
			}
		}
		_, err = tx.SessionByID(ctx, oldTomb.ID)
		wantErr(t, "tombstone older than purgeBefore", err, apperr.ErrNotFound)
		if _, err := tx.SessionByID(ctx, newTomb.ID); err != nil {
			t.Errorf("recent tombstone was purged: %v", err)
		}
		return nil
	})
	if n, err := ls.ReapSessions(ctx, cutoff, now, purge); err != nil || n != 0 {
		t.Errorf("second ReapSessions = %d, %v; want 0", n, err)
	}

	// More silent sessions than one statement ends (they go in parts),
	// among as many that are not silent: all of those and none of these.
	var many []*license.Session
	for i := range 2400 {
		s := newSession(fmt.Sprintf("many-%04d", i), "app", k, now.Add(-time.Hour))
		if i%2 == 1 {
			s.LastSeenAt = now
		}
		many = append(many, s)
	}
	addSessions(t, db, many...)
	if n, err := ls.ReapSessions(ctx, cutoff, now, purge); err != nil || n != 1200 {
		t.Errorf("ReapSessions of 1 200 silent sessions among 2 400 = %d, %v", n, err)
	}
	var live int
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for i, s := range many {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			if ended := got.EndedAt != nil; ended != (i%2 == 0) {
				t.Errorf("session %s (last seen %v) ended: %v", s.ID, s.LastSeenAt, ended)
			}
			if got.EndedAt == nil {
				live++
			}
		}
		return nil
	})
	if live != 1200 {
		t.Errorf("%d of the 2 400 left live, want 1 200", live)
	}
}

// ---- transactions ----
