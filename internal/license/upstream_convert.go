package license

import (
	"bytes"
	"encoding/json"
	"strings"
)

// upstreamRow reads one key object as the admin API shows it (GET
// keys.php?license_key=: the wire.KeyDetail fields, devices[].hwid for the
// bound devices) into an import row, with the key CSV's rules: the object's
// fields are laid out as one CSV record and checked by the same row reader,
// so a key the CSV import would refuse is refused here too.
//
// This is the minimal converter lazy migration needs; a wider one
// (license.ImportRowFromObject, issue 24 item 2) replaces it when it lands.
func upstreamRow(line int, obj []byte) (ImportRow, []ImportError) {
	var o map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil || o == nil {
		return ImportRow{}, []ImportError{{Line: line, Message: "not a JSON object"}}
	}
	text := func(name string) string {
		raw, ok := o[name]
		if !ok || string(raw) == "null" {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return strings.TrimSpace(string(raw)) // a number, or an object (features)
	}
	rec := make([]string, len(KeyCSVHeader))
	cols := make([]int, len(KeyCSVHeader))
	for i, name := range KeyCSVHeader {
		cols[i] = i
		switch name {
		case "hwids":
			var devices []struct {
				HWID string `json:"hwid"`
			}
			if raw, ok := o["devices"]; ok && json.Unmarshal(raw, &devices) != nil {
				return ImportRow{}, []ImportError{{Line: line, Field: "devices", Message: "must be a list of objects with hwid"}}
			}
			hw := make([]string, len(devices))
			for j, d := range devices {
				if strings.Contains(d.HWID, ";") {
					return ImportRow{}, []ImportError{{Line: line, Field: "devices", Message: "a device ID holds ';'"}}
				}
				hw[j] = d.HWID
			}
			rec[i] = strings.Join(hw, ";")
		case "features":
			rec[i] = text(name)
			if rec[i] == "" {
				rec[i] = "{}"
			}
		case "duration":
			rec[i] = text(name)
			if rec[i] == "" {
				rec[i] = "0"
			}
		default:
			rec[i] = text(name)
		}
	}
	var p ParsedCSV
	row, ok := p.row(line, cols, rec)
	if !ok {
		return ImportRow{}, p.Errors
	}
	return row, nil
}
