package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// Fields is a decoded JSON object body. Clients of several generations send
// the same value under different names and types, so handlers read fields
// one by one, accepting aliases, rather than decoding into a struct.
type Fields map[string]json.RawMessage

// Body size limits: client bodies are small envelopes; admin bodies may carry
// feature maps and notes.
const (
	ClientBodyLimit = 64 << 10
	AdminBodyLimit  = 1 << 20
)

var ErrTooLarge = apperr.New(apperr.Invalid, wire.CodeBodyTooLarge, "Request body is too large.")

// ReadBody reads at most limit bytes of r's body.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, ErrTooLarge
	}
	if err != nil {
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Could not read the request body.")
	}
	return b, nil
}

// LimitedBody is a body under http.MaxBytesReader that is read by code
// which turns read errors into its own reports (the key CSV parser): over
// records that the limit was passed, so the handler answers BODY_TOO_LARGE.
type LimitedBody struct {
	R    io.Reader
	Over bool
}

// Read reads from R, noting a read past the limit in Over.
func (b *LimitedBody) Read(p []byte) (int, error) {
	n, err := b.R.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.Over = true
	}
	return n, err
}

// BodyBuffer is a reusable request body buffer for the envelope routes
// (and the load tool's echo, which must read bodies the same way), whose
// bodies are read, opened and dropped within the request. Take one with
// GetBodyBuffer and give it back with PutBodyBuffer.
type BodyBuffer struct{ b []byte }

var bodyBuffers = sync.Pool{New: func() any { return &BodyBuffer{b: make([]byte, 0, 1024)} }}

// GetBodyBuffer takes a buffer from the pool.
func GetBodyBuffer() *BodyBuffer { return bodyBuffers.Get().(*BodyBuffer) }

// PutBodyBuffer gives buf back; the bytes it read are invalid from then on.
func PutBodyBuffer(buf *BodyBuffer) { bodyBuffers.Put(buf) }

// Read reads at most limit bytes of r's body into buf, as ReadBody does;
// the bytes are valid until buf goes back to the pool.
func (buf *BodyBuffer) Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	b := buf.b[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, ErrTooLarge
		}
		if err != nil {
			return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Could not read the request body.")
		}
	}
	buf.b = b
	return b, nil
}

// ParseFields decodes a JSON object; an empty body is an empty object.
func ParseFields(b []byte) (Fields, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Fields{}, nil
	}
	var f Fields
	if err := json.Unmarshal(b, &f); err != nil || f == nil {
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "The request body must be a JSON object.")
	}
	return f, nil
}

// BadType is the refusal of a field of the wrong type: name must be want.
func BadType(name, want string) error {
	return apperr.InvalidField(name, "must be "+want)
}

// Str returns the first of names that is present, as a string. JSON null and
// absence give "". Numbers are refused, and so are strings with NUL
// characters (JSON \u0000), which PostgreSQL cannot store: refusing them here
// keeps both engines alike and such input a 400 rather than a 500.
func (f Fields) Str(names ...string) (string, error) {
	for _, n := range names {
		raw, ok := f[n]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", BadType(n, "a string")
		}
		if strings.IndexByte(s, 0) >= 0 {
			return "", BadType(n, "a string without NUL characters")
		}
		return s, nil
	}
	return "", nil
}

// Key returns a license key field, trimmed of surrounding white space as the
// example clients do.
func (f Fields) Key(names ...string) (string, error) {
	s, err := f.Str(names...)
	return strings.TrimSpace(s), err
}

// Int returns an integer field; a string of digits is accepted too.
func (f Fields) Int(name string) (int64, bool, error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, false, BadType(name, "an integer")
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, false, BadType(name, "an integer")
	}
	return v, true, nil
}

// Bool returns a boolean field.
func (f Fields) Bool(name string) (bool, bool, error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, false, BadType(name, "true or false")
	}
	return b, true, nil
}

// ScanBytes reads the string members named by names from a JSON object
// body in one pass, into out (by position in names) as slices of b, giving
// what ParseFields followed by f.Str(name) for each would (nil for null and
// absence, which Str reads as ""): the last of duplicate members wins. It
// handles the form clients send (member names and the wanted values without
// escapes); for anything else — invalid JSON, not an object, an escape, a
// wanted value that is not a plain string — it reports false and the caller
// takes the general path, which decides. Other members' values are skipped
// whatever they are. The heartbeat reads its two members with it without
// allocating. It is not inlined: inlined into a caller in another package,
// the caller's out array moved to the heap.
//
//go:noinline
func ScanBytes(b []byte, names []string, out [][]byte) bool {
	if !validJSON(b) {
		return false
	}
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipJSONSpace(b, i+1)
	if b[i] == '}' {
		return true
	}
	for {
		// A member name: valid JSON guarantees the quotes and the colon.
		j := i + 1
		for b[j] != '"' {
			if b[j] == '\\' {
				return false
			}
			j++
		}
		name := b[i+1 : j]
		i = skipJSONSpace(b, j+1) + 1 // past ':'
		i = skipJSONSpace(b, i)
		want := -1
		for n, s := range names {
			if string(name) == s {
				want = n
				break
			}
		}
		end := skipJSONValue(b, i)
		if want >= 0 {
			switch v := b[i:end]; {
			case string(v) == "null":
				out[want] = nil
			case v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v):
				out[want] = v[1 : len(v)-1]
			default:
				return false
			}
		}
		i = skipJSONSpace(b, end)
		if b[i] == '}' {
			return true
		}
		i = skipJSONSpace(b, i+1) // past ','
	}
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONValue returns the index after the (valid) JSON value at b[i].
func skipJSONValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 { // the end of the enclosing object
				return i
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// PlainBody reads a public route's JSON body (at most ClientBodyLimit),
// answering the refusal itself when it cannot.
func (e *Edge) PlainBody(w http.ResponseWriter, r *http.Request) (Fields, bool) {
	body, err := ReadBody(w, r, ClientBodyLimit)
	if err == nil {
		var f Fields
		if f, err = ParseFields(body); err == nil {
			return f, true
		}
	}
	e.Error(w, r, err)
	return nil, false
}
