package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Lockouts and the trial cap are counted in the database, so they hold
// across every keyward process sharing it (docs/configuration.md, Abuse
// limits). Two servers on one database, one clock; test servers lock a
// username after 10 failures (kwtest.Limits). Helpers start with lo.

const (
	loPassword = "correct-pass-1"
	loWrong    = "wrong-pass-99"
)

func TestLockoutAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	lockoutAcrossServers(t, startPostgresPair)
}

func TestLockoutAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	lockoutAcrossServers(t, startSQLitePair)
}

func TestLockoutAdminAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	adminLockoutAcrossServers(t, startPostgresPair)
}

func TestLockoutAdminAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	adminLockoutAcrossServers(t, startSQLitePair)
}

func TestLockoutConcurrentFailuresAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	concurrentFailuresAcrossServers(t, startPostgresPair)
}

func TestLockoutBurstAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	burstAcrossServers(t, startPostgresPair)
}

// Lockout counters are small transactions: a burst through two servers on
// one SQLite file finishes in about a second.
func TestLockoutBurstAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	burstAcrossServers(t, startSQLitePair)
}

func TestLockoutTrialCapAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	trialCapAcrossServers(t, startPostgresPair)
}

func TestLockoutTrialCapAcrossServersSQLite(t *testing.T) {
	t.Parallel()
	trialCapAcrossServers(t, startSQLitePair)
}

// The concurrent cases run on PostgreSQL only: two processes writing one
// SQLite file at once wait on each other's locks for seconds at times.
func TestLockoutTrialCapRaceAcrossServersPostgres(t *testing.T) {
	t.Parallel()
	trialCapRaceAcrossServers(t, startPostgresPair)
}

// loSettings changes app settings through s (before the other server has
// read the app, so its app cache cannot be stale).
func loSettings(t *testing.T, s *kwtest.Server, appID string, settings map[string]any) {
	t.Helper()
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+appID, map[string]any{"settings": settings})
}

// loSignIn sends account-login.
func loSignIn(a *kwtest.App, username, password string) *kwtest.Reply {
	a.S.T.Helper()
	return a.Plain("/api/auth/account-login.php", map[string]any{"username": username, "password": password, "hwid": "pc-1"})
}

// loAdminLogin sends the admin login to s.
func loAdminLogin(s *kwtest.Server, username, password string) *kwtest.Reply {
	s.T.Helper()
	body, _ := json.Marshal(map[string]string{"username": username, "password": password})
	return s.Do("POST", "/api/admin/login.php", http.Header{"Content-Type": {"application/json"}}, body)
}

// loLocked fails unless r is 429 TOO_MANY_ATTEMPTS with retry_after want and
// the matching Retry-After header.
func loLocked(t *testing.T, what string, r *kwtest.Reply, want int) {
	t.Helper()
	kwtest.ExpectCode(t, r, http.StatusTooManyRequests, "TOO_MANY_ATTEMPTS")
	if got, _ := r.Body["retry_after"].(float64); int(got) != want || got != float64(int(got)) {
		t.Fatalf("%s: retry_after = %#v, want %d", what, r.Body["retry_after"], want)
	}
	if h := r.Header.Get("Retry-After"); h != strconv.Itoa(want) {
		t.Fatalf("%s: Retry-After = %q, want %d", what, h, want)
	}
}

// Five wrong passwords through each server lock the account on both.
func lockoutAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Locks")
	loSettings(t, a, appA.ID, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	appB := b.NewApp(appA.ID, appA.Secret)
	for _, u := range []string{"alice", "bob"} {
		if r := appA.Plain("/api/auth/account-register.php", map[string]any{"username": u, "password": loPassword}); r.Status != 200 {
			t.Fatalf("register %s: %s", u, r)
		}
	}

	for i := range 5 {
		kwtest.ExpectCode(t, loSignIn(appA, "alice", loWrong), 401, "INVALID_CREDENTIALS")
		if i < 4 {
			kwtest.ExpectCode(t, loSignIn(appB, "alice", loWrong), 401, "INVALID_CREDENTIALS")
		}
	}
	// Nine failures so far: a success through B clears them for both.
	if r := loSignIn(appB, "alice", loPassword); r.Status != 200 {
		t.Fatalf("right password after 9 failures: %s", r)
	}
	for range 5 {
		kwtest.ExpectCode(t, loSignIn(appA, "alice", loWrong), 401, "INVALID_CREDENTIALS")
		kwtest.ExpectCode(t, loSignIn(appB, "alice", loWrong), 401, "INVALID_CREDENTIALS")
	}
	loLocked(t, "through A", loSignIn(appA, "alice", loPassword), 900)
	loLocked(t, "through B", loSignIn(appB, "alice", loPassword), 900)
	if r := loSignIn(appB, "bob", loPassword); r.Status != 200 {
		t.Fatalf("another account through B: %s", r)
	}

	a.Clock.Advance(5 * time.Minute)
	loLocked(t, "through B 5 minutes later", loSignIn(appB, "alice", loPassword), 600)
	a.Clock.Advance(10 * time.Minute)
	for _, app := range []*kwtest.App{appA, appB} {
		if r := loSignIn(app, "alice", loPassword); r.Status != 200 {
			t.Fatalf("after the lock through %s: %s", app.S.URL, r)
		}
	}
}

// The admin login locks across servers too; tokens issued before keep
// working on both.
func adminLockoutAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	tokA, tokB := a.AdminToken(), b.AdminToken()

	for range 5 {
		kwtest.ExpectCode(t, loAdminLogin(a, "admin", loWrong), 401, "INVALID_CREDENTIALS")
		kwtest.ExpectCode(t, loAdminLogin(b, "admin", loWrong), 401, "INVALID_CREDENTIALS")
	}
	loLocked(t, "admin through A", loAdminLogin(a, "admin", kwtest.AdminPassword), 900)
	loLocked(t, "admin through B", loAdminLogin(b, "admin", kwtest.AdminPassword), 900)
	for _, c := range []struct {
		s   *kwtest.Server
		tok string
	}{{a, tokA}, {b, tokB}, {a, tokB}, {b, tokA}} {
		h := http.Header{"Authorization": {"Bearer " + c.tok}}
		if r := c.s.Do("GET", "/api/admin/apps.php", h, nil); r.Status != 200 {
			t.Fatalf("token issued before the lock, on %s: %s", c.s.URL, r)
		}
	}
	a.Clock.Advance(15 * time.Minute)
	for _, s := range []*kwtest.Server{a, b} {
		if r := loAdminLogin(s, "admin", kwtest.AdminPassword); r.Status != 200 {
			t.Fatalf("admin login through %s after the lock: %s", s.URL, r)
		}
	}
}

// loRaw POSTs without the test's helpers (safe off the test goroutine).
func loRaw(url string, header http.Header, body any) (int, map[string]any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header = header
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reply %d is not JSON: %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, m, nil
}

// Ten wrong passwords sent at once, half through each server, are all
// counted: every one is a 401 and the account is locked afterwards.
func concurrentFailuresAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Race")
	loSettings(t, a, appA.ID, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	appB := b.NewApp(appA.ID, appA.Secret)
	if r := appA.Plain("/api/auth/account-register.php", map[string]any{"username": "alice", "password": loPassword}); r.Status != 200 {
		t.Fatalf("register: %s", r)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 10 {
		s := []*kwtest.Server{a, b}[i%2]
		wg.Go(func() {
			h := http.Header{"X-App-Secret": {appA.Secret}, "Content-Type": {"application/json"}}
			st, body, err := loRaw(s.URL+"/api/auth/account-login.php", h,
				map[string]any{"username": "alice", "password": loWrong, "hwid": "pc-1"})
			if err != nil {
				errs <- err
			} else if st != 401 || body["error_code"] != "INVALID_CREDENTIALS" {
				errs <- fmt.Errorf("concurrent failure: %d %v, want 401 INVALID_CREDENTIALS", st, body)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	loLocked(t, "through A after 10 concurrent failures", loSignIn(appA, "alice", loPassword), 900)
	loLocked(t, "through B after 10 concurrent failures", loSignIn(appB, "alice", loPassword), 900)
}

// loAttempt is one request of a burst: a path on either server.
type loAttempt struct {
	path   string
	header http.Header
	body   map[string]any
}

// loBurst sends n copies of wrong, alternately through a and b, and, when
// right is not nil, one right attempt through b, all released at once. It
// returns the outcomes ("401 INVALID_CREDENTIALS", "429 TOO_MANY_ATTEMPTS",
// "200") of the wrong ones, counted, and the right one's.
func loBurst(a, b *kwtest.Server, n int, wrong loAttempt, right *loAttempt) (map[string]int, string) {
	outcome := func(s *kwtest.Server, at loAttempt) string {
		st, body, err := loRaw(s.URL+at.path, at.header, at.body)
		switch {
		case err != nil:
			return "error: " + err.Error()
		case st == 200:
			return "200"
		}
		return fmt.Sprintf("%d %v", st, body["error_code"])
	}
	var mu sync.Mutex
	wrongs, got := map[string]int{}, ""
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			o := outcome([]*kwtest.Server{a, b}[i%2], wrong)
			mu.Lock()
			wrongs[o]++
			mu.Unlock()
		})
	}
	if right != nil {
		wg.Go(func() {
			<-start
			got = outcome(b, *right)
		})
	}
	close(start)
	wg.Wait()
	return wrongs, got
}

// Attempts are reserved before the comparison in the shared database: 30
// wrong passwords at once, half through each server, get exactly 10
// compared (the rest 429) and the right password is refused afterwards;
// once the lock has run out, 30 wrong and the right one at once get no more
// compared than the budget — for app user accounts and for the admin.
func burstAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	const limit, n = 10, 30
	a, b := start(t)
	appA := a.CreateApp("Burst")
	loSettings(t, a, appA.ID, map[string]any{"accounts_enabled": true, "account_signup_days": 30})
	if r := appA.Plain("/api/auth/account-register.php", map[string]any{"username": "alice", "password": loPassword}); r.Status != 200 {
		t.Fatalf("register: %s", r)
	}
	plain := http.Header{"X-App-Secret": {appA.Secret}, "Content-Type": {"application/json"}}
	admin := http.Header{"Content-Type": {"application/json"}}
	kinds := []struct {
		name         string
		wrong, right loAttempt
	}{
		{"account login",
			loAttempt{"/api/auth/account-login.php", plain, map[string]any{"username": "alice", "password": loWrong, "hwid": "pc-1"}},
			loAttempt{"/api/auth/account-login.php", plain, map[string]any{"username": "alice", "password": loPassword, "hwid": "pc-1"}}},
		{"admin sign-in",
			loAttempt{"/api/admin/login.php", admin, map[string]any{"username": "admin", "password": loWrong}},
			loAttempt{"/api/admin/login.php", admin, map[string]any{"username": "admin", "password": kwtest.AdminPassword}}},
	}
	for _, k := range kinds {
		wrongs, _ := loBurst(a, b, n, k.wrong, nil)
		if wrongs["401 INVALID_CREDENTIALS"] != limit || wrongs["429 TOO_MANY_ATTEMPTS"] != n-limit {
			t.Fatalf("%s: %d wrong passwords at once through two servers: %v, want %d compared (401) and %d refused (429)",
				k.name, n, wrongs, limit, n-limit)
		}
		for _, s := range []*kwtest.Server{a, b} {
			st, body, err := loRaw(s.URL+k.right.path, k.right.header, k.right.body)
			if err != nil || st != 429 || body["error_code"] != "TOO_MANY_ATTEMPTS" {
				t.Fatalf("%s: right password through %s after the burst: %d %v %v, want 429 TOO_MANY_ATTEMPTS", k.name, s.URL, st, body, err)
			}
		}

		a.Clock.Advance(15 * time.Minute)
		wrongs, got := loBurst(a, b, n, k.wrong, &k.right)
		for o := range wrongs {
			if o != "401 INVALID_CREDENTIALS" && o != "429 TOO_MANY_ATTEMPTS" {
				t.Fatalf("%s: wrong passwords with the right one: %v", k.name, wrongs)
			}
		}
		compared := wrongs["401 INVALID_CREDENTIALS"]
		switch got {
		case "429 TOO_MANY_ATTEMPTS":
			if compared != limit {
				t.Fatalf("%s: right password refused, yet %d wrong ones compared, want %d", k.name, compared, limit)
			}
		case "200":
			// A success forgets the failures before it (at most 9).
			if compared > 2*limit-1 {
				t.Fatalf("%s: right password compared, and %d wrong ones, want at most %d", k.name, compared, 2*limit-1)
			}
		default:
			t.Fatalf("%s: right password in the burst: %s, want 200 or 429", k.name, got)
		}
		a.Clock.Advance(15 * time.Minute)
	}
}

// loTrial asks s for a trial of the app for hwid and returns the reply.
func loTrial(app *kwtest.App, hwid string) *kwtest.Reply {
	app.S.T.Helper()
	return app.Plain("/api/auth/trial.php", map[string]any{"hwid": hwid})
}

// A per-IP trial cap of 2 holds across servers: one new trial through each,
// the third through either is TRIAL_LIMIT; a device with a running trial
// still gets it back through the other server.
func trialCapAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	appA := a.CreateApp("Trials")
	loSettings(t, a, appA.ID, map[string]any{"trial_enabled": true, "trial_ip_limit": 2})
	appB := b.NewApp(appA.ID, appA.Secret)

	r1 := loTrial(appA, "hw-1")
	if r1.Status != 200 || r1.Body["success"] != true {
		t.Fatalf("first trial through A: %s", r1)
	}
	if r := loTrial(appB, "hw-2"); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("second trial through B: %s", r)
	}
	kwtest.ExpectCode(t, loTrial(appA, "hw-3"), 403, "TRIAL_LIMIT")
	kwtest.ExpectCode(t, loTrial(appB, "hw-4"), 403, "TRIAL_LIMIT")
	if r := loTrial(appB, "hw-1"); r.Status != 200 || r.Str("trial_key") != r1.Str("trial_key") {
		t.Fatalf("hw-1 again through B: %s, want its trial key %s back", r, r1.Str("trial_key"))
	}
	trials := a.MustAdmin("GET", "/api/admin/trials.php?app_id="+appA.ID, nil).Body["trials"].([]any)
	if len(trials) != 2 {
		t.Fatalf("trials = %v, want 2", trials)
	}
}

// New trials asked for at once through both servers never exceed the cap.
func trialCapRaceAcrossServers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	a, b := start(t)
	app2 := a.CreateApp("TrialRace")
	loSettings(t, a, app2.ID, map[string]any{"trial_enabled": true, "trial_ip_limit": 2})
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*kwtest.Server{a, b}[i%2]
		wg.Go(func() {
			h := http.Header{"X-App-Secret": {app2.Secret}, "Content-Type": {"application/json"}}
			st, body, err := loRaw(s.URL+"/api/auth/trial.php", h, map[string]any{"hwid": "race-" + strconv.Itoa(i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				codes["error: "+err.Error()]++
			case st == 200 && body["success"] == true:
				codes["ok"]++
			default:
				code, _ := body["error_code"].(string)
				codes[strconv.Itoa(st)+" "+code]++
			}
		})
	}
	wg.Wait()
	if codes["ok"] != 2 || codes["403 TRIAL_LIMIT"] != 6 {
		t.Fatalf("8 trials at once with a cap of 2: %v, want 2 ok and 6 TRIAL_LIMIT", codes)
	}
}
