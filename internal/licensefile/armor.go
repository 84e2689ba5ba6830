package licensefile

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// An armored document is
//
//	-----BEGIN <LABEL>-----
//	Name: value          (header lines, for humans)
//	…
//	<blank line>
//	<base64 of the payload, wrapped at 64 columns>
//	<blank line>
//	<base64 of the signature or MAC, one line>
//	-----END <LABEL>-----
//
// Readers are tolerant of what hand-carrying does to text: CRLF or CR line
// ends, indentation and trailing spaces, text before BEGIN and after END (a
// mail body), lost or extra blank lines and re-wrapped base64. The body is
// every line after the headers with all whitespace removed; its last
// tagLen characters are the signature (or MAC), the rest is the payload.
// Both are standard base64 with padding, so the split is unambiguous.

const wrapAt = 64

// armor writes a document.
func armor(label string, headers [][2]string, payload, tag []byte) string {
	var b strings.Builder
	b.WriteString("-----BEGIN " + label + "-----\n")
	for _, h := range headers {
		b.WriteString(h[0] + ": " + h[1] + "\n")
	}
	b.WriteString("\n")
	p := base64.StdEncoding.EncodeToString(payload)
	for len(p) > wrapAt {
		b.WriteString(p[:wrapAt] + "\n")
		p = p[wrapAt:]
	}
	b.WriteString(p + "\n\n")
	b.WriteString(base64.StdEncoding.EncodeToString(tag) + "\n")
	b.WriteString("-----END " + label + "-----\n")
	return b.String()
}

// dearmored is a parsed document before any cryptography.
type dearmored struct {
	headers map[string]string // canonical names (Valid-Until), last one wins
	payload []byte
	tag     []byte
}

// dearmor reads the first document labelled label out of text. tagLen is
// the base64 length of the signature or MAC.
func dearmor(text, label string, tagLen int, maxSize int) (*dearmored, error) {
	if len(text) > maxSize {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxSize)
	}
	begin, end := "-----BEGIN "+label+"-----", "-----END "+label+"-----"
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == begin {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%w: no %q line", ErrMalformed, begin)
	}
	stop := -1
	for i := start; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == end {
			stop = i
			break
		}
	}
	if stop < 0 {
		return nil, fmt.Errorf("%w: no %q line", ErrMalformed, end)
	}
	d := &dearmored{headers: map[string]string{}}
	i := start
	// Header lines: "Name: value". Base64 never holds a colon, so headers
	// end at the first non-blank line without one (blank lines may have
	// been added or lost on the way).
	for ; i < stop; i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			break
		}
		d.headers[canonicalHeader(strings.TrimSpace(name))] = strings.TrimSpace(value)
	}
	var body strings.Builder
	for ; i < stop; i++ {
		for _, f := range strings.Fields(lines[i]) {
			body.WriteString(f)
		}
	}
	all := body.String()
	if len(all) <= tagLen {
		return nil, fmt.Errorf("%w: no payload", ErrMalformed)
	}
	var err error
	if d.payload, err = base64.StdEncoding.DecodeString(all[:len(all)-tagLen]); err != nil {
		return nil, fmt.Errorf("%w: payload is not base64", ErrMalformed)
	}
	if d.tag, err = base64.StdEncoding.DecodeString(all[len(all)-tagLen:]); err != nil {
		return nil, fmt.Errorf("%w: signature is not base64", ErrMalformed)
	}
	return d, nil
}

// canonicalHeader spells a header name as keyward writes it, whatever case
// it was typed in (valid-until → Valid-Until).
func canonicalHeader(name string) string {
	parts := strings.Split(strings.ToLower(name), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// headerSafe reports whether v can be shown as a header value: printable
// ASCII on one line, bounded, no surrounding space. Values that are not
// (which an editor in another code page could also mangle) are left out of
// the headers; the payload still carries them.
func headerSafe(v string) bool {
	if v == "" || len(v) > 200 || strings.TrimSpace(v) != v {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
