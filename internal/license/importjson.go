package license

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
)

// Formats of a key import file.
const (
	FormatCSV  = "csv"
	FormatJSON = "json"
)

// ImportRowFromObject reads one key object as JSON (the admin API's Key or
// KeyDetail, whose devices are [{hwid, …}], or any object naming the import
// fields by their aliases, with hwids as an array or a ';' or ','
// separated string) into an ImportRow, with the same tolerance as the CSV
// (aliases, status in any case, time forms, null, lifetime markers).
// Problems are returned at line (including what a new key needs, see
// ImportRow.Needs); the row is valid only when there are none.
// Members the import does not read are ignored. Call Complete on the row
// with the import time before storing it.
func ImportRowFromObject(line int, obj []byte) (ImportRow, []ImportError) {
	p := &ParsedCSV{}
	row, _ := p.objectRow(line, obj)
	return row, append(p.Errors, row.needs...)
}

// objectRow reads one JSON key object at line; problems go to p.
func (p *ParsedCSV) objectRow(line int, obj []byte) (ImportRow, bool) {
	var raw rawRow
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		p.fail(line, "", "each key must be a JSON object")
		return ImportRow{Line: line}, false
	}
	ok := true
	names := [numImportFields]string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			p.fail(line, "", "unreadable JSON object: %s", jsonErr(err))
			return ImportRow{Line: line}, false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			p.fail(line, "", "unreadable JSON object: %s", jsonErr(err))
			return ImportRow{Line: line}, false
		}
		name := importName(key)
		f, known := importAliases[name]
		if !known {
			p.ignore(name)
			continue
		}
		if raw.given[f] {
			p.fail(line, KeyCSVHeader[f], "members %q and %q both give %s; keep one", clip(names[f]), clip(key), KeyCSVHeader[f])
			ok = false
			continue
		}
		names[f], raw.given[f] = key, true
		if !p.member(line, f, v, &raw) {
			ok = false
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		p.fail(line, "", "unreadable JSON object")
		return ImportRow{Line: line}, false
	}
	if len(bytes.TrimSpace(obj[dec.InputOffset():])) > 0 {
		p.fail(line, "", "unexpected data after the key object")
		return ImportRow{Line: line}, false
	}
	if !ok {
		return ImportRow{Line: line}, false
	}
	return p.importRow(line, &raw)
}

// member stores one JSON value of field f in raw: strings as they are,
// numbers and booleans as their text, null as none, features as its JSON
// object, devices as an array of IDs or of objects with an hwid.
func (p *ParsedCSV) member(line, f int, v json.RawMessage, raw *rawRow) bool {
	v = bytes.TrimSpace(v)
	field := KeyCSVHeader[f]
	if len(v) == 0 {
		return true
	}
	switch v[0] {
	case 'n':
		return true
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			p.fail(line, field, "unreadable string")
			return false
		}
		raw.val[f] = s
	case '{':
		if f != fFeatures {
			p.fail(line, field, "must be a string or a number, not an object")
			return false
		}
		raw.val[f] = string(v)
	case '[':
		if f != fHWIDs {
			p.fail(line, field, "must be a string or a number, not a list")
			return false
		}
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			p.fail(line, field, "unreadable list")
			return false
		}
		raw.list = true
		for _, it := range items {
			var s string
			var d struct {
				HWID *string `json:"hwid"`
			}
			switch {
			case it[0] == '"' && json.Unmarshal(it, &s) == nil:
			case it[0] == '{' && json.Unmarshal(it, &d) == nil && d.HWID != nil:
				s = *d.HWID
			default:
				p.fail(line, field, "must list device IDs as strings or objects with an hwid")
				return false
			}
			raw.hwids = append(raw.hwids, strings.TrimSpace(s))
		}
	default: // a number, true or false
		raw.val[f] = string(v)
	}
	return true
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the file ends inside a value"
	}
	return err.Error()
}

// ParseKeyJSON reads a JSON key file of at most MaxImportBytes: an array of
// key objects (see ImportRowFromObject), or an object with such an array
// in keys (the reply of GET keys.php, KeyListReply) or one object in key
// (the reply of GET keys.php?license_key=, KeyDetailReply). Each key's
// problems are reported at the line where its object starts; duplicates
// at the later one. Like ParseKeyCSV it never fails as a whole.
func ParseKeyJSON(r io.Reader) *ParsedCSV {
	p := &ParsedCSV{Format: FormatJSON}
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	switch {
	case err != nil:
		p.fail(1, "", "unreadable file: %s", err)
		return p
	case len(data) > MaxImportBytes:
		p.fail(1, "", "the file is larger than %d MiB; split it", MaxImportBytes>>20)
		return p
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lines := &lineCounter{data: data, line: 1}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(err error) {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		p.fail(lines.at(off), "", "unreadable JSON, stopped here: %s", jsonErr(err))
	}
	t, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		p.fail(1, "", "the file is empty: it needs an array of key objects")
		return p
	case err != nil:
		fail(err)
		return p
	case t == json.Delim('['):
		if !p.jsonArray(dec, lines, fail) {
			return p
		}
	case t == json.Delim('{'):
		found := false
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				fail(err)
				return p
			}
			switch t {
			case "keys":
				if t, err := dec.Token(); err != nil || t != json.Delim('[') {
					p.fail(lines.at(dec.InputOffset()), "", "keys must be an array of key objects")
					return p
				}
				if !p.jsonArray(dec, lines, fail) {
					return p
				}
				found = true
			case "key":
				line := lines.at(lines.skip(dec.InputOffset()))
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					fail(err)
					return p
				}
				p.add(line, v)
				found = true
			default:
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					fail(err)
					return p
				}
			}
		}
		if !found {
			p.fail(1, "", "an object needs keys: [...] (the reply of GET keys.php) or key: {...}; or give an array of key objects")
			return p
		}
		if _, err := dec.Token(); err != nil {
			fail(err)
			return p
		}
	default:
		p.fail(1, "", "a JSON import is an array of key objects or the reply of GET keys.php")
		return p
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		p.fail(lines.at(dec.InputOffset()), "", "unexpected data after the keys")
		return p
	}
	if p.DataRows == 0 && p.ErrorCount == 0 {
		p.fail(1, "", "no keys in the file")
	}
	return p
}

// jsonArray reads key objects up to the closing ']' (the '[' is read);
// false when it had to stop.
func (p *ParsedCSV) jsonArray(dec *json.Decoder, lines *lineCounter, fail func(error)) bool {
	for dec.More() {
		line := lines.at(lines.skip(dec.InputOffset()))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			fail(err)
			return false
		}
		if !p.add(line, v) {
			return false
		}
	}
	if _, err := dec.Token(); err != nil {
		fail(err)
		return false
	}
	return true
}

// add reads one key object of a file; false when the file has too many.
func (p *ParsedCSV) add(line int, obj []byte) bool {
	p.DataRows++
	if p.DataRows > MaxImportRows {
		p.fail(line, "", "more than %d keys; split the file", MaxImportRows)
		return false
	}
	if row, ok := p.objectRow(line, obj); ok {
		p.keep(row)
	}
	return true
}

// keep adds a valid row unless its key string came earlier in the file.
func (p *ParsedCSV) keep(row ImportRow) {
	if p.seen == nil {
		p.seen = map[string]int{}
	}
	if first, dup := p.seen[row.Key.LicenseKey]; dup {
		p.failRow(&row, "license_key", "duplicate of line %d", first)
		return
	}
	p.seen[row.Key.LicenseKey] = row.Line
	p.Rows = append(p.Rows, row)
}

// lineCounter turns increasing byte offsets of data into line numbers.
type lineCounter struct {
	data []byte
	off  int64
	line int
}

// skip returns the offset of the next value at or after off: past white
// space and a separating ','.
func (l *lineCounter) skip(off int64) int64 {
	for off < int64(len(l.data)) {
		switch l.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (l *lineCounter) at(off int64) int {
	if off > int64(len(l.data)) {
		off = int64(len(l.data))
	}
	if off < l.off { // offsets only grow; start over if one did not
		l.off, l.line = 0, 1
	}
	l.line += bytes.Count(l.data[l.off:off], []byte("\n"))
	l.off = off
	return l.line
}

// ParseKeys reads an import file in format (FormatCSV or FormatJSON), or,
// when format is "", in the format its first byte that is not white space
// says: '[' or '{' is JSON, anything else CSV.
func ParseKeys(r io.Reader, format string) (*ParsedCSV, error) {
	switch format {
	case FormatCSV:
		return ParseKeyCSV(r), nil
	case FormatJSON:
		return ParseKeyJSON(r), nil
	case "":
	default:
		return nil, apperr.InvalidField("format", "must be csv or json")
	}
	br := bufio.NewReaderSize(r, 4096)
	head, _ := br.Peek(4096)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) > 0 && (head[0] == '[' || head[0] == '{') {
		return ParseKeyJSON(br), nil
	}
	return ParseKeyCSV(br), nil
}
