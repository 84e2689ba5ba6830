package store

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestMoveConvert(t *testing.T) {
	for _, c := range []struct {
		in     any
		pgType string
		want   any
		ok     bool
	}{
		{int64(1), "boolean", true, true},
		{int64(0), "boolean", false, true},
		{int64(2), "boolean", nil, false},
		{true, "boolean", true, true},
		{int64(7), "bigint", int64(7), true},
		{int64(7), "integer", int64(7), true},
		{"x", "text", "x", true},
		{[]byte("x"), "text", "x", true},
		{nil, "boolean", nil, true},
		{"1", "bigint", nil, false},
		{1.5, "bigint", nil, false},
		{int64(1), "jsonb", nil, false},
	} {
		got, err := convert(c.in, c.pgType)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("convert(%#v, %s) = %#v, %v; want %#v (ok %v)", c.in, c.pgType, got, err, c.want, c.ok)
		}
	}
}

// Rows that differ only in how their values split must hash differently,
// and the same values from either engine (int64 or int32) alike.
func TestMoveRowRendering(t *testing.T) {
	sum := func(rows ...[]any) string {
		h := sha256.New()
		for _, r := range rows {
			writeRow(h, r)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	if sum([]any{"ab", "c"}) == sum([]any{"a", "bc"}) {
		t.Error("text boundaries do not change the checksum")
	}
	if sum([]any{nil}) == sum([]any{""}) || sum([]any{"1"}) == sum([]any{int64(1)}) || sum([]any{true}) == sum([]any{int64(1)}) {
		t.Error("NULL, text, integer and boolean render alike")
	}
	if sum([]any{int64(5), "x"}) != sum([]any{int32(5), "x"}) {
		t.Error("an INTEGER column read by PostgreSQL renders unlike SQLite's")
	}
	if sum([]any{int64(1)}, []any{int64(2)}) == sum([]any{int64(2)}, []any{int64(1)}) {
		t.Error("row order does not change the checksum")
	}
}
