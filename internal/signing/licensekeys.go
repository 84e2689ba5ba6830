package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// License-file keys are the operator's Ed25519 keys that sign offline
// license files (internal/licensefile). They live beside the reply-signing
// keys, in the subdirectory LicenseKeyDir of the signing directory (so
// `keyward backup` carries them and no database dump does), one
// `<kid>.pem` (PKCS#8, mode 0600) per key and `active` naming the key that
// signs; the others are announced (served by /api/app/public-keys.php so
// apps can pin them before a rotation) until activated or retired.

// LicenseKeySubdir is the subdirectory of the signing directory holding
// the license-file keys.
const LicenseKeySubdir = "license-file"

// LicenseKeyDir is the license-file key directory of a signing directory.
func LicenseKeyDir(signingDir string) string { return filepath.Join(signingDir, LicenseKeySubdir) }

// LicenseKey is one Ed25519 license-file key.
type LicenseKey struct {
	ID string // the kid: licensefile.KidOf the public key
	// SPKISHA256 is the lowercase hex SHA-256 of the public key's
	// SubjectPublicKeyInfo (DER); ID is its first 16 characters.
	SPKISHA256 string
	Private    ed25519.PrivateKey
	Public     ed25519.PublicKey
	PublicPEM  []byte // SubjectPublicKeyInfo as PEM ("PUBLIC KEY")
}

// LicenseKeys is a loaded license-file key directory.
type LicenseKeys struct {
	Active *LicenseKey
	Keys   []*LicenseKey // sorted by ID
}

// Key returns the key with id (a prefix of at least 8 characters will do),
// or nil.
func (s *LicenseKeys) Key(id string) *LicenseKey {
	if s == nil {
		return nil
	}
	k, _ := licenseKeys.find(s.Keys, id)
	return k
}

// Publics returns every key's public half by kid: what a verifier of the
// files this server signed needs.
func (s *LicenseKeys) Publics() map[string]ed25519.PublicKey {
	out := map[string]ed25519.PublicKey{}
	if s != nil {
		for _, k := range s.Keys {
			out[k.ID] = k.Public
		}
	}
	return out
}

// newLicenseKey names priv as licensefile.KidOf does (the first 16 hex
// characters of the SPKI SHA-256, like the reply keys' ids); computed here
// so that this package, which the client SDK imports, stays a leaf.
func newLicenseKey(priv ed25519.PrivateKey) *LicenseKey {
	pub := priv.Public().(ed25519.PublicKey)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := hashHex(der)
	return &LicenseKey{ID: sum[:16], SPKISHA256: sum, Private: priv, Public: pub, PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}
}

// GenerateLicenseKey makes a fresh Ed25519 key.
func GenerateLicenseKey() (*LicenseKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return newLicenseKey(priv), nil
}

// ParseLicenseKey reads a PKCS#8 PEM Ed25519 private key.
func ParseLicenseKey(b []byte) (*LicenseKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM \"PRIVATE KEY\"")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return newLicenseKey(priv), nil
}

func (k *LicenseKey) marshalPrivate() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writeLicenseKey writes k into dir (created 0700) as <id>.pem, 0600:
// whole to a temporary file, then linked into place, so a reader never
// sees half a key.
func writeLicenseKey(dir string, k *LicenseKey) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := k.marshalPrivate()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), filepath.Join(dir, k.ID+".pem"))
}

// CreateLicenseKey generates a key into dir (the license-file key
// directory) and returns it. The first key of a directory becomes the
// active one; later ones are announced until ActivateLicenseKey.
func CreateLicenseKey(dir string) (*LicenseKey, error) {
	k, err := GenerateLicenseKey()
	if err != nil {
		return nil, err
	}
	if err := writeLicenseKey(dir, k); err != nil {
		return nil, err
	}
	set, err := LoadLicenseKeys(dir)
	if err != nil && !errors.Is(err, errNoActive) {
		return nil, err
	}
	if len(set.Keys) == 1 {
		return k, ActivateLicenseKey(dir, k.ID)
	}
	return k, nil
}

// EnsureLicenseKeys loads dir, generating and activating a first key when
// it holds none (created reports that). Processes starting together on a
// shared directory agree on one key: the active file is linked into place
// exclusively, a loser removes its own key, and a directory holding keys
// but no active file yet (another process mid-creation) is waited for
// briefly before it is read.
func EnsureLicenseKeys(dir string) (set *LicenseKeys, created bool, err error) {
	set, err = LoadLicenseKeys(dir)
	if err != nil && !errors.Is(err, errNoActive) {
		return nil, false, err
	}
	if set == nil {
		if created, err = createFirstLicenseKey(dir); err != nil {
			return nil, false, err
		}
	}
	active := filepath.Join(dir, activeFile)
	for i := 0; i < 50; i++ {
		if _, err := os.Stat(active); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	set, err = LoadLicenseKeys(dir)
	return set, created && err == nil, err
}

// createFirstLicenseKey writes a key and links the active file naming it
// into place; false (and the key removed) when another process's active
// file got there first.
func createFirstLicenseKey(dir string) (bool, error) {
	k, err := GenerateLicenseKey()
	if err != nil {
		return false, err
	}
	if err := writeLicenseKey(dir, k); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, ".active-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(k.ID + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, activeFile)); errors.Is(err, fs.ErrExist) {
		return false, os.Remove(filepath.Join(dir, k.ID+".pem"))
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// licenseKeys is the license-file key directory's kind.
var licenseKeys = keyKind[*LicenseKey]{what: "license-file key", parse: ParseLicenseKey, id: func(k *LicenseKey) string { return k.ID }}

// LoadLicenseKeys reads every key of dir. It returns (nil, nil) when dir
// does not exist or holds no key.
func LoadLicenseKeys(dir string) (*LicenseKeys, error) {
	keys, active, err := licenseKeys.load(dir)
	if keys == nil {
		return nil, err
	}
	return &LicenseKeys{Active: active, Keys: keys}, err
}

// ActivateLicenseKey makes the key id the one that signs license files.
func ActivateLicenseKey(dir, id string) error { return licenseKeys.activate(dir, id) }

// RetireLicenseKey deletes the key id, which must not be the active one.
// Files it signed stop verifying wherever the app refreshes its pins from
// public-keys.php; retire a key only after its files' valid_until.
func RetireLicenseKey(dir, id string) error { return licenseKeys.retire(dir, id) }
