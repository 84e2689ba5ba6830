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
	"unicode/utf8"
)

// KeyCSVHeader is the header of key exports and imports, in the order
// exports write it. Imports accept the columns in any order.
var KeyCSVHeader = []string{"license_key", "status", "key_type", "duration", "max_devices", "activated_at", "expires_at",
	"note", "features", "hwids", "created_at"}

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

// ImportRow is one valid data row of a key CSV: Key carries the key's
// fields (CreatedAt zero when the cell was empty), HWIDs its bound devices
// in order.
type ImportRow struct {
	Line  int
	Key   Key
	HWIDs []string
}

// ImportError is one problem of a key CSV, at Line (1 is the header) and,
// when it is about one cell, Field.
type ImportError struct {
	Line    int    `json:"line"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ParsedCSV is what ParseKeyCSV read: the valid rows, the problems (at most
// maxImportErrors listed, ErrorCount counting all) and how many data rows
// there were.
type ParsedCSV struct {
	Rows       []ImportRow
	Errors     []ImportError
	ErrorCount int
	DataRows   int
	bad        map[int]bool // lines with a problem
}

func (p *ParsedCSV) fail(line int, field, format string, args ...any) {
	p.ErrorCount++
	if p.bad == nil {
		p.bad = map[int]bool{}
	}
	p.bad[line] = true
	if len(p.Errors) < maxImportErrors {
		p.Errors = append(p.Errors, ImportError{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
	}
}

// importKeyRE is what an imported key string may be: letters, digits and
// - _ . (not first), at most 128 characters.
var importKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ParseKeyCSV reads a key CSV of at most MaxImportBytes: a header naming
// exactly the columns of KeyCSVHeader (any order; a UTF-8 byte order mark
// is skipped), then one key per row. Every row is validated; problems are
// collected with their line numbers, and duplicate key strings within the
// file reported at the later line. Times are RFC 3339 (kept to the second,
// in UTC); line breaks in notes become \n. It never fails as a whole: an
// unreadable file is an error at the line where reading stopped.
func ParseKeyCSV(r io.Reader) *ParsedCSV {
	p := &ParsedCSV{}
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
	cols, ok := p.columns(header)
	if !ok {
		return p
	}
	seen := map[string]int{}
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
		if len(rec) != len(cols) {
			p.fail(line, "", "%d fields, the header has %d", len(rec), len(cols))
			continue
		}
		row, ok := p.row(line, cols, rec)
		if !ok {
			continue
		}
		if first, dup := seen[row.Key.LicenseKey]; dup {
			p.fail(line, "license_key", "duplicate of line %d", first)
			continue
		}
		seen[row.Key.LicenseKey] = line
		p.Rows = append(p.Rows, row)
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

// columns maps each KeyCSVHeader name to its index in header.
func (p *ParsedCSV) columns(header []string) ([]int, bool) {
	want := map[string]int{}
	for i, name := range KeyCSVHeader {
		want[name] = i
	}
	cols := make([]int, len(KeyCSVHeader))
	for i := range cols {
		cols[i] = -1
	}
	ok := true
	for i, h := range header {
		name := strings.TrimSpace(h)
		j, known := want[name]
		switch {
		case !known:
			p.fail(1, name, "unknown column %q; the header is %s", name, strings.Join(KeyCSVHeader, ","))
			ok = false
		case cols[j] >= 0:
			p.fail(1, name, "column %s appears twice", name)
			ok = false
		default:
			cols[j] = i
		}
	}
	for j, i := range cols {
		if i < 0 {
			p.fail(1, KeyCSVHeader[j], "missing column %s; the header is %s", KeyCSVHeader[j], strings.Join(KeyCSVHeader, ","))
			ok = false
		}
	}
	return cols, ok
}

// row validates one record; problems are recorded and reported by ok.
func (p *ParsedCSV) row(line int, cols []int, rec []string) (ImportRow, bool) {
	get := func(name string) string {
		for j, n := range KeyCSVHeader {
			if n == name {
				return rec[cols[j]]
			}
		}
		return ""
	}
	ok := true
	bad := func(field, format string, args ...any) {
		p.fail(line, field, format, args...)
		ok = false
	}
	row := ImportRow{Line: line}
	k := &row.Key

	k.LicenseKey = get("license_key")
	if !importKeyRE.MatchString(k.LicenseKey) {
		bad("license_key", "must be 1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit")
	}
	k.Status = Status(get("status"))
	switch k.Status {
	case StatusUnused, StatusActive, StatusPaused, StatusBanned, StatusExpired, StatusRedeemed:
	default:
		bad("status", "must be unused, active, paused, banned, expired or redeemed")
	}
	k.Type = KeyType(get("key_type"))
	if k.Type != TypeDays && k.Type != TypeLifetime {
		bad("key_type", "must be days or lifetime")
	}
	if n, err := strconv.Atoi(get("duration")); err != nil || n < 0 || n > maxImportDuration {
		bad("duration", "must be a whole number of days from 0 to %d", maxImportDuration)
	} else {
		k.Duration = n
	}
	if n, err := strconv.Atoi(get("max_devices")); err != nil || n < 1 || n > 10000 {
		bad("max_devices", "must be a whole number from 1 to 10000")
	} else {
		k.MaxDevices = n
	}
	optTime := func(field string) *time.Time {
		v := get(field)
		if v == "" {
			return nil
		}
		t, err := parseImportTime(v)
		if err != nil {
			bad(field, "must be an RFC 3339 time such as 2026-11-20T12:00:00Z")
			return nil
		}
		return &t
	}
	k.ActivatedAt = optTime("activated_at")
	k.ExpiresAt = optTime("expires_at")
	if c := optTime("created_at"); c != nil {
		k.CreatedAt = *c
	}
	note := get("note")
	note = strings.ReplaceAll(strings.ReplaceAll(note, "\r\n", "\n"), "\r", "\n")
	if len(note) > 1000 {
		bad("note", "must be at most 1000 bytes")
	} else if !utf8.ValidString(note) {
		bad("note", "must be UTF-8 text")
	}
	k.Note = note
	if f, err := CheckFeatures([]byte(get("features"))); err != nil {
		bad("features", "must be a JSON object of flag names to booleans, numbers or strings")
	} else {
		k.Features = f
	}
	if v := get("hwids"); v != "" {
		row.HWIDs = strings.Split(v, ";")
		dup := map[string]bool{}
		for _, h := range row.HWIDs {
			switch {
			case h == "" || len(h) > 256:
				bad("hwids", "each device ID must be 1 to 256 bytes, separated by ';'")
			case strings.ContainsFunc(h, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }):
				bad("hwids", "device IDs must be printable UTF-8 text")
			case dup[h]:
				bad("hwids", "device ID %q is listed twice", h)
			}
			dup[h] = true
		}
		if len(row.HWIDs) > 10000 {
			bad("hwids", "at most 10000 devices")
		}
	}
	if !ok {
		return row, false
	}
	// The states keyward's own transitions can produce.
	switch {
	case k.Status == StatusUnused && (k.ActivatedAt != nil || k.ExpiresAt != nil):
		bad("status", "an unused key has no activated_at or expires_at")
	case (k.Status == StatusActive || k.Status == StatusExpired || k.Status == StatusRedeemed) && k.ActivatedAt == nil:
		bad("activated_at", "is required for a key that is %s", k.Status)
	case k.Status == StatusExpired && k.ExpiresAt == nil:
		bad("expires_at", "is required for an expired key")
	case k.Type == TypeLifetime && k.ExpiresAt != nil:
		bad("expires_at", "must be empty for a lifetime key")
	case k.Type == TypeLifetime && k.Duration != 0:
		bad("duration", "must be 0 for a lifetime key")
	case k.Type == TypeDays && k.Status == StatusActive && k.ExpiresAt == nil:
		bad("expires_at", "is required for an active days key")
	}
	return row, ok
}

// parseImportTime reads an RFC 3339 time, kept to the second in UTC (the
// precision exports write).
func parseImportTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, err
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, errors.New("out of range")
	}
	return t.UTC().Truncate(time.Second), nil
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
		opt(k.ActivatedAt), opt(k.ExpiresAt), k.Note, string(k.FeaturesJSON()), strings.Join(hwids, ";"), created}
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
