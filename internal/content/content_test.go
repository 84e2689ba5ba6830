package content

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// ---- CompareVersions ----

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.10", "1.9", 1},
		{"1.9", "1.10", -1},
		{"1.2", "1.2.0", 0},
		{"1.2.0.0", "1.2", 0},
		{"v1.2", "1.2", 0},
		{"v1.10.0", "v1.9.9", 1},
		{"1.2.0-beta", "1.2.0", -1},
		{"1.2.0", "1.2.0-beta", 1},
		{"1.2.0-alpha", "1.2.0-beta", -1},
		{"1.2.0-beta", "1.2.0-beta", 0},
		{"1.2.0-beta.9", "1.2.0-beta.10", -1}, // numeric identifiers compare as numbers
		{"1.2.0-rc.1", "1.2.0-beta.11", 1},
		{"1.2.1-alpha", "1.2.0", 1}, // the numbers decide before the suffix
		{"2", "1.99.99", 1},
		{"0.0.1", "0", 1},
		{"10.0", "9.99", 1},
		{"1.2.0+build", "1.2.0", 0}, // build metadata does not count
		// Garbage: the leading digits of each part count, the rest is ignored.
		{"1.2x", "1.2", 0},
		{"1.x", "1.0", 0},
		{"abc", "0", 0},
		{"", "0.0", 0},
		{"1.3rc", "1.2", 1},
		{"1..2", "1.0.2", 0},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d (antisymmetry)", tc.b, tc.a, got, -tc.want)
		}
	}
}

// ---- Slide.LiveAt ----

func TestSlideLiveAt(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		active     bool
		starts     *time.Time
		ends       *time.Time
		now        time.Time
		want       bool
		wantReason string
	}{
		{"inactive, no window", false, nil, nil, start, false, "inactive slides are never shown"},
		{"inactive inside its window", false, &start, &end, start.Add(time.Hour), false, "inactive slides are never shown"},
		{"no window", true, nil, nil, start, true, "an active slide without a window is always shown"},
		{"before start", true, &start, &end, start.Add(-ms), false, "not shown before starts_at"},
		{"at start", true, &start, &end, start, true, "starts_at is included"},
		{"inside", true, &start, &end, start.Add(time.Hour), true, "shown inside the window"},
		{"just before end", true, &start, &end, end.Add(-ms), true, "shown until ends_at"},
		{"at end", true, &start, &end, end, false, "ends_at is excluded"},
		{"after end", true, &start, &end, end.Add(time.Hour), false, "not shown after ends_at"},
		{"only start, before", true, &start, nil, start.Add(-ms), false, "not shown before starts_at"},
		{"only start, long after", true, &start, nil, start.Add(3650 * 24 * time.Hour), true, "open-ended"},
		{"only end, long before", true, nil, &end, end.Add(-3650 * 24 * time.Hour), true, "shown from the beginning"},
		{"only end, at end", true, nil, &end, end, false, "ends_at is excluded"},
		{"other zone, at start", true, &start, &end, start.In(time.FixedZone("X", -5*3600)), true, "instants, not wall clocks"},
	} {
		sl := &Slide{Title: "s", Active: tc.active, StartsAt: tc.starts, EndsAt: tc.ends}
		if got := sl.LiveAt(tc.now); got != tc.want {
			t.Errorf("%s: LiveAt = %v, want %v (%s)", tc.name, got, tc.want, tc.wantReason)
		}
	}
}

// ---- validation ----

// checkInvalid fails unless err is a MISSING_FIELDS refusal naming field.
func checkInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v, want an Invalid error about %s", what, err, field)
		return
	}
	if e.Kind != apperr.Invalid || e.Code != "MISSING_FIELDS" || !strings.Contains(e.Message, "field "+field+":") {
		t.Errorf("%s: got kind %d code %s %q, want Invalid MISSING_FIELDS about %s", what, e.Kind, e.Code, e.Message, field)
	}
}

var badURLs = []string{
	"javascript:alert(1)",
	"JavaScript:alert(1)",
	"ftp://example.com/file",
	"data:text/html,<script>alert(1)</script>",
	"mailto:someone@example.com",
	"http://",
	"https:///path-only",
	"//example.com/no-scheme",
	"example.com",
	"/relative/path",
	"http://exa mple.com/",
	"https://example.com/" + strings.Repeat("a", 2049-len("https://example.com/")),
}

func validSlide() *Slide {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Second)
	return &Slide{AppID: "app", Title: strings.Repeat("é", 200), Body: strings.Repeat("b", 10000),
		ImageURL: "https://cdn.example.com/" + strings.Repeat("i", 2048-len("https://cdn.example.com/")),
		LinkURL:  "http://example.com/promo?x=1#y", Position: -1_000_000, Active: true, StartsAt: &start, EndsAt: &end}
}

func TestCheckSlide(t *testing.T) {
	for name, sl := range map[string]*Slide{
		"every field at its limit": validSlide(),
		"title only":               {Title: "Hello"},
		"position at max":          {Title: "x", Position: 1_000_000},
		"inactive":                 {Title: "x", Active: false},
		"only starts_at":           {Title: "x", StartsAt: ptrTime(time.Now())},
		"only ends_at":             {Title: "x", EndsAt: ptrTime(time.Now())},
	} {
		if err := CheckSlide(sl); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}

	for _, tc := range []struct {
		name   string
		change func(*Slide)
		field  string
	}{
		{"empty title", func(s *Slide) { s.Title = "" }, "title"},
		{"blank title", func(s *Slide) { s.Title = " \t\n " }, "title"},
		{"title of 201 characters", func(s *Slide) { s.Title = strings.Repeat("é", 201) }, "title"},
		{"body of 10001 bytes", func(s *Slide) { s.Body = strings.Repeat("b", 10001) }, "body"},
		{"ends_at equal to starts_at", func(s *Slide) { s.EndsAt = ptrTime(*s.StartsAt) }, "ends_at"},
		{"ends_at before starts_at", func(s *Slide) { s.EndsAt = ptrTime(s.StartsAt.Add(-time.Hour)) }, "ends_at"},
		{"position below min", func(s *Slide) { s.Position = -1_000_001 }, "order"},
		{"position above max", func(s *Slide) { s.Position = 1_000_001 }, "order"},
	} {
		sl := validSlide()
		tc.change(sl)
		checkInvalid(t, tc.name, CheckSlide(sl), tc.field)
	}
	for _, u := range badURLs {
		sl := validSlide()
		sl.ImageURL = u
		checkInvalid(t, "image_url "+trunc(u), CheckSlide(sl), "image_url")
		sl = validSlide()
		sl.LinkURL = u
		checkInvalid(t, "link_url "+trunc(u), CheckSlide(sl), "link_url")
	}
}

func validLink() *Link {
	return &Link{AppID: "app", Platform: strings.Repeat("a", 64), URL: "https://discord.gg/abc", Label: strings.Repeat("ł", 200),
		Position: 1_000_000}
}

func TestCheckLink(t *testing.T) {
	for name, l := range map[string]*Link{
		"every field at its limit": validLink(),
		"no label":                 {Platform: "discord", URL: "https://discord.gg/x"},
		"dotted platform":          {Platform: "x.com", URL: "http://x.com/someone"},
		"platform with - and _":    {Platform: "my_site-2", URL: "https://example.com", Position: -1_000_000},
	} {
		if err := CheckLink(l); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*Link)
		field  string
	}{
		{"empty platform", func(l *Link) { l.Platform = "" }, "platform"},
		{"upper-case platform", func(l *Link) { l.Platform = "Discord" }, "platform"},
		{"platform with a space", func(l *Link) { l.Platform = "dis cord" }, "platform"},
		{"platform with a slash", func(l *Link) { l.Platform = "a/b" }, "platform"},
		{"platform of 65 characters", func(l *Link) { l.Platform = strings.Repeat("a", 65) }, "platform"},
		{"platform with a newline", func(l *Link) { l.Platform = "discord\n" }, "platform"},
		{"empty url", func(l *Link) { l.URL = "" }, "url"},
		{"label of 201 characters", func(l *Link) { l.Label = strings.Repeat("ł", 201) }, "label"},
		{"position below min", func(l *Link) { l.Position = -1_000_001 }, "order"},
		{"position above max", func(l *Link) { l.Position = 1_000_001 }, "order"},
	} {
		l := validLink()
		tc.change(l)
		checkInvalid(t, tc.name, CheckLink(l), tc.field)
	}
	for _, u := range badURLs {
		l := validLink()
		l.URL = u
		checkInvalid(t, "url "+trunc(u), CheckLink(l), "url")
	}
}

func validEntry() *Entry {
	return &Entry{AppID: "app", Version: strings.Repeat("1", 64), Title: strings.Repeat("ü", 200),
		Body: strings.Repeat("b", 100000), Category: "new"}
}

func TestCheckEntry(t *testing.T) {
	if err := CheckEntry(validEntry()); err != nil {
		t.Errorf("entry at every limit refused: %v", err)
	}
	for _, c := range Categories {
		if err := CheckEntry(&Entry{Title: "t", Category: c}); err != nil {
			t.Errorf("category %q refused: %v", c, err)
		}
	}
	if err := CheckEntry(&Entry{Title: "no version is fine", Category: "fixed"}); err != nil {
		t.Errorf("entry without a version refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Entry)
		field  string
	}{
		{"empty title", func(e *Entry) { e.Title = "" }, "title"},
		{"blank title", func(e *Entry) { e.Title = "   " }, "title"},
		{"title of 201 characters", func(e *Entry) { e.Title = strings.Repeat("ü", 201) }, "title"},
		{"body of 100001 bytes", func(e *Entry) { e.Body = strings.Repeat("b", 100001) }, "body"},
		{"version of 65 characters", func(e *Entry) { e.Version = strings.Repeat("1", 65) }, "version"},
		{"empty category", func(e *Entry) { e.Category = "" }, "category"},
		{"capitalised category", func(e *Entry) { e.Category = "New" }, "category"},
		{"unknown category", func(e *Entry) { e.Category = "bugfix" }, "category"},
		{"padded category", func(e *Entry) { e.Category = " new" }, "category"},
	} {
		e := validEntry()
		tc.change(e)
		checkInvalid(t, tc.name, CheckEntry(e), tc.field)
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ---- Changelog ----

// memEntries is a Store holding only changelog entries, answered in the
// order given (the Service must sort them itself).
type memEntries struct {
	Store
	entries []Entry
}

func (m *memEntries) Entries(_ context.Context, appID string) ([]Entry, error) {
	out := []Entry{}
	for _, e := range m.entries {
		if e.AppID == appID {
			out = append(out, e)
		}
	}
	return out, nil
}

func changelogIDs(t *testing.T, s *Service, q ChangelogQuery) []int64 {
	t.Helper()
	es, err := s.Changelog(context.Background(), q)
	if err != nil {
		t.Fatalf("Changelog(%+v): %v", q, err)
	}
	ids := []int64{}
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestChangelogFilters(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	pub := func(d time.Duration) *time.Time { return ptrTime(day.Add(d)) }
	store := &memEntries{entries: []Entry{
		// Scrambled on purpose.
		{ID: 5, AppID: "app", Version: "1.4.0", Title: "five", Category: "new", PublishedAt: pub(10 * time.Hour)},
		{ID: 1, AppID: "app", Version: "1.2.0", Title: "one", Category: "fixed", PublishedAt: pub(-48 * time.Hour)},
		{ID: 9, AppID: "app", Version: "1.10.0", Title: "draft", Category: "new"},
		{ID: 3, AppID: "app", Version: "1.3.9", Title: "three", Category: "improved", PublishedAt: pub(-time.Millisecond)},
		{ID: 7, AppID: "app", Version: "1.4.0-beta", Title: "seven", Category: "new", PublishedAt: pub(8 * time.Hour)},
		{ID: 4, AppID: "app", Version: "v1.10.0", Title: "four", Category: "security", PublishedAt: pub(10 * time.Hour)},
		{ID: 2, AppID: "app", Version: "", Title: "two", Category: "fixed", PublishedAt: pub(0)},
		{ID: 6, AppID: "app", Version: "2.0", Title: "six", Category: "fixed", PublishedAt: pub(8*time.Hour - time.Millisecond)},
		{ID: 8, AppID: "other", Version: "9.9.9", Title: "other app", Category: "new", PublishedAt: pub(time.Hour)},
	}}
	s := New(store, func() time.Time { return day.Add(24 * time.Hour) })
	for _, tc := range []struct {
		name string
		q    ChangelogQuery
		want []int64
	}{
		// Newest first; 5 and 4 share a time, the higher id first.
		{"all", ChangelogQuery{AppID: "app"}, []int64{5, 4, 7, 6, 2, 3, 1}},
		{"limit 1", ChangelogQuery{AppID: "app", Limit: 1}, []int64{5}},
		{"limit 3", ChangelogQuery{AppID: "app", Limit: 3}, []int64{5, 4, 7}},
		{"limit 50", ChangelogQuery{AppID: "app", Limit: 50}, []int64{5, 4, 7, 6, 2, 3, 1}},
		// A date means midnight UTC: entry 2 (exactly midnight) is in, 3 (a
		// millisecond before) is out.
		{"since a date", ChangelogQuery{AppID: "app", Since: "2026-11-01"}, []int64{5, 4, 7, 6, 2}},
		{"since a later date", ChangelogQuery{AppID: "app", Since: "2026-11-02"}, []int64{}},
		{"since a date-time", ChangelogQuery{AppID: "app", Since: "2026-11-01T08:00:00Z"}, []int64{5, 4, 7}},
		{"since a date-time in another zone", ChangelogQuery{AppID: "app", Since: "2026-11-01T10:00:00+02:00"}, []int64{5, 4, 7}},
		// A version: that version and later; unversioned entries and the
		// 1.4.0 pre-release are out; 1.10 is after 1.4.
		{"since a version", ChangelogQuery{AppID: "app", Since: "1.4.0"}, []int64{5, 4, 6}},
		{"since a v-version", ChangelogQuery{AppID: "app", Since: "v1.4"}, []int64{5, 4, 6}},
		{"since a pre-release", ChangelogQuery{AppID: "app", Since: "1.4.0-alpha"}, []int64{5, 4, 7, 6}},
		{"since version 1", ChangelogQuery{AppID: "app", Since: "1"}, []int64{5, 4, 7, 6, 3, 1}},
		{"category", ChangelogQuery{AppID: "app", Category: "fixed"}, []int64{6, 2, 1}},
		{"category and since", ChangelogQuery{AppID: "app", Category: "fixed", Since: "2026-11-01"}, []int64{6, 2}},
		{"category and limit", ChangelogQuery{AppID: "app", Category: "fixed", Limit: 2}, []int64{6, 2}},
		{"category without entries", ChangelogQuery{AppID: "app", Category: "removed"}, []int64{}},
		{"other app", ChangelogQuery{AppID: "other"}, []int64{8}},
		{"unknown app", ChangelogQuery{AppID: "nope"}, []int64{}},
	} {
		if got := changelogIDs(t, s, tc.q); !equalIDs(got, tc.want) {
			t.Errorf("%s: ids %v, want %v", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name  string
		q     ChangelogQuery
		field string
	}{
		{"limit -1", ChangelogQuery{AppID: "app", Limit: -1}, "limit"},
		{"limit 51", ChangelogQuery{AppID: "app", Limit: 51}, "limit"},
		{"unknown category", ChangelogQuery{AppID: "app", Category: "bugfix"}, "category"},
		{"capitalised category", ChangelogQuery{AppID: "app", Category: "Fixed"}, "category"},
		{"garbage since", ChangelogQuery{AppID: "app", Since: "yesterday"}, "since"},
		{"double dot", ChangelogQuery{AppID: "app", Since: "1..2"}, "since"},
		{"impossible date", ChangelogQuery{AppID: "app", Since: "2026-13-01"}, "since"},
		{"date-time without zone", ChangelogQuery{AppID: "app", Since: "2026-11-01T10:00:00"}, "since"},
		{"slash date", ChangelogQuery{AppID: "app", Since: "2026/11/01"}, "since"},
	} {
		es, err := s.Changelog(context.Background(), tc.q)
		if es != nil {
			t.Errorf("%s: entries %v with the error", tc.name, es)
		}
		checkInvalid(t, tc.name, err, tc.field)
	}
}

// The default limit is 20; drafts never count towards it.
func TestChangelogDefaultLimit(t *testing.T) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	store := &memEntries{}
	for i := int64(1); i <= 30; i++ {
		store.entries = append(store.entries, Entry{ID: 100 + i, AppID: "app", Title: "draft", Category: "new"})
		store.entries = append(store.entries, Entry{ID: i, AppID: "app", Title: "e", Category: "new", PublishedAt: ptrTime(base.Add(time.Duration(i) * time.Minute))})
	}
	s := New(store, func() time.Time { return base })
	ids := changelogIDs(t, s, ChangelogQuery{AppID: "app"})
	if len(ids) != 20 || ids[0] != 30 || ids[19] != 11 {
		t.Fatalf("default page = %v, want the 20 newest published (30 down to 11)", ids)
	}
	if ids := changelogIDs(t, s, ChangelogQuery{AppID: "app", Limit: 50}); len(ids) != 30 {
		t.Fatalf("limit 50 = %d entries, want the 30 published", len(ids))
	}

	drafts := &memEntries{entries: []Entry{{ID: 1, AppID: "app", Title: "d", Category: "new"}}}
	if es, err := New(drafts, time.Now).Changelog(context.Background(), ChangelogQuery{AppID: "app"}); err != nil || es == nil || len(es) != 0 {
		t.Fatalf("only drafts: %v, %v; want an empty, non-nil list", es, err)
	}
}
