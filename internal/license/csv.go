package license

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/wire"
)

// KeyCSVHeader is the header of key exports and imports, in the order
// exports write it. Imports accept the columns in any order.
var KeyCSVHeader = []string{"license_key", "status", "key_type", "duration", "max_devices", "activated_at", "expires_at",
	"note", "features", "hwids", "created_at", "floating"}

// Limits of one key import.
const (
	// MaxImportBytes is the largest CSV file an import reads.
	MaxImportBytes = 50 << 20
	// MaxImportRows is the most keys one import inserts (one transaction).
	MaxImportRows = 100_000
	// maxImportErrors is how many row errors a report lists (it counts all).
	maxImportErrors = 1000
	// maxImportDuration keeps activation arithmetic within time.Duration.
	maxImportDuration = 100_000
)

// ImportError is one problem of an import file (see the wire type).
type ImportError = wire.ImportError

// ParsedCSV is what ParseKeyCSV or ParseKeyJSON read: the valid rows, the
// problems (at most maxImportErrors listed, ErrorCount counting all) and how
// many keys (data rows or objects) there were.
type ParsedCSV struct {
	Rows       []ImportRow
	Errors     []ImportError
	ErrorCount int
	DataRows   int
	// Ignored lists the column or member names the import does not read.
	Ignored []string
	// Format is the format read: FormatCSV or FormatJSON.
	Format string
	seen   map[string]int // key string → line of the valid rows
	key    string         // the key string of the row being read, for errors
}

func (p *ParsedCSV) fail(line int, field, format string, args ...any) {
	p.ErrorCount++
	if len(p.Errors) < maxImportErrors {
		p.Errors = append(p.Errors, ImportError{Line: line, LicenseKey: p.key, Field: field, Message: fmt.Sprintf(format, args...)})
	}
}

// failRow records a problem of a valid row found later (by the import).
func (p *ParsedCSV) failRow(row *ImportRow, field, format string, args ...any) {
	p.key = row.Key.LicenseKey
	p.fail(row.Line, field, format, args...)
	p.key = ""
}

// importKeyRE is what an imported key string may be: letters, digits and
// - _ . (not first), at most 128 characters.
var importKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ParseKeyCSV reads a key CSV of at most MaxImportBytes: a header naming
// columns by any of their aliases (a key column at least; any order, any
// case; a UTF-8 byte order mark is skipped), then one key per row, read as
// importRow says (statuses in any case, several time forms, null markers,
// lifetime markers). Every row is validated; problems are collected with
// their line numbers, and duplicate key strings within the file reported at
// the later line. Times are kept to the second, in UTC; line breaks in
// notes become \n. It never fails as a whole: an unreadable file is an
// error at the line where reading stopped.
func ParseKeyCSV(r io.Reader) *ParsedCSV {
	p := &ParsedCSV{Format: FormatCSV}
	br := bufio.NewReader(io.LimitReader(r, MaxImportBytes+1))
	if bom, err := br.Peek(3); err == nil && bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	counted := &countingReader{r: br}
	cr := csv.NewReader(counted)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			p.fail(1, "", "the file is empty: it needs the header %s", strings.Join(KeyCSVHeader, ","))
		} else {
			p.fail(1, "", "unreadable header: %s", csvErr(err))
		}
		return p
	}
	width := len(header)
	cols, ok := p.columns(header)
	if !ok {
		return p
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var line int
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			line = pe.StartLine
		} else if err == nil {
			line, _ = cr.FieldPos(0)
		}
		if counted.n > MaxImportBytes {
			p.fail(line, "", "the file is larger than %d MiB; split it", MaxImportBytes>>20)
			return p
		}
		if err != nil {
			p.fail(line, "", "unreadable CSV, stopped here: %s", csvErr(err))
			return p
		}
		p.DataRows++
		if p.DataRows > MaxImportRows {
			p.fail(line, "", "more than %d keys; split the file", MaxImportRows)
			return p
		}
		if len(rec) != width {
			p.fail(line, "", "%d fields, the header has %d", len(rec), width)
			continue
		}
		if row, ok := p.row(line, cols, rec); ok {
			p.keep(row)
		}
	}
	if counted.n > MaxImportBytes {
		p.fail(1, "", "the file is larger than %d MiB; split it", MaxImportBytes>>20)
	}
	if p.DataRows == 0 && p.ErrorCount == 0 {
		p.fail(1, "", "no keys after the header")
	}
	return p
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func csvErr(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// columns maps each import field to its column in header (-1 when absent).
// Names are matched by their aliases (importAliases) in any case; a field
// named twice is refused (ambiguous), as is a header without a key column.
// Columns of no field are ignored and listed in p.Ignored.
func (p *ParsedCSV) columns(header []string) ([]int, bool) {
	cols := make([]int, numImportFields)
	for i := range cols {
		cols[i] = -1
	}
	ok := true
	for i, h := range header {
		name := importName(h)
		j, known := importAliases[name]
		switch {
		case name == "":
			p.fail(1, "", "column %d has no name", i+1)
			ok = false
		case !known:
			p.ignore(name)
		case cols[j] >= 0:
			p.fail(1, KeyCSVHeader[j], "columns %q and %q both give %s; keep one", clip(strings.TrimSpace(header[cols[j]])), clip(strings.TrimSpace(h)), KeyCSVHeader[j])
			ok = false
		default:
			cols[j] = i
		}
	}
	if cols[fKey] < 0 {
		p.fail(1, "license_key", "no key column (license_key, key or licence_key)")
		ok = false
	}
	return cols, ok
}

// ignore notes a column or member name the import does not read.
func (p *ParsedCSV) ignore(name string) {
	name = clip(name)
	for _, n := range p.Ignored {
		if n == name {
			return
		}
	}
	if len(p.Ignored) < 100 {
		p.Ignored = append(p.Ignored, name)
	}
}

// row validates one record; problems are recorded and reported by ok.
func (p *ParsedCSV) row(line int, cols []int, rec []string) (ImportRow, bool) {
	var raw rawRow
	for f, i := range cols {
		if i >= 0 {
			raw.val[f], raw.given[f] = rec[i], true
		}
	}
	return p.importRow(line, &raw)
}

// KeyCSVRecord is k's row of a key export at now (the effective status),
// with the devices' IDs.
func KeyCSVRecord(k *Key, now time.Time, hwids []string) []string {
	return keyRecord(k, k.StatusAt(now), hwids)
}

func keyRecord(k *Key, status Status, hwids []string) []string {
	opt := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return Timestamp(*t)
	}
	created := ""
	if !k.CreatedAt.IsZero() {
		created = Timestamp(k.CreatedAt)
	}
	return []string{k.LicenseKey, string(status), string(k.Type), strconv.Itoa(k.Duration), strconv.Itoa(k.MaxDevices),
		opt(k.ActivatedAt), opt(k.ExpiresAt), k.Note, string(k.FeaturesJSON()), hwidsCell(hwids), created,
		strconv.FormatBool(k.Floating)}
}

// hwidsCell joins device IDs with ';'. One ID with a ',' gets a trailing
// ';' so an import, which splits on ',' when there is no ';', keeps it whole.
func hwidsCell(hwids []string) string {
	s := strings.Join(hwids, ";")
	if len(hwids) == 1 && strings.Contains(s, ",") {
		s += ";"
	}
	return s
}

// WriteKeyCSV writes rows as a key CSV (header first), with their stored
// status.
func WriteKeyCSV(w io.Writer, rows []ImportRow) error {
	cw := csv.NewWriter(w)
	cw.Write(KeyCSVHeader)
	for i := range rows {
		cw.Write(keyRecord(&rows[i].Key, rows[i].Key.Status, rows[i].HWIDs))
	}
	cw.Flush()
	return cw.Error()
}
