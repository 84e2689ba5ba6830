package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
)

// Fuzz tests of the request field decoder: parseFields and the accessors
// never panic, accept exactly empty bodies and JSON objects, and refuse
// everything else with an Invalid apperr (MISSING_FIELDS, 400).

// fzSeeds are realistic client bodies of every SDK generation, and some that
// are not.
var fzSeeds = []string{
	``,
	`   `,
	`{}`,
	`{"license_key":"ABCDE-FGHJK-MNPQR-STVWX","hwid":"4c4c4544-0042-3510-8052-b4c04f4e3732"}`,
	`{"session_id":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","license_key":null}`,
	`{"session_id":"x","license_key":"","hwid":"pc"}`,
	`{"key":"  ABCDE-FGHJK-MNPQR-STVWX  ","reason":"Reset from app"}`,
	`{"license_key":"K","username":"","reason":"Device changed"}`,
	`{"v":"1.2.3","channel":"stable","hwid":"h","license_key":null}`,
	`{"link_id":3}`,
	`{"link_id":"3"}`,
	`{"count":10,"key_type":"days","duration_value":30,"max_devices":2}`,
	`{"maintenance":true,"self_reset_enabled":false}`,
	`{"license_key": "\u0041\u0042", "hwid": "\ud83d\ude00"}`,
	`{"p":"AAAA","t":1793541600,"s":"00"}`,
	`{"license_key":12345}`,
	`{"license_key":{"a":1}}`,
	`{"n":1.5,"m":1e3,"o":-0,"big":99999999999999999999}`,
	`{"b":"true","c":0,"d":[true]}`,
	`{"dup":"a","dup":"b"}`,
	`[]`,
	`[{"license_key":"x"}]`,
	`null`,
	`"license_key"`,
	`42`,
	`true`,
	`{"license_key":`,
	`{"a":1} {"b":2}`,
	`{'a':1}`,
	"\xff\xfe{\"a\":1}",
	"{\"a\":\"\xff\"}",
	`{"` + strings.Repeat("k", 300) + `":"` + strings.Repeat("v", 300) + `"}`,
	strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64),
}

// fzCheckErr fails unless err is nil or a validation apperr.
func fzCheckErr(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %T %v is not an *apperr.Error", what, err, err)
	}
	if e.Kind != apperr.Invalid || e.Code != "MISSING_FIELDS" || e.Message == "" {
		t.Fatalf("%s: error kind %v code %q message %q, want Invalid MISSING_FIELDS", what, e.Kind, e.Code, e.Message)
	}
}

func FuzzParseFields(f *testing.F) {
	for _, s := range fzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fs, err := ParseFields(body)
		fzCheckErr(t, "parseFields", err)
		trimmed := bytes.TrimSpace(body)
		isObject := len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
		switch {
		case err != nil:
			if fs != nil {
				t.Fatalf("error with fields %v", fs)
			}
			if len(trimmed) == 0 || isObject {
				t.Fatalf("refused %q: %v", body, err)
			}
			return
		case fs == nil:
			t.Fatalf("nil fields without an error for %q", body)
		case len(trimmed) > 0 && !isObject:
			t.Fatalf("accepted %q, which is not a JSON object", body)
		}
		names := make([]string, 0, len(fs)+1)
		for n := range fs {
			names = append(names, n)
		}
		names = append(names, "absent-field")
		for _, n := range names {
			fzAccessors(t, fs, n)
		}
		// Aliases: the first present name wins.
		if len(names) > 1 {
			a, errA := fs.Str(names...)
			b, errB := fs.Str(names[0])
			if errB == nil && string(fs[names[0]]) != "null" && (errA != nil || a != b) {
				t.Fatalf("str(%q...) = %q, %v; str(%q) = %q", names[0], a, errA, names[0], b)
			}
		}
	})
}

// fzAccessors runs every accessor on field n and checks what each returns
// against the raw JSON value.
func fzAccessors(t *testing.T, fs Fields, n string) {
	t.Helper()
	raw, present := fs[n]
	isNull := !present || string(raw) == "null"

	s, err := fs.Str(n)
	fzCheckErr(t, "str", err)
	var want string
	switch {
	case isNull:
		if err != nil || s != "" {
			t.Fatalf("str of absent/null %q = %q, %v", n, s, err)
		}
	case json.Unmarshal(raw, &want) == nil && strings.IndexByte(want, 0) >= 0:
		// NUL characters cannot be stored by PostgreSQL: refused.
		if err == nil {
			t.Fatalf("str(%q) accepted %s, which holds a NUL", n, raw)
		}
	case json.Unmarshal(raw, &want) == nil:
		if err != nil || s != want {
			t.Fatalf("str(%q) of %s = %q, %v; want %q", n, raw, s, err, want)
		}
	default:
		if err == nil {
			t.Fatalf("str(%q) accepted non-string %s", n, raw)
		}
	}

	k, err := fs.Key(n)
	fzCheckErr(t, "key", err)
	if err == nil && k != strings.TrimSpace(s) {
		t.Fatalf("key(%q) = %q, want str trimmed %q", n, k, strings.TrimSpace(s))
	}

	i, ok, err := fs.Int(n)
	fzCheckErr(t, "int", err)
	if isNull && (ok || err != nil) {
		t.Fatalf("int of absent/null %q = %d, %v, %v", n, i, ok, err)
	}
	if ok {
		lit := strings.Trim(strings.TrimSpace(string(raw)), `"`)
		if v, perr := strconv.ParseInt(lit, 10, 64); perr != nil || v != i {
			t.Fatalf("int(%q) of %s = %d", n, raw, i)
		}
	} else if err == nil && !isNull {
		t.Fatalf("int(%q) of %s: neither a value nor an error", n, raw)
	}

	b, ok, err := fs.Bool(n)
	fzCheckErr(t, "boolean", err)
	if isNull && (ok || err != nil) {
		t.Fatalf("boolean of absent/null %q = %v, %v, %v", n, b, ok, err)
	}
	if ok && string(raw) != strconv.FormatBool(b) {
		t.Fatalf("boolean(%q) of %s = %v", n, raw, b)
	}
	if !ok && err == nil && !isNull {
		t.Fatalf("boolean(%q) of %s: neither a value nor an error", n, raw)
	}
}

// FuzzFieldValue puts one fuzzed JSON value under a field name and checks
// each accessor's acceptance rule exactly.
func FuzzFieldValue(f *testing.F) {
	for _, v := range []string{`"abc"`, `"  padded  "`, `""`, `null`, `0`, `-12`, `"42"`, `" 42"`, `1.5`, `1e3`, `true`, `false`,
		`"true"`, `{}`, `[]`, `[1]`, `{"a":null}`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775808`,
		`"\u0000"`, `"\ud800"`, `0x10`, `+1`, `01`, `1,"f":"x"`, `1} {"a":2`} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		body := []byte(`{"f":` + v + `}`)
		fs, err := ParseFields(body)
		fzCheckErr(t, "parseFields", err)
		if err != nil {
			if json.Valid(body) {
				t.Fatalf("valid object %s refused", body)
			}
			return
		}
		fzAccessors(t, fs, "f")
		// A JSON integer literal in range is always an int.
		var n json.Number
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if json.Valid([]byte(v)) && dec.Decode(&n) == nil && !strings.HasPrefix(strings.TrimSpace(v), `"`) {
			if want, perr := strconv.ParseInt(n.String(), 10, 64); perr == nil {
				got, ok, err := fs.Int("f")
				if !ok || err != nil || got != want {
					t.Fatalf("int of %s = %d, %v, %v; want %d", v, got, ok, err, want)
				}
			}
		}
	})
}
