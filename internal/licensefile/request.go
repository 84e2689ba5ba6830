package licensefile

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The air-gapped activation request: what a machine without a network
// makes (app id, license key, its device id, a fresh 128-bit nonce, the time
// it was made), carried by hand (file or pasted text) to the customer portal
// or the vendor, who turn it into a license file for that device.
//
// It is armored like a license file (label RequestLabel) and not signed —
// the machine has no key of its own — but MACed: HMAC-SHA256 over
// RequestMACPrefix + payload bytes, keyed with RequestKey(app secret), the
// secret the shipped app embeds (derived like the envelope's keys: SHA-256
// of a label and the secret). So only code holding the app secret makes a
// request the server accepts, and the device, key and nonce cannot be edited
// on the way. The app secret ships inside the app, so this keeps out
// typos, tampering in transit and requests for other apps, not a determined
// attacker: the license key inside remains the credential, and the server
// applies the same device rules as an online login.
//
// What the server must do with a request (the route's job, not this
// package's): find the app (keyward's routes take it from the caller —
// the customer token's app, the admin's app_id — and the MAC decides: a
// request that verifies with the app's secret is that app's whatever its
// AppID says, since a machine may not know the id), check the MAC with that
// app's secret (Request.Verify, constant time), refuse requests whose CreatedAt is
// further in the past than it keeps nonces for (or in the future beyond a
// small skew), and record (app, nonce) once, atomically with binding the
// device: a second use of the same nonce must not produce another file for
// another device (the device is under the MAC, so a replay can only name
// the same device; answer it with the file already issued, or refuse it).

// Request constants.
const (
	RequestLabel     = "KEYWARD ACTIVATION REQUEST"
	RequestMACPrefix = "KEYWARD-ACTIVATION-REQUEST-V1\n"
	macB64Len        = 44 // base64 of 32 bytes
)

// ErrBadMAC: the request was not made with this app's secret, or was
// changed after it was made.
var ErrBadMAC = errors.New("activation request does not match the app secret")

// Request is an activation request's payload. Unknown members are ignored.
type Request struct {
	V          int       `json:"v"`
	AppID      string    `json:"app_id"`
	LicenseKey string    `json:"license_key"`
	HWID       string    `json:"hwid"`
	Nonce      string    `json:"nonce"` // 32 lowercase hex characters (128 random bits)
	CreatedAt  time.Time `json:"created_at"`
}

// RequestDoc is a parsed activation request: its fields and the exact
// payload bytes and MAC read.
type RequestDoc struct {
	Request
	Payload []byte
	MAC     []byte
}

// RequestKey derives the request MAC key from an app secret:
// SHA-256("offline-request:" + secret).
func RequestKey(appSecret string) [32]byte {
	return sha256.Sum256([]byte("offline-request:" + appSecret))
}

// NewRequest returns a request for licenseKey on device hwid of app appID
// made at now, with a fresh nonce from crypto/rand.
func NewRequest(appID, licenseKey, hwid string, now time.Time) (*Request, error) {
	return newRequest(rand.Reader, appID, licenseKey, hwid, now)
}

func newRequest(random io.Reader, appID, licenseKey, hwid string, now time.Time) (*Request, error) {
	var n [16]byte
	if _, err := io.ReadFull(random, n[:]); err != nil {
		return nil, err
	}
	return &Request{V: Version, AppID: appID, LicenseKey: licenseKey, HWID: hwid, Nonce: hex.EncodeToString(n[:]),
		CreatedAt: now.UTC().Truncate(time.Second)}, nil
}

// MakeRequest returns the armored text of r, MACed with appSecret.
func MakeRequest(r *Request, appSecret string) (string, error) {
	c := *r
	if c.V == 0 {
		c.V = Version
	}
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Second)
	if err := c.check(); err != nil {
		return "", fmt.Errorf("licensefile: %w", err)
	}
	if appSecret == "" {
		return "", errors.New("licensefile: an app secret is required")
	}
	payload, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	hs := [][2]string{{"Version", "1"}}
	for _, h := range [][2]string{{"App", c.AppID}, {"Device", c.HWID}, {"Created", c.CreatedAt.Format(time.RFC3339)}} {
		if headerSafe(h[1]) {
			hs = append(hs, h)
		}
	}
	text := armor(RequestLabel, hs, payload, requestMAC(appSecret, payload))
	if len(text) > MaxSize {
		return "", fmt.Errorf("licensefile: %d bytes, more than %d", len(text), MaxSize)
	}
	return text, nil
}

func requestMAC(appSecret string, payload []byte) []byte {
	k := RequestKey(appSecret)
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(RequestMACPrefix))
	m.Write(payload)
	return m.Sum(nil)
}

func (r *Request) check() error {
	switch {
	case r.V != Version:
		return fmt.Errorf("version %d (this reader reads %d)", r.V, Version)
	case r.AppID == "" || r.LicenseKey == "" || r.HWID == "" || r.CreatedAt.IsZero():
		return errors.New("app_id, license_key, hwid and created_at are required")
	case len(r.Nonce) != 32 || !isLowerHex(r.Nonce):
		return errors.New("nonce must be 32 lowercase hex characters")
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseRequest reads an activation request out of text (as tolerant as
// Parse). It checks the form only; the caller finds the app by AppID and
// calls Verify with its secret. Every error wraps ErrMalformed.
func ParseRequest(text string) (*RequestDoc, error) {
	d, err := dearmor(text, RequestLabel, macB64Len, MaxSize)
	if err != nil {
		return nil, err
	}
	if len(d.tag) != sha256.Size {
		return nil, fmt.Errorf("%w: MAC is not %d bytes", ErrMalformed, sha256.Size)
	}
	doc := &RequestDoc{Payload: d.payload, MAC: d.tag}
	if err := json.Unmarshal(d.payload, &doc.Request); err != nil {
		return nil, fmt.Errorf("%w: payload is not the request JSON", ErrMalformed)
	}
	if err := doc.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return doc, nil
}

// Verify checks the request's MAC with the app's secret, in constant time.
func (d *RequestDoc) Verify(appSecret string) error {
	if !hmac.Equal(requestMAC(appSecret, d.Payload), d.MAC) {
		return ErrBadMAC
	}
	return nil
}
