package license

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/wire"
)

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// A hosted service's export: other column names, statuses in any case,
// times without a zone, null, lifetime markers and Unix seconds.
func TestParseKeyCSVHostedStyle(t *testing.T) {
	in := "Key,Status,Expires,HWID,Notes,Days Remaining\n" +
		"AAAA-1,Active,2026-11-20 10:00:00,pc-1,null,3\n" +
		"AAAA-2,Unused,null,,,\n" +
		"AAAA-3,BANNED,2026-11-20,\"pc-2, pc-3\",x,\n" +
		"AAAA-4,active,Lifetime,\"pc-4;pc,5\",,\n" +
		"AAAA-5,Expired,1700000000,,,\n"
	p := ParseKeyCSV(strings.NewReader(in))
	if p.ErrorCount != 0 || len(p.Rows) != 5 {
		t.Fatalf("rows %d, errors %v", len(p.Rows), p.Errors)
	}
	if !reflect.DeepEqual(p.Ignored, []string{"days_remaining"}) {
		t.Fatalf("ignored %v, want [days_remaining]", p.Ignored)
	}
	want := []struct {
		status Status
		typ    KeyType
		exp    *time.Time
		hwids  []string
		note   string
	}{
		{StatusActive, TypeDays, ts("2026-11-20T10:00:00Z"), []string{"pc-1"}, ""},
		{StatusUnused, TypeLifetime, nil, nil, ""},
		{StatusBanned, TypeDays, ts("2026-11-20T00:00:00Z"), []string{"pc-2", "pc-3"}, "x"},
		{StatusActive, TypeLifetime, nil, []string{"pc-4", "pc,5"}, ""},
		{StatusExpired, TypeDays, ts("2023-11-14T22:13:20Z"), nil, ""},
	}
	for i, w := range want {
		r := p.Rows[i]
		if r.Key.Status != w.status || r.Key.Type != w.typ || !reflect.DeepEqual(r.Key.ExpiresAt, w.exp) ||
			!reflect.DeepEqual(r.HWIDs, w.hwids) || r.Key.Note != w.note || r.Key.MaxDevices != 1 || string(r.Key.Features) != "{}" {
			t.Errorf("row %d = %+v %v, want %+v", i+2, r.Key, r.HWIDs, w)
		}
	}
	if !p.Rows[0].Has("expires_at") || p.Rows[0].Has("max_devices") || !p.Rows[0].Has("note") {
		t.Fatalf("Has: the file names expires_at and note (Notes) but not max_devices")
	}
	// The import time completes what the file left open.
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	r := p.Rows[0]
	r.Complete(now)
	if !r.Key.ActivatedAt.Equal(now) || !r.Key.CreatedAt.Equal(now) {
		t.Fatalf("completed row 2 = %+v, want activated and created at the import time", r.Key)
	}
}

func TestParseKeyCSVDerived(t *testing.T) {
	in := "license_key,activated_at,expires_at,type,duration\n" +
		"A,2026-11-01T00:00:00Z,2026-12-01T12:00:00Z,,\n" + // 30.5 days → 31
		"B,2026-11-01,,days,30\n" + // expiry from duration at Complete
		"C,,,days,30 days\n" // unused: duration counts from activation
	p := ParseKeyCSV(strings.NewReader(in))
	if p.ErrorCount != 0 || len(p.Rows) != 3 {
		t.Fatalf("rows %d, errors %v", len(p.Rows), p.Errors)
	}
	if k := p.Rows[0].Key; k.Status != StatusActive || k.Type != TypeDays || k.Duration != 31 {
		t.Fatalf("A = %+v, want active days 31", k)
	}
	b := p.Rows[1]
	b.Complete(time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC))
	if b.Key.Status != StatusActive || !b.Key.ExpiresAt.Equal(*ts("2026-12-01T00:00:00Z")) {
		t.Fatalf("B = %+v, want active until 2026-12-01", b.Key)
	}
	// Imported after that expiry, the key the file calls active is
	// expired at once (not left for the expiry sweep to announce).
	late := p.Rows[1]
	late.Complete(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if late.Key.Status != StatusExpired {
		t.Fatalf("B imported at its expiry = %s, want expired", late.Key.Status)
	}
	if k := p.Rows[2].Key; k.Status != StatusUnused || k.Duration != 30 || k.ActivatedAt != nil {
		t.Fatalf("C = %+v, want unused 30 days", k)
	}
}

func TestParseKeyCSVTolerantErrors(t *testing.T) {
	cases := []struct{ name, in, field string }{
		{"neither type nor expiry", "key,status\nA,active\n", "key_type"},
		{"days and never", "key,type,expires,duration\nA,days,never,30\n", "key_type"},
		{"lifetime with expiry", "key,type,expires\nA,lifetime,2026-01-01\n", "expires_at"},
		{"unused days without duration", "key,type\nA,days\n", "duration"},
		{"active days without expiry", "key,type,status\nA,days,active\n", "expires_at"},
		{"expired without expiry", "key,status,expires\nA,expired,null\n", "expires_at"},
		{"unknown status", "key,status,expires\nA,frozen,null\n", "status"},
		{"time form", "key,expires\nA,20.11.2026\n", "expires_at"},
		{"key null", "key,expires\nnull,never\n", "license_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ParseKeyCSV(strings.NewReader(c.in))
			errs := p.Errors
			if len(p.Rows) == 1 { // what a new key lacks is the import's to judge
				errs = append(errs, p.Rows[0].Needs()...)
			}
			if len(errs) != 1 || errs[0].Line != 2 || errs[0].Field != c.field {
				t.Fatalf("errors %v, want one at line 2 on %s", errs, c.field)
			}
		})
	}
}

func TestParseImportTime(t *testing.T) {
	want := "2026-11-20T10:00:00Z"
	for _, in := range []string{"2026-11-20T10:00:00Z", "2026-11-20T11:00:00+01:00", "2026-11-20T10:00:00.75Z",
		"2026-11-20 10:00:00", "2026-11-20T10:00:00", "2026-11-20 10:00", " 2026-11-20 10:00:00.5 ", "1795168800"} {
		got, err := parseImportTime(in)
		if err != nil || Timestamp(got) != want {
			t.Errorf("parseImportTime(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if got, err := parseImportTime("2026-11-20"); err != nil || Timestamp(got) != "2026-11-20T00:00:00Z" {
		t.Errorf("a date = %v, %v; want midnight UTC", got, err)
	}
	for _, in := range []string{"", "yesterday", "1969-12-31", "1795168800000", "-5", "2026-11-20 25:00:00", "10000-01-01"} {
		if _, err := parseImportTime(in); err == nil {
			t.Errorf("parseImportTime(%q) accepted", in)
		}
	}
}

func TestImportRowFromObject(t *testing.T) {
	exp := "2026-12-01T12:00:00Z"
	act := "2026-11-01T12:00:00Z"
	detail := wire.KeyDetail{
		Key: wire.Key{LicenseKey: "K-1", Status: "active", KeyType: "days", Duration: 30, ActivatedAt: &act, ExpiresAt: &exp,
			MaxDevices: 2, Floating: true, Note: "n", Features: json.RawMessage(`{"pro":true}`), CreatedAt: "2026-10-01T00:00:00Z"},
		Devices:  []wire.Device{{HWID: "pc-1", FirstSeenAt: act, LastSeenAt: act}, {HWID: "pc-2"}},
		Sessions: []wire.Session{},
	}
	obj, _ := json.Marshal(detail)
	row, errs := ImportRowFromObject(7, obj)
	if errs != nil {
		t.Fatalf("errors %v", errs)
	}
	k := row.Key
	if row.Line != 7 || k.LicenseKey != "K-1" || k.Status != StatusActive || k.Type != TypeDays || k.Duration != 30 ||
		Timestamp(*k.ExpiresAt) != exp || Timestamp(*k.ActivatedAt) != act || k.MaxDevices != 2 || k.Note != "n" ||
		string(k.Features) != `{"pro":true}` || Timestamp(k.CreatedAt) != "2026-10-01T00:00:00Z" || !k.Floating ||
		!reflect.DeepEqual(row.HWIDs, []string{"pc-1", "pc-2"}) {
		t.Fatalf("row = %+v %v", k, row.HWIDs)
	}

	cases := []struct {
		name, obj string
		check     func(ImportRow) bool
	}{
		{"hwids array", `{"key":"A","status":"Active","expires_at":null,"hwids":["x","y"]}`,
			func(r ImportRow) bool {
				return r.Key.Type == TypeLifetime && r.Key.Status == StatusActive && reflect.DeepEqual(r.HWIDs, []string{"x", "y"})
			}},
		{"hwids string", `{"license_key":"A","type":"lifetime","hwids":"x; y"}`,
			func(r ImportRow) bool { return reflect.DeepEqual(r.HWIDs, []string{"x", "y"}) }},
		{"hwids commas", `{"license_key":"A","type":"lifetime","hwids":"x,y"}`,
			func(r ImportRow) bool { return reflect.DeepEqual(r.HWIDs, []string{"x", "y"}) }},
		{"numbers and unix time", `{"License_Key":"A","expires":1795168800,"duration":30,"max_devices":3,"status":"ACTIVE"}`,
			func(r ImportRow) bool {
				return r.Key.MaxDevices == 3 && r.Key.Duration == 30 && Timestamp(*r.Key.ExpiresAt) == "2026-11-20T10:00:00Z"
			}},
		{"hosted times", `{"license_key":"A","status":"Active","expires_at":"2026-11-20 10:00:00","activated_at":"2026-10-21 10:00:00"}`,
			func(r ImportRow) bool { return r.Key.Type == TypeDays && r.Key.Duration == 30 }},
		{"never", `{"license_key":"A","status":"unused","expires_at":"never","note":null,"features":null}`,
			func(r ImportRow) bool { return r.Key.Type == TypeLifetime && string(r.Key.Features) == "{}" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row, errs := ImportRowFromObject(1, []byte(c.obj))
			if errs != nil || !c.check(row) {
				t.Fatalf("row %+v %v, errors %v", row.Key, row.HWIDs, errs)
			}
		})
	}

	bad := []struct{ name, obj, field string }{
		{"ambiguous", `{"key":"A","license_key":"B","type":"lifetime"}`, "license_key"},
		{"array", `["A"]`, ""},
		{"note object", `{"key":"A","type":"lifetime","note":{}}`, "note"},
		{"devices numbers", `{"key":"A","type":"lifetime","devices":[{"id":1}]}`, "hwids"},
		{"trailing", `{"key":"A","type":"lifetime"} {}`, ""},
		{"status", `{"key":"A","type":"lifetime","status":true}`, "status"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, errs := ImportRowFromObject(4, []byte(c.obj))
			if len(errs) != 1 || errs[0].Line != 4 || errs[0].Field != c.field {
				t.Fatalf("errors %v, want one at line 4 on %q", errs, c.field)
			}
		})
	}
}

func TestParseKeyJSON(t *testing.T) {
	arr := "[\n  {\"license_key\": \"A\", \"key_type\": \"lifetime\"},\n  {\"license_key\": \"bad key\", \"key_type\": \"lifetime\"},\n" +
		"  {\n    \"license_key\": \"A\", \"key_type\": \"lifetime\"}\n]\n"
	p := ParseKeyJSON(strings.NewReader(arr))
	if p.DataRows != 3 || len(p.Rows) != 1 || p.ErrorCount != 2 || p.Errors[0].Line != 3 || p.Errors[1].Line != 4 ||
		p.Errors[1].Message != "duplicate of line 2" {
		t.Fatalf("rows %d/%d, errors %v; want a problem at lines 3 and 4", len(p.Rows), p.DataRows, p.Errors)
	}

	list := `{"success":true,"keys":[{"license_key":"A","status":"unused","key_type":"days","duration":30,"activated_at":null,` +
		`"expires_at":null,"days_remaining":null,"max_devices":1,"note":"","features":{},"created_at":"2026-11-01T00:00:00Z",` +
		`"last_self_reset_at":null}` + "\n" + `,{"license_key":"B","key_type":"lifetime"}],"next_cursor":null}`
	p = ParseKeyJSON(strings.NewReader(list))
	if p.ErrorCount != 0 || len(p.Rows) != 2 || p.Rows[1].Line != 2 || p.Rows[0].Key.Duration != 30 {
		t.Fatalf("rows %+v, errors %v", p.Rows, p.Errors)
	}
	if !reflect.DeepEqual(p.Ignored, []string{"days_remaining", "last_self_reset_at"}) {
		t.Fatalf("ignored %v", p.Ignored)
	}

	one := `{"success":true,"key":{"license_key":"A","key_type":"lifetime","devices":[{"hwid":"pc"}],"sessions":[]}}`
	if p = ParseKeyJSON(strings.NewReader(one)); p.ErrorCount != 0 || len(p.Rows) != 1 || p.Rows[0].HWIDs[0] != "pc" {
		t.Fatalf("a key detail reply: rows %+v, errors %v", p.Rows, p.Errors)
	}

	for _, c := range []struct {
		name, in string
		line     int
	}{
		{"empty", "  ", 1},
		{"scalar", "3", 1},
		{"no keys", `{"success":true}`, 1},
		{"syntax", "[\n{\"key\":\"A\",\"type\":\"lifetime\"},\n{\"key\": }]", 3},
		{"truncated", "[\n{\"key\":\"A\",\"type\":\"lifetime\"}", 2},
		{"trailing", "[]\n]", 2},
		{"empty array", "[]", 1},
		{"keys not array", `{"keys":{}}`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ParseKeyJSON(strings.NewReader(c.in))
			if p.ErrorCount != 1 || p.Errors[0].Line != c.line {
				t.Fatalf("errors %v, want one at line %d", p.Errors, c.line)
			}
		})
	}
}

func TestParseKeysDetects(t *testing.T) {
	for _, c := range []struct{ in, format string }{
		{"\ufeff \n[{\"key\":\"A\",\"type\":\"lifetime\"}]", "json"},
		{`{"keys":[{"key":"A","type":"lifetime"}]}`, "json"},
		{"key,type\nA,lifetime\n", "csv"},
	} {
		p, err := ParseKeys(strings.NewReader(c.in), "")
		if err != nil || p.ErrorCount != 0 || len(p.Rows) != 1 {
			t.Fatalf("%q: %v %v", c.in, err, p.Errors)
		}
	}
	if _, err := ParseKeys(strings.NewReader(""), "xml"); err == nil {
		t.Fatal("format xml accepted")
	}
	// A forced format reads the file as that format.
	if p, _ := ParseKeys(strings.NewReader("key,type\nA,lifetime\n"), FormatJSON); p.ErrorCount == 0 {
		t.Fatal("a CSV read as JSON parsed")
	}
}

func FuzzParseKeyJSON(f *testing.F) {
	f.Add([]byte(`[{"license_key":"A","status":"Active","expires_at":"2026-11-20 10:00:00","hwids":["x"]}]`))
	f.Add([]byte(`{"success":true,"keys":[{"key":"B","type":"lifetime","devices":[{"hwid":"pc"}],"features":{"a":1}}],"next_cursor":null}`))
	f.Add([]byte(`{"key":{"license_key":"C","expires":1700000000,"status":"expired","note":"a\r\nb"}}`))
	f.Add([]byte("[\n{\"key\":\"D\",\"expires\":null,\"hwids\":\"a;b\"},\n{\"key\":\"D\"}]"))
	f.Add([]byte(`[{"key":"E","key":"F"}, 3, null, "x"]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := ParseKeyJSON(bytes.NewReader(data))
		for _, e := range p.Errors {
			if e.Line < 1 || e.Message == "" {
				t.Fatalf("error %+v: no line or message", e)
			}
		}
		if len(p.Rows) == 0 || unwritable(p.Rows) {
			return
		}
		// Every key read is one the CSV export writes and reads back alike.
		var buf bytes.Buffer
		if err := WriteKeyCSV(&buf, p.Rows); err != nil {
			t.Fatal(err)
		}
		q := ParseKeyCSV(bytes.NewReader(buf.Bytes()))
		if q.ErrorCount != 0 || len(q.Rows) != len(p.Rows) {
			t.Fatalf("re-parse of %q: %d rows, errors %v; want %d rows", buf.Bytes(), len(q.Rows), q.Errors, len(p.Rows))
		}
		sameRows(t, p.Rows, q.Rows)
	})
}

func FuzzImportRowFromObject(f *testing.F) {
	f.Add([]byte(`{"license_key":"K-1","status":"active","key_type":"days","duration":30,"activated_at":"2026-11-01T12:00:00Z","expires_at":"2026-12-01T12:00:00Z","devices":[{"hwid":"pc-1"}]}`))
	f.Add([]byte(`{"key":"A","hwids":"x, y","expiry":"never","state":"Banned"}`))
	f.Add([]byte(`{"key":"A","hwids":[1,{"hwid":null}],"expiry":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		row, errs := ImportRowFromObject(3, data)
		for _, e := range errs {
			if e.Line != 3 {
				t.Fatalf("error %+v not at line 3", e)
			}
		}
		if errs != nil || unwritable([]ImportRow{row}) {
			return
		}
		var buf bytes.Buffer
		if err := WriteKeyCSV(&buf, []ImportRow{row}); err != nil {
			t.Fatal(err)
		}
		q := ParseKeyCSV(bytes.NewReader(buf.Bytes()))
		if q.ErrorCount != 0 || len(q.Rows) != 1 {
			t.Fatalf("re-parse of %q: errors %v", buf.Bytes(), q.Errors)
		}
		sameRows(t, []ImportRow{row}, q.Rows)
	})
}

// unwritable reports whether a device ID has a ';', which a JSON list
// carries and the CSV cannot, or a row lacks what a new key needs (which
// only a merge takes).
func unwritable(rows []ImportRow) bool {
	for _, r := range rows {
		if len(r.needs) > 0 {
			return true
		}
		for _, h := range r.HWIDs {
			if strings.Contains(h, ";") {
				return true
			}
		}
	}
	return false
}
