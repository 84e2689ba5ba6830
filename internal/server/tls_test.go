package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/server"
)

// selfSigned writes a self-signed ECDSA certificate for 127.0.0.1 and
// localhost into dir and returns the file paths and a pool trusting it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool, der []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "keyward test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool, der
}

// freeAddr returns a currently free 127.0.0.1 port.
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

// httpsClient trusts pool and follows no redirects.
func httpsClient(pool *x509.CertPool, maxVersion uint16) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion,
			MinVersion: tls.VersionTLS10}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type rawReply struct {
	status int
	header http.Header
	body   []byte
	tls    *tls.ConnectionState
}

func (r rawReply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply is not JSON: %v: %s", err, r.body)
	}
	return m
}

func send(t *testing.T, c *http.Client, method, url string, header http.Header, body []byte) (rawReply, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return rawReply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawReply{status: resp.StatusCode, header: resp.Header, body: b, tls: resp.TLS}, nil
}

func mustSend(t *testing.T, c *http.Client, method, url string, header http.Header, body []byte) rawReply {
	t.Helper()
	r, err := send(t, c, method, url, header, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

var adminCreds = []byte(`{"username":"admin","password":"` + kwtest.AdminPassword + `"}`)

// With --tls-cert/--tls-key the main listener speaks HTTPS with that
// certificate (TLS 1.2 at least); the whole API, admin included, works there.
func TestTLSMainListener(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool, der := selfSigned(t, dir)
	s := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.TLSCert, c.TLSKey = certFile, keyFile }})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("server URL %s is not https", s.URL)
	}
	c := httpsClient(pool, 0)
	r := mustSend(t, c, "POST", s.URL+"/api/admin/login.php", http.Header{"Content-Type": {"application/json"}}, adminCreds)
	tok, _ := r.json(t)["token"].(string)
	if r.status != 200 || tok == "" {
		t.Fatalf("admin login over HTTPS: %d %s", r.status, r.body)
	}
	if r.tls == nil || r.tls.Version < tls.VersionTLS12 || !bytes.Equal(r.tls.PeerCertificates[0].Raw, der) {
		t.Fatalf("connection state: %+v", r.tls)
	}
	if hsts := r.header.Get("Strict-Transport-Security"); hsts != "max-age=31536000" {
		t.Errorf("HTTPS reply Strict-Transport-Security %q, want max-age=31536000", hsts)
	}
	created := mustSend(t, c, "POST", s.URL+"/api/admin/apps.php",
		http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}, []byte(`{"name":"Over TLS"}`))
	app, _ := created.json(t)["app"].(map[string]any)
	secret, _ := app["secret"].(string)
	if created.status != 200 || len(secret) != 64 {
		t.Fatalf("create app over HTTPS: %d %s", created.status, created.body)
	}
	ck := mustSend(t, c, "POST", s.URL+"/api/auth/check-key.php",
		http.Header{"X-App-Secret": {secret}, "Content-Type": {"application/json"}}, []byte(`{"license_key":"AAAAA-AAAAA-AAAAA-AAAAA"}`))
	if ck.status != 401 || ck.json(t)["error_code"] != "INVALID_KEY" {
		t.Fatalf("client API over HTTPS: %d %s", ck.status, ck.body)
	}

	// A client that does not trust the certificate fails the handshake.
	if _, err := send(t, httpsClient(nil, 0), "GET", s.URL+"/api/admin/apps.php", nil, nil); err == nil {
		t.Fatal("an untrusting client connected: the listener is not using the test certificate")
	}
	// TLS 1.1 is refused by the server (the client offers 1.0 and 1.1 only).
	if _, err := send(t, httpsClient(pool, tls.VersionTLS11), "GET", s.URL+"/", nil, nil); err == nil ||
		!strings.Contains(err.Error(), "remote error: tls: protocol version not supported") {
		t.Fatalf("TLS 1.1 handshake: %v, want the server's protocol version alert", err)
	}
	// Plain HTTP to the TLS port is not served.
	plain := mustSend(t, kwtest.HTTP, "GET", "http://"+strings.TrimPrefix(s.URL, "https://")+"/api/admin/apps.php", nil, nil)
	if plain.status != 400 {
		t.Fatalf("plain HTTP on the TLS port: %d %s", plain.status, plain.body)
	}
}

// A broken certificate pair makes Start fail with an error naming the flags.
func TestTLSBadCertificateRefused(t *testing.T) {
	dir := t.TempDir()
	certFile, _, _, _ := selfSigned(t, dir)
	other := t.TempDir()
	_, otherKey, _, _ := selfSigned(t, other)
	srv, err := newServer(t, func(c *config.Config) { c.TLSCert, c.TLSKey = certFile, otherKey })
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	err = srv.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("Start with a mismatched key pair: %v", err)
	}
}

// newServer builds (without starting) a server on a fresh SQLite directory,
// closed when the test ends.
func newServer(t *testing.T, configure func(*config.Config)) (*server.Server, error) {
	t.Helper()
	cfg := config.Config{Database: config.Database{Data: t.TempDir()}, Addr: "127.0.0.1:0", SessionTimeout: 180 * time.Second,
		BcryptCost: 4, TokenTTL: time.Hour, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword, Limits: kwtest.Limits}
	configure(&cfg)
	srv, err := server.New(t.Context(), cfg, server.Options{})
	if err == nil {
		t.Cleanup(func() { srv.Close(context.Background()) })
	}
	return srv, err
}

// With TLS on, the plain-HTTP listener (--http-addr) answers the client API
// in place, because shipped clients do not follow redirects and their bodies
// are enveloped anyway (sdk-compat §7.1), and redirects everything else —
// the admin API above all — to HTTPS with 308 so that methods and bodies
// survive; the admin API is never served over plain HTTP.
func TestTLSPlainListener(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool, _ := selfSigned(t, dir)
	httpAddr := freeAddr(t)
	s := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) {
		c.TLSCert, c.TLSKey, c.HTTPAddr = certFile, keyFile, httpAddr
	}})
	plainURL := "http://" + httpAddr
	_, tlsPort, _ := net.SplitHostPort(s.Addr())

	// Provision over HTTPS.
	c := httpsClient(pool, 0)
	tok, _ := mustSend(t, c, "POST", s.URL+"/api/admin/login.php", nil, adminCreds).json(t)["token"].(string)
	bearer := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}
	app, _ := mustSend(t, c, "POST", s.URL+"/api/admin/apps.php", bearer, []byte(`{"name":"Plain"}`)).json(t)["app"].(map[string]any)
	appID, secret := app["app_id"].(string), app["secret"].(string)
	keys, _ := mustSend(t, c, "POST", s.URL+"/api/admin/keys.php", bearer,
		[]byte(`{"app_id":"`+appID+`","count":1,"key_type":"lifetime"}`)).json(t)["keys"].([]any)
	key := keys[0].(map[string]any)["license_key"].(string)

	// Redirects: admin, reseller, anything outside /api/, with the query kept.
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/admin/login.php"},
		{"GET", "/api/admin/apps.php"},
		{"GET", "/api/admin/keys.php?app_id=" + appID + "&action=export"},
		{"DELETE", "/api/admin/sessions.php"},
		{"GET", "/api/reseller/keys.php"},
		{"GET", "/"},
		{"GET", "/dashboard/index.html?x=1"},
	} {
		h := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}}
		r := mustSend(t, kwtest.HTTP, tc.method, plainURL+tc.path, h, adminCreds)
		// The redirect targets the TLS listener's port on the host the
		// client asked for.
		if want := "https://127.0.0.1:" + tlsPort + tc.path; r.status != http.StatusPermanentRedirect || r.header.Get("Location") != want {
			t.Errorf("%s %s on plain HTTP: %d Location %q, want 308 %q", tc.method, tc.path, r.status, r.header.Get("Location"), want)
		}
		if bytes.Contains(r.body, []byte(`"token"`)) || bytes.Contains(r.body, []byte(`"success":true`)) {
			t.Errorf("%s %s was served over plain HTTP: %s", tc.method, tc.path, r.body)
		}
	}
	// The Host header decides the redirect host; its port is replaced.
	req, _ := http.NewRequest("GET", plainURL+"/api/admin/apps.php", nil)
	req.Host = "licenses.example.com:8080"
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "https://licenses.example.com:"+tlsPort+"/api/admin/apps.php" {
		t.Errorf("redirect with Host licenses.example.com:8080: Location %q", loc)
	}

	// The client API is answered in place on the plain listener.
	plain := &kwtest.Server{Server: s.Server, T: t, URL: plainURL, Clock: s.Clock}
	capp := plain.NewApp(appID, secret)
	sid := capp.Login(key, "pc-plain")
	if hb := capp.Heartbeat(sid, key); !hb.Sealed || hb.Body["success"] != true {
		t.Fatalf("heartbeat on the plain listener: %v", hb)
	}
	if ck := capp.Plain("/api/auth/check-key.php", map[string]any{"license_key": key}); ck.Status != 200 || ck.Body["valid"] != true {
		t.Fatalf("check-key on the plain listener: %s", ck)
	}
	// The session opened over plain HTTP is the same service's.
	sess := mustSend(t, c, "GET", s.URL+"/api/admin/sessions.php?app_id="+appID, bearer, nil).json(t)["sessions"].([]any)
	if len(sess) != 1 || sess[0].(map[string]any)["hwid"] != "pc-plain" {
		t.Fatalf("sessions seen over HTTPS: %v", sess)
	}
}

// Without TLS there is no plain-HTTP redirect listener even if --http-addr
// is set: the main listener serves plain HTTP itself.
func TestNoRedirectListenerWithoutTLS(t *testing.T) {
	httpAddr := freeAddr(t)
	s := kwtest.Start(t, kwtest.Options{Configure: func(c *config.Config) { c.HTTPAddr = httpAddr }})
	if !strings.HasPrefix(s.URL, "http://") {
		t.Fatalf("URL %s", s.URL)
	}
	if r := s.Do("GET", "/api/admin/apps.php", http.Header{"Authorization": {"Bearer " + s.AdminToken()}}, nil); r.Status != 200 {
		t.Fatalf("admin over plain HTTP without TLS: %s", r)
	}
	if conn, err := net.DialTimeout("tcp", httpAddr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("something listens on --http-addr %s without TLS", httpAddr)
	}
}
