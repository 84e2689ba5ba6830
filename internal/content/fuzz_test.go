package content

import (
	"context"
	"testing"
	"time"
)

// emptyStore answers every read with nothing; enough for query parsing.
type emptyStore struct{ Store }

func (emptyStore) Entries(context.Context, string) ([]Entry, error) { return nil, nil }

// FuzzChangelogQuery feeds hostile query values to the public changelog's
// parser: it never panics, and refuses or accepts consistently with the
// documented rules.
func FuzzChangelogQuery(f *testing.F) {
	for _, seed := range []struct {
		since, category string
		limit           int
	}{{"", "", 0}, {"2026-11-01", "new", 20}, {"2026-11-01T10:00:00Z", "fixed", 50}, {"1.2.0-beta", "security", 1},
		{"v10.0", "", 51}, {"garbage", "nope", -1}, {"1..2", "", 0}, {"9999999999999999999.1", "", 0}} {
		f.Add(seed.since, seed.category, seed.limit)
	}
	s := New(emptyStore{}, func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) })
	f.Fuzz(func(t *testing.T, since, category string, limit int) {
		_, err := s.Changelog(context.Background(), ChangelogQuery{AppID: "app", Since: since, Category: category, Limit: limit})
		badLimit := limit < 0 || limit > 50
		if badLimit && err == nil {
			t.Fatalf("limit %d accepted", limit)
		}
		if category != "" && !validCategory(category) && err == nil {
			t.Fatalf("category %q accepted", category)
		}
	})
}

// FuzzCompareVersions checks the version order is antisymmetric and
// reflexive for any input.
func FuzzCompareVersions(f *testing.F) {
	f.Add("1.2.0", "1.10")
	f.Add("v2.0.0-beta", "2.0.0")
	f.Add("", "0")
	f.Fuzz(func(t *testing.T, a, b string) {
		if CompareVersions(a, b) != -CompareVersions(b, a) {
			t.Fatalf("Compare(%q,%q)=%d but Compare(%q,%q)=%d", a, b, CompareVersions(a, b), b, a, CompareVersions(b, a))
		}
		if CompareVersions(a, a) != 0 {
			t.Fatalf("Compare(%q,%q) != 0", a, a)
		}
	})
}
