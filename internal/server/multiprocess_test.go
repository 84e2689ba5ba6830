package server_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Two keyward processes share one PostgreSQL database (and one clock, as
// servers behind one load balancer would share real time).
func startPostgresPair(t *testing.T) (a, b *kwtest.Server) {
	t.Helper()
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" {
		t.Skip("KEYWARD_TEST_DATABASE_URL is not set")
	}
	url := kwtest.PostgresURL(t)
	clock := kwtest.NewClock()
	a = kwtest.Start(t, kwtest.Options{DatabaseURL: url, Clock: clock})
	b = kwtest.Start(t, kwtest.Options{DatabaseURL: url, Clock: clock})
	return a, b
}

// Two keyward processes share one SQLite data directory (WAL, busy_timeout,
// one writer connection each). The second starts after the first migrated.
func startSQLitePair(t *testing.T) (a, b *kwtest.Server) {
	t.Helper()
	clock := kwtest.NewClock()
	a = kwtest.Start(t, kwtest.Options{Clock: clock})
	b = kwtest.Start(t, kwtest.Options{DataDir: a.DataDir, Clock: clock})
	return a, b
}

func TestKillSwitchAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	killSwitchAcrossServers(t, startPostgresPair)
}

func TestKillSwitchAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	killSwitchAcrossServers(t, startSQLitePair)
}

func TestReplayAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	replayAcrossServers(t, startPostgresPair)
}

func TestReplayAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	replayAcrossServers(t, startSQLitePair)
}

// A ban through one server ends the session at its next heartbeat through
// the other, and a session revoked through one is refused by the other.
func killSwitchAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Shared")
	key := appA.GenerateKeys(1, "days", 30, 2)[0]
	appB := b.NewApp(appA.ID, appA.Secret)

	sid := appB.Login(key, "pc-1")
	if r := appA.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through A of a session opened through B: %v", r)
	}
	// B too has the session in its session cache now.
	if r := appB.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through B: %v", r)
	}
	if r := appA.KeyAction("ban", key, map[string]any{"reason": "chargeback"}); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("ban through A: %v", r)
	}
	// What B hears of A's write a moment later (PostgreSQL: a
	// notification; SQLite: its check of the file's version), now.
	b.SeeOtherProcesses()
	kwtest.ExpectCode(t, appB.Heartbeat(sid, key), 200, "BANNED")
	// The tombstone answers the same code through either server.
	kwtest.ExpectCode(t, appA.Heartbeat(sid, key), 200, "BANNED")

	if r := appB.KeyAction("unban", key, nil); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("unban through B: %v", r)
	}
	sid2 := appA.Login(key, "pc-1")
	if r := appB.Heartbeat(sid2, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through B after unban: %v", r)
	}
	if r := appA.Heartbeat(sid2, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through A after unban: %v", r)
	}
	b.MustAdmin("DELETE", "/api/admin/sessions.php", map[string]any{"session_id": sid2, "app_id": appA.ID})
	a.SeeOtherProcesses()
	kwtest.ExpectCode(t, appA.Heartbeat(sid2, key), 200, "SESSION_REVOKED")
}

func TestHeartbeatsThroughEitherServerPostgres(t *testing.T) {
	t.Parallel()
	heartbeatsThroughEitherServer(t, startPostgresPair)
}

func TestHeartbeatsThroughEitherServerSQLite(t *testing.T) {
	t.Parallel()
	heartbeatsThroughEitherServer(t, startSQLitePair)
}

// A client whose heartbeats a load balancer sends now to one server, now
// to the other, stays signed in: a server whose session cache last saw the
// session long ago (its own heartbeat times are the last it wrote) does not
// end it for silence while the other server has heard from it.
func heartbeatsThroughEitherServer(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Balanced")
	key := appA.GenerateKeys(1, "days", 30, 1)[0]
	appB := b.NewApp(appA.ID, appA.Secret)
	sid := appA.Login(key, "pc-1")
	for _, app := range []*kwtest.App{appA, appB} { // both cache it
		if r := app.Heartbeat(sid, key); r.Body["success"] != true {
			t.Fatalf("first heartbeat: %v", r)
		}
	}
	timeout := a.License.SessionTimeout()
	// Two thirds of the timeout later the client beats through B, which
	// writes it; another two thirds later (A has not heard from it for
	// longer than the timeout) through A.
	step := 2 * timeout / 3
	a.Clock.Advance(step)
	if r := appB.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through B: %v", r)
	}
	if err := b.License.FlushTouches(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Clock.Advance(step)
	if r := appA.Heartbeat(sid, key); r.Body["success"] != true {
		t.Fatalf("heartbeat through A, %s after the last through B: %v", step, r)
	}
	// A session silent for longer than the timeout still ends.
	a.Clock.Advance(timeout + time.Second)
	kwtest.ExpectCode(t, appB.Heartbeat(sid, key), 200, "SESSION_EXPIRED")
}

// The same login envelope delivered to two servers is processed once: the
// second server answers the first reply (same session_id) and only one
// session exists.
func replayAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Replay")
	// Three seats: a second processing would open a second live session
	// instead of retiring the first, so it could not hide.
	key := appA.GenerateKeys(1, "days", 30, 3)[0]
	appB := b.NewApp(appA.ID, appA.Secret)

	env := appA.Seal(map[string]any{"license_key": key, "hwid": "pc-replay"}).Marshal()
	first := appA.PostEnvelope("/api/auth/login.php", env)
	if !first.Sealed || first.Body["success"] != true || first.Str("session_id") == "" {
		t.Fatalf("login through A: %v", first)
	}
	again := appB.PostEnvelope("/api/auth/login.php", env)
	if !again.Sealed || again.Body["success"] != true {
		t.Fatalf("replayed login through B: %v", again)
	}
	if again.Str("session_id") != first.Str("session_id") {
		t.Errorf("B answered session_id %q, A %q; want the first reply", again.Str("session_id"), first.Str("session_id"))
	}
	for _, s := range []*kwtest.Server{a, b} {
		list := s.MustAdmin("GET", "/api/admin/sessions.php?app_id="+appA.ID+"&license_key="+key, nil).Body["sessions"].([]any)
		if len(list) != 1 {
			t.Errorf("live sessions of the key (listed through %s) = %v, want exactly 1", s.URL, list)
		}
	}
	if r := appB.Heartbeat(first.Str("session_id"), key); r.Body["success"] != true {
		t.Errorf("heartbeat through B of the replayed session: %v", r)
	}
}
