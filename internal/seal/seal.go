// Package seal encrypts keyward's secrets at rest (app secrets, TOTP secrets,
// webhook signing secrets, the JWT keys, stored login replies) under a
// key-encryption key kept in a file outside the database, so that a database
// dump or a `keyward backup` archive alone reveals none of them.
//
// A sealed value is text, "kw1:<key id>:<base64(nonce|ciphertext)>", made with
// AES-256-GCM, a random 96-bit nonce and associated data naming the purpose
// (table and column) and the row id: a ciphertext copied to another row or
// column does not open. The key id lets several keys be loaded at once while
// a rotation re-encrypts. A value not in that format is legacy plaintext and
// is returned as is (the start-up migration re-writes such rows sealed).
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "kw1:"

// KeySize is the size of a key-encryption key (AES-256).
const KeySize = 32

const nonceSize = 12

// maxSealed bounds the text Parse accepts (a stored login reply is the
// largest sealed value, a few kilobytes).
const maxSealed = 1 << 20

// Errors of Open.
var (
	// ErrNoKey: the value is sealed with a key id that is not loaded (or no
	// key is loaded at all).
	ErrNoKey = errors.New("seal: the value is sealed with a key that is not loaded")
	// ErrMalformed: the value starts like a sealed value but is not one.
	ErrMalformed = errors.New("seal: malformed sealed value")
	// ErrOpen: authentication failed (tampered, or another row's or
	// column's value).
	ErrOpen = errors.New("seal: sealed value does not authenticate")
)

// key is one loaded key-encryption key.
type key struct {
	id   string
	raw  []byte
	aead cipher.AEAD
}

// Keyring holds the loaded keys: the first (primary) seals, any opens. A nil
// *Keyring seals nothing (Seal fails) and opens only legacy plaintext.
type Keyring struct {
	keys []key
}

// KeyID is the id of key material k: the first 8 bytes of its SHA-256 under
// a fixed label, in hex. It names the key in sealed values and messages
// without revealing it.
func KeyID(k []byte) string {
	h := sha256.Sum256(append([]byte("keyward secret key id\x00"), k...))
	return hex.EncodeToString(h[:8])
}

// New returns a keyring of the given keys, the first primary.
func New(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("seal: no key")
	}
	kr := &Keyring{}
	seen := map[string]bool{}
	for _, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("seal: a key is %d bytes, want %d", len(k), KeySize)
		}
		id := KeyID(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		kr.keys = append(kr.keys, key{id: id, raw: bytes.Clone(k), aead: aead})
	}
	return kr, nil
}

// Generate returns fresh random key material.
func Generate() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// PrimaryID is the id of the key that seals ("" for a nil keyring).
func (kr *Keyring) PrimaryID() string {
	if kr == nil || len(kr.keys) == 0 {
		return ""
	}
	return kr.keys[0].id
}

// IDs lists the loaded key ids, primary first.
func (kr *Keyring) IDs() []string {
	if kr == nil {
		return nil
	}
	out := make([]string, len(kr.keys))
	for i, k := range kr.keys {
		out[i] = k.id
	}
	return out
}

// With returns a keyring whose keys are those of primary (its primary first)
// followed by kr's: the keyring of a rotation, sealing with the new key and
// opening with either.
func (kr *Keyring) With(primary *Keyring) (*Keyring, error) {
	var keys [][]byte
	for _, r := range []*Keyring{primary, kr} {
		if r != nil {
			for _, k := range r.keys {
				keys = append(keys, k.raw)
			}
		}
	}
	return New(keys...)
}

// Only returns a keyring of kr's primary key alone: the key file after a
// rotation has re-sealed everything.
func (kr *Keyring) Only() *Keyring {
	return &Keyring{keys: kr.keys[:1:1]}
}

// ad is the associated data binding a sealed value to its place.
func ad(purpose, id string) []byte {
	return []byte("keyward seal v1\x00" + purpose + "\x00" + id)
}

// Seal encrypts plain under the primary key for the column purpose of the row
// id. Empty plain stays empty: an absent secret has nothing to hide and code
// tests emptiness.
func (kr *Keyring) Seal(purpose, id string, plain []byte) (string, error) {
	if len(plain) == 0 {
		return "", nil
	}
	if kr == nil || len(kr.keys) == 0 {
		return "", errors.New("seal: no secret key is loaded")
	}
	k := kr.keys[0]
	buf := make([]byte, nonceSize, nonceSize+len(plain)+k.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	buf = k.aead.Seal(buf, buf[:nonceSize], plain, ad(purpose, id))
	return Prefix + k.id + ":" + base64.RawStdEncoding.EncodeToString(buf), nil
}

// SealString is Seal of a string.
func (kr *Keyring) SealString(purpose, id, plain string) (string, error) {
	return kr.Seal(purpose, id, []byte(plain))
}

// Open returns the plaintext of a value stored for the column purpose of the
// row id: a sealed value is decrypted (its key must be loaded and its
// associated data must match), anything else is legacy plaintext returned as
// is.
func (kr *Keyring) Open(purpose, id, v string) ([]byte, error) {
	if !IsSealed(v) {
		return []byte(v), nil
	}
	kid, blob, err := Parse(v)
	if err != nil {
		return nil, err
	}
	if kr != nil {
		for _, k := range kr.keys {
			if k.id == kid {
				out, err := k.aead.Open(nil, blob[:nonceSize], blob[nonceSize:], ad(purpose, id))
				if err != nil {
					return nil, ErrOpen
				}
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("%w (key id %s)", ErrNoKey, kid)
}

// OpenString is Open returning a string.
func (kr *Keyring) OpenString(purpose, id, v string) (string, error) {
	b, err := kr.Open(purpose, id, v)
	return string(b), err
}

// IsSealed reports whether v claims to be a sealed value (Parse says whether
// it is a well-formed one).
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// SealedWith reports whether v is sealed under key id kid (rotation skips
// those).
func SealedWith(v, kid string) bool {
	got, _, err := Parse(v)
	return err == nil && got == kid
}

// Parse splits a sealed value into its key id and nonce|ciphertext, checking
// the form only (not the authentication). Only the form Seal writes is
// accepted, so one blob has one text.
func Parse(v string) (kid string, blob []byte, err error) {
	if len(v) > maxSealed {
		return "", nil, ErrMalformed
	}
	rest, ok := strings.CutPrefix(v, Prefix)
	if !ok {
		return "", nil, ErrMalformed
	}
	kid, b64, ok := strings.Cut(rest, ":")
	if !ok || len(kid) != 16 {
		return "", nil, ErrMalformed
	}
	if _, err := hex.DecodeString(kid); err != nil || strings.ToLower(kid) != kid {
		return "", nil, ErrMalformed
	}
	// Go's base64 decoder skips CR and LF anywhere, strict or not: the
	// same blob with line breaks is another text for it (FuzzParse).
	if strings.ContainsAny(b64, "\r\n") {
		return "", nil, ErrMalformed
	}
	blob, err = base64.RawStdEncoding.Strict().DecodeString(b64)
	if err != nil || len(blob) < nonceSize+16 {
		return "", nil, ErrMalformed
	}
	return kid, blob, nil
}

// fileHeader starts a key file written by keyward.
const fileHeader = `# keyward secret key file: the key-encryption key of the secrets stored in
# the database (one base64 key a line; the first seals, the others only open).
# Keep it out of database backups, or the backup is as good as the database.
`

// ParseFile reads a key file: one base64 key a line, the first primary;
// blank lines and lines starting with # are ignored.
func ParseFile(b []byte) (*Keyring, error) {
	var keys [][]byte
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.Strict().DecodeString(line)
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("line %d: not a base64 %d-byte key", n+1, KeySize)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in the file")
	}
	return New(keys...)
}

// Marshal is the key file text of kr.
func (kr *Keyring) Marshal() []byte {
	var b strings.Builder
	b.WriteString(fileHeader)
	for _, k := range kr.keys {
		b.WriteString(base64.StdEncoding.EncodeToString(k.raw))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Load reads the key file at path.
func Load(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kr, err := ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return kr, nil
}

// LoadOrCreate reads the key file at path, generating one (mode 0600, its
// directory 0700) when there is none. created reports a generated file.
func LoadOrCreate(path string) (kr *Keyring, created bool, err error) {
	kr, err = Load(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return kr, false, err
	}
	k, err := Generate()
	if err != nil {
		return nil, false, err
	}
	if kr, err = New(k); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	// Written whole to a temporary file, then linked into place: a process
	// never reads a half-written key, and of two processes creating the key
	// at once one wins and the other loads the winner's.
	tmp, err := writeTemp(path, kr)
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		kr, err = Load(path)
		return kr, false, err
	} else if err != nil {
		return nil, false, err
	}
	return kr, true, nil
}

// writeTemp writes kr's key file text to a new 0600 file beside path.
func writeTemp(path string, kr *Keyring) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-key-*")
	if err != nil {
		return "", err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	_, err = tmp.Write(kr.Marshal())
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// Write replaces the key file at path with kr atomically (a temporary file
// of mode 0600 renamed over it).
func Write(path string, kr *Keyring) error {
	tmp, err := writeTemp(path, kr)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Rename(tmp, path)
}
