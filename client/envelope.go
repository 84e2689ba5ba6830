package client

// This file is a copy of the small envelope code of keyward's
// internal/envelope (which vendors cannot import), trimmed to what a client
// needs. envelope_interop_test.go checks that the two interoperate.

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

// envelopeWindow is the largest accepted difference between an envelope's t
// and the (corrected) local clock.
const envelopeWindow = 300 * time.Second

var (
	errEnvMalformed = errors.New("malformed envelope")
	errEnvBadMAC    = errors.New("envelope MAC does not verify")
	errEnvClockSkew = errors.New("envelope timestamp outside the ±300 s window")
	errEnvDecrypt   = errors.New("envelope cannot be decrypted")
)

// envKeys are the two keys derived from an app secret.
type envKeys struct {
	enc [32]byte
	mac [32]byte
}

// deriveKeys returns SHA-256("enc:"+secret) and SHA-256("mac:"+secret), the
// secret taken as its text, not hex-decoded.
func deriveKeys(secret string) envKeys {
	return envKeys{
		enc: sha256.Sum256([]byte("enc:" + secret)),
		mac: sha256.Sum256([]byte("mac:" + secret)),
	}
}

// envelope is the wire form {p, t, s}.
type envelope struct {
	P string
	T int64
	S string
}

// parseEnvelope decodes an envelope; t must be a JSON integer.
func parseEnvelope(body []byte) (envelope, error) {
	var raw struct {
		P *string         `json:"p"`
		T json.RawMessage `json:"t"`
		S *string         `json:"s"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil || dec.More() {
		return envelope{}, errEnvMalformed
	}
	if raw.P == nil || raw.T == nil || raw.S == nil {
		return envelope{}, errEnvMalformed
	}
	t, err := strconv.ParseInt(string(raw.T), 10, 64)
	if err != nil {
		return envelope{}, errEnvMalformed
	}
	return envelope{P: *raw.P, T: t, S: *raw.S}, nil
}

// isEnvelope reports whether body is a JSON object with p, t and s.
func isEnvelope(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	_, p := probe["p"]
	_, t := probe["t"]
	_, s := probe["s"]
	return p && t && s
}

func (k envKeys) sign(p string, t int64) string {
	m := hmac.New(sha256.New, k.mac[:])
	io.WriteString(m, p)
	io.WriteString(m, strconv.FormatInt(t, 10))
	return hex.EncodeToString(m.Sum(nil))
}

// open checks env's MAC in constant time, then its timestamp against now,
// then decrypts.
func (k envKeys) open(env envelope, now time.Time) ([]byte, error) {
	got, err := hex.DecodeString(env.S)
	if err != nil || len(got) != sha256.Size {
		return nil, errEnvBadMAC
	}
	m := hmac.New(sha256.New, k.mac[:])
	io.WriteString(m, env.P)
	io.WriteString(m, strconv.FormatInt(env.T, 10))
	if !hmac.Equal(got, m.Sum(nil)) {
		return nil, errEnvBadMAC
	}
	w := int64(envelopeWindow / time.Second)
	if d := now.Unix() - env.T; d > w || d < -w {
		return nil, errEnvClockSkew
	}
	raw, err := base64.StdEncoding.DecodeString(env.P)
	if err != nil || len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, errEnvDecrypt
	}
	block, _ := aes.NewCipher(k.enc[:])
	iv, ct := raw[:aes.BlockSize], raw[aes.BlockSize:]
	out := make([]byte, len(ct))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, ct)
	n := int(out[len(out)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, errEnvDecrypt
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errEnvDecrypt
		}
	}
	return out[:len(out)-n], nil
}

// seal encrypts plain with a fresh random IV and stamps it with now.
func (k envKeys) seal(plain []byte, now time.Time) (envelope, error) {
	block, _ := aes.NewCipher(k.enc[:])
	n := aes.BlockSize - len(plain)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plain)+n)
	if _, err := io.ReadFull(rand.Reader, buf[:aes.BlockSize]); err != nil {
		return envelope{}, fmt.Errorf("envelope iv: %w", err)
	}
	copy(buf[aes.BlockSize:], plain)
	for i := len(buf) - n; i < len(buf); i++ {
		buf[i] = byte(n)
	}
	cipher.NewCBCEncrypter(block, buf[:aes.BlockSize]).CryptBlocks(buf[aes.BlockSize:], buf[aes.BlockSize:])
	p := base64.StdEncoding.EncodeToString(buf)
	t := now.Unix()
	return envelope{P: p, T: t, S: k.sign(p, t)}, nil
}

// marshal returns the compact JSON encoding {"p":…,"t":…,"s":…}.
func (e envelope) marshal() []byte {
	b := make([]byte, 0, len(e.P)+len(e.S)+40)
	b = append(b, `{"p":"`...)
	b = append(b, e.P...)
	b = append(b, `","t":`...)
	b = strconv.AppendInt(b, e.T, 10)
	b = append(b, `,"s":"`...)
	b = append(b, e.S...)
	b = append(b, `"}`...)
	return b
}
