package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var generatedRE = regexp.MustCompile(`Created admin "([^"]+)" with password: (\S+)\nThis password is shown only once\.\n`)

// serve on a database without admins creates one with a generated password,
// printed once; the password works, and a second start prints nothing.
func TestServeBootstrapsAdminWithGeneratedPassword(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	first := serve(t, "--addr", "127.0.0.1:0", "--data", dir, "--bcrypt-cost", "4")
	m := generatedRE.FindStringSubmatch(first.stdout.String())
	if m == nil || m[1] != "admin" || len(m[2]) != 20 {
		t.Fatalf("first start printed no generated password for admin:\n%s", first.stdout)
	}
	if n := strings.Count(first.stdout.String(), m[2]); n != 1 {
		t.Fatalf("password printed %d times", n)
	}
	if strings.Contains(first.stderr.String(), m[2]) {
		t.Fatal("the generated password went to the log too")
	}
	if st, tok := adminLogin(t, "http://"+first.addr, "admin", m[2]); st != 200 || tok == "" {
		t.Fatalf("login with the printed password: %d", st)
	}
	if !strings.Contains(first.stdout.String(), "http://"+first.addr) {
		t.Fatalf("listening line without the URL: %s", first.stdout)
	}
	if code := first.stop(t); code != 0 {
		t.Fatalf("first serve exit %d: %s", code, first.stderr)
	}
	if !strings.Contains(first.stdout.String(), "dashboard: http://"+first.addr+"/dashboard/\n") {
		t.Fatalf("no line naming the dashboard's URL: %s", first.stdout)
	}

	second := serve(t, "--addr", "127.0.0.1:0", "--data", dir, "--bcrypt-cost", "4")
	if out := second.stdout.String(); strings.Contains(out, "Created admin") || strings.Contains(out, m[2]) {
		t.Fatalf("second start printed an admin password:\n%s", out)
	}
	if st, _ := adminLogin(t, "http://"+second.addr, "admin", m[2]); st != 200 {
		t.Fatalf("password of the first start no longer works: %d", st)
	}
}

// With KEYWARD_ADMIN_USERNAME and KEYWARD_ADMIN_PASSWORD the first admin
// gets those, and the password is never printed.
func TestServeBootstrapsAdminFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("KEYWARD_ADMIN_USERNAME", "owner")
	t.Setenv("KEYWARD_ADMIN_PASSWORD", "env-provided-secret")
	srv := serve(t, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--bcrypt-cost", "4")
	out := srv.stdout.String()
	if !strings.Contains(out, `Created admin "owner" from KEYWARD_ADMIN_PASSWORD.`) || strings.Contains(out, "env-provided-secret") {
		t.Fatalf("bootstrap output:\n%s", out)
	}
	if st, _ := adminLogin(t, "http://"+srv.addr, "owner", "env-provided-secret"); st != 200 {
		t.Fatalf("login as the env admin: %d", st)
	}
	if st, _ := adminLogin(t, "http://"+srv.addr, "admin", "env-provided-secret"); st != 401 {
		t.Fatalf("a default admin exists too: %d", st)
	}
}

// Every command's settings are read from KEYWARD_* variables; a flag wins
// over its variable.
func TestEnvironmentVariables(t *testing.T) {
	clearEnv(t)
	envDir, flagDir := t.TempDir(), t.TempDir()
	t.Setenv("KEYWARD_DATA", envDir)
	t.Setenv("KEYWARD_BCRYPT_COST", "4")

	mustRun(t, "migrate")
	if _, err := os.Stat(filepath.Join(envDir, "keyward.db")); err != nil {
		t.Fatalf("migrate ignored KEYWARD_DATA: %v", err)
	}

	t.Setenv("KEYWARD_NEW_ADMIN_USERNAME", "dave")
	t.Setenv("KEYWARD_NEW_ADMIN_PASSWORD", "from-the-env-pw")
	if out := mustRun(t, "admin", "create"); out != "created admin \"dave\"\n" {
		t.Fatalf("admin create from env printed %q", out)
	}

	t.Setenv("KEYWARD_ADDR", "127.0.0.1:0")
	t.Setenv("KEYWARD_LOG_FORMAT", "json")
	srv := serve(t)
	if st, _ := adminLogin(t, "http://"+srv.addr, "dave", "from-the-env-pw"); st != 200 {
		t.Fatalf("serve from env does not see dave: %d", st)
	}
	if !strings.Contains(srv.stderr.String(), `"msg":"keyward listening"`) {
		t.Fatalf("KEYWARD_LOG_FORMAT=json ignored; log:\n%s", srv.stderr)
	}
	srv.stop(t)

	// --data beats KEYWARD_DATA.
	mustRun(t, "migrate", "--data", flagDir)
	if _, err := os.Stat(filepath.Join(flagDir, "keyward.db")); err != nil {
		t.Fatalf("--data did not win over KEYWARD_DATA: %v", err)
	}

	// Invalid settings from the environment are refused as usage errors
	// (exit 2) naming the setting, before anything starts.
	for name, val := range map[string]string{
		"KEYWARD_SESSION_TIMEOUT": "5s",
		"KEYWARD_TOKEN_TTL":       "10s",
		"KEYWARD_BCRYPT_COST":     "20",
		"KEYWARD_DATABASE_URL":    "mysql://x",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, val)
			code, _, errOut := run(t, "serve")
			if code != 2 || !strings.Contains(errOut, name) {
				t.Fatalf("%s=%s: exit %d, stderr %q", name, val, code, errOut)
			}
		})
	}
	t.Setenv("KEYWARD_LOG_LEVEL", "loud")
	if code, _, errOut := run(t, "serve"); code != 2 || !strings.Contains(errOut, "log-level") {
		t.Fatalf("KEYWARD_LOG_LEVEL=loud: exit %d, stderr %q", code, errOut)
	}
}

// Every flag of serve, migrate and admin create has a KEYWARD_* variable.
func TestEveryFlagHasAnEnvironmentVariable(t *testing.T) {
	var walk func(path string, typ reflect.Type)
	seen := 0
	walk = func(path string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag := f.Tag
			if _, ok := tag.Lookup("embed"); ok {
				walk(path, f.Type)
				continue
			}
			if _, ok := tag.Lookup("cmd"); ok {
				walk(path+" "+strings.ToLower(f.Name), f.Type)
				continue
			}
			name, ok := tag.Lookup("name")
			if !ok {
				continue
			}
			seen++
			if env := tag.Get("env"); !strings.HasPrefix(env, "KEYWARD_") {
				t.Errorf("keyward%s --%s has no KEYWARD_* variable (env tag %q)", path, name, env)
			}
		}
	}
	for _, c := range []struct {
		path string
		typ  reflect.Type
	}{
		{" serve", reflect.TypeOf(serveCmd{})},
		{" migrate", reflect.TypeOf(migrateCmd{})},
		{" admin", reflect.TypeOf(adminCmd{})},
	} {
		walk(c.path, c.typ)
	}
	if seen < 20 {
		t.Fatalf("found only %d flags; the walk is broken", seen)
	}
}

// TLS flags are checked before anything starts: --tls-cert needs --tls-key
// and cannot be combined with --acme-domain; a certificate that cannot be
// loaded fails serve with exit 1.
func TestServeTLSFlagErrors(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--tls-cert", "c.pem"}, 2, "--tls-key"},
		{[]string{"--tls-key", "k.pem"}, 2, "--tls-cert"},
		{[]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--acme-domain", "example.com"}, 2, "--acme-domain"},
		{[]string{"--tls-cert", filepath.Join(dir, "missing.pem"), "--tls-key", filepath.Join(dir, "missing.key")}, 1, "--tls-cert"},
		{[]string{"--addr", "no-port"}, 2, "--addr"},
	} {
		args := append([]string{"serve", "--data", dir, "--bcrypt-cost", "4"}, c.args...)
		if c.code == 1 {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		code, _, errOut := run(t, args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit %d mentioning %s", c.args, code, errOut, c.code, c.msg)
		}
	}
}

// A KEYWARD_ADMIN_PASSWORD that breaks the password policy stops serve with
// exit 1 and creates no admin.
func TestServeRefusesWeakBootstrapPassword(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	t.Setenv("KEYWARD_ADMIN_PASSWORD", "short")
	code, out, errOut := run(t, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--bcrypt-cost", "4")
	if code != 1 || !strings.Contains(errOut, "first admin") || strings.Contains(out, "listening") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	t.Setenv("KEYWARD_ADMIN_PASSWORD", "")
	os.Unsetenv("KEYWARD_ADMIN_PASSWORD")
	srv := serve(t, "--addr", "127.0.0.1:0", "--data", dir, "--bcrypt-cost", "4")
	if !generatedRE.MatchString(srv.stdout.String()) {
		t.Fatalf("after the refused start no admin should exist, so one is generated now:\n%s", srv.stdout)
	}
}

// serve --tls-cert/--tls-key reports an https URL and answers TLS there.
func TestServeWithTLSReportsHTTPS(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
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
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)

	t.Setenv("KEYWARD_TLS_CERT", certFile) // one from the environment, one as a flag
	srv := serve(t, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bcrypt-cost", "4", "--tls-key", keyFile)
	if !strings.Contains(srv.stdout.String(), "listening on https://"+srv.addr) {
		t.Fatalf("serve with TLS reported:\n%s", srv.stdout)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + srv.addr + "/api/admin/apps.php")
	if err != nil {
		t.Fatalf("HTTPS request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.TLS == nil {
		t.Fatalf("HTTPS admin request without a token: %d", resp.StatusCode)
	}
}
