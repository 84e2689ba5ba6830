package license

import (
	"bytes"
	"fmt"
	"testing"
)

// importFiles builds the same n hosted-style keys as a CSV and as the admin
// API's JSON list: statuses in their case, "YYYY-MM-DD HH:MM:SS" times,
// two devices each.
func importFiles(n int) (csvFile, jsonFile []byte) {
	var c, j bytes.Buffer
	c.WriteString("License Key,Status,Type,Duration,Activated At,Expires At,HWIDs,Max Devices,Note\n")
	j.WriteString(`{"success":true,"keys":[`)
	for i := range n {
		fmt.Fprintf(&c, "BENCH-%06d,Active,Timed,365,2026-10-20 10:00:00,2027-10-20 10:00:00,PC-%d-A;PC-%d-B,2,customer %d\n", i, i, i, i)
		if i > 0 {
			j.WriteByte(',')
		}
		fmt.Fprintf(&j, `{"license_key":"BENCH-%06d","status":"active","key_type":"days","duration":365,`+
			`"activated_at":"2026-10-20T10:00:00Z","expires_at":"2027-10-20T10:00:00Z","max_devices":2,"note":"customer %d",`+
			`"features":{},"hwids":["PC-%d-A","PC-%d-B"]}`, i, i, i, i)
	}
	j.WriteString(`],"next_cursor":null}`)
	return c.Bytes(), j.Bytes()
}

// BenchmarkParseKeys reads 10 000 keys from each format (docs/performance.md,
// "Importing keys"): what the dry run of an import costs before any SQL.
func BenchmarkParseKeys(b *testing.B) {
	csvFile, jsonFile := importFiles(10_000)
	for _, f := range []struct {
		format string
		data   []byte
	}{{FormatCSV, csvFile}, {FormatJSON, jsonFile}} {
		b.Run(f.format, func(b *testing.B) {
			b.SetBytes(int64(len(f.data)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := ParseKeys(bytes.NewReader(f.data), f.format)
				if err != nil || len(p.Rows) != 10_000 || p.ErrorCount != 0 {
					b.Fatalf("parsed %v rows, %v errors: %v", len(p.Rows), p.ErrorCount, err)
				}
			}
		})
	}
}
