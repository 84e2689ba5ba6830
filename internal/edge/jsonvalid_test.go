package edge

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are inputs where a validator is easy to get wrong: every
// number form, escapes, control characters, bytes that are not UTF-8,
// whitespace, trailing bytes and nesting at and past encoding/json's limit.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, "\t\r\n[]\n", `{} {}`, `{}x`, `{`, `}`, `[`, `]`, `[,]`, `[1,]`, `{"a":1,}`,
	`{"a"}`, `{"a":}`, `{a:1}`, `{"a" : 1 , "b" : [ ] }`, `{"a":1 "b":2}`, `[1 2]`, `{,"a":1}`,
	`0`, `-0`, `-`, `01`, `1.`, `.1`, `1.0`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e3`, `+1`, `0x1`, `1.5.5`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `tru`, `nul`, `True`, `nulll`, `[true,false,null]`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\'"`, `"`, `"a`, `"\`,
	"\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "{\"\xff\":1}",
	`{"session_id":"0b0e8f1c-7a52-4d2e-9a43-3c6f1f2b9d10","license_key":"ABCDE-FGHIJ"}`,
	`{"x":{"session_id":"no","y":[1,"]",{"z":"}"}]},"session_id":"yes","n":-1.5e3,"t":true}`,
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
	strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
}

// TestValidJSONAgreesWithStandard checks validJSON against json.Valid on
// the cases above and the field parser's fuzz seeds.
func TestValidJSONAgreesWithStandard(t *testing.T) {
	for _, s := range append(validCases, fzSeeds...) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid %v", s, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range append(validCases[:len(validCases)-4], fzSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// heartbeatInner is a heartbeat's inner body as clients send it.
var heartbeatInner = []byte(`{"license_key":"ABCDE-FGHIJ-KLMNO-PQRST-UVWXY","session_id":"0b0e8f1c-7a52-4d2e-9a43-3c6f1f2b9d10"}`)

// BenchmarkScanBytes times the heartbeat's read of its two members,
// validation included.
func BenchmarkScanBytes(b *testing.B) {
	var raw [2][]byte
	for b.Loop() {
		if !ScanBytes(heartbeatInner, scanNames, raw[:]) {
			b.Fatal("declined")
		}
	}
}
