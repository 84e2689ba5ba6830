// Package licensefile is keyward's offline license format (docs/offline.md):
// the signed license file an app verifies without the server, and the
// activation request an air-gapped machine makes for one.
//
// A license file is an armored text document: header lines for humans, then
// the payload (compact JSON, the Claims) and its Ed25519 signature over the
// exact bytes "KEYWARD-LICENSE-V1\n" + payload. The signed payload is
// authoritative: a verifier needs no canonicalisation, only the bytes it
// decoded. Parse also requires every header keyward writes to agree with the
// payload, so what a person reads is what is signed; minimal verifiers
// (docs/offline.md) may ignore headers as long as they never act on them.
//
// The package is pure (no files, no clock, no randomness but the nonce of
// NewRequest) and uses the standard library only, so the server, the CLI
// and the SDK share it.
package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Format constants.
const (
	// Version is the format version this package writes and reads.
	Version = 1
	// Label is the armor label of a license file.
	Label = "KEYWARD LICENSE FILE"
	// SignedPrefix is prepended to the payload bytes to form the signed
	// message (domain separation from every other Ed25519 use).
	SignedPrefix = "KEYWARD-LICENSE-V1\n"
	// MaxSize bounds a license file's text (and an activation request's).
	MaxSize = 64 << 10
	// Alg names the signature algorithm (public-keys.php's alg).
	Alg       = "Ed25519"
	sigB64Len = 88 // base64 of 64 bytes
)

// Why a file does not verify. Errors from Parse and Verify wrap exactly one
// of these (errors.Is); Reason names it in one word for programs.
var (
	ErrMalformed    = errors.New("malformed")
	ErrUnknownKid   = errors.New("signed with an unknown key")
	ErrBadSignature = errors.New("bad signature")
	ErrWrongApp     = errors.New("license file is for another app")
	ErrWrongDevice  = errors.New("license file is for another device")
	ErrExpired      = errors.New("license file expired")
	ErrInactive     = errors.New("license is not active")
)

// Reason is the one-word reason of err from this package: malformed,
// unknown_kid, bad_signature, wrong_app, wrong_device, expired, inactive;
// "" for nil and "error" for anything else.
func Reason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{{ErrMalformed, "malformed"}, {ErrUnknownKid, "unknown_kid"}, {ErrBadSignature, "bad_signature"}, {ErrWrongApp, "wrong_app"},
		{ErrWrongDevice, "wrong_device"}, {ErrExpired, "expired"}, {ErrInactive, "inactive"}} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	if err == nil {
		return ""
	}
	return "error"
}

// Claims are a license file's signed payload. Unknown members are ignored
// by Parse, so later versions of the server may add members without
// breaking older verifiers; a change of meaning bumps V.
type Claims struct {
	V     int    `json:"v"`
	AppID string `json:"app_id"`
	// The key is named, not carried: the file sits on the customer's
	// machine, gets attached to support tickets and copied between
	// machines, and must not hand out a credential that signs in elsewhere.
	// KeyID is the server's id of the key, KeyHint its last characters for
	// people, KeySHA256 the lowercase hex SHA-256 of the key string so an
	// app can check the file belongs to the key its user entered.
	KeyID     int64  `json:"key_id"`
	KeyHint   string `json:"key_hint"`
	KeySHA256 string `json:"key_sha256"`
	HWID      string `json:"hwid"`
	KeyType   string `json:"key_type"` // days, lifetime
	Status    string `json:"status"`   // the key's status when issued: active
	// Features is the holder's feature flags (a JSON object; {} when none).
	Features json.RawMessage `json:"features"`
	IssuedAt time.Time       `json:"issued_at"`
	// ExpiresAt is the license's own expiry (nil: lifetime, or not started).
	ExpiresAt *time.Time `json:"expires_at"`
	// ValidUntil is when this file stops being valid.
	ValidUntil time.Time `json:"valid_until"`
	Kid        string    `json:"kid"`
	// Floating: the key is a floating one, and this file is a borrowed seat
	// (BorrowID names it for returning).
	Floating bool   `json:"floating"`
	BorrowID string `json:"borrow_id,omitempty"`
	// FileID is the server's id of this issued file (listing, revocation).
	FileID string `json:"file_id,omitempty"`
	// Nonce is the activation request's nonce for air-gapped activation.
	Nonce string `json:"nonce,omitempty"`
}

// KeySHA256 returns the lowercase hex SHA-256 of a license key string, as
// Claims.KeySHA256 carries it.
func KeySHA256(licenseKey string) string {
	s := sha256.Sum256([]byte(licenseKey))
	return hex.EncodeToString(s[:])
}

// KeyHint returns the last four characters of a license key ("...AB12"),
// as Claims.KeyHint carries it; only "..." for keys of eight characters or
// fewer, whose last four would give away half the key.
func KeyHint(licenseKey string) string {
	r := []rune(licenseKey)
	if len(r) <= 8 {
		return "..."
	}
	return "..." + string(r[len(r)-4:])
}

// File is a parsed license file: its claims, the exact payload bytes they
// were decoded from and its signature. Parse checks the form only; Verify
// checks the signature and the claims.
type File struct {
	Claims    Claims
	Payload   []byte
	Signature []byte
	// Headers are the header lines as read (canonical names).
	Headers map[string]string
}

// Sign returns the license file text of c signed with key. Times are
// written in UTC to the second; V defaults to Version, Features to {}.
// c.Kid must name key (KidOf of its public key). On the server the key is
// the Edge's active license-file key:
//
//	set := edge.LicenseKeys() // nil: no key, offline files cannot be issued
//	c.Kid = set.Active.ID
//	text, err := licensefile.Sign(c, set.Active.Private)
//
// and set.Publics() verifies what any of the server's keys signed.
func Sign(c Claims, key ed25519.PrivateKey) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("licensefile: bad Ed25519 private key")
	}
	if c.V == 0 {
		c.V = Version
	}
	c.IssuedAt = c.IssuedAt.UTC().Truncate(time.Second)
	c.ValidUntil = c.ValidUntil.UTC().Truncate(time.Second)
	if c.ExpiresAt != nil {
		t := c.ExpiresAt.UTC().Truncate(time.Second)
		c.ExpiresAt = &t
	}
	if len(c.Features) == 0 {
		c.Features = json.RawMessage(`{}`)
	}
	switch {
	case c.V != Version:
		return "", fmt.Errorf("licensefile: version %d, want %d", c.V, Version)
	case c.AppID == "" || c.HWID == "" || c.Kid == "":
		return "", errors.New("licensefile: app_id, hwid and kid are required")
	case !c.ValidUntil.After(c.IssuedAt):
		return "", errors.New("licensefile: valid_until must be after issued_at")
	case c.Kid != KidOf(key.Public().(ed25519.PublicKey)):
		return "", errors.New("licensefile: kid does not name the signing key")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c.Features, &obj); err != nil || obj == nil {
		return "", errors.New("licensefile: features must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, c.Features); err != nil {
		return "", err
	}
	c.Features = buf.Bytes()
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(key, append([]byte(SignedPrefix), payload...))
	text := armor(Label, headersOf(&c), payload, sig)
	if len(text) > MaxSize {
		return "", fmt.Errorf("licensefile: %d bytes, more than %d", len(text), MaxSize)
	}
	return text, nil
}

// knownHeaders are the header names Sign writes.
var knownHeaders = map[string]bool{"Version": true, "App": true, "Key": true, "Device": true, "Floating": true,
	"License-Expires": true, "Valid-Until": true, "Kid": true}

// headersOf is the human-readable summary of c: only values that are safe
// to show on one line (see headerSafe); Parse checks each one it finds.
func headersOf(c *Claims) [][2]string {
	hs := [][2]string{{"Version", strconv.Itoa(c.V)}}
	add := func(name, v string) {
		if headerSafe(v) {
			hs = append(hs, [2]string{name, v})
		}
	}
	add("App", c.AppID)
	add("Key", c.KeyHint)
	add("Device", c.HWID)
	if c.Floating {
		hs = append(hs, [2]string{"Floating", "yes"})
	}
	if c.ExpiresAt != nil {
		hs = append(hs, [2]string{"License-Expires", c.ExpiresAt.Format(time.RFC3339)})
	}
	hs = append(hs, [2]string{"Valid-Until", c.ValidUntil.Format(time.RFC3339)})
	add("Kid", c.Kid)
	return hs
}

// Parse reads a license file out of text (which may hold other text around
// it, CRLF line ends, indentation and re-wrapped lines). It checks the
// form, not the signature: call Verify. Every error wraps ErrMalformed.
func Parse(text string) (*File, error) {
	d, err := dearmor(text, Label, sigB64Len, MaxSize)
	if err != nil {
		return nil, err
	}
	if len(d.tag) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: signature is not %d bytes", ErrMalformed, ed25519.SignatureSize)
	}
	f := &File{Payload: d.payload, Signature: d.tag, Headers: d.headers}
	if err := json.Unmarshal(d.payload, &f.Claims); err != nil {
		return nil, fmt.Errorf("%w: payload is not the claims JSON", ErrMalformed)
	}
	c := &f.Claims
	if c.V != Version {
		return nil, fmt.Errorf("%w: version %d (this verifier reads %d)", ErrMalformed, c.V, Version)
	}
	if c.AppID == "" || c.HWID == "" || c.Kid == "" || c.ValidUntil.IsZero() {
		return nil, fmt.Errorf("%w: app_id, hwid, kid and valid_until are required", ErrMalformed)
	}
	// What a person reads must be what is signed: every header keyward
	// writes that is present says what Sign would have written (a header
	// Sign leaves out for this payload, such as Floating on a fixed key, is
	// refused too). Other headers are ignored.
	want := map[string]string{}
	for _, h := range headersOf(c) {
		want[h[0]] = h[1]
	}
	for name, got := range d.headers {
		if !knownHeaders[name] {
			continue
		}
		if w, ok := want[name]; !ok {
			return nil, fmt.Errorf("%w: header %s says %q but the signed payload has no such value", ErrMalformed, name, got)
		} else if got != w {
			return nil, fmt.Errorf("%w: header %s says %q but the signed payload says %q", ErrMalformed, name, got, w)
		}
	}
	return f, nil
}

// Expect is what Check compares a file's claims with. Empty fields are
// not compared.
type Expect struct {
	Now   time.Time // required
	AppID string
	HWID  string
}

// Verify checks f's signature against pubs (by kid) and that the file is
// valid at now for the device hwid ("" skips the device check). See Check.
func (f *File) Verify(pubs map[string]ed25519.PublicKey, now time.Time, hwid string) error {
	return f.Check(pubs, Expect{Now: now, HWID: hwid})
}

// Check verifies f, in this order: the signing key is known
// (ErrUnknownKid), the signature holds (ErrBadSignature), the app and
// device are the expected ones (ErrWrongApp, ErrWrongDevice), the license
// is active (ErrInactive), and neither the file's valid_until nor the
// license's own expiry has passed at want.Now (ErrExpired). issued_at is not
// compared with the clock: an air-gapped machine's clock may be behind, and
// a clock turned back is the SDK's to detect (its last signed server time).
func (f *File) Check(pubs map[string]ed25519.PublicKey, want Expect) error {
	c := &f.Claims
	pub, ok := pubs[c.Kid]
	if !ok || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: kid %q is not one of the pinned keys", ErrUnknownKid, c.Kid)
	}
	if !ed25519.Verify(pub, append([]byte(SignedPrefix), f.Payload...), f.Signature) {
		return fmt.Errorf("%w: the file was changed or not signed by key %s", ErrBadSignature, c.Kid)
	}
	if want.AppID != "" && c.AppID != want.AppID {
		return fmt.Errorf("%w: it names app %q", ErrWrongApp, c.AppID)
	}
	if want.HWID != "" && c.HWID != want.HWID {
		return fmt.Errorf("%w: it names device %q", ErrWrongDevice, c.HWID)
	}
	if c.Status != "active" {
		return fmt.Errorf("%w: status %q", ErrInactive, c.Status)
	}
	if !want.Now.Before(c.ValidUntil) {
		return fmt.Errorf("%w: valid until %s", ErrExpired, c.ValidUntil.UTC().Format(time.RFC3339))
	}
	if c.ExpiresAt != nil && !want.Now.Before(*c.ExpiresAt) {
		return fmt.Errorf("%w: the license itself expired at %s", ErrExpired, c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// KidOf is a public key's id: the first 16 lowercase hex characters of the
// SHA-256 of its SubjectPublicKeyInfo DER (as for the reply-signing keys).
func KidOf(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:8])
}

// PublicPEM encodes pub as a "PUBLIC KEY" PEM block (SubjectPublicKeyInfo).
func PublicPEM(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKeys reads every Ed25519 "PUBLIC KEY" PEM block of b, keyed by
// kid; blocks of other key types (the RSA reply keys) are skipped. It
// fails when b holds no Ed25519 key.
func ParsePublicKeys(b []byte) (map[string]ed25519.PublicKey, error) {
	out := map[string]ed25519.PublicKey{}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		if pub, ok := k.(ed25519.PublicKey); ok {
			out[KidOf(pub)] = pub
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no Ed25519 public key (PEM \"PUBLIC KEY\") found")
	}
	return out, nil
}
