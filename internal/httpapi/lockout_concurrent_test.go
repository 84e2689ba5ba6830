package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// Lockouts hold under concurrency (keyward issue 20): every attempt is
// reserved — counted — before its credential is compared, so a burst of
// wrong attempts sent at once gets exactly the limit compared (the rest 429
// TOO_MANY_ATTEMPTS), and the right credential sent with them is compared
// only within that budget. Test servers lock a username after 10 failures
// (kwtest.Limits). Helpers start with lc.

const (
	lcLimit  = 10 // kwtest.Limits: failures of one username that lock it
	lcWrongs = 3 * lcLimit
	lcLocked = "429 TOO_MANY_ATTEMPTS"
)

// lcAttempt is one request of a burst.
type lcAttempt struct {
	method string
	path   string
	header http.Header
	body   map[string]any
}

// lcSend sends a and returns its outcome: the status, and the error code
// of a refusal ("200", "401 INVALID_CREDENTIALS", …). It is safe off the
// test goroutine.
func lcSend(s *kwtest.Server, a lcAttempt) string {
	raw, err := json.Marshal(a.body)
	if err != nil {
		return "error: " + err.Error()
	}
	req, err := http.NewRequest(a.method, s.URL+a.path, bytes.NewReader(raw))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header = a.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "error: " + err.Error()
	}
	if resp.StatusCode == http.StatusOK {
		return "200"
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Sprintf("%d (not JSON: %s)", resp.StatusCode, b)
	}
	return fmt.Sprintf("%d %v", resp.StatusCode, m["error_code"])
}

// lcBurst sends n copies of wrong and, when right is not nil, one right
// attempt, all released at once, and counts the outcomes of the wrong ones;
// it returns them and the right one's outcome.
func lcBurst(s *kwtest.Server, n int, wrong lcAttempt, right *lcAttempt) (map[string]int, string) {
	var mu sync.Mutex
	wrongs, rightOutcome := map[string]int{}, ""
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n + 1 {
		if i == n && right == nil {
			break
		}
		wg.Go(func() {
			<-start
			if i == n {
				rightOutcome = lcSend(s, *right)
				return
			}
			o := lcSend(s, wrong)
			mu.Lock()
			wrongs[o]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return wrongs, rightOutcome
}

// lcKind is one lockout over HTTP: attempts returns a fresh wrong and right
// attempt (each burst calls it), wrongOutcome is how a compared wrong one is
// refused, and forgets says whether the right one forgets the failures
// counted before it (a successful sign-in) or only gives its own back.
type lcKind struct {
	name         string
	wrongOutcome string
	forgets      bool
	setup        func(t *testing.T, s *kwtest.Server) (attempts func() (wrong, right lcAttempt))
}

func lcPlain(a *kwtest.App, path string, body map[string]any) lcAttempt {
	return lcAttempt{method: "POST", path: path, header: http.Header{"X-App-Secret": {a.Secret}}, body: body}
}

func lcAdmin(method, path string, body map[string]any) lcAttempt {
	return lcAttempt{method: method, path: path, header: http.Header{}, body: body}
}

var lcKinds = []lcKind{
	{name: "admin sign-in", wrongOutcome: "401 INVALID_CREDENTIALS", forgets: true,
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			return func() (lcAttempt, lcAttempt) {
				return lcAdmin("POST", kwtest.PathAdminLogin, map[string]any{"username": "admin", "password": kwtest.WrongPassword}),
					lcAdmin("POST", kwtest.PathAdminLogin, map[string]any{"username": "admin", "password": kwtest.AdminPassword})
			}
		}},
	{name: "TOTP step", wrongOutcome: "401 INVALID_CODE",
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			secret, _ := s.EnableTwoFactor(t, s.TwoFactorUser(t, "lou"))
			return func() (lcAttempt, lcAttempt) {
				step1 := s.TwoFactorStep1(t, "lou")
				return lcAdmin("POST", kwtest.PathAdminTOTP, map[string]any{"step1_token": step1, "code": s.WrongTOTP(t, secret)}),
					lcAdmin("POST", kwtest.PathAdminTOTP, map[string]any{"step1_token": step1, "code": kwtest.TOTP(t, secret, s.Clock.Now())})
			}
		}},
	{name: "account login", wrongOutcome: "401 INVALID_CREDENTIALS", forgets: true,
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			a := s.LockoutApp(t, "Burst")
			a.RegisterUser(t, "alice")
			return func() (lcAttempt, lcAttempt) {
				body := func(pw string) map[string]any {
					return map[string]any{"username": "alice", "password": pw, "hwid": "pc-burst"}
				}
				return lcPlain(a, kwtest.PathAccountLogin, body(kwtest.WrongPassword)), lcPlain(a, kwtest.PathAccountLogin, body(kwtest.LockoutPassword))
			}
		}},
	{name: "change-password", wrongOutcome: "401 INVALID_CREDENTIALS", forgets: true,
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			a := s.LockoutApp(t, "Burst")
			a.RegisterUser(t, "alice")
			return func() (lcAttempt, lcAttempt) {
				body := func(pw string) map[string]any {
					return map[string]any{"username": "alice", "current_password": pw, "new_password": "brand-new-pass-1"}
				}
				return lcPlain(a, lkChange, body(kwtest.WrongPassword)), lcPlain(a, lkChange, body(kwtest.LockoutPassword))
			}
		}},
	{name: "redeem by password", wrongOutcome: "401 INVALID_CREDENTIALS",
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			a := s.LockoutApp(t, "Burst")
			a.RegisterUser(t, "alice")
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			return func() (lcAttempt, lcAttempt) {
				body := func(pw string) map[string]any {
					return map[string]any{"username": "alice", "password": pw, "license_key": key}
				}
				return lcPlain(a, lkRedeem, body(kwtest.WrongPassword)), lcPlain(a, lkRedeem, body(kwtest.LockoutPassword))
			}
		}},
	{name: "redeem by session", wrongOutcome: "400 INVALID_KEY",
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			a := s.LockoutApp(t, "Burst")
			a.RegisterUser(t, "alice")
			key := a.GenerateKeys(1, "days", 30, 1)[0]
			return func() (lcAttempt, lcAttempt) {
				r := a.SignIn("alice", kwtest.LockoutPassword, "")
				r.OK(t)
				body := func(k string) map[string]any {
					return map[string]any{"session_id": r.Str("session_id"), "license_key": k}
				}
				return lcPlain(a, lkRedeem, body(lkUnknown)), lcPlain(a, lkRedeem, body(key))
			}
		}},
	{name: "customer portal", wrongOutcome: "401 INVALID_CREDENTIALS", forgets: true,
		setup: func(t *testing.T, s *kwtest.Server) func() (lcAttempt, lcAttempt) {
			a := s.LockoutApp(t, "Burst")
			a.RegisterUser(t, "alice")
			return func() (lcAttempt, lcAttempt) {
				body := func(pw string) map[string]any {
					return map[string]any{"app_id": a.ID, "username": "alice", "password": pw}
				}
				return lcAdmin("POST", kwtest.PathCustomerLogin, body(kwtest.WrongPassword)), lcAdmin("POST", kwtest.PathCustomerLogin, body(kwtest.LockoutPassword))
			}
		}},
}

// lcCompared fails unless every wrong outcome is the kind's refusal of a
// compared attempt or a lockout, and returns how many were compared.
func lcCompared(t *testing.T, k lcKind, wrongs map[string]int) int {
	t.Helper()
	for o, n := range wrongs {
		if o != k.wrongOutcome && o != lcLocked {
			t.Fatalf("%d wrong attempts answered %q, want only %q or %q (all: %v)", n, o, k.wrongOutcome, lcLocked, wrongs)
		}
	}
	return wrongs[k.wrongOutcome]
}

// For every lockout: 30 wrong attempts at once get exactly 10 compared and
// the right credential is refused afterwards; once the lock has run out, 30
// wrong attempts and the right one at once never get more compared than the
// budget allows. Before attempts were reserved, every one of them was
// compared (issue 20: 49 × 401 and a 200 at guess 48).
func TestLockoutConcurrentAttempts(t *testing.T) {
	t.Parallel()
	for _, k := range lcKinds {
		t.Run(k.name, func(t *testing.T) {
			kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
				s := kwtest.Boot(t, engine, nil)
				attempts := k.setup(t, s)

				wrong, right := attempts()
				wrongs, _ := lcBurst(s, lcWrongs, wrong, nil)
				if n := lcCompared(t, k, wrongs); n != lcLimit {
					t.Fatalf("%d wrong attempts at once: %d compared, want exactly %d (%v)", lcWrongs, n, lcLimit, wrongs)
				}
				if o := lcSend(s, right); o != lcLocked {
					t.Fatalf("right credential after %d compared failures: %s, want %s", lcLimit, o, lcLocked)
				}

				s.Clock.Advance(kwtest.LockFor)
				wrong, right = attempts()
				wrongs, got := lcBurst(s, lcWrongs, wrong, &right)
				n := lcCompared(t, k, wrongs)
				switch {
				case got == lcLocked:
					// Refused: the wrong ones used the whole budget.
					if n != lcLimit {
						t.Fatalf("right credential refused, yet %d wrong attempts compared, want %d (%v)", n, lcLimit, wrongs)
					}
					if o := lcSend(s, right); o != lcLocked {
						t.Fatalf("right credential after the burst: %s, want %s", o, lcLocked)
					}
				case got == "200" && k.forgets:
					// Compared within the budget; a success forgets the
					// failures before it (at most 9), so at most 9 + 10.
					if n > 2*lcLimit-1 {
						t.Fatalf("right credential compared, and %d wrong attempts, want at most %d (%v)", n, 2*lcLimit-1, wrongs)
					}
				case got == "200":
					// Compared within the budget; a success gives only its
					// own attempt back, so the wrong ones get 10 at most.
					if n > lcLimit {
						t.Fatalf("right credential compared, and %d wrong attempts, want at most %d (%v)", n, lcLimit, wrongs)
					}
				default:
					t.Fatalf("right credential in a burst: %s, want 200 or %s", got, lcLocked)
				}
				t.Logf("burst with the right credential: it got %s; wrong attempts %v", got, wrongs)
			})
		})
	}
}
