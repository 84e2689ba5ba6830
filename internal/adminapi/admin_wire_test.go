package adminapi

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
)

// fillNonZero sets every field of the struct v points to (recursively) to a
// non-zero value, so an encoding that drops or misplaces a field shows it.
func fillNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
			f.Set(reflect.ValueOf(json.RawMessage(`{"n":` + string(rune('1'+i%9)) + `}`)))
		case f.Kind() == reflect.Int:
			f.SetInt(int64(100 + i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.String:
			f.SetString("v" + v.Type().Field(i).Name)
		case f.Kind() == reflect.Struct:
			fillNonZero(t, f)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			s := reflect.MakeSlice(f.Type(), 1, 1)
			fillNonZero(t, s.Index(0))
			f.Set(s)
		default:
			t.Fatalf("fillNonZero: no value for field %s of kind %s", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// sameJSON fails unless a and b encode to the same JSON object (key order
// aside).
func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	var ma, mb any
	for _, p := range []struct {
		v   any
		dst *any
	}{{a, &ma}, {b, &mb}} {
		raw, err := json.Marshal(p.v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := json.Unmarshal(raw, p.dst); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if !reflect.DeepEqual(ma, mb) {
		t.Errorf("%s: wire encoding differs:\ngot  %v\nwant %v", what, mb, ma)
	}
}

// The wire type of app settings carries every field of license.AppSettings
// under the same name with the same value: a setting added to one and not
// the other fails here.
func TestAppSettingsViewKeepsEveryField(t *testing.T) {
	var st license.AppSettings
	fillNonZero(t, reflect.ValueOf(&st).Elem())
	sameJSON(t, "settings", st, appSettingsView(&st))

	def := license.DefaultSettings()
	sameJSON(t, "default settings", def, appSettingsView(&def))
	var empty license.AppSettings // nil flags and trial features stay null
	sameJSON(t, "zero settings", empty, appSettingsView(&empty))
}

// keyView, the admin API's key, encodes as license.Key.AdminView (which the
// reseller API still uses) does, for keys with and without their optional times.
func TestKeyViewMatchesAdminView(t *testing.T) {
	now := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	at, exp := now.Add(-48*time.Hour), now.Add(36*time.Hour)
	keys := []license.Key{
		{LicenseKey: "K-1", Status: license.StatusUnused, Type: license.TypeDays, Duration: 30, MaxDevices: 1, CreatedAt: now},
		{LicenseKey: "K-2", Status: license.StatusActive, Type: license.TypeDays, Duration: 3, MaxDevices: 2, Note: "n",
			Features: json.RawMessage(`{"pro":true}`), ActivatedAt: &at, ExpiresAt: &exp, LastSelfResetAt: &at, CreatedAt: at},
		{LicenseKey: "K-3", Status: license.StatusActive, Type: license.TypeDays, Duration: 1, ExpiresAt: &at, CreatedAt: at},
	}
	for i := range keys {
		sameJSON(t, keys[i].LicenseKey, keys[i].AdminView(now), keyView(&keys[i], now))
	}
}
