// Package envelope implements the client API's encrypted envelope: AES-256-CBC
// with PKCS#7 padding under a key derived from the app secret, authenticated by
// HMAC-SHA256 over p and the decimal timestamp. It is pure: no I/O, no clock of
// its own, so every rule is testable and fuzzable.
package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Window is the largest accepted difference between an envelope's t and now.
const Window = 300 * time.Second

// Errors returned by Open. ErrClockSkew is only returned once the MAC verified,
// so a clock refusal is never an oracle for forged envelopes.
var (
	ErrMalformed = errors.New("envelope: malformed")
	ErrBadMAC    = errors.New("envelope: bad mac")
	ErrClockSkew = errors.New("envelope: timestamp outside the window")
	ErrDecrypt   = errors.New("envelope: cannot decrypt")
)

// Keys are the two keys derived from an app secret.
type Keys struct {
	Enc [32]byte
	MAC [32]byte
}

// Derive returns the keys for secret: SHA-256("enc:"+secret) and
// SHA-256("mac:"+secret), the secret taken as its text, not hex-decoded.
func Derive(secret string) Keys {
	return Keys{
		Enc: sha256.Sum256([]byte("enc:" + secret)),
		MAC: sha256.Sum256([]byte("mac:" + secret)),
	}
}

// Envelope is the wire form {p, t, s}.
type Envelope struct {
	P string `json:"p"`
	T int64  `json:"t"`
	S string `json:"s"`
}

// Parse decodes an envelope from JSON. It accepts any valid JSON encoding
// (escaped characters such as \u002B, extra whitespace) and requires p, t and s
// with the right types; t must be an integer.
func Parse(body []byte) (Envelope, error) {
	var raw struct {
		P *string         `json:"p"`
		T json.RawMessage `json:"t"`
		S *string         `json:"s"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return Envelope{}, ErrMalformed
	}
	if dec.More() {
		return Envelope{}, ErrMalformed
	}
	if raw.P == nil || raw.T == nil || raw.S == nil {
		return Envelope{}, ErrMalformed
	}
	// t must be a JSON integer: a quoted "1", 1.5 or 1e3 is refused.
	t, err := strconv.ParseInt(string(raw.T), 10, 64)
	if err != nil {
		return Envelope{}, ErrMalformed
	}
	return Envelope{P: *raw.P, T: t, S: *raw.S}, nil
}

// IsEnvelope reports whether body looks like an envelope (a JSON object with
// p, t and s). check-key uses it to mirror the request's transport.
func IsEnvelope(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	_, p := probe["p"]
	_, t := probe["t"]
	_, s := probe["s"]
	return p && t && s
}

// Sign returns the lowercase hex HMAC-SHA256 of p followed by decimal t.
func (k Keys) Sign(p string, t int64) string {
	m := hmac.New(sha256.New, k.MAC[:])
	io.WriteString(m, p)
	io.WriteString(m, strconv.FormatInt(t, 10))
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks env's MAC in constant time, then its timestamp against now,
// then decrypts. It returns the inner plaintext and the raw MAC bytes, which
// identify the envelope for replay detection.
func (k Keys) Verify(env Envelope, now time.Time) (plain []byte, mac []byte, err error) {
	got, err := hex.DecodeString(env.S)
	if err != nil || len(got) != sha256.Size {
		return nil, nil, ErrBadMAC
	}
	m := hmac.New(sha256.New, k.MAC[:])
	io.WriteString(m, env.P)
	io.WriteString(m, strconv.FormatInt(env.T, 10))
	if !hmac.Equal(got, m.Sum(nil)) {
		return nil, nil, ErrBadMAC
	}
	if d := now.Unix() - env.T; d > int64(Window/time.Second) || d < -int64(Window/time.Second) {
		return nil, got, ErrClockSkew
	}
	plain, err = k.decrypt(env.P)
	if err != nil {
		return nil, got, err
	}
	return plain, got, nil
}

func (k Keys) decrypt(p string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(p)
	if err != nil {
		return nil, ErrDecrypt
	}
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, ErrDecrypt
	}
	block, _ := aes.NewCipher(k.Enc[:])
	iv, ct := raw[:aes.BlockSize], raw[aes.BlockSize:]
	out := make([]byte, len(ct))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, ct)
	n := int(out[len(out)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, ErrDecrypt
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, ErrDecrypt
		}
	}
	return out[:len(out)-n], nil
}

// Seal encrypts plain under k with a fresh random IV and stamps it with now.
func (k Keys) Seal(plain []byte, now time.Time) (Envelope, error) {
	return k.SealWith(rand.Reader, plain, now)
}

// SealWith is Seal with an explicit source of randomness for the IV.
func (k Keys) SealWith(random io.Reader, plain []byte, now time.Time) (Envelope, error) {
	block, _ := aes.NewCipher(k.Enc[:])
	n := aes.BlockSize - len(plain)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plain)+n)
	if _, err := io.ReadFull(random, buf[:aes.BlockSize]); err != nil {
		return Envelope{}, fmt.Errorf("envelope: iv: %w", err)
	}
	copy(buf[aes.BlockSize:], plain)
	for i := len(buf) - n; i < len(buf); i++ {
		buf[i] = byte(n)
	}
	cipher.NewCBCEncrypter(block, buf[:aes.BlockSize]).CryptBlocks(buf[aes.BlockSize:], buf[aes.BlockSize:])
	p := base64.StdEncoding.EncodeToString(buf)
	t := now.Unix()
	return Envelope{P: p, T: t, S: k.Sign(p, t)}, nil
}

// Marshal returns the envelope's compact JSON encoding, without HTML escaping so
// that base64's '+' and '/' travel as themselves.
func (e Envelope) Marshal() []byte {
	b := make([]byte, 0, len(e.P)+len(e.S)+40)
	b = append(b, `{"p":"`...)
	b = append(b, e.P...) // base64: no character needs escaping
	b = append(b, `","t":`...)
	b = strconv.AppendInt(b, e.T, 10)
	b = append(b, `,"s":"`...)
	b = append(b, e.S...) // hex
	b = append(b, `"}`...)
	return b
}
