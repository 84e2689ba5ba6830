package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"
)

// Box is an app's envelope keys made ready for repeated use: the AES cipher
// and the keyed HMAC are built once (Derive hashes twice, aes.NewCipher and
// hmac.New allocate), so opening and sealing with a Box costs little more
// than the message's own buffers. It gives the same results as Parse,
// Keys.Verify and Keys.Seal. A Box is safe for concurrent use.
type Box struct {
	keys  Keys
	block cipher.Block
	macs  sync.Pool // of *macState keyed with keys.MAC
}

// macState is a keyed HMAC with room for its sum and a timestamp's digits,
// so a MAC is computed without allocating.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
	t   [20]byte
}

// NewBox returns a Box for k.
func NewBox(k Keys) *Box {
	block, _ := aes.NewCipher(k.Enc[:]) // 32-byte key: cannot fail
	b := &Box{keys: k, block: block}
	b.macs.New = func() any { return &macState{h: hmac.New(sha256.New, b.keys.MAC[:])} }
	return b
}

// Keys returns the keys b was made from.
func (b *Box) Keys() Keys { return b.keys }

// mac computes HMAC-SHA256(p ‖ decimal t) into the state's sum; the caller
// returns the state to the pool.
func (b *Box) mac(p []byte, t int64) *macState {
	m := b.macs.Get().(*macState)
	m.h.Reset()
	m.h.Write(p)
	m.h.Write(strconv.AppendInt(m.t[:0], t, 10))
	m.h.Sum(m.sum[:0])
	return m
}

// Open parses body as an envelope and verifies it as Keys.Verify does: the
// MAC in constant time, then t against now, then decryption. It returns the
// plaintext, the MAC (which identifies the envelope for replay detection)
// and t. Errors are those of Parse and Verify, in the same order.
func (b *Box) Open(body []byte, now time.Time) (plain []byte, mac [sha256.Size]byte, t int64, err error) {
	p, s, t, ok := scan(body)
	if !ok {
		env, err := Parse(body)
		if err != nil {
			return nil, mac, 0, err
		}
		p, s, t = []byte(env.P), []byte(env.S), env.T
	}
	if len(s) != 2*sha256.Size {
		return nil, mac, 0, ErrBadMAC
	}
	if _, err := hex.Decode(mac[:], s); err != nil {
		return nil, mac, 0, ErrBadMAC
	}
	m := b.mac(p, t)
	equal := hmac.Equal(mac[:], m.sum[:])
	b.macs.Put(m)
	if !equal {
		return nil, mac, 0, ErrBadMAC
	}
	if d := now.Unix() - t; d > int64(Window/time.Second) || d < -int64(Window/time.Second) {
		return nil, mac, t, ErrClockSkew
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(p)))
	n, err := base64.StdEncoding.Decode(raw, p)
	if err != nil {
		return nil, mac, t, ErrDecrypt
	}
	raw = raw[:n]
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, mac, t, ErrDecrypt
	}
	iv, ct := raw[:aes.BlockSize], raw[aes.BlockSize:]
	cipher.NewCBCDecrypter(b.block, iv).CryptBlocks(ct, ct)
	pad := int(ct[len(ct)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, mac, t, ErrDecrypt
	}
	for _, c := range ct[len(ct)-pad:] {
		if int(c) != pad {
			return nil, mac, t, ErrDecrypt
		}
	}
	return ct[:len(ct)-pad], mac, t, nil
}

// Seal encrypts plain with a fresh random IV, stamps it with now and returns
// the envelope's JSON, byte for byte what Keys.Seal followed by Marshal gives
// for the same IV.
func (b *Box) Seal(plain []byte, now time.Time) ([]byte, error) {
	return b.SealWith(rand.Reader, plain, now)
}

// SealWith is Seal with an explicit source of randomness for the IV.
func (b *Box) SealWith(random io.Reader, plain []byte, now time.Time) ([]byte, error) {
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	rawLen := aes.BlockSize + len(plain) + pad
	pLen := base64.StdEncoding.EncodedLen(rawLen)
	t := now.Unix()
	var digits [20]byte
	ts := strconv.AppendInt(digits[:0], t, 10)
	const head, mid, tail = `{"p":"`, `","t":`, `,"s":"`
	out := make([]byte, 0, len(head)+pLen+len(mid)+len(ts)+len(tail)+2*sha256.Size+2+rawLen)
	// The raw IV‖ciphertext is built in the spare room at the end of out,
	// then encoded into its place.
	raw := out[cap(out)-rawLen : cap(out)]
	if _, err := io.ReadFull(random, raw[:aes.BlockSize]); err != nil {
		return nil, fmt.Errorf("envelope: iv: %w", err)
	}
	copy(raw[aes.BlockSize:], plain)
	for i := rawLen - pad; i < rawLen; i++ {
		raw[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(b.block, raw[:aes.BlockSize]).CryptBlocks(raw[aes.BlockSize:], raw[aes.BlockSize:])
	out = append(out, head...)
	out = base64.StdEncoding.AppendEncode(out, raw)
	p := out[len(head):]
	m := b.mac(p, t)
	out = append(out, mid...)
	out = append(out, ts...)
	out = append(out, tail...)
	out = hex.AppendEncode(out, m.sum[:])
	b.macs.Put(m)
	out = append(out, `"}`...)
	return out, nil
}

// scan reads the common envelope form quickly: a flat JSON object with
// exactly the members p, t and s in any order, p and s strings of printable
// ASCII without escapes, t an integer without leading zeros, white space
// anywhere JSON allows it. It reports false for anything else (escapes,
// other members, duplicates, invalid JSON …), which Parse then decides, so
// the two always agree. p and s are slices of body.
func scan(body []byte) (p, s []byte, t int64, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, nil, 0, false
	}
	var seenP, seenT, seenS bool
	for {
		i = skipSpace(body, i+1)
		key, j, okKey := plainString(body, i)
		if !okKey {
			return nil, nil, 0, false
		}
		i = skipSpace(body, j)
		if i >= len(body) || body[i] != ':' {
			return nil, nil, 0, false
		}
		i = skipSpace(body, i+1)
		switch string(key) {
		case "p", "s":
			v, j, okV := plainString(body, i)
			if !okV {
				return nil, nil, 0, false
			}
			if key[0] == 'p' {
				if seenP {
					return nil, nil, 0, false
				}
				p, seenP = v, true
			} else {
				if seenS {
					return nil, nil, 0, false
				}
				s, seenS = v, true
			}
			i = j
		case "t":
			j := i
			if j < len(body) && body[j] == '-' {
				j++
			}
			start := j
			for j < len(body) && body[j] >= '0' && body[j] <= '9' {
				j++
			}
			if seenT || j == start || (body[start] == '0' && j-start > 1) {
				return nil, nil, 0, false
			}
			n, err := strconv.ParseInt(string(body[i:j]), 10, 64)
			if err != nil {
				return nil, nil, 0, false
			}
			t, seenT, i = n, true, j
		default:
			return nil, nil, 0, false
		}
		i = skipSpace(body, i)
		if i >= len(body) {
			return nil, nil, 0, false
		}
		if body[i] == '}' {
			break
		}
		if body[i] != ',' {
			return nil, nil, 0, false
		}
	}
	if skipSpace(body, i+1) != len(body) || !seenP || !seenT || !seenS {
		return nil, nil, 0, false
	}
	return p, s, t, true
}

// plainString reads a JSON string at body[i] made only of printable ASCII
// without escapes, returning its contents and the index after it.
func plainString(body []byte, i int) ([]byte, int, bool) {
	if i >= len(body) || body[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(body); j++ {
		switch c := body[j]; {
		case c == '"':
			return body[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
