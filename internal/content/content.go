// Package content is the remote content an app shows its users: named texts
// (app defaults with per-key overrides), announcement slides, social links
// with click counts, and changelog entries. It knows nothing of HTTP or SQL:
// it declares the Store it needs and takes its clock from the caller.
package content

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Slide is an announcement shown in the app. It is shown while Active and
// inside its optional [StartsAt, EndsAt) window, in Position order.
type Slide struct {
	ID        int64
	AppID     string
	Title     string
	Body      string
	ImageURL  string
	LinkURL   string
	Position  int
	Active    bool
	StartsAt  *time.Time
	EndsAt    *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// LiveAt reports whether the slide is shown at now.
func (s *Slide) LiveAt(now time.Time) bool {
	return s.Active && (s.StartsAt == nil || !now.Before(*s.StartsAt)) && (s.EndsAt == nil || now.Before(*s.EndsAt))
}

// Link is a social link of an app; Clicks counts social-click calls.
type Link struct {
	ID        int64
	AppID     string
	Platform  string
	URL       string
	Label     string
	Position  int
	Clicks    int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Entry is a changelog entry; PublishedAt nil means a draft.
type Entry struct {
	ID          int64
	AppID       string
	Version     string
	Title       string
	Body        string
	Category    string
	PublishedAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Categories of changelog entries.
var Categories = []string{"new", "improved", "fixed", "removed", "security", "deprecated"}

// Event fired when a changelog entry goes live.
const ChangelogPublished = "changelog.published"

// Store is the persistence content needs. Lookups return apperr.ErrNotFound
// for missing rows.
type Store interface {
	// Texts returns the app's default texts and, when licenseKey names one
	// of its keys, that key's overrides (empty otherwise).
	Texts(ctx context.Context, appID, licenseKey string) (defaults, overrides map[string]string, err error)
	Slides(ctx context.Context, appID string) ([]Slide, error)
	Links(ctx context.Context, appID string) ([]Link, error)
	// Entries returns the app's changelog entries, drafts too, newest first.
	Entries(ctx context.Context, appID string) ([]Entry, error)
	// CountClick adds one click to a link of the app atomically, chosen by
	// ID or, when id is 0, the first link (by position) of platform. It
	// returns ErrNotFound when there is no such link.
	CountClick(ctx context.Context, appID string, id int64, platform string) error

	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of content.
type Tx interface {
	SetAppText(ctx context.Context, appID, name, value string, now time.Time) error
	DeleteAppText(ctx context.Context, appID, name string) error
	// SetKeyText and DeleteKeyText return ErrNotFound for an unknown key.
	SetKeyText(ctx context.Context, appID, licenseKey, name, value string, now time.Time) error
	DeleteKeyText(ctx context.Context, appID, licenseKey, name string) error

	InsertSlide(ctx context.Context, s *Slide) error
	SlideForUpdate(ctx context.Context, appID string, id int64) (*Slide, error)
	UpdateSlide(ctx context.Context, s *Slide) error
	DeleteSlide(ctx context.Context, appID string, id int64) error

	InsertLink(ctx context.Context, l *Link) error
	LinkForUpdate(ctx context.Context, appID string, id int64) (*Link, error)
	UpdateLink(ctx context.Context, l *Link) error
	DeleteLink(ctx context.Context, appID string, id int64) error

	InsertEntry(ctx context.Context, e *Entry) error
	EntryForUpdate(ctx context.Context, appID string, id int64) (*Entry, error)
	UpdateEntry(ctx context.Context, e *Entry) error
	DeleteEntry(ctx context.Context, appID string, id int64) error

	journal.Journal
}

// Service serves and edits content.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a Service over store with the clock now.
func New(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

func (s *Service) clock() time.Time { return s.now().UTC() }

// Texts returns the texts a client with licenseKey sees: the app defaults
// with that key's overrides on top. An unknown or empty key gets the app
// defaults: texts are not secret, and a signed-out app shows them too.
func (s *Service) Texts(ctx context.Context, appID, licenseKey string) (map[string]string, error) {
	defaults, overrides, err := s.store.Texts(ctx, appID, licenseKey)
	if err != nil {
		return nil, err
	}
	for k, v := range overrides {
		defaults[k] = v
	}
	return defaults, nil
}

// AdminTexts returns an app's defaults and, with licenseKey, that key's
// overrides (NOT_FOUND for an unknown key).
func (s *Service) AdminTexts(ctx context.Context, appID, licenseKey string) (map[string]string, map[string]string, error) {
	defaults, overrides, err := s.store.Texts(ctx, appID, licenseKey)
	if err != nil {
		return nil, nil, err
	}
	if licenseKey != "" && overrides == nil {
		return nil, nil, apperr.NotFoundOf("Key")
	}
	return defaults, overrides, nil
}

var textNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// SetText sets an app default text or, with licenseKey, a key's override.
func (s *Service) SetText(ctx context.Context, actor audit.Actor, appID, licenseKey, name, value string) error {
	if !textNameRE.MatchString(name) {
		return apperr.InvalidField("name", "use 1 to 100 letters, digits, '_', '.' or '-'")
	}
	if len(value) > 10000 {
		return apperr.InvalidField("value", "must be at most 10000 bytes")
	}
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		var err error
		if licenseKey == "" {
			err = tx.SetAppText(ctx, appID, name, value, now)
		} else {
			err = tx.SetKeyText(ctx, appID, licenseKey, name, value, now)
		}
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Key")
		} else if err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "text.set", appID, textTarget(licenseKey, name), map[string]any{"value": value}))
	})
}

// DeleteText removes an app default text or a key's override.
func (s *Service) DeleteText(ctx context.Context, actor audit.Actor, appID, licenseKey, name string) error {
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		var err error
		if licenseKey == "" {
			err = tx.DeleteAppText(ctx, appID, name)
		} else {
			err = tx.DeleteKeyText(ctx, appID, licenseKey, name)
		}
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Text")
		} else if err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "text.delete", appID, textTarget(licenseKey, name), nil))
	})
}

func textTarget(licenseKey, name string) string {
	if licenseKey == "" {
		return name
	}
	return licenseKey + "/" + name
}

// LiveSlides returns the slides shown now, in order.
func (s *Service) LiveSlides(ctx context.Context, appID string) ([]Slide, error) {
	all, err := s.store.Slides(ctx, appID)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	out := []Slide{}
	for _, sl := range all {
		if sl.LiveAt(now) {
			out = append(out, sl)
		}
	}
	return out, nil
}

// Slides returns every slide of the app, in order.
func (s *Service) Slides(ctx context.Context, appID string) ([]Slide, error) {
	return s.store.Slides(ctx, appID)
}

// Links returns the app's social links, in order.
func (s *Service) Links(ctx context.Context, appID string) ([]Link, error) {
	return s.store.Links(ctx, appID)
}

// Click counts one click on a link chosen by id, or by platform when id is
// 0. It returns MISSING_FIELDS or NOT_FOUND.
func (s *Service) Click(ctx context.Context, appID string, id int64, platform string) error {
	if id <= 0 && platform == "" {
		return apperr.Missing("link_id")
	}
	err := s.store.CountClick(ctx, appID, id, platform)
	if errors.Is(err, apperr.ErrNotFound) {
		return apperr.NotFoundOf("Link")
	}
	return err
}

// CheckSlide validates a slide's fields.
func CheckSlide(sl *Slide) error {
	switch {
	case strings.TrimSpace(sl.Title) == "" || utf8.RuneCountInString(sl.Title) > 200:
		return apperr.InvalidField("title", "must be 1 to 200 characters")
	case len(sl.Body) > 10000:
		return apperr.InvalidField("body", "must be at most 10000 bytes")
	case !optionalURL(sl.ImageURL):
		return apperr.InvalidField("image_url", "must be an http or https URL of at most 2048 characters")
	case !optionalURL(sl.LinkURL):
		return apperr.InvalidField("link_url", "must be an http or https URL of at most 2048 characters")
	case sl.StartsAt != nil && sl.EndsAt != nil && !sl.EndsAt.After(*sl.StartsAt):
		return apperr.InvalidField("ends_at", "must be after starts_at")
	case sl.Position < -1_000_000 || sl.Position > 1_000_000:
		return apperr.InvalidField("order", "must be -1000000 to 1000000")
	}
	return nil
}

var platformRE = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// CheckLink validates a social link's fields.
func CheckLink(l *Link) error {
	switch {
	case !platformRE.MatchString(l.Platform):
		return apperr.InvalidField("platform", "use 1 to 64 lower-case letters, digits, '_', '.' or '-' (e.g. discord)")
	case l.URL == "" || !optionalURL(l.URL):
		return apperr.InvalidField("url", "must be an http or https URL of at most 2048 characters")
	case utf8.RuneCountInString(l.Label) > 200:
		return apperr.InvalidField("label", "must be at most 200 characters")
	case l.Position < -1_000_000 || l.Position > 1_000_000:
		return apperr.InvalidField("order", "must be -1000000 to 1000000")
	}
	return nil
}

// CheckEntry validates a changelog entry's fields.
func CheckEntry(e *Entry) error {
	switch {
	case strings.TrimSpace(e.Title) == "" || utf8.RuneCountInString(e.Title) > 200:
		return apperr.InvalidField("title", "must be 1 to 200 characters")
	case len(e.Body) > 100000:
		return apperr.InvalidField("body", "must be at most 100000 bytes")
	case len(e.Version) > 64:
		return apperr.InvalidField("version", "must be at most 64 characters")
	case !validCategory(e.Category):
		return apperr.InvalidField("category", "must be one of "+strings.Join(Categories, ", "))
	}
	return nil
}

func validCategory(c string) bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}

func optionalURL(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 2048 {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// ChangelogQuery filters published entries for the public changelog.
type ChangelogQuery struct {
	AppID    string
	Limit    int    // 1 to 50; 0 means 20
	Since    string // an ISO date or date-time, or a version
	Category string
}

// Changelog returns published entries, newest first: with Since a date,
// those published on or after it; with Since a version, those of that
// version and later. It returns MISSING_FIELDS for a bad limit, since or
// category.
func (s *Service) Changelog(ctx context.Context, q ChangelogQuery) ([]Entry, error) {
	if q.Limit == 0 {
		q.Limit = 20
	}
	if q.Limit < 1 || q.Limit > 50 {
		return nil, apperr.InvalidField("limit", "must be 1 to 50")
	}
	if q.Category != "" && !validCategory(q.Category) {
		return nil, apperr.InvalidField("category", "must be one of "+strings.Join(Categories, ", "))
	}
	var sinceTime *time.Time
	sinceVersion := ""
	if q.Since != "" {
		if t, ok := parseDate(q.Since); ok {
			sinceTime = &t
		} else if dateLikeRE.MatchString(q.Since) {
			return nil, apperr.InvalidField("since", "is not a valid date (use 2026-11-01 or 2026-11-01T10:00:00Z)")
		} else if versionRE.MatchString(q.Since) {
			sinceVersion = q.Since
		} else {
			return nil, apperr.InvalidField("since", "must be an ISO date (2026-11-01), a date-time or a version (1.4.0)")
		}
	}
	all, err := s.store.Entries(ctx, q.AppID)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, e := range all {
		switch {
		case e.PublishedAt == nil:
		case q.Category != "" && e.Category != q.Category:
		case sinceTime != nil && e.PublishedAt.Before(*sinceTime):
		case sinceVersion != "" && (e.Version == "" || CompareVersions(e.Version, sinceVersion) < 0):
		default:
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].PublishedAt.Equal(*out[j].PublishedAt) {
			return out[i].PublishedAt.After(*out[j].PublishedAt)
		}
		return out[i].ID > out[j].ID
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// dateLikeRE catches what was meant as a date (a four-digit year and a
// month), so an invalid one is refused rather than read as a version.
var dateLikeRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}`)

var versionRE = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*([-+][0-9A-Za-z.-]+)?$`)

// parseDate reads 2026-11-01 (midnight UTC) or an RFC 3339 date-time.
func parseDate(s string) (time.Time, bool) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// CompareVersions orders dotted versions numerically (1.10 > 1.9; a leading
// v is ignored); a pre-release suffix (1.2.0-beta) sorts before its release.
// It returns -1, 0 or 1.
func CompareVersions(a, b string) int {
	a, b = strings.TrimPrefix(a, "v"), strings.TrimPrefix(b, "v")
	a, _, _ = strings.Cut(a, "+") // build metadata does not order
	b, _, _ = strings.Cut(b, "+")
	an, apre, _ := strings.Cut(a, "-")
	bn, bpre, _ := strings.Cut(b, "-")
	as, bs := strings.Split(an, "."), strings.Split(bn, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		x, y := part(as, i), part(bs, i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case apre == bpre:
		return 0
	case apre == "":
		return 1
	case bpre == "":
		return -1
	}
	return comparePre(apre, bpre)
}

// comparePre orders pre-release tags as semantic versioning does: dot-
// separated identifiers, numeric ones numerically and below alphanumeric
// ones, a shorter list first when all else is equal (beta.9 < beta.10).
func comparePre(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < min(len(as), len(bs)); i++ {
		x, y := as[i], bs[i]
		xn, xNum := numeric(x)
		yn, yNum := numeric(y)
		switch {
		case xNum && yNum && xn != yn:
			if xn < yn {
				return -1
			}
			return 1
		case xNum != yNum:
			if xNum {
				return -1
			}
			return 1
		case !xNum && x != y:
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

// numeric reads an all-digit identifier (capped, so huge ones compare as equal).
func numeric(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		if n < 1<<30 {
			n = n*10 + int(r-'0')
		}
	}
	return n, true
}

func part(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n := 0
	for _, r := range strings.SplitN(parts[i], "+", 2)[0] {
		if r < '0' || r > '9' {
			break
		}
		if n < 1<<30 {
			n = n*10 + int(r-'0')
		}
	}
	return n
}

// Wire is the slide as the client routes show it.
func (s *Slide) Wire() wire.Slide {
	return wire.Slide{ID: s.ID, Title: s.Title, Body: s.Body, ImageURL: s.ImageURL, LinkURL: s.LinkURL,
		Order: s.Position, StartsAt: wire.AtPtr(s.StartsAt), EndsAt: wire.AtPtr(s.EndsAt)}
}

// AdminWire is the slide as the admin API shows it.
func (s *Slide) AdminWire() wire.AdminSlide {
	return wire.AdminSlide{Slide: s.Wire(), Active: s.Active, CreatedAt: license.Timestamp(s.CreatedAt), UpdatedAt: license.Timestamp(s.UpdatedAt)}
}

// Wire is the changelog entry as the client routes show it.
func (e *Entry) Wire() wire.ChangelogEntry {
	return wire.ChangelogEntry{ID: e.ID, Version: e.Version, Title: e.Title, Body: e.Body, Category: e.Category,
		PublishedAt: wire.AtPtr(e.PublishedAt)}
}

// AdminWire is the changelog entry as the admin API shows it.
func (e *Entry) AdminWire() wire.AdminChangelogEntry {
	return wire.AdminChangelogEntry{ChangelogEntry: e.Wire(), Published: e.PublishedAt != nil,
		CreatedAt: license.Timestamp(e.CreatedAt), UpdatedAt: license.Timestamp(e.UpdatedAt)}
}
