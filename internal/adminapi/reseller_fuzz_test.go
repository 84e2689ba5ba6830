package adminapi

import (
	"encoding/json"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/reseller"
)

// FuzzParseProducts: any bytes give either a valid product list or a
// MISSING_FIELDS refusal, never a panic or another error; what is accepted
// survives a round trip unchanged.
func FuzzParseProducts(f *testing.F) {
	for _, seed := range []string{
		`[]`, `null`, `[{"id":"m","name":"Month","key_type":"days","duration_value":30,"price":4}]`,
		`[{"id":"l","name":"Life","key_type":"lifetime","max_devices":3,"price":0}]`,
		`[{"id":"l","name":"Life","key_type":"lifetime","price":1e3}]`, `[{"id":"x"}]`, `{"id":"m"}`, `[1,2]`, `"x"`,
		`[{"id":"a","name":"A","key_type":"days","duration_value":1,"price":1}] []`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ps, err := parseProducts(raw)
		if err != nil {
			if e := apperr.From(err); e.Code != "MISSING_FIELDS" || e.Kind != apperr.Invalid {
				t.Fatalf("parseProducts(%q) = %v, want MISSING_FIELDS", raw, err)
			}
			return
		}
		if len(ps) > reseller.MaxProducts {
			t.Fatalf("accepted %d products", len(ps))
		}
		again, _ := json.Marshal(ps)
		ps2, err := parseProducts(again)
		if err != nil || len(ps2) != len(ps) {
			t.Fatalf("round trip of %s: %v, %v", again, ps2, err)
		}
		for i := range ps {
			if ps[i] != ps2[i] {
				t.Fatalf("round trip changed %+v to %+v", ps[i], ps2[i])
			}
		}
	})
}
