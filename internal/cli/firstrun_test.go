package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"html"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/keyward/keyward/internal/kwtest"
)

// The first run cannot lose the only admin password, and a lost one can be
// reset from the command line (issue 24, item 4).

// dbFlag returns the value of flag in the database arguments of dbArgs.
func dbFlag(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// countAdmins counts the admin accounts in the database of dbArgs' args,
// read behind keyward's back.
func countAdmins(t *testing.T, args []string) int {
	t.Helper()
	var n int
	db := kwtest.RawDB(t, dbFlag(args, "--data"), dbFlag(args, "--database-url"))
	if err := db.QueryRow(`SELECT COUNT(*) FROM admin_users`).Scan(&n); err != nil {
		t.Fatalf("count admins: %v", err)
	}
	return n
}

// busyAddr returns the address of a listener held open until the test ends.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// freeAddr returns an address on which nothing listens (bound and released).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// selfSignedFiles writes a certificate for 127.0.0.1 and its key into dir.
func selfSignedFiles(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// A start whose listener cannot be bound — the main one, the metrics one,
// or the plain-HTTP one beside TLS — fails with an error naming the address,
// its flag and the cause, creates no admin and prints no password, and
// releases what it had bound. The next start that binds creates the admin
// and prints its password once, and it signs in over HTTP; a third start
// prints none.
func TestServeCreatesFirstAdminOnlyAfterBinding(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			db := dbArgs(t, engine)
			base := append([]string{"--bcrypt-cost", "4"}, db...)
			certFile, keyFile := selfSignedFiles(t, t.TempDir())
			main := freeAddr(t)
			for _, c := range []struct {
				name string
				args []string
				flag string
			}{
				{"main", []string{"--addr", busyAddr(t)}, "--addr"},
				{"metrics", []string{"--addr", main, "--metrics-addr", busyAddr(t)}, "--metrics-addr"},
				{"redirect", []string{"--addr", main, "--tls-cert", certFile, "--tls-key", keyFile, "--http-addr", busyAddr(t)}, "--http-addr"},
			} {
				code, out, errOut := run(t, append(append([]string{"serve"}, base...), c.args...)...)
				if code != 1 {
					t.Fatalf("%s listener busy: exit %d\nstdout %q\nstderr %q", c.name, code, out, errOut)
				}
				for _, want := range []string{c.flag, "address already in use", "another process", "no admin was created"} {
					if !strings.Contains(errOut, want) {
						t.Errorf("%s listener busy: stderr does not say %q: %q", c.name, want, errOut)
					}
				}
				if strings.Contains(out, "Created admin") || strings.Contains(out, "password") || strings.Contains(out, "listening") {
					t.Errorf("%s listener busy: stdout %q", c.name, out)
				}
				if n := countAdmins(t, db); n != 0 {
					t.Fatalf("%s listener busy: %d admins in the database, want none", c.name, n)
				}
			}

			// The failed starts released the main address: this start binds it.
			first := serve(t, append(base, "--addr", main)...)
			m := generatedRE.FindStringSubmatch(first.stdout.String())
			if m == nil || m[1] != "admin" {
				t.Fatalf("the first start that binds printed no generated password:\n%s", first.stdout)
			}
			if first.addr != main {
				t.Fatalf("listening on %s, want %s", first.addr, main)
			}
			if n := strings.Count(first.stdout.String(), m[2]); n != 1 {
				t.Fatalf("password printed %d times", n)
			}
			if i, j := strings.Index(first.stdout.String(), "Created admin"), strings.Index(first.stdout.String(), "listening on"); i > j {
				t.Fatalf("the password came after the listening line:\n%s", first.stdout)
			}
			if st, tok := adminLogin(t, "http://"+first.addr, "admin", m[2]); st != 200 || tok == "" {
				t.Fatalf("sign-in with the printed password: %d", st)
			}
			if code := first.stop(t); code != 0 {
				t.Fatalf("first serve exit %d: %s", code, first.stderr)
			}
			if n := countAdmins(t, db); n != 1 {
				t.Fatalf("%d admins after the first start, want 1", n)
			}

			third := serve(t, append(base, "--addr", "127.0.0.1:0")...)
			if out := third.stdout.String(); strings.Contains(out, "Created admin") || strings.Contains(out, "password") {
				t.Fatalf("a later start printed a password:\n%s", out)
			}
			if st, _ := adminLogin(t, "http://"+third.addr, "admin", m[2]); st != 200 {
				t.Fatalf("the printed password no longer works: %d", st)
			}
		})
	}
}

// A weak KEYWARD_ADMIN_PASSWORD is refused before any listener is bound:
// the address stays free.
func TestServeChecksBootstrapPasswordBeforeBinding(t *testing.T) {
	clearEnv(t)
	t.Setenv("KEYWARD_ADMIN_PASSWORD", "short")
	addr := freeAddr(t)
	code, out, errOut := run(t, "serve", "--addr", addr, "--data", t.TempDir(), "--bcrypt-cost", "4")
	if code != 1 || !strings.Contains(errOut, "first admin") || !strings.Contains(errOut, "password") || strings.Contains(out, "listening") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the refused start left %s bound: %v", addr, err)
	}
	ln.Close()
}

// apiCall sends a JSON request with an optional bearer token and returns the
// status and the decoded reply.
func apiCall(t *testing.T, method, u, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// loginStatus signs in over HTTP and returns the status, the error code and
// the reply.
func loginStatus(t *testing.T, base, user, pass string) (int, string, map[string]any) {
	t.Helper()
	st, m := apiCall(t, "POST", base+"/api/admin/login.php", "", map[string]string{"username": user, "password": pass})
	code, _ := m["error_code"].(string)
	return st, code, m
}

// dashboardSession signs in to the dashboard's form and returns a client
// holding the session cookie (redirects are not followed).
func dashboardSession(t *testing.T, base, user, pass string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/dashboard/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the sign-in page has no CSRF token:\n%s", page)
	}
	resp, err = c.PostForm(base+"/dashboard/login", url.Values{"csrf": {html.UnescapeString(string(m[1]))}, "username": {user}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dashboard sign-in: %d", resp.StatusCode)
	}
	return c
}

// dashboardHome returns the status of the dashboard's home page for c.
func dashboardHome(t *testing.T, c *http.Client, base string) int {
	t.Helper()
	resp, err := c.Get(base + "/dashboard/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var resetGeneratedRE = regexp.MustCompile(`(?m)^generated password: (\S{20})$`)

// keyward admin reset-password, against a running server on the same
// database (another process's view, as the JWT checks are stored): an
// unknown username is an error with nothing printed; a reset with a
// generated password prints it once; every API token and dashboard session
// from before is refused; the old password is refused and the new one signs
// in although the username was locked out (the reset clears that lock);
// personal access tokens keep working; the reset is audited with actor cli.
func TestAdminResetPassword(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			db := dbArgs(t, engine)
			mustRun(t, append([]string{"admin", "create", "--username", "alice", "--password", "alice-old-password", "--bcrypt-cost", "4"}, db...)...)
			srv := serve(t, append([]string{"--addr", "127.0.0.1:0", "--bcrypt-cost", "4", "--lockout-failures", "3"}, db...)...)
			base := "http://" + srv.addr

			st, oldTok := adminLogin(t, base, "alice", "alice-old-password")
			if st != 200 {
				t.Fatalf("sign-in before the reset: %d", st)
			}
			st, minted := apiCall(t, "POST", base+"/api/admin/tokens.php", oldTok, map[string]string{"name": "ci"})
			inner, _ := minted["token"].(map[string]any)
			pat, _ := inner["token"].(string)
			if st != 200 || pat == "" {
				t.Fatalf("mint an access token: %d %v", st, minted)
			}
			dash := dashboardSession(t, base, "alice", "alice-old-password")
			if st := dashboardHome(t, dash, base); st != 200 {
				t.Fatalf("dashboard before the reset: %d", st)
			}
			for range 3 {
				if st, _, _ := loginStatus(t, base, "alice", "a-wrong-password"); st != 401 {
					t.Fatalf("wrong password: %d", st)
				}
			}
			if st, code, _ := loginStatus(t, base, "alice", "alice-old-password"); st != 429 || code != "TOO_MANY_ATTEMPTS" {
				t.Fatalf("sign-in of a locked username: %d %s", st, code)
			}

			code, out, errOut := run(t, append([]string{"admin", "reset-password", "--username", "nobody", "--bcrypt-cost", "4"}, db...)...)
			if code == 0 || !strings.Contains(errOut, `No admin has the username "nobody"`) || out != "" {
				t.Fatalf("unknown username: exit %d\nstdout %q\nstderr %q", code, out, errOut)
			}
			if engine == "sqlite" {
				// A --data without a database is refused, and left without one.
				empty := t.TempDir()
				code, out, errOut := run(t, "admin", "reset-password", "--username", "alice", "--data", empty)
				if code == 0 || !strings.Contains(errOut, "no keyward database in --data") || out != "" {
					t.Fatalf("reset in an empty data directory: exit %d\nstdout %q\nstderr %q", code, out, errOut)
				}
				if entries, _ := os.ReadDir(empty); len(entries) != 0 {
					t.Fatalf("the refused reset wrote %d files into the empty data directory", len(entries))
				}
			}

			out = mustRun(t, append([]string{"admin", "reset-password", "--username", "alice", "--bcrypt-cost", "4"}, db...)...)
			m := resetGeneratedRE.FindStringSubmatch(out)
			if m == nil || strings.Count(out, m[1]) != 1 {
				t.Fatalf("reset without --password printed:\n%s", out)
			}
			for _, want := range []string{`reset the password of admin "alice"`, "1 personal access token(s) of this admin still work"} {
				if !strings.Contains(out, want) {
					t.Errorf("reset output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "two-factor") {
				t.Errorf("reset output speaks of two-factor for an admin without it:\n%s", out)
			}

			if st, _ := apiCall(t, "GET", base+"/api/admin/profile.php", oldTok, nil); st != 401 {
				t.Fatalf("a token issued before the reset: %d, want 401", st)
			}
			if st := dashboardHome(t, dash, base); st != http.StatusSeeOther {
				t.Fatalf("a dashboard session from before the reset: %d, want a redirect to sign in", st)
			}
			if st, _, _ := loginStatus(t, base, "alice", "alice-old-password"); st != 401 {
				t.Fatalf("the old password after the reset: %d", st)
			}
			st, newTok := adminLogin(t, base, "alice", m[1])
			if st != 200 || newTok == "" {
				t.Fatalf("the new password (the lockout cleared): %d", st)
			}
			if st, _ := apiCall(t, "GET", base+"/api/admin/profile.php", pat, nil); st != 200 {
				t.Fatalf("the access token after the reset: %d, want kept", st)
			}
			st, audit := apiCall(t, "GET", base+"/api/admin/audit.php?action=admin.password.reset", newTok, nil)
			entries, _ := audit["entries"].([]any)
			if st != 200 || len(entries) != 1 {
				t.Fatalf("audit of the reset: %d %v", st, audit)
			}
			e := entries[0].(map[string]any)
			actor, _ := e["actor"].(map[string]any)
			details, _ := e["details"].(map[string]any)
			if e["target"] != "alice" || actor["kind"] != "cli" || details["sessions_ended"] != true || details["two_factor_disabled"] != false {
				t.Fatalf("audit entry: %v", e)
			}
			if strings.Contains(srv.stderr.String(), m[1]) {
				t.Fatal("the new password reached the server's log")
			}
		})
	}
}

// totpNow is the TOTP code of secret at t.
func totpNow(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A reset keeps two-factor sign-in unless --disable-2fa is given, which
// removes the TOTP secret and every recovery code; a password from
// KEYWARD_RESET_ADMIN_PASSWORD is used and never printed; a half-done
// two-factor sign-in from before the reset cannot be completed.
func TestAdminResetPasswordTwoFactor(t *testing.T) {
	clearEnv(t)
	for _, engine := range kwtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			db := dbArgs(t, engine)
			mustRun(t, append([]string{"admin", "create", "--username", "bob", "--password", "bob-old-password", "--bcrypt-cost", "4"}, db...)...)
			srv := serve(t, append([]string{"--addr", "127.0.0.1:0", "--bcrypt-cost", "4"}, db...)...)
			base := "http://" + srv.addr
			_, tok := adminLogin(t, base, "bob", "bob-old-password")
			st, enrol := apiCall(t, "POST", base+"/api/admin/2fa.php", tok, map[string]string{"action": "enrol"})
			secret, _ := enrol["secret"].(string)
			if st != 200 || secret == "" {
				t.Fatalf("enrol: %d %v", st, enrol)
			}
			st, conf := apiCall(t, "POST", base+"/api/admin/2fa.php", tok, map[string]string{"action": "confirm", "code": totpNow(t, secret, time.Now())})
			recovery, _ := conf["recovery_codes"].([]any)
			if st != 200 || len(recovery) == 0 {
				t.Fatalf("confirm: %d %v", st, conf)
			}
			_, _, step := loginStatus(t, base, "bob", "bob-old-password")
			step1, _ := step["step1_token"].(string)
			if step["requires_2fa"] != true || step1 == "" {
				t.Fatalf("sign-in with two-factor on: %v", step)
			}

			t.Setenv("KEYWARD_RESET_ADMIN_PASSWORD", "bob-new-password")
			out := mustRun(t, append([]string{"admin", "reset-password", "--username", "bob", "--bcrypt-cost", "4"}, db...)...)
			if strings.Contains(out, "bob-new-password") || strings.Contains(out, "generated") || !strings.Contains(out, "two-factor sign-in stays on") {
				t.Fatalf("reset with KEYWARD_RESET_ADMIN_PASSWORD printed:\n%s", out)
			}
			// The step-1 token of before the reset is dead, even with an
			// unused recovery code.
			if st, _ := apiCall(t, "POST", base+"/api/admin/totp.php", "", map[string]any{"step1_token": step1, "code": recovery[0]}); st != 401 {
				t.Fatalf("completing a two-factor sign-in begun before the reset: %d, want 401", st)
			}
			if st, _, r := loginStatus(t, base, "bob", "bob-new-password"); st != 200 || r["requires_2fa"] != true {
				t.Fatalf("after a reset without --disable-2fa: %d %v, want the two-factor step", st, r)
			}

			out = mustRun(t, append([]string{"admin", "reset-password", "--username", "bob", "--disable-2fa", "--bcrypt-cost", "4"}, db...)...)
			if !strings.Contains(out, "two-factor sign-in turned off") {
				t.Fatalf("reset --disable-2fa printed:\n%s", out)
			}
			st, _, r := loginStatus(t, base, "bob", "bob-new-password")
			bearer, _ := r["token"].(string)
			if st != 200 || r["requires_2fa"] == true || bearer == "" {
				t.Fatalf("after --disable-2fa: %d %v, want a token at once", st, r)
			}
			_, prof := apiCall(t, "GET", base+"/api/admin/profile.php", bearer, nil)
			if p, _ := prof["profile"].(map[string]any); p["two_factor"] != false {
				t.Fatalf("profile after --disable-2fa: %v", prof)
			}
			var codes int
			raw := kwtest.RawDB(t, dbFlag(db, "--data"), dbFlag(db, "--database-url"))
			if err := raw.QueryRow(`SELECT COUNT(*) FROM admin_recovery_codes r JOIN admin_users u ON u.id = r.user_id WHERE u.username = 'bob'`).Scan(&codes); err != nil {
				t.Fatal(err)
			}
			if codes != 0 {
				t.Fatalf("%d recovery codes left after --disable-2fa", codes)
			}
			var pending string
			if err := raw.QueryRow(`SELECT totp_secret || totp_pending FROM admin_users WHERE username = 'bob'`).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending != "" {
				t.Fatal("a TOTP secret is left after --disable-2fa")
			}
			_, _, aud := loginStatus(t, base, "bob", "bob-new-password")
			st, audit := apiCall(t, "GET", base+"/api/admin/audit.php?action=admin.password.reset", aud["token"].(string), nil)
			entries, _ := audit["entries"].([]any)
			if st != 200 || len(entries) != 2 {
				t.Fatalf("audit: %d %v", st, audit)
			}
			if d, _ := entries[0].(map[string]any)["details"].(map[string]any); d["two_factor_disabled"] != true {
				t.Fatalf("newest audit entry: %v", entries[0])
			}
		})
	}
}
