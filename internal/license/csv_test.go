package license

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const csvHeader = "license_key,status,key_type,duration,max_devices,activated_at,expires_at,note,features,hwids,created_at\n"

func TestParseKeyCSV(t *testing.T) {
	in := "\xef\xbb\xbf" + csvHeader +
		"AAAAA-BBBBB,unused,days,30,1,,,,{},,2026-11-01T12:00:00Z\n" +
		`K-2,active,days,30,2,2026-11-01T12:00:00Z,2026-12-01T12:00:00+01:00,"a, ""b""` + "\r\n" + `c","{""pro"":true,""level"":2}",pc-1;pc-2,2026-10-01T00:00:00Z` + "\n" +
		"K-3,banned,lifetime,0,1,,,,,,\n"
	p := ParseKeyCSV(strings.NewReader(in))
	if p.ErrorCount != 0 || len(p.Rows) != 3 || p.DataRows != 3 {
		t.Fatalf("got %d rows, errors %v, want 3 rows and none", len(p.Rows), p.Errors)
	}
	k := p.Rows[1].Key
	if k.Note != "a, \"b\"\nc" || string(k.Features) != `{"level":2,"pro":true}` || k.MaxDevices != 2 ||
		Timestamp(*k.ExpiresAt) != "2026-12-01T11:00:00Z" || !reflect.DeepEqual(p.Rows[1].HWIDs, []string{"pc-1", "pc-2"}) {
		t.Fatalf("row 2 = %+v %v", k, p.Rows[1].HWIDs)
	}
	if p.Rows[1].Line != 3 || p.Rows[2].Line != 5 {
		t.Fatalf("lines %d, %d, want 3, 5 (a quoted line break spans a line)", p.Rows[1].Line, p.Rows[2].Line)
	}
	if !p.Rows[2].Key.CreatedAt.IsZero() {
		t.Fatalf("empty created_at = %v, want zero", p.Rows[2].Key.CreatedAt)
	}
}

func TestParseKeyCSVColumnOrder(t *testing.T) {
	in := "created_at,hwids,features,note,expires_at,activated_at,max_devices,duration,key_type,status,license_key\n" +
		",,{},,,,3,7,days,unused,ABC\n"
	p := ParseKeyCSV(strings.NewReader(in))
	if p.ErrorCount != 0 || len(p.Rows) != 1 || p.Rows[0].Key.LicenseKey != "ABC" || p.Rows[0].Key.Duration != 7 || p.Rows[0].Key.MaxDevices != 3 {
		t.Fatalf("got %+v, errors %v", p.Rows, p.Errors)
	}
}

func TestParseKeyCSVErrors(t *testing.T) {
	cases := []struct {
		name, in string
		want     []ImportError // line and field
	}{
		{"empty", "", []ImportError{{Line: 1}}},
		{"header only", csvHeader, []ImportError{{Line: 1}}},
		{"no key column", "status,key_type,made\nactive,lifetime,x\n", []ImportError{{Line: 1, Field: "license_key"}}},
		{"aliases of one field", "key,License Key,status\nA,A,active\n", []ImportError{{Line: 1, Field: "license_key"}}},
		{"nameless column", "key,,status\nA,x,active\n", []ImportError{{Line: 1}}},
		{"twice", strings.TrimSuffix(csvHeader, "\n") + ",note\n", []ImportError{{Line: 1, Field: "note"}}},
		{"fields", csvHeader + "A,unused,days,1,1,,,,{},\n", []ImportError{{Line: 2}}},
		{"bad cells", csvHeader +
			"bad key,unused,days,1,1,,,,{},,\n" +
			"B,gone,days,1,1,,,,{},,\n" +
			"C,unused,weeks,1,1,,,,{},,\n" +
			"D,unused,days,-1,1,,,,{},,\n" +
			"E,unused,days,1,0,,,,{},,\n" +
			"F,active,days,1,1,yesterday,2026-01-01T00:00:00Z,,{},,\n" +
			"G,unused,days,1,1,,,,[1],,\n" +
			"H,unused,days,1,1,,,,{},a;\x01;b,\n" +
			"I,unused,days,1,1,,,,{},,2026-13-01T00:00:00Z\n" +
			"J,unused,lifetime,5,1,,,,{},,\n" +
			"K,unused,days,1,1,2026-01-01T00:00:00Z,,,{},,\n" +
			"L,unused,days,1,1,,,,{},x;x,\n",
			[]ImportError{{Line: 2, Field: "license_key"}, {Line: 3, Field: "status"}, {Line: 4, Field: "key_type"},
				{Line: 5, Field: "duration"}, {Line: 6, Field: "max_devices"}, {Line: 7, Field: "activated_at"},
				{Line: 8, Field: "features"}, {Line: 9, Field: "hwids"}, {Line: 10, Field: "created_at"},
				{Line: 11, Field: "duration"}, {Line: 12, Field: "status"}, {Line: 13, Field: "hwids"}}},
		{"duplicate", csvHeader + "A,unused,days,1,1,,,,{},,\nB,unused,days,1,1,,,,{},,\nA,unused,days,1,1,,,,{},,\n",
			[]ImportError{{Line: 4, Field: "license_key"}}},
		{"bare quote", csvHeader + "A,unused,days,1,1,,,a\"b,{},,\n", []ImportError{{Line: 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ParseKeyCSV(strings.NewReader(c.in))
			var got []ImportError
			for _, e := range p.Errors {
				got = append(got, ImportError{Line: e.Line, Field: e.Field})
			}
			if !reflect.DeepEqual(got, c.want) || p.ErrorCount != len(c.want) {
				t.Fatalf("errors %v, want lines/fields %v", p.Errors, c.want)
			}
			for _, e := range p.Errors {
				if e.Message == "" {
					t.Fatalf("error without message: %v", e)
				}
			}
		})
	}
}

func TestParseKeyCSVTooLarge(t *testing.T) {
	row := "A,unused,days,1,1,,,,{},,\n"
	big := csvHeader + strings.Repeat("X", MaxImportBytes) + row
	p := ParseKeyCSV(strings.NewReader(big))
	if p.ErrorCount == 0 || len(p.Rows) > 0 && p.ErrorCount == 0 {
		t.Fatalf("a file over the limit parsed without error: %d rows", len(p.Rows))
	}
}

func FuzzParseKeyCSV(f *testing.F) {
	f.Add([]byte(csvHeader + "AAAAA-BBBBB,unused,days,30,1,,,,{},,2026-11-01T12:00:00Z\n"))
	f.Add([]byte(csvHeader + `K-2,active,days,30,2,2026-11-01T12:00:00Z,2026-12-01T12:00:00.5+01:00,"a` + "\r\r\n" + `b","{""x"":1e21}",pc-1;pc-2,` + "\n"))
	f.Add([]byte(csvHeader + "K-3,banned,lifetime,0,1,,,,,,\nK-3,unused,days,1,1,,,,{},,\n"))
	f.Add([]byte("license_key\n\"unterminated\n"))
	f.Add([]byte("key,type,seats,floating\nF-1,lifetime,5,true\nF-2,lifetime,2,No\nF-3,lifetime,1,\nF-4,lifetime,1,maybe\n"))
	f.Add([]byte("Key,Status,Expires,HWID,Notes\nAAAA-1,Active,2026-11-20 10:00:00,pc-1,null\nAAAA-2,Unused,null,,\n"))
	f.Add([]byte("licence_key,state,expiry,devices,type,days\nB,new,,a,b,days,30\nC,Revoked,1700000000,\"x,y\",,\nD,active,never,,lifetime,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := ParseKeyCSV(bytes.NewReader(data))
		if len(p.Rows) == 0 || unwritable(p.Rows) {
			return
		}
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

// sameRows fails unless the rows carry the same keys and devices (lines
// and which fields the file named may differ).
func sameRows(t *testing.T, p, q []ImportRow) {
	t.Helper()
	for i := range p {
		a, b := p[i], q[i]
		a.Line, b.Line, a.given, b.given = 0, 0, 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("row %d changed in a round trip:\n%+v\n%+v", i, a, b)
		}
	}
}

// One device ID with a comma survives export and import: the cell ends
// with ';', so the import does not split it at the comma.
func TestKeyCSVCommaHWID(t *testing.T) {
	rows := []ImportRow{{Key: Key{LicenseKey: "A", Status: StatusActive, Type: TypeLifetime, MaxDevices: 1,
		ActivatedAt: ts("2026-11-01T00:00:00Z")}, HWIDs: []string{"CPU-1,DISK-2"}}}
	var buf bytes.Buffer
	if err := WriteKeyCSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), ",CPU-1,DISK-2;,") && !strings.Contains(buf.String(), `"CPU-1,DISK-2;"`) {
		t.Fatalf("export %q: the cell does not end with ';'", buf.String())
	}
	p := ParseKeyCSV(&buf)
	if p.ErrorCount != 0 || len(p.Rows) != 1 || !reflect.DeepEqual(p.Rows[0].HWIDs, []string{"CPU-1,DISK-2"}) {
		t.Fatalf("read back: %+v, errors %v", p.Rows, p.Errors)
	}
}

// A floating key survives export and import: the floating column is read
// as a boolean (true/false, yes/no, 1/0, any case; empty: false) and
// written as true or false.
func TestKeyCSVFloating(t *testing.T) {
	in := "key,key_type,max_devices,Floating\nF-1,lifetime,5,TRUE\nF-2,lifetime,2,no\nF-3,lifetime,1,\nF-4,lifetime,3,1\n"
	p := ParseKeyCSV(strings.NewReader(in))
	if p.ErrorCount != 0 || len(p.Rows) != 4 {
		t.Fatalf("rows %d, errors %v", len(p.Rows), p.Errors)
	}
	for i, want := range []bool{true, false, false, true} {
		if got := p.Rows[i].Key.Floating; got != want {
			t.Fatalf("row %d floating = %v, want %v", i, got, want)
		}
	}
	if !p.Rows[0].Has("floating") {
		t.Fatal("the floating column is not noted as given")
	}
	var buf bytes.Buffer
	if err := WriteKeyCSV(&buf, p.Rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(buf.String(), "\n"); !strings.HasSuffix(lines[0], ",floating") || !strings.HasSuffix(lines[1], ",true") ||
		!strings.HasSuffix(lines[2], ",false") {
		t.Fatalf("export %q", buf.String())
	}
	q := ParseKeyCSV(&buf)
	if q.ErrorCount != 0 {
		t.Fatalf("re-parse errors %v", q.Errors)
	}
	sameRows(t, p.Rows, q.Rows)

	bad := ParseKeyCSV(strings.NewReader("key,key_type,floating\nF-1,lifetime,sometimes\n"))
	if bad.ErrorCount != 1 || bad.Errors[0].Field != "floating" || bad.Errors[0].Line != 2 {
		t.Fatalf("a bad floating cell: errors %v", bad.Errors)
	}
	if row, errs := ImportRowFromObject(1, []byte(`{"key":"J-1","key_type":"lifetime","floating":true}`)); errs != nil || !row.Key.Floating {
		t.Fatalf("JSON floating: %+v %v", row.Key, errs)
	}
}
