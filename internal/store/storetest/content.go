package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/store"
)

// ---- remote content ----

// contentTx runs fn in a content write transaction, failing the test on error.
func contentTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx content.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := db.ContentStore().InTx(ctx, func(tx content.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("content InTx: %v", err)
	}
}

// contentTxErr runs fn in its own content transaction and returns its error.
func contentTxErr(db *store.DB, fn func(ctx context.Context, tx content.Tx) error) error {
	ctx := context.Background()
	return db.ContentStore().InTx(ctx, func(tx content.Tx) error { return fn(ctx, tx) })
}

// texts reads an app's texts and fails the test on error.
func contentTexts(t *testing.T, db *store.DB, appID, licenseKey string) (defaults, overrides map[string]string) {
	t.Helper()
	d, o, err := db.ContentStore().Texts(context.Background(), appID, licenseKey)
	if err != nil {
		t.Fatalf("Texts(%s, %q): %v", appID, licenseKey, err)
	}
	return d, o
}

// wantTexts fails unless got holds exactly want; a nil want means got must be
// nil, an empty one that got is empty but not nil.
func wantTexts(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if (got == nil) != (want == nil) || !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func contentSlides(t *testing.T, db *store.DB, appID string) []content.Slide {
	t.Helper()
	ss, err := db.ContentStore().Slides(context.Background(), appID)
	if err != nil {
		t.Fatalf("Slides(%s): %v", appID, err)
	}
	if ss == nil {
		t.Errorf("Slides(%s) = nil, want a non-nil list", appID)
	}
	return ss
}

func contentLinks(t *testing.T, db *store.DB, appID string) []content.Link {
	t.Helper()
	ls, err := db.ContentStore().Links(context.Background(), appID)
	if err != nil {
		t.Fatalf("Links(%s): %v", appID, err)
	}
	if ls == nil {
		t.Errorf("Links(%s) = nil, want a non-nil list", appID)
	}
	return ls
}

func contentEntries(t *testing.T, db *store.DB, appID string) []content.Entry {
	t.Helper()
	es, err := db.ContentStore().Entries(context.Background(), appID)
	if err != nil {
		t.Fatalf("Entries(%s): %v", appID, err)
	}
	if es == nil {
		t.Errorf("Entries(%s) = nil, want a non-nil list", appID)
	}
	return es
}

func checkSlide(t *testing.T, what string, got *content.Slide, want *content.Slide) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Title", got.Title, want.Title)
	d.eq("Body", got.Body, want.Body)
	d.eq("ImageURL", got.ImageURL, want.ImageURL)
	d.eq("LinkURL", got.LinkURL, want.LinkURL)
	d.eq("Position", got.Position, want.Position)
	d.eq("Active", got.Active, want.Active)
	d.optTime("StartsAt", got.StartsAt, want.StartsAt)
	d.optTime("EndsAt", got.EndsAt, want.EndsAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkLink(t *testing.T, what string, got *content.Link, want *content.Link) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Platform", got.Platform, want.Platform)
	d.eq("URL", got.URL, want.URL)
	d.eq("Label", got.Label, want.Label)
	d.eq("Position", got.Position, want.Position)
	d.eq("Clicks", got.Clicks, want.Clicks)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func checkEntry(t *testing.T, what string, got *content.Entry, want *content.Entry) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Version", got.Version, want.Version)
	d.eq("Title", got.Title, want.Title)
	d.eq("Body", got.Body, want.Body)
	d.eq("Category", got.Category, want.Category)
	d.optTime("PublishedAt", got.PublishedAt, want.PublishedAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func slideIDs(ss []content.Slide) []int64 {
	out := []int64{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func linkIDs(ls []content.Link) []int64 {
	out := []int64{}
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}

func entryIDs(es []content.Entry) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// Texts: app defaults, overrides only of that app's key, nil overrides for
// an unknown key; Set* upsert, Delete* of what is not there is ErrNotFound.
func testContentTexts(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	addKeys(t, db, newKey("a", "K-1"), newKey("a", "K-2"), newKey("b", "K-1"), newKey("b", "K-3"))

	d, o := contentTexts(t, db, "a", "")
	wantTexts(t, "defaults of an app without texts", d, map[string]string{})
	wantTexts(t, "overrides without a key", o, nil)
	_, o = contentTexts(t, db, "a", "K-1")
	wantTexts(t, "overrides of a key without texts", o, map[string]string{})

	long := strings.Repeat("ü", 5000) // 10000 bytes
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		for _, s := range []struct{ app, name, value string }{
			{"a", "welcome", "Hello"}, {"a", "footer", "© 2026 ✓"}, {"a", "empty", ""}, {"a", "long", long},
			{"b", "welcome", "Bonjour"},
		} {
			if err := tx.SetAppText(ctx, s.app, s.name, s.value, t0); err != nil {
				return err
			}
		}
		if err := tx.SetKeyText(ctx, "a", "K-1", "welcome", "Hello VIP", t0); err != nil {
			return err
		}
		if err := tx.SetKeyText(ctx, "a", "K-1", "extra", "only for K-1", t0); err != nil {
			return err
		}
		return tx.SetKeyText(ctx, "b", "K-1", "welcome", "Salut VIP", t0)
	})
	aDefaults := map[string]string{"welcome": "Hello", "footer": "© 2026 ✓", "empty": "", "long": long}
	d, o = contentTexts(t, db, "a", "")
	wantTexts(t, "defaults of a", d, aDefaults)
	wantTexts(t, "overrides of a without a key", o, nil)
	d, o = contentTexts(t, db, "a", "K-1")
	wantTexts(t, "defaults of a with K-1", d, aDefaults)
	wantTexts(t, "overrides of a/K-1", o, map[string]string{"welcome": "Hello VIP", "extra": "only for K-1"})
	_, o = contentTexts(t, db, "a", "K-2")
	wantTexts(t, "overrides of a/K-2", o, map[string]string{})
	d, o = contentTexts(t, db, "a", "NOPE")
	wantTexts(t, "defaults of a with an unknown key", d, aDefaults)
	wantTexts(t, "overrides of an unknown key", o, nil)
	// K-3 is b's key: a does not see it.
	_, o = contentTexts(t, db, "a", "K-3")
	wantTexts(t, "overrides of another app's key", o, nil)
	d, o = contentTexts(t, db, "b", "K-1")
	wantTexts(t, "defaults of b", d, map[string]string{"welcome": "Bonjour"})
	wantTexts(t, "overrides of b/K-1 (same key string as a/K-1)", o, map[string]string{"welcome": "Salut VIP"})
	d, o = contentTexts(t, db, "missing", "K-1")
	wantTexts(t, "defaults of an unknown app", d, map[string]string{})
	wantTexts(t, "overrides of an unknown app", o, nil)

	// Upserts replace the value and touch nothing else.
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.SetAppText(ctx, "a", "welcome", "Hello again", t0.Add(time.Minute)); err != nil {
			return err
		}
		return tx.SetKeyText(ctx, "a", "K-1", "welcome", "VIP again", t0.Add(time.Minute))
	})
	aDefaults["welcome"] = "Hello again"
	d, o = contentTexts(t, db, "a", "K-1")
	wantTexts(t, "defaults of a after an upsert", d, aDefaults)
	wantTexts(t, "overrides of a/K-1 after an upsert", o, map[string]string{"welcome": "VIP again", "extra": "only for K-1"})
	d, o = contentTexts(t, db, "b", "K-1")
	wantTexts(t, "defaults of b after a's upserts", d, map[string]string{"welcome": "Bonjour"})
	wantTexts(t, "overrides of b/K-1 after a's upserts", o, map[string]string{"welcome": "Salut VIP"})

	for name, fn := range map[string]func(ctx context.Context, tx content.Tx) error{
		"SetKeyText(unknown key)": func(ctx context.Context, tx content.Tx) error {
			return tx.SetKeyText(ctx, "a", "NOPE", "welcome", "x", t0)
		},
		"SetKeyText(another app's key)": func(ctx context.Context, tx content.Tx) error {
			return tx.SetKeyText(ctx, "a", "K-3", "welcome", "x", t0)
		},
		"DeleteKeyText(unknown key)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteKeyText(ctx, "a", "NOPE", "welcome")
		},
		"DeleteKeyText(missing text)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteKeyText(ctx, "a", "K-2", "welcome")
		},
		"DeleteKeyText(text of another app's key)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteKeyText(ctx, "a", "K-3", "welcome")
		},
		"DeleteAppText(missing text)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteAppText(ctx, "a", "nope")
		},
		"DeleteAppText(another app's text)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteAppText(ctx, "b", "footer")
		},
	} {
		wantErr(t, name, contentTxErr(db, fn), apperr.ErrNotFound)
	}
	if _, o := contentTexts(t, db, "b", "K-3"); len(o) != 0 {
		t.Errorf("b/K-3 overrides after a refused SetKeyText = %v, want none", o)
	}

	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.DeleteAppText(ctx, "a", "footer"); err != nil {
			return err
		}
		return tx.DeleteKeyText(ctx, "a", "K-1", "welcome")
	})
	delete(aDefaults, "footer")
	d, o = contentTexts(t, db, "a", "K-1")
	wantTexts(t, "defaults of a after a delete", d, aDefaults)
	wantTexts(t, "overrides of a/K-1 after a delete", o, map[string]string{"extra": "only for K-1"})
	wantErr(t, "DeleteAppText twice", contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		return tx.DeleteAppText(ctx, "a", "footer")
	}), apperr.ErrNotFound)
	d, o = contentTexts(t, db, "b", "K-1")
	wantTexts(t, "defaults of b after a's deletes", d, map[string]string{"welcome": "Bonjour"})
	wantTexts(t, "overrides of b/K-1 after a's deletes", o, map[string]string{"welcome": "Salut VIP"})
}

// Deleting a key deletes its overrides (and nothing else); a new key with the
// same string starts without overrides.
func testContentKeyTextsCascade(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	keys := addKeys(t, db, newKey("a", "K-1"), newKey("a", "K-2"))
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.SetAppText(ctx, "a", "welcome", "Hello", t0); err != nil {
			return err
		}
		if err := tx.SetKeyText(ctx, "a", "K-1", "welcome", "Hello K-1", t0); err != nil {
			return err
		}
		return tx.SetKeyText(ctx, "a", "K-2", "welcome", "Hello K-2", t0)
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, keys[0].ID) })
	d, o := contentTexts(t, db, "a", "K-1")
	wantTexts(t, "defaults after deleting a key", d, map[string]string{"welcome": "Hello"})
	wantTexts(t, "overrides of a deleted key", o, nil)
	_, o = contentTexts(t, db, "a", "K-2")
	wantTexts(t, "overrides of the other key", o, map[string]string{"welcome": "Hello K-2"})
	addKeys(t, db, newKey("a", "K-1"))
	_, o = contentTexts(t, db, "a", "K-1")
	wantTexts(t, "overrides of a new key with a deleted key's string", o, map[string]string{})
}

// Slides: insert sets the ID, every field round-trips (nil and set times),
// lookups are per app, listing is by position then id.
func testContentSlides(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	if ss := contentSlides(t, db, "a"); len(ss) != 0 {
		t.Fatalf("Slides of a new app = %v, want none", ss)
	}
	late := &content.Slide{AppID: "a", Title: "Late", Position: 5, Active: true, CreatedAt: t0, UpdatedAt: t0}
	full := &content.Slide{AppID: "a", Title: "Sale ✓", Body: "Half price\nall week", ImageURL: "https://cdn.example.com/s.png",
		LinkURL: "http://example.com/sale?x=1", Position: -3, Active: true, StartsAt: ptr(t0.Add(time.Hour)),
		EndsAt: ptr(t0.Add(48 * time.Hour)), CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}
	bare := &content.Slide{AppID: "a", Title: "Bare", CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
	tie := &content.Slide{AppID: "a", Title: "Tie", Position: -3, EndsAt: ptr(t0), CreatedAt: t0, UpdatedAt: t0}
	other := &content.Slide{AppID: "b", Title: "Other", Active: true, CreatedAt: t0, UpdatedAt: t0}
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		for _, s := range []*content.Slide{late, full, bare, tie, other} {
			if err := tx.InsertSlide(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	seen := map[int64]bool{}
	for _, s := range []*content.Slide{late, full, bare, tie, other} {
		if s.ID <= 0 || seen[s.ID] {
			t.Fatalf("InsertSlide left %q with ID %d", s.Title, s.ID)
		}
		seen[s.ID] = true
	}

	ss := contentSlides(t, db, "a")
	if got, want := slideIDs(ss), []int64{full.ID, tie.ID, bare.ID, late.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Slides(a) ids = %v, want %v (position, then id)", got, want)
	}
	checkSlide(t, "full slide from Slides", &ss[0], full)
	checkSlide(t, "tie slide from Slides", &ss[1], tie)
	checkSlide(t, "bare slide from Slides", &ss[2], bare)
	if ss[0].CreatedAt.Location() != time.UTC || ss[0].StartsAt.Location() != time.UTC {
		t.Errorf("slide times in %v / %v, want UTC", ss[0].CreatedAt.Location(), ss[0].StartsAt.Location())
	}
	if ss := contentSlides(t, db, "b"); len(ss) != 1 {
		t.Fatalf("Slides(b) = %v, want only its own", ss)
	} else {
		checkSlide(t, "b's slide", &ss[0], other)
	}

	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		got, err := tx.SlideForUpdate(ctx, "a", full.ID)
		if err != nil {
			return err
		}
		checkSlide(t, "SlideForUpdate", got, full)
		return nil
	})
	for name, fn := range map[string]func(ctx context.Context, tx content.Tx) error{
		"SlideForUpdate(another app's id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.SlideForUpdate(ctx, "b", full.ID)
			return err
		},
		"SlideForUpdate(missing id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.SlideForUpdate(ctx, "a", 1<<40)
			return err
		},
		"UpdateSlide(another app's id)": func(ctx context.Context, tx content.Tx) error {
			s := *full
			s.AppID, s.Title = "b", "hijacked"
			return tx.UpdateSlide(ctx, &s)
		},
		"UpdateSlide(missing id)": func(ctx context.Context, tx content.Tx) error {
			s := *full
			s.ID = 1 << 40
			return tx.UpdateSlide(ctx, &s)
		},
		"DeleteSlide(another app's id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteSlide(ctx, "b", full.ID)
		},
		"DeleteSlide(missing id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteSlide(ctx, "a", 1<<40)
		},
	} {
		wantErr(t, name, contentTxErr(db, fn), apperr.ErrNotFound)
	}

	// Update every field: the window is cleared at one end and set at the
	// other; created_at is never rewritten.
	up := *full
	up.Title, up.Body, up.ImageURL, up.LinkURL = "Sale over", "", "", "https://example.com/next"
	up.Position, up.Active, up.StartsAt, up.EndsAt = 7, false, nil, ptr(t0.Add(72*time.Hour))
	up.CreatedAt, up.UpdatedAt = t0.Add(time.Hour), t0.Add(2*time.Hour)
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error { return tx.UpdateSlide(ctx, &up) })
	want := up
	want.CreatedAt = full.CreatedAt
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		got, err := tx.SlideForUpdate(ctx, "a", full.ID)
		if err != nil {
			return err
		}
		checkSlide(t, "slide after UpdateSlide", got, &want)
		return nil
	})
	if got := slideIDs(contentSlides(t, db, "a")); !reflect.DeepEqual(got, []int64{tie.ID, bare.ID, late.ID, full.ID}) {
		t.Errorf("Slides(a) after moving full to 7 = %v", got)
	}
	checkSlide(t, "b's slide after a's edits", &contentSlides(t, db, "b")[0], other)

	// A rolled-back transaction leaves nothing behind.
	boom := errors.New("boom")
	err := contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		s := &content.Slide{AppID: "a", Title: "Ghost", CreatedAt: t0, UpdatedAt: t0}
		if err := tx.InsertSlide(ctx, s); err != nil {
			return err
		}
		if err := tx.AddEvent(ctx, event.Event{AppID: "a", Type: content.ChangelogPublished, CreatedAt: t0, Data: map[string]any{"id": s.ID}}); err != nil {
			return err
		}
		if err := tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "slide.create", AppID: "a", Target: "Ghost"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx returned %v, want boom", err)
	}
	if n := len(contentSlides(t, db, "a")); n != 4 {
		t.Errorf("%d slides after a rolled-back insert, want 4", n)
	}
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 0 {
		t.Errorf("events of a rolled-back content tx = %v, %v; want none", evs, err)
	}
	if es, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(es) != 0 {
		t.Errorf("audit of a rolled-back content tx = %v, %v; want none", es, err)
	}

	contentTx(t, db, func(ctx context.Context, tx content.Tx) error { return tx.DeleteSlide(ctx, "a", full.ID) })
	if got := slideIDs(contentSlides(t, db, "a")); !reflect.DeepEqual(got, []int64{tie.ID, bare.ID, late.ID}) {
		t.Errorf("Slides(a) after DeleteSlide = %v", got)
	}
	wantErr(t, "DeleteSlide twice", contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		return tx.DeleteSlide(ctx, "a", full.ID)
	}), apperr.ErrNotFound)
	wantErr(t, "SlideForUpdate of a deleted slide", contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		_, err := tx.SlideForUpdate(ctx, "a", full.ID)
		return err
	}), apperr.ErrNotFound)
}

// Links: insert sets the ID, every field round-trips, UpdateLink never
// touches clicks, listing is by position then id.
func testContentLinks(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	if ls := contentLinks(t, db, "a"); len(ls) != 0 {
		t.Fatalf("Links of a new app = %v, want none", ls)
	}
	gh := &content.Link{AppID: "a", Platform: "github", URL: "https://github.com/kw", Position: 3, CreatedAt: t0, UpdatedAt: t0}
	dc := &content.Link{AppID: "a", Platform: "discord", URL: "https://discord.gg/kw?ref=app", Label: "Chat ✓", Position: -1,
		Clicks: 7, CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}
	yt := &content.Link{AppID: "a", Platform: "youtube", URL: "http://youtube.com/@kw", Position: 3, CreatedAt: t0.Add(time.Minute),
		UpdatedAt: t0.Add(time.Minute)}
	other := &content.Link{AppID: "b", Platform: "discord", URL: "https://discord.gg/b", CreatedAt: t0, UpdatedAt: t0}
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		for _, l := range []*content.Link{gh, dc, yt, other} {
			if err := tx.InsertLink(ctx, l); err != nil {
				return err
			}
		}
		return nil
	})
	seen := map[int64]bool{}
	for _, l := range []*content.Link{gh, dc, yt, other} {
		if l.ID <= 0 || seen[l.ID] {
			t.Fatalf("InsertLink left %s with ID %d", l.Platform, l.ID)
		}
		seen[l.ID] = true
	}
	ls := contentLinks(t, db, "a")
	if got, want := linkIDs(ls), []int64{dc.ID, gh.ID, yt.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Links(a) ids = %v, want %v (position, then id)", got, want)
	}
	checkLink(t, "discord from Links", &ls[0], dc)
	checkLink(t, "github from Links", &ls[1], gh)
	checkLink(t, "youtube from Links", &ls[2], yt)
	if ls := contentLinks(t, db, "b"); len(ls) != 1 {
		t.Fatalf("Links(b) = %v, want only its own", ls)
	}

	for name, fn := range map[string]func(ctx context.Context, tx content.Tx) error{
		"LinkForUpdate(another app's id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.LinkForUpdate(ctx, "b", dc.ID)
			return err
		},
		"LinkForUpdate(missing id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.LinkForUpdate(ctx, "a", 1<<40)
			return err
		},
		"UpdateLink(another app's id)": func(ctx context.Context, tx content.Tx) error {
			l := *dc
			l.AppID = "b"
			return tx.UpdateLink(ctx, &l)
		},
		"UpdateLink(missing id)": func(ctx context.Context, tx content.Tx) error {
			l := *dc
			l.ID = 1 << 40
			return tx.UpdateLink(ctx, &l)
		},
		"DeleteLink(another app's id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteLink(ctx, "b", dc.ID)
		},
		"DeleteLink(missing id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteLink(ctx, "a", 1<<40)
		},
	} {
		wantErr(t, name, contentTxErr(db, fn), apperr.ErrNotFound)
	}

	up := *dc
	up.Platform, up.URL, up.Label, up.Position = "matrix", "https://matrix.to/#/kw", "", 10
	up.Clicks, up.CreatedAt, up.UpdatedAt = 999, t0.Add(time.Hour), t0.Add(2*time.Hour)
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error { return tx.UpdateLink(ctx, &up) })
	want := up
	want.Clicks, want.CreatedAt = dc.Clicks, dc.CreatedAt
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		got, err := tx.LinkForUpdate(ctx, "a", dc.ID)
		if err != nil {
			return err
		}
		checkLink(t, "link after UpdateLink (clicks and created_at kept)", got, &want)
		return nil
	})
	if got := linkIDs(contentLinks(t, db, "a")); !reflect.DeepEqual(got, []int64{gh.ID, yt.ID, dc.ID}) {
		t.Errorf("Links(a) after moving discord to 10 = %v", got)
	}

	contentTx(t, db, func(ctx context.Context, tx content.Tx) error { return tx.DeleteLink(ctx, "a", gh.ID) })
	if got := linkIDs(contentLinks(t, db, "a")); !reflect.DeepEqual(got, []int64{yt.ID, dc.ID}) {
		t.Errorf("Links(a) after DeleteLink = %v", got)
	}
	wantErr(t, "DeleteLink twice", contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		return tx.DeleteLink(ctx, "a", gh.ID)
	}), apperr.ErrNotFound)
	if ls := contentLinks(t, db, "b"); len(ls) != 1 {
		t.Errorf("Links(b) after a's edits = %v", ls)
	} else {
		checkLink(t, "b's link after a's edits", &ls[0], other)
	}
}

// Entries: every field round-trips (drafts and published), listing is newest
// first by published_at, else created_at, ties by id.
func testContentEntries(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	if es := contentEntries(t, db, "a"); len(es) != 0 {
		t.Fatalf("Entries of a new app = %v, want none", es)
	}
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	e1 := &content.Entry{AppID: "a", Version: "1.0.0", Title: "Draft at 5h", Body: "body ✓", Category: "new", CreatedAt: h(5), UpdatedAt: h(6)}
	e2 := &content.Entry{AppID: "a", Version: "", Title: "Published at 3h", Category: "fixed", PublishedAt: ptr(h(3)), CreatedAt: h(0), UpdatedAt: h(3)}
	e3 := &content.Entry{AppID: "a", Version: "v2.0", Title: "Published at 10h", Category: "security", PublishedAt: ptr(h(10)), CreatedAt: h(1), UpdatedAt: h(10)}
	e4 := &content.Entry{AppID: "a", Version: "1.1", Title: "Draft at 3h", Category: "improved", CreatedAt: h(3), UpdatedAt: h(3)}
	e5 := &content.Entry{AppID: "a", Version: "1.2", Title: "Published at 5h", Category: "removed", PublishedAt: ptr(h(5)), CreatedAt: h(-1), UpdatedAt: h(5)}
	other := &content.Entry{AppID: "b", Title: "Other", Category: "new", PublishedAt: ptr(h(100)), CreatedAt: h(0), UpdatedAt: h(0)}
	all := []*content.Entry{e1, e2, e3, e4, e5, other}
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		for _, e := range all {
			if err := tx.InsertEntry(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	seen := map[int64]bool{}
	for _, e := range all {
		if e.ID <= 0 || seen[e.ID] {
			t.Fatalf("InsertEntry left %q with ID %d", e.Title, e.ID)
		}
		seen[e.ID] = true
	}
	es := contentEntries(t, db, "a")
	if got, want := entryIDs(es), []int64{e3.ID, e5.ID, e1.ID, e4.ID, e2.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Entries(a) ids = %v, want %v (newest first, ties by id)", got, want)
	}
	byID := map[int64]*content.Entry{}
	for _, e := range all {
		byID[e.ID] = e
	}
	for i := range es {
		checkEntry(t, fmt.Sprintf("entry %q from Entries", es[i].Title), &es[i], byID[es[i].ID])
	}
	if es := contentEntries(t, db, "b"); len(es) != 1 || es[0].ID != other.ID {
		t.Fatalf("Entries(b) = %v, want only its own", es)
	}

	for name, fn := range map[string]func(ctx context.Context, tx content.Tx) error{
		"EntryForUpdate(another app's id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.EntryForUpdate(ctx, "b", e1.ID)
			return err
		},
		"EntryForUpdate(missing id)": func(ctx context.Context, tx content.Tx) error {
			_, err := tx.EntryForUpdate(ctx, "a", 1<<40)
			return err
		},
		"UpdateEntry(another app's id)": func(ctx context.Context, tx content.Tx) error {
			e := *e1
			e.AppID = "b"
			return tx.UpdateEntry(ctx, &e)
		},
		"UpdateEntry(missing id)": func(ctx context.Context, tx content.Tx) error {
			e := *e1
			e.ID = 1 << 40
			return tx.UpdateEntry(ctx, &e)
		},
		"DeleteEntry(another app's id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteEntry(ctx, "b", e1.ID)
		},
		"DeleteEntry(missing id)": func(ctx context.Context, tx content.Tx) error {
			return tx.DeleteEntry(ctx, "a", 1<<40)
		},
	} {
		wantErr(t, name, contentTxErr(db, fn), apperr.ErrNotFound)
	}

	// Publish the draft e1 and withdraw e3; every field is written, created_at never.
	pub := *e1
	pub.Version, pub.Title, pub.Body, pub.Category = "1.0.1", "Now live", "", "deprecated"
	pub.PublishedAt, pub.CreatedAt, pub.UpdatedAt = ptr(h(20)), h(50), h(20)
	wd := *e3
	wd.PublishedAt, wd.UpdatedAt = nil, h(21)
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.UpdateEntry(ctx, &pub); err != nil {
			return err
		}
		return tx.UpdateEntry(ctx, &wd)
	})
	wantPub := pub
	wantPub.CreatedAt = e1.CreatedAt
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		got, err := tx.EntryForUpdate(ctx, "a", e1.ID)
		if err != nil {
			return err
		}
		checkEntry(t, "published draft", got, &wantPub)
		got, err = tx.EntryForUpdate(ctx, "a", e3.ID)
		if err != nil {
			return err
		}
		checkEntry(t, "withdrawn entry", got, &wd)
		return nil
	})
	// e1 now sorts at 20h, e3 (a draft again) at its creation, 1h.
	if got, want := entryIDs(contentEntries(t, db, "a")), []int64{e1.ID, e5.ID, e4.ID, e2.ID, e3.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("Entries(a) after publishing and withdrawing = %v, want %v", got, want)
	}

	// An event written with an entry commits with it.
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		e := &content.Entry{AppID: "a", Title: "With event", Category: "new", PublishedAt: ptr(h(30)), CreatedAt: h(30), UpdatedAt: h(30)}
		if err := tx.InsertEntry(ctx, e); err != nil {
			return err
		}
		return tx.AddEvent(ctx, event.Event{AppID: "a", Type: content.ChangelogPublished, CreatedAt: h(30),
			Data: map[string]any{"id": e.ID, "title": e.Title}})
	})
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 1 || evs[0].Type != content.ChangelogPublished ||
		evs[0].AppID != "a" || evs[0].Data["title"] != "With event" {
		t.Errorf("events after a committed content tx = %+v, %v; want the one changelog.published", evs, err)
	}

	contentTx(t, db, func(ctx context.Context, tx content.Tx) error { return tx.DeleteEntry(ctx, "a", e4.ID) })
	for _, e := range contentEntries(t, db, "a") {
		if e.ID == e4.ID {
			t.Errorf("entry %d still listed after DeleteEntry", e4.ID)
		}
	}
	wantErr(t, "DeleteEntry twice", contentTxErr(db, func(ctx context.Context, tx content.Tx) error {
		return tx.DeleteEntry(ctx, "a", e4.ID)
	}), apperr.ErrNotFound)
	if es := contentEntries(t, db, "b"); len(es) != 1 {
		t.Errorf("Entries(b) after a's edits = %v", es)
	} else {
		checkEntry(t, "b's entry after a's edits", &es[0], other)
	}
}

// CountClick counts by id or, with id 0, on the first link (by position,
// then id) of the platform; only the app's own links.
func testContentClicks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	cs := db.ContentStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	mk := func(app, platform string, pos int) *content.Link {
		return &content.Link{AppID: app, Platform: platform, URL: "https://example.com/" + platform, Position: pos, CreatedAt: t0, UpdatedAt: t0}
	}
	l1, l2, l3, l4, l5 := mk("a", "discord", 2), mk("a", "discord", 1), mk("a", "github", 0), mk("a", "discord", 1), mk("b", "discord", 0)
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		for _, l := range []*content.Link{l1, l2, l3, l4, l5} {
			if err := tx.InsertLink(ctx, l); err != nil {
				return err
			}
		}
		return nil
	})
	clicks := func() map[int64]int64 {
		out := map[int64]int64{}
		for _, app := range []string{"a", "b"} {
			for _, l := range contentLinks(t, db, app) {
				out[l.ID] = l.Clicks
			}
		}
		return out
	}
	for _, c := range []struct {
		what     string
		app      string
		id       int64
		platform string
	}{
		{"by id", "a", l1.ID, ""},
		{"by platform: the lowest position, then the lowest id", "a", 0, "discord"},
		{"by platform again", "a", 0, "discord"},
		{"id wins over platform", "a", l1.ID, "github"},
		{"b by platform", "b", 0, "discord"},
	} {
		if err := cs.CountClick(ctx, c.app, c.id, c.platform); err != nil {
			t.Fatalf("CountClick %s: %v", c.what, err)
		}
	}
	want := map[int64]int64{l1.ID: 2, l2.ID: 2, l3.ID: 0, l4.ID: 0, l5.ID: 1}
	if got := clicks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("clicks = %v, want %v", got, want)
	}
	for _, c := range []struct {
		what     string
		app      string
		id       int64
		platform string
	}{
		{"another app's link by id", "a", l5.ID, ""},
		{"missing id", "a", 1 << 40, ""},
		{"missing id with a known platform", "a", 1 << 40, "discord"},
		{"unknown platform", "a", 0, "twitter"},
		{"platform of another app only", "b", 0, "github"},
		{"unknown app", "missing", 0, "discord"},
	} {
		wantErr(t, "CountClick "+c.what, cs.CountClick(ctx, c.app, c.id, c.platform), apperr.ErrNotFound)
	}
	if got := clicks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("clicks after refused clicks = %v, want %v", got, want)
	}
}

// Concurrent clicks, by id and by platform, are all counted.
func testContentConcurrentClicks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	cs := db.ContentStore()
	addApp(t, db, "a")
	hot := &content.Link{AppID: "a", Platform: "discord", URL: "https://discord.gg/x", CreatedAt: t0, UpdatedAt: t0}
	cold := &content.Link{AppID: "a", Platform: "github", URL: "https://github.com/x", CreatedAt: t0, UpdatedAt: t0}
	contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
		if err := tx.InsertLink(ctx, hot); err != nil {
			return err
		}
		return tx.InsertLink(ctx, cold)
	})
	const workers, each = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for range each {
				var err error
				if w%2 == 0 {
					err = cs.CountClick(ctx, "a", hot.ID, "")
				} else {
					err = cs.CountClick(ctx, "a", 0, "discord")
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("CountClick: %v", err)
	}
	for _, l := range contentLinks(t, db, "a") {
		switch {
		case l.ID == hot.ID && l.Clicks != workers*each:
			t.Errorf("clicks after %d concurrent clicks = %d", workers*each, l.Clicks)
		case l.ID == cold.ID && l.Clicks != 0:
			t.Errorf("the other link got %d clicks", l.Clicks)
		}
	}
}

// Deleting an app deletes all of its content, and only its own: an app
// created again with the same ID starts empty.
func testContentDeleteAppCascades(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids := map[string]map[string]int64{}
	for _, app := range []string{"gone", "kept"} {
		addApp(t, db, app)
		addKeys(t, db, newKey(app, "K-1"))
		ids[app] = map[string]int64{}
		contentTx(t, db, func(ctx context.Context, tx content.Tx) error {
			if err := tx.SetAppText(ctx, app, "welcome", "Hello "+app, t0); err != nil {
				return err
			}
			if err := tx.SetKeyText(ctx, app, "K-1", "welcome", "VIP "+app, t0); err != nil {
				return err
			}
			s := &content.Slide{AppID: app, Title: "Slide", Active: true, CreatedAt: t0, UpdatedAt: t0}
			if err := tx.InsertSlide(ctx, s); err != nil {
				return err
			}
			l := &content.Link{AppID: app, Platform: "discord", URL: "https://discord.gg/x", CreatedAt: t0, UpdatedAt: t0}
			if err := tx.InsertLink(ctx, l); err != nil {
				return err
			}
			e := &content.Entry{AppID: app, Title: "Entry", Category: "new", PublishedAt: ptr(t0), CreatedAt: t0, UpdatedAt: t0}
			if err := tx.InsertEntry(ctx, e); err != nil {
				return err
			}
			ids[app]["slide"], ids[app]["link"], ids[app]["entry"] = s.ID, l.ID, e.ID
			return nil
		})
	}

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "gone") })
	checkEmpty := func(when string) {
		t.Helper()
		d, o := contentTexts(t, db, "gone", "K-1")
		wantTexts(t, "defaults "+when, d, map[string]string{})
		if len(o) != 0 {
			t.Errorf("overrides %s = %v, want none", when, o)
		}
		if ss := contentSlides(t, db, "gone"); len(ss) != 0 {
			t.Errorf("slides %s = %v", when, ss)
		}
		if ls := contentLinks(t, db, "gone"); len(ls) != 0 {
			t.Errorf("links %s = %v", when, ls)
		}
		if es := contentEntries(t, db, "gone"); len(es) != 0 {
			t.Errorf("entries %s = %v", when, es)
		}
		wantErr(t, "CountClick "+when, db.ContentStore().CountClick(ctx, "gone", ids["gone"]["link"], ""), apperr.ErrNotFound)
	}
	checkEmpty("of a deleted app")
	// Orphans would show up again under a new app with the same ID.
	addApp(t, db, "gone")
	addKeys(t, db, newKey("gone", "K-1"))
	checkEmpty("of an app re-created with a deleted app's ID")

	d, o := contentTexts(t, db, "kept", "K-1")
	wantTexts(t, "defaults of the other app", d, map[string]string{"welcome": "Hello kept"})
	wantTexts(t, "overrides of the other app", o, map[string]string{"welcome": "VIP kept"})
	if ss := contentSlides(t, db, "kept"); len(ss) != 1 || ss[0].ID != ids["kept"]["slide"] {
		t.Errorf("slides of the other app = %v", ss)
	}
	if ls := contentLinks(t, db, "kept"); len(ls) != 1 || ls[0].ID != ids["kept"]["link"] {
		t.Errorf("links of the other app = %v", ls)
	}
	if es := contentEntries(t, db, "kept"); len(es) != 1 || es[0].ID != ids["kept"]["entry"] {
		t.Errorf("entries of the other app = %v", es)
	}
}
