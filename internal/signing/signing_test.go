package signing

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"strings"
	"testing"
)

// vector is spec/vectors/signed-reply.json (copied into testdata), the SDKs' own fixture.
type vector struct {
	Nonce, Method, Path, Request string
	Status                       int
	Body, Signature              string
}

func loadVector(t *testing.T) (vector, []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/signed-reply.json")
	if err != nil {
		t.Fatalf("the published vector: %v", err)
	}
	var v vector
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	pemBytes, err := os.ReadFile("testdata/vector-public.pem")
	if err != nil {
		t.Fatal(err)
	}
	return v, pemBytes
}

// The published vector verifies with the key the signed SDKs pin (its SPKI
// SHA-256 is the one sdk-compat §3 records), and changing any one field of
// the exchange, or the signature, makes it fail — the SDKs' own test.
func TestVector(t *testing.T) {
	v, pemBytes := loadVector(t)
	block, _ := pem.Decode(pemBytes)
	if sum := sha256.Sum256(block.Bytes); hex.EncodeToString(sum[:]) != "4e7d8a41f4b1af388de42b0301d782eecb4bb8324921066155108127227402a6" {
		t.Fatalf("test key SPKI SHA-256 %x is not the one sdk-compat §3 records", sum)
	}
	pub, err := ParsePublic(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	canon := func(v vector) []byte {
		return Canonical(v.Nonce, v.Method, v.Path, []byte(v.Request), v.Status, []byte(v.Body))
	}
	if err := Verify(pub, canon(v), v.Signature); err != nil {
		t.Fatalf("the published vector does not verify: %v", err)
	}
	// The canonical string is exactly the seven lines.
	want := "PWF-REPLY-V1\n" + strings.Repeat("a", 64) + "\nPOST\n/api/auth/login.php\n" +
		"dfcb2021" // the request hash starts so (sdk-compat §3.1)
	if got := string(canon(v)); !strings.HasPrefix(got, want) || strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 6 {
		t.Fatalf("canonical string %q", got)
	}
	for name, change := range map[string]func(*vector){
		"nonce":   func(v *vector) { v.Nonce = strings.Repeat("b", 64) },
		"method":  func(v *vector) { v.Method = "GET" },
		"path":    func(v *vector) { v.Path = "/api/auth/logout.php" },
		"request": func(v *vector) { v.Request += " " },
		"status":  func(v *vector) { v.Status = 201 },
		"body":    func(v *vector) { v.Body = strings.Replace(v.Body, "fixture", "fixturf", 1) },
	} {
		c := v
		change(&c)
		if Verify(pub, canon(c), c.Signature) == nil {
			t.Errorf("changed %s still verifies", name)
		}
	}
	for _, sig := range []string{"", "AAAA", "!", v.Signature[:len(v.Signature)-4], " " + v.Signature, v.Signature + "\n",
		v.Signature[:64] + "\r\n" + v.Signature[64:]} {
		if Verify(pub, canon(v), sig) == nil {
			t.Errorf("signature %.12q… verifies", sig)
		}
	}
}

// A generated key signs what it verifies, round-trips through PEM, and
// names itself by its SPKI hash.
func TestGenerateSignVerify(t *testing.T) {
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if k.Private.N.BitLen() != Bits || k.Private.E != 65537 {
		t.Fatalf("key of %d bits, exponent %d", k.Private.N.BitLen(), k.Private.E)
	}
	pemPriv, err := k.MarshalPrivate()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParsePrivate(pemPriv)
	if err != nil || again.ID != k.ID || again.SPKISHA256 != k.SPKISHA256 || string(again.PublicPEM) != string(k.PublicPEM) {
		t.Fatalf("round trip: %v, %s vs %s", err, again.ID, k.ID)
	}
	block, _ := pem.Decode(k.PublicPEM)
	if _, err := x509.ParsePKIXPublicKey(block.Bytes); err != nil || k.ID != k.SPKISHA256[:16] {
		t.Fatalf("public PEM: %v", err)
	}
	c := Canonical(strings.Repeat("0", 64), "GET", "/api/app/info.php", nil, 404, []byte(`{"success":false}`))
	sig, err := k.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ParsePublic(k.PublicPEM)
	if err := Verify(pub, c, sig); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	other, _ := Generate()
	opub, _ := ParsePublic(other.PublicPEM)
	if Verify(opub, c, sig) == nil {
		t.Fatal("another key verifies the signature")
	}
	// A client pinning both keys of a rotation accepts a signature by either.
	if err := VerifyAny([]*rsa.PublicKey{opub, pub}, c, sig); err != nil {
		t.Fatalf("VerifyAny with the signer second: %v", err)
	}
	if err := VerifyAny([]*rsa.PublicKey{opub}, c, sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("VerifyAny without the signer: %v", err)
	}
	if _, err := ParsePrivate(k.PublicPEM); err == nil {
		t.Fatal("a public key parsed as private")
	}
}

// A streamed reply's canonical string, built from the body's hash, is the
// one built from the body.
func TestCanonicalHashed(t *testing.T) {
	body := []byte(`{"success":true}`)
	sum := sha256.Sum256(body)
	a := Canonical("n", "GET", "/api/update/download.php", nil, 200, body)
	b := CanonicalHashed("n", "GET", "/api/update/download.php", nil, 200, sum[:])
	if string(a) != string(b) {
		t.Fatalf("CanonicalHashed %q, Canonical %q", b, a)
	}
}

// ParsePublic refuses what a client must not pin.
func TestParsePublicRefuses(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&small.PublicKey)
	for name, b := range map[string][]byte{
		"not PEM":  []byte("hello"),
		"private":  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}),
		"1024-bit": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
	} {
		if _, err := ParsePublic(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewNonce(t *testing.T) {
	a, err := NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewNonce()
	if !ValidNonce(a) || !ValidNonce(b) || a == b {
		t.Fatalf("NewNonce gave %q and %q", a, b)
	}
}

func TestValidNonce(t *testing.T) {
	for n, want := range map[string]bool{strings.Repeat("a", 64): true, strings.Repeat("0f", 32): true,
		strings.Repeat("A", 64): false, strings.Repeat("a", 63): false, strings.Repeat("g", 64): false, "": false} {
		if ValidNonce(n) != want {
			t.Errorf("ValidNonce(%q) = %v", n, !want)
		}
	}
}
