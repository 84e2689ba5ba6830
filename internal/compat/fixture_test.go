package compat_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// richApp creates an app with everything the client paths touch: trials and
// accounts on, a social link, texts, a slide, a published release and a
// price plan.
type rich struct {
	*kwtest.App
	LinkID int64
}

func richApp(t *testing.T, s *kwtest.Server, name string) *rich {
	t.Helper()
	a := s.CreateApp(name)
	settings(t, a, map[string]any{"trial_enabled": true, "trial_ip_limit": 0, "accounts_enabled": true,
		"account_signup_days": 30, "login_message": "Welcome back", "download_url": "https://downloads.example.com/app"})
	l := s.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": a.ID, "platform": "discord",
		"url": "https://discord.gg/example", "label": "Community"})
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": a.ID, "name": "welcome_message", "value": "Hello"})
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "title": "New in 1.1"})
	s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": a.ID, "type": "plan", "name": "Lifetime",
		"price": 49, "currency": "USD", "key_type": "lifetime"})
	a.Release("1.1.0", []byte("new build"), nil)
	id := l.Obj("social_link")["id"].(float64)
	return &rich{App: a, LinkID: int64(id)}
}

var seq atomic.Int64

// uniq returns a fresh suffix for hwids and usernames.
func uniq() string { return fmt.Sprint(seq.Add(1)) }

// tour walks every client path of sdk-compat §7.1 with client c, as one
// signed-in session of that generation would, and fails on any answer that is
// not the route's success — a redirect above all.
func tour(t *testing.T, c *Client, a *rich) {
	t.Helper()
	n := uniq()
	key := a.GenerateKeys(1, "days", 30, 5)[0]
	spare := a.GenerateKeys(1, "days", 30, 1)[0]
	hwid := "tour-pc-" + n
	sealed := func(r *Reply, what string) {
		t.Helper()
		noRedirect(t, r, what)
		if r.Status != 200 || r.Body["success"] != true || !r.Sealed {
			t.Fatalf("%s %s via %s: want an enveloped success, got %s", c.G.Name, what, c.Base, r)
		}
	}
	plain := func(r *Reply, what string) {
		t.Helper()
		noRedirect(t, r, what)
		if r.Status != 200 || r.Body["success"] != true || r.Sealed {
			t.Fatalf("%s %s via %s: want a plain success, got %s", c.G.Name, what, c.Base, r)
		}
	}
	if c.G.Name == "VBX" || c.G.Name == "JS3P" {
		plain(c.Plain(pCheckKey, obj("license_key", key)), "check-key")
	} else {
		sealed(c.Env(pCheckKey, obj("license_key", key)), "check-key")
	}
	r := c.Env(pLogin, obj("license_key", key, "hwid", hwid))
	sealed(r, "login")
	sid := r.Body["session_id"].(string)
	sealed(beat(c, sid, key), "heartbeat")
	sealed(c.Get(pInfo, nil), "info")
	sealed(c.Get(pText, http.Header{"Authorization": {"Bearer " + key}}), "text")
	sealed(c.Env(pSlides, obj("action", "get_slides")), "slides")
	u := c.Env(pUpdate, obj("v", "1.0.0", "channel", "stable", "hwid", hwid, "license_key", key))
	sealed(u, "update check")
	sealed(c.Env(pSocial, obj("link_id", a.LinkID)), "social-click")
	sealed(c.Env(pLogout, obj("session_id", sid, "license_key", key)), "logout")
	plain(c.Plain(pTrial, obj("hwid", "tour-trial-"+n)), "trial")
	plain(c.Plain(pReqReset, obj("license_key", key, "reason", "Device changed")), "request-hwid-reset")
	plain(c.Plain(pSelfReset, obj("key", key, "reason", "Reset from app")), "reset-hwid")
	user := "tour" + n
	plain(c.Plain(pRegister, obj("username", user, "password", "first-pass-1", "email", "")), "account-register")
	plain(c.Plain(pAccLogin, obj("username", user, "password", "first-pass-1", "hwid", hwid)), "account-login")
	plain(c.Plain(pChangePw, obj("username", user, "current_password", "first-pass-1", "new_password", "second-pass-2")), "change-password")
	plain(c.Plain(pRedeem, obj("username", user, "password", "second-pass-2", "license_key", spare)), "account-redeem")
	plain(c.Do("GET", pPricing+"?app_id="+a.ID, http.Header{"X-App-Secret": nil}, nil), "pricing")

	// The update's download_url is relative to the base URL (no leading
	// slash, no host), so it resolves under whatever base the client has.
	dl, _ := get(u.Body, "update.download_url")
	ds, _ := dl.(string)
	if !strings.HasPrefix(ds, "api/update/download.php?") {
		t.Fatalf("%s update.download_url = %#v, want a path relative to the base URL (api/update/download.php?v=…)", c.G.Name, dl)
	}
	req, _ := http.NewRequest("GET", c.Base+"/"+ds, nil)
	req.Header.Set("X-App-Secret", c.Secret)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("download_url %s under base %s: HTTP %d", ds, c.Base, resp.StatusCode)
	}
}

func noRedirect(t testing.TB, r *Reply, what string) {
	t.Helper()
	if r.Status >= 300 && r.Status < 400 || r.Header.Get("Location") != "" {
		t.Fatalf("%s answered a redirect (HTTP %d, Location %q): shipped clients do not follow redirects (§7.1)",
			what, r.Status, r.Header.Get("Location"))
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "keyward compat"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
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
	return certFile, keyFile, pool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
