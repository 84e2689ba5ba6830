package edge

import (
	"strings"
	"testing"
)

// generalHeartbeatFields is the general path ScanBytes stands in for.
func generalHeartbeatFields(b []byte) (sid, lk string, err error) {
	f, err := ParseFields(b)
	if err != nil {
		return "", "", err
	}
	if sid, err = f.Str("session_id"); err != nil {
		return "", "", err
	}
	lk, err = f.Str("license_key")
	return sid, lk, err
}

// scanAgrees fails when ScanBytes answers body differently from the
// general path (it may decline, never disagree).
func scanAgrees(t *testing.T, body []byte) {
	t.Helper()
	var raw [2][]byte
	if !ScanBytes(body, scanNames, raw[:]) {
		return
	}
	sid, lk, err := generalHeartbeatFields(body)
	if err != nil || sid != string(raw[0]) || lk != string(raw[1]) {
		t.Fatalf("ScanBytes(%q) = %q %q; general path %q %q %v", body, raw[0], raw[1], sid, lk, err)
	}
}

func TestScanBytesAllocatesNothing(t *testing.T) {
	body := []byte(`{"session_id":"` + strings.Repeat("a", 64) + `","license_key":"K","hwid":"h"}`)
	var raw [2][]byte
	if n := testing.AllocsPerRun(100, func() { ScanBytes(body, scanNames, raw[:]) }); n != 0 {
		t.Errorf("ScanBytes allocates %v times", n)
	}
}

func TestScanBytesAgreesWithFields(t *testing.T) {
	bodies := append([]string{
		`{"session_id":"a","license_key":"K"}`,
		`{ "license_key" : "K" , "session_id" : "a" , "hwid": "h" }`,
		`{"session_id":"a","session_id":"b"}`,
		`{"session_id":"a","session_id":null}`,
		`{"x":{"session_id":"no","y":[1,"]",{"z":"}"}]},"session_id":"yes","n":-1.5e3,"t":true}`,
		`{"Session_ID":"a"}`,
		`{"session_id":"caf\u00e9"}`,
		`{"session_id":"a\"b"}`,
		`{"session_id":1}`,
		`{"session_id":"\u0000"}`,
		"{\"session_id\":\"\xff\"}",
		`{"license_key":"  K  "}`,
	}, fzSeeds...)
	for _, b := range bodies {
		scanAgrees(t, []byte(b))
	}
	// The common forms are read by the scan, not left to the general path.
	for _, b := range []string{`{"session_id":"a","license_key":"K"}`, `{"session_id": "a", "license_key": null, "hwid": "h"}`, `{}`} {
		var raw [2][]byte
		if !ScanBytes([]byte(b), scanNames, raw[:]) {
			t.Errorf("ScanBytes(%s) declined", b)
		}
	}
}

func FuzzScanBytes(f *testing.F) {
	for _, s := range fzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { scanAgrees(t, body) })
}

// scanNames are the members the heartbeat (its one caller) scans for.
var scanNames = []string{"session_id", "license_key"}
