package content

import (
	"context"
	"testing"
	"time"
)

// A since that looks like a date but is not one is refused, not read as a
// version; pre-release identifiers compare numerically where numeric.
func TestSinceDateLikeAndPreRelease(t *testing.T) {
	s := New(emptyStore{}, time.Now)
	for _, bad := range []string{"2026-11-5", "2026-02-30", "2026-13-01", "2026-11-01T25:00:00Z"} {
		if _, err := s.Changelog(context.Background(), ChangelogQuery{AppID: "a", Since: bad}); err == nil {
			t.Errorf("since=%q accepted", bad)
		}
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0.0-beta.9", "1.0.0-beta.10", -1},
		{"1.0.0-beta", "1.0.0-beta.1", -1},
		{"1.0.0-1", "1.0.0-alpha", -1},
		{"1.0.0-rc.1", "1.0.0-beta.11", 1},
		{"1.2.0+build-5", "1.2.0", 0},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
