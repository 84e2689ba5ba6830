package clientapi_test

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/wire"
)

func parsePEMKey(t *testing.T, s string) any {
	t.Helper()
	blk, rest := pem.Decode([]byte(s))
	if blk == nil || blk.Type != "PUBLIC KEY" || len(rest) != 0 {
		t.Fatalf("not one PUBLIC KEY PEM: %q", s)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestPublicKeys: GET /api/app/public-keys.php serves, without any
// credential, the license-file key keyward generated at first start (the
// one that verifies files signed with the active key), then, once the
// operator has reply keys and a second, announced license-file key, all
// of them with their use, algorithm, PEM and active flag; and an empty
// list when keyward has no key at all.
func TestPublicKeys(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		// Fresh data directory: one license-file key, generated and active.
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		dir := signing.LicenseKeyDir(filepath.Join(s.DataDir, "signing"))
		set, err := signing.LoadLicenseKeys(dir)
		if err != nil || set == nil || set.Active == nil {
			t.Fatalf("no license-file key generated at start in %s: %v", dir, err)
		}
		if st, err := os.Stat(filepath.Join(dir, set.Active.ID+".pem")); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v %v", err, st)
		}
		res := s.PublicKeys(t)
		if len(res.Keys) != 1 {
			t.Fatalf("keys %+v", res.Keys)
		}
		k := res.Keys[0]
		if k.Kid != set.Active.ID || k.Use != "license-file" || k.Alg != "Ed25519" || !k.Active || k.SPKISHA256 != set.Active.SPKISHA256 {
			t.Fatalf("key %+v", k)
		}
		pub, ok := parsePEMKey(t, k.PublicKey).(ed25519.PublicKey)
		if !ok || licensefile.KidOf(pub) != k.Kid {
			t.Fatalf("PEM is not the Ed25519 key %s", k.Kid)
		}
		// What an app pins from this reply verifies a file the server's
		// active key signs.
		pins, err := licensefile.ParsePublicKeys([]byte(k.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		now := s.Clock.Now()
		text, err := licensefile.Sign(licensefile.Claims{AppID: "a", HWID: "h", Status: "active", IssuedAt: now, ValidUntil: now.Add(time.Hour), Kid: set.Active.ID}, set.Active.Private)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := licensefile.Parse(text); err != nil || f.Verify(pins, now, "h") != nil {
			t.Fatalf("file does not verify with the served key: %v", err)
		}
		// Other methods: the JSON 405.
		if r := s.Do("POST", "/api/app/public-keys.php", nil, nil); r.Status != 405 || r.Header.Get("Allow") == "" || r.Str("error_code") == "" {
			t.Fatalf("POST: %d %s %v", r.Status, r.Raw, r.Header)
		}

		// An operator with reply keys and a license-file rotation announced.
		signDir := filepath.Join(t.TempDir(), "signing")
		reply, err := signing.Init(signDir)
		if err != nil {
			t.Fatal(err)
		}
		first, err := signing.CreateLicenseKey(signing.LicenseKeyDir(signDir))
		if err != nil {
			t.Fatal(err)
		}
		next, err := signing.CreateLicenseKey(signing.LicenseKeyDir(signDir))
		if err != nil {
			t.Fatal(err)
		}
		s2 := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = signDir }})
		res = s2.PublicKeys(t)
		if len(res.Keys) != 3 {
			t.Fatalf("keys %+v", res.Keys)
		}
		byKid := map[string]wire.PublicKey{}
		for _, k := range res.Keys {
			byKid[k.Kid] = k
		}
		if k := byKid[first.ID]; k.Use != "license-file" || !k.Active {
			t.Fatalf("first license-file key %+v", k)
		}
		if k := byKid[next.ID]; k.Use != "license-file" || k.Active || k.Alg != "Ed25519" {
			t.Fatalf("announced license-file key %+v", k)
		}
		r := byKid[reply.ID]
		if r.Use != "reply" || r.Alg != "RSA-PKCS1v15-SHA256" || !r.Active || r.SPKISHA256 != reply.SPKISHA256 || r.PublicKey != string(reply.PublicPEM) {
			t.Fatalf("reply key %+v", r)
		}
		if rk, ok := parsePEMKey(t, r.PublicKey).(*rsa.PublicKey); !ok || rk.N.BitLen() != signing.Bits {
			t.Fatalf("reply PEM is not the RSA-%d key", signing.Bits)
		}
		if res.Keys[0].Use != "license-file" || res.Keys[2].Use != "reply" {
			t.Fatalf("order: %+v", res.Keys)
		}

		// No key at all: no reply key, and the license-file directory
		// cannot be created (a file is in its place, as a read-only mount
		// would refuse it): keyward starts without license-file keys and
		// serves an empty list.
		bare := t.TempDir()
		if err := os.WriteFile(signing.LicenseKeyDir(bare), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s3 := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = bare }})
		if r := s3.Do("GET", "/api/app/public-keys.php", nil, nil); r.Status != 200 || string(r.Raw) != `{"success":true,"keys":[]}`+"\n" && string(r.Raw) != `{"success":true,"keys":[]}` {
			t.Fatalf("no keys: %d %q", r.Status, r.Raw)
		}
	})
}
