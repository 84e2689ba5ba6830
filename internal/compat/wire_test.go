package compat_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/kwtest"
)

// This file is the client side of the suite: how each published client
// generation builds its requests and reads the replies (sdk-compat §1, §5).
// It deliberately does not use internal/envelope.

// style is a JSON serialiser's habit.
type style int

const (
	// Python json.dumps(..., separators=(",", ":")): compact, ensure_ascii
	// (non-ASCII as lowercase \uxxxx).
	pyCompact style = iota
	// Python json.dumps default (the GEN python build): ", " and ": "
	// separators, ensure_ascii.
	pySpaced
	// System.Text.Json's default encoder (NuGet PWFAuth, GEN C#): compact;
	// '+', '<', '>', '&', '\'', '`', '"' and every non-ASCII character as
	// uppercase \uXXXX, so base64's '+' arrives as \u002B.
	netSTJ
	// JSON.stringify / nlohmann::json::dump / Newtonsoft default: compact,
	// non-ASCII as raw UTF-8.
	rawCompact
)

// Gen is one client generation's wire behaviour.
type Gen struct {
	Name string
	// UA is the User-Agent sent; "" sends none (HttpClient and WinHTTP
	// defaults of the hand-written and generated C# clients).
	UA    string
	CT    string // Content-Type of POSTs
	Style style
	// Header holds the other headers the client's HTTP stack adds.
	Header http.Header
	// Corrects: the client corrects its clock from a CLOCK_SKEW refusal and
	// resends once (PY1.1+, NET1.2+, CPP1.1+; sdk-compat §4).
	Corrects bool
}

const browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// The generations whose base URL can be changed (sdk-compat §0, version map).
// The signed ones (PY1.2, NET1.4, CPP-S) are pinned to the vendor's origin
// and cannot be pointed at keyward by design.
var (
	PY10 = Gen{Name: "PY1.0", UA: "Python-urllib/3.11", CT: "application/json", Style: pyCompact,
		Header: http.Header{"Accept-Encoding": {"identity"}, "Connection": {"close"}}}
	PY11 = Gen{Name: "PY1.1", UA: "pwfauth-python/1.1.0 (+https://pwfauth.com)", CT: "application/json", Style: pyCompact,
		Header: http.Header{"Accept-Encoding": {"identity"}, "Connection": {"close"}}, Corrects: true}
	NET10 = Gen{Name: "NET1.0", CT: "application/json; charset=utf-8", Style: netSTJ}
	NET   = Gen{Name: "NET", UA: "PWFAuth-dotnet/1.1.0 (+https://pwfauth.com)", CT: "application/json; charset=utf-8", Style: netSTJ,
		Corrects: true}
	CPP10 = Gen{Name: "CPP1.0", UA: "PwfAuthCpp/1.0 (+https://pwfauth.com)", CT: "application/json", Style: rawCompact}
	CPP11 = Gen{Name: "CPP1.1", UA: "PwfAuthCpp/1.1 (+https://pwfauth.com)", CT: "application/json", Style: rawCompact, Corrects: true}
	VBX   = Gen{Name: "VBX", CT: "application/json; charset=utf-8", Style: rawCompact}
	GENpy = Gen{Name: "GEN-py", UA: "python-requests/2.31.0", CT: "application/json", Style: pySpaced,
		Header: http.Header{"Accept": {"*/*"}, "Accept-Encoding": {"gzip, deflate"}, "Connection": {"keep-alive"}}}
	GENcs = Gen{Name: "GEN-cs", CT: "application/json; charset=utf-8", Style: netSTJ}
	JS3P  = Gen{Name: "JS3P", UA: browserUA, CT: "application/json", Style: rawCompact,
		Header: http.Header{"Accept": {"application/json"}, "Accept-Encoding": {"gzip, deflate, br, zstd"},
			"Origin": {"chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai"}}}
)

// allGens are every replayable generation.
var allGens = []Gen{PY10, PY11, NET10, NET, CPP10, CPP11, VBX, GENpy, GENcs, JS3P}

// O is a JSON object whose members keep their order, as the clients write them.
type O []KV

// KV is one member of an O.
type KV struct {
	K string
	V any
}

// obj builds an O from alternating names and values.
func obj(kv ...any) O {
	var o O
	for i := 0; i+1 < len(kv); i += 2 {
		o = append(o, KV{kv[i].(string), kv[i+1]})
	}
	return o
}

// Marshal serialises v the way generation g does.
func (g Gen) Marshal(v any) []byte {
	var b bytes.Buffer
	g.encode(&b, v)
	return b.Bytes()
}

func (g Gen) seps() (comma, colon string) {
	if g.Style == pySpaced {
		return ", ", ": "
	}
	return ",", ":"
}

func (g Gen) encode(b *bytes.Buffer, v any) {
	comma, colon := g.seps()
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	case json.Number:
		b.WriteString(string(x))
	case json.RawMessage: // sent as is
		b.Write(x)
	case string:
		g.str(b, x)
	case O:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteString(comma)
			}
			g.str(b, m.K)
			b.WriteString(colon)
			g.encode(b, m.V)
		}
		b.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := O{}
		for _, k := range keys {
			o = append(o, KV{k, x[k]})
		}
		g.encode(b, o)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(comma)
			}
			g.encode(b, e)
		}
		b.WriteByte(']')
	default:
		panic(fmt.Sprintf("compat: cannot encode %T", v))
	}
}

// str writes a JSON string with the generation's escaping.
func (g Gen) str(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' && g.Style == netSTJ:
			b.WriteString(`\u0022`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			g.u(b, r)
		case g.Style == netSTJ && strings.ContainsRune("+<>&'`", r):
			g.u(b, r)
		case r < 0x80:
			b.WriteRune(r)
		case g.Style == rawCompact:
			b.WriteRune(r)
		default: // ensure_ascii / System.Text.Json: UTF-16 code units
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				g.u(b, r1)
				g.u(b, r2)
			} else {
				g.u(b, r)
			}
		}
	}
	b.WriteByte('"')
}

func (g Gen) u(b *bytes.Buffer, r rune) {
	if g.Style == netSTJ {
		fmt.Fprintf(b, `\u%04X`, r)
	} else {
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// Client is one app's client of generation G.
type Client struct {
	G      Gen
	T      testing.TB
	S      *kwtest.Server
	Base   string // base URL the client was configured with (no trailing slash)
	Secret string
	HTTP   *http.Client
	// Skew is how far the client's own clock is off the server's; Offset is
	// the correction it learned from a clock refusal.
	Skew, Offset time.Duration
	enc, mac     [32]byte
}

// newTransport returns a transport that adds nothing of its own (no
// automatic Accept-Encoding: gzip, no decompression), trusting pool for TLS.
func newTransport(t testing.TB, pool *x509.CertPool) *http.Client {
	tr := &http.Transport{DisableCompression: true, TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections) // before the server's Shutdown, which waits for idle connections
	return &http.Client{Timeout: 30 * time.Second, Transport: tr,
		// No shipped client follows redirects on the API (and the signed ones refuse them).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// NewClient returns a generation-g client of app a against the server's URL.
func NewClient(t testing.TB, g Gen, a *kwtest.App) *Client {
	return NewClientAt(t, g, a, a.S.URL, nil)
}

// NewClientAt is NewClient with an explicit base URL and an HTTP client
// (nil: a fresh plain one).
func NewClientAt(t testing.TB, g Gen, a *kwtest.App, base string, hc *http.Client) *Client {
	if hc == nil {
		hc = newTransport(t, nil)
	}
	c := &Client{G: g, T: t, S: a.S, Base: strings.TrimRight(base, "/"), Secret: a.Secret, HTTP: hc}
	c.enc = sha256.Sum256([]byte("enc:" + a.Secret))
	c.mac = sha256.Sum256([]byte("mac:" + a.Secret))
	return c
}

// Now is the client's clock: the server's, off by Skew, corrected by Offset.
func (c *Client) Now() time.Time { return c.S.Clock.Now().Add(c.Skew + c.Offset) }

// sign is the envelope MAC: lowercase hex HMAC-SHA256 over p and decimal t.
func (c *Client) sign(p string, t int64) string {
	m := hmac.New(sha256.New, c.mac[:])
	m.Write([]byte(p + strconv.FormatInt(t, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// sealP encrypts inner: padded standard base64 of IV ‖ AES-256-CBC(PKCS#7).
// With wantPlus the IV is drawn again until p contains '+', so that the
// generation's escaping of '+' (System.Text.Json: \u002B) is exercised.
func (c *Client) sealP(inner []byte, wantPlus bool) string {
	block, _ := aes.NewCipher(c.enc[:])
	n := aes.BlockSize - len(inner)%aes.BlockSize
	padded := append(append([]byte{}, inner...), bytes.Repeat([]byte{byte(n)}, n)...)
	for {
		buf := make([]byte, aes.BlockSize+len(padded))
		if _, err := rand.Read(buf[:aes.BlockSize]); err != nil {
			panic(err)
		}
		cipher.NewCBCEncrypter(block, buf[:aes.BlockSize]).CryptBlocks(buf[aes.BlockSize:], padded)
		p := base64.StdEncoding.EncodeToString(buf)
		if !wantPlus || strings.Contains(p, "+") {
			return p
		}
	}
}

// Seal returns the request body of inner as generation G writes it, stamped
// with the client's clock.
func (c *Client) Seal(inner any) []byte {
	return c.SealAt(inner, c.Now().Unix())
}

// SealAt is Seal with an explicit t.
func (c *Client) SealAt(inner any, t int64) []byte {
	p := c.sealP(c.G.Marshal(inner), c.G.Style == netSTJ)
	return c.G.Marshal(obj("p", p, "t", t, "s", c.sign(p, t)))
}

// Forge returns an envelope of inner stamped t whose MAC is wrong (the MAC of
// t+1): what a tampered or wrongly keyed request looks like.
func (c *Client) Forge(inner any, t int64) []byte {
	p := c.sealP(c.G.Marshal(inner), false)
	return c.G.Marshal(obj("p", p, "t", t, "s", c.sign(p, t+1)))
}

// Reply is an answer as the client sees it.
type Reply struct {
	Status int
	Header http.Header
	Raw    []byte
	Sealed bool           // the reply was an envelope and verified
	EnvT   int64          // the reply envelope's t
	Body   map[string]any // the (inner) object, numbers as json.Number
}

func (r *Reply) String() string {
	if r.Sealed {
		b, _ := json.Marshal(r.Body)
		return fmt.Sprintf("%d sealed %s", r.Status, b)
	}
	return fmt.Sprintf("%d plain %s", r.Status, r.Raw)
}

// Header returns the generation's headers for a request.
func (c *Client) header(method string) http.Header {
	h := http.Header{"X-App-Secret": {c.Secret}}
	if method == "POST" {
		h.Set("Content-Type", c.G.CT)
	}
	h["User-Agent"] = []string{c.G.UA} // "" makes net/http send no User-Agent
	for k, v := range c.G.Header {
		h[k] = v
	}
	return h
}

// Do sends a request with the generation's headers (extra overrides; a nil
// value removes a header) and decodes the reply as the client does.
func (c *Client) Do(method, path string, extra http.Header, body []byte) *Reply {
	c.T.Helper()
	h := c.header(method)
	for k, v := range extra {
		if v == nil {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header = h
	if h.Get("Connection") == "close" {
		req.Close = true
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s %s: %v", c.G.Name, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatal(err)
	}
	r := &Reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	c.decode(r, method+" "+path)
	return r
}

// decode reads the reply as the clients do: a JSON object; when it has p, t
// and s it is an envelope whose MAC and t (±300 s of the client's clock) are
// checked before it is decrypted.
func (c *Client) decode(r *Reply, what string) {
	c.T.Helper()
	if len(r.Raw) == 0 {
		return
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(r.Raw, &outer); err != nil {
		c.T.Fatalf("%s %s: reply is not a JSON object (every client needs one): %v: %q", c.G.Name, what, err, r.Raw)
	}
	_, hp := outer["p"]
	_, ht := outer["t"]
	_, hs := outer["s"]
	if hp && ht && hs {
		c.open(r, outer, what)
		return
	}
	r.Body = kwtest.Numbers(c.T, r.Raw)
}

func (c *Client) open(r *Reply, outer map[string]json.RawMessage, what string) {
	c.T.Helper()
	var p, s string
	if json.Unmarshal(outer["p"], &p) != nil || json.Unmarshal(outer["s"], &s) != nil {
		c.T.Fatalf("%s %s: reply envelope p/s are not strings: %s", c.G.Name, what, r.Raw)
	}
	t, err := strconv.ParseInt(string(outer["t"]), 10, 64)
	if err != nil {
		c.T.Fatalf("%s %s: reply envelope t is not a JSON integer: %s", c.G.Name, what, r.Raw)
	}
	if !isLowerHex64(s) || !hmac.Equal([]byte(s), []byte(c.sign(p, t))) {
		c.T.Fatalf("%s %s: reply envelope MAC does not verify (s must be lowercase hex HMAC-SHA256 of p+t): %s", c.G.Name, what, r.Raw)
	}
	if d := c.Now().Unix() - t; d > 300 || d < -300 {
		c.T.Fatalf("%s %s: reply envelope t=%d is %d s off the client's clock %d (±300 s)", c.G.Name, what, t, d, c.Now().Unix())
	}
	ct, err := base64.StdEncoding.Strict().DecodeString(p)
	if err != nil || len(ct) < 2*aes.BlockSize || len(ct)%aes.BlockSize != 0 {
		c.T.Fatalf("%s %s: reply p is not padded standard base64 of IV‖ciphertext: %q", c.G.Name, what, p)
	}
	block, _ := aes.NewCipher(c.enc[:])
	plain := make([]byte, len(ct)-aes.BlockSize)
	cipher.NewCBCDecrypter(block, ct[:aes.BlockSize]).CryptBlocks(plain, ct[aes.BlockSize:])
	n := int(plain[len(plain)-1])
	if n < 1 || n > aes.BlockSize || !bytes.Equal(plain[len(plain)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		c.T.Fatalf("%s %s: reply plaintext has bad PKCS#7 padding", c.G.Name, what)
	}
	plain = plain[:len(plain)-n]
	if !utf8.Valid(plain) {
		c.T.Fatalf("%s %s: inner reply is not UTF-8", c.G.Name, what)
	}
	r.Sealed, r.EnvT = true, t
	r.Body = kwtest.Numbers(c.T, plain)
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, ch := range s {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// Env POSTs inner in an envelope. A generation that corrects its clock
// resends once after a CLOCK_SKEW refusal, as the SDKs do (sdk-compat §4).
func (c *Client) Env(path string, inner any) *Reply {
	c.T.Helper()
	r := c.Do("POST", path, nil, c.Seal(inner))
	if c.G.Corrects && !r.Sealed && r.Body["reason"] == "CLOCK_SKEW" {
		if st, ok := r.Body["server_time"].(json.Number); ok {
			if v, err := st.Int64(); err == nil && v > 0 {
				c.Offset = time.Unix(v, 0).Sub(c.S.Clock.Now().Add(c.Skew))
				r = c.Do("POST", path, nil, c.Seal(inner))
			}
		}
	}
	return r
}

// Plain POSTs body as plain JSON in the generation's serialisation.
func (c *Client) Plain(path string, body any) *Reply {
	c.T.Helper()
	return c.Do("POST", path, nil, c.G.Marshal(body))
}

// Get sends a GET with the app secret and extra headers.
func (c *Client) Get(path string, extra http.Header) *Reply {
	c.T.Helper()
	return c.Do("GET", path, extra, nil)
}
