package adminapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// FuzzApplySettings feeds arbitrary settings patches (the body of PUT
// apps.php) to applySettings: it must never panic, must refuse with an
// Invalid MISSING_FIELDS error and leave the settings untouched, or accept a
// patch that names only known settings.
func FuzzApplySettings(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"maintenance":true,"maintenance_message":"down"}`,
		`{"heartbeat_interval":60}`,
		`{"heartbeat_interval":"60"}`,
		`{"heartbeat_interval":1e400}`,
		`{"self_reset_enabled":null}`,
		`{"unknown":1}`,
		`{"key_prefix":["A"]}`,
		`{"download_url":{"a":1}}`,
	} {
		f.Add([]byte(seed))
	}
	known := map[string]bool{}
	for _, fld := range reflect.VisibleFields(reflect.TypeOf(license.AppSettings{})) {
		known[fld.Tag.Get("json")] = true
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		patch := map[string]json.RawMessage{}
		if json.Unmarshal(body, &patch) != nil {
			return
		}
		before := license.DefaultSettings()
		s := before
		err := applySettings(&s, patch)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.Invalid || e.Code != "MISSING_FIELDS" {
				t.Fatalf("applySettings(%s) = %#v, want an Invalid MISSING_FIELDS error", body, err)
			}
			if !reflect.DeepEqual(s, before) {
				t.Fatalf("refused patch %s changed the settings: %+v", body, s)
			}
			return
		}
		for k := range patch {
			if !known[k] {
				t.Fatalf("applySettings accepted unknown setting %q", k)
			}
		}
		// Applying the result again is a no-op.
		again := s
		raw, _ := json.Marshal(s)
		p2 := map[string]json.RawMessage{}
		json.Unmarshal(raw, &p2)
		if err := applySettings(&again, p2); err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-applying %s: %v, %+v != %+v", raw, err, again, s)
		}
	})
}
