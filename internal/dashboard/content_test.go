package dashboard_test

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// contentSite is a signed-in site with one app; base is its content path.
func contentSite(t *testing.T) (*site, *kwtest.App, string) {
	t.Helper()
	s := newSite(t)
	app := s.CreateApp("Content App")
	s.signIn()
	return s, app, "/dashboard/apps/" + app.ID + "/content"
}

// contentList reads list name of an admin GET.
func contentList(t *testing.T, s *site, path, name string) []map[string]any {
	t.Helper()
	r := s.MustAdmin("GET", path, nil)
	raw, _ := r.Body[name].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		out = append(out, v.(map[string]any))
	}
	return out
}

func contentFind(list []map[string]any, field, value string) map[string]any {
	for _, m := range list {
		if fmt.Sprint(m[field]) == value {
			return m
		}
	}
	return nil
}

func contentID(m map[string]any) string { return fmt.Sprint(int64(m["id"].(float64))) }

// contentClientTexts is what text.php gives the app (for key, "" for none).
func contentClientTexts(t *testing.T, app *kwtest.App, key string) map[string]any {
	t.Helper()
	path := "/api/app/text.php"
	if key != "" {
		path += "?key=" + url.QueryEscape(key)
	}
	r := app.Get(path, nil)
	if r.Body["success"] != true {
		t.Fatalf("text.php: %v", r)
	}
	m, _ := r.Body["texts"].(map[string]any)
	return m
}

// contentClientChangelog lists the titles changelog.php gives the app.
func contentClientChangelog(t *testing.T, s *site, appID string) []string {
	t.Helper()
	r := s.Do("GET", "/api/app/changelog.php?app_id="+appID, nil, nil)
	if r.Status != 200 {
		t.Fatalf("changelog.php: %v", r)
	}
	var titles []string
	for _, e := range r.Body["entries"].([]any) {
		titles = append(titles, e.(map[string]any)["title"].(string))
	}
	return titles
}

func contentRegexp(body, re string) string {
	if m := regexp.MustCompile(re).FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

func contentFlashHas(t *testing.T, p *webPage, want string) {
	t.Helper()
	p.must(t)
	if f := p.flash(); !strings.Contains(f, want) {
		t.Fatalf("flash %q, want it to contain %q", f, want)
	}
}

// The landing redirects to texts; every section is in the sub-navigation,
// the active one marked.
func TestContentLandingAndSubNav(t *testing.T) {
	s, _, base := contentSite(t)
	p := s.get(base).must(t)
	if p.URL != base+"/texts" {
		t.Fatalf("landing went to %s", p.URL)
	}
	for _, sec := range []string{"texts", "slides", "info", "links", "changelog", "pricing", "orders", "subscriptions"} {
		p := s.get(base + "/" + sec).must(t)
		if !strings.Contains(p.Body, `<nav class="sub" aria-label="Content">`) {
			t.Fatalf("%s: no sub-navigation", sec)
		}
		if !strings.Contains(p.Body, `href="`+base+"/"+sec+`" aria-current="page"`) {
			t.Fatalf("%s: not marked current in the sub-navigation", sec)
		}
		if strings.Count(p.Body, `aria-current="page"`) != 2 { // app nav "Content" + the sub-nav entry
			t.Fatalf("%s: %d aria-current marks", sec, strings.Count(p.Body, `aria-current="page"`))
		}
	}
}

func TestContentTexts(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Hello there"})
	p := s.get(base + "/texts").must(t)
	if !p.Has("welcome") || !p.Has("Hello there") {
		t.Fatalf("seeded text not shown: %s", p.Text())
	}

	// Create.
	p = s.post(base+"/texts", url.Values{"name": {"goodbye"}, "value": {"See you"}})
	contentFlashHas(t, p, "saved")
	if got := contentClientTexts(t, app, "")["goodbye"]; got != "See you" {
		t.Fatalf("text.php goodbye = %v", got)
	}
	// Edit.
	p = s.post(base+"/texts", url.Values{"name": {"welcome"}, "value": {"Hi again"}})
	contentFlashHas(t, p, "saved")
	if got := contentClientTexts(t, app, "")["welcome"]; got != "Hi again" {
		t.Fatalf("text.php welcome = %v", got)
	}
	if !p.Has("Hi again") {
		t.Fatal("edited value not shown")
	}
	// Refused: an empty name and a bad name change nothing.
	p = s.post(base+"/texts", url.Values{"name": {""}, "value": {"x"}})
	if f := p.flash(); !strings.Contains(f, "MISSING_FIELDS") {
		t.Fatalf("empty name: flash %q", f)
	}
	p = s.post(base+"/texts", url.Values{"name": {"bad name!"}, "value": {"x"}})
	if f := p.flash(); !strings.Contains(f, "Invalid field name") {
		t.Fatalf("bad name: flash %q", f)
	}
	if n := len(s.MustAdmin("GET", "/api/admin/texts.php?app_id="+app.ID, nil).Obj("texts")); n != 2 {
		t.Fatalf("%d texts after refused input, want 2", n)
	}
	// Delete needs confirmation.
	p = s.post(base+"/texts/delete", url.Values{"name": {"goodbye"}}).must(t)
	if !p.Has("Delete the text goodbye?") || !strings.Contains(p.Body, `name="confirm" value="yes"`) {
		t.Fatalf("no confirmation page: %s", p.Text())
	}
	if _, ok := s.MustAdmin("GET", "/api/admin/texts.php?app_id="+app.ID, nil).Obj("texts")["goodbye"]; !ok {
		t.Fatal("text deleted without confirmation")
	}
	p = s.post(base+"/texts/delete", url.Values{"name": {"goodbye"}, "confirm": {"yes"}})
	contentFlashHas(t, p, "Text deleted.")
	if _, ok := contentClientTexts(t, app, "")["goodbye"]; ok {
		t.Fatal("text.php still has the deleted text")
	}
}

func TestContentTextOverrides(t *testing.T) {
	s, app, base := contentSite(t)
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Hello everyone"})
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Hello VIP", "license_key": key})

	p := s.get(base + "/texts?license_key=" + url.QueryEscape(key)).must(t)
	if !p.Has("Overrides of "+key) || !p.Has("Hello VIP") || !p.Has("Hello everyone") {
		t.Fatalf("override not shown: %s", p.Text())
	}
	// Edit the override and add one.
	p = s.post(base+"/texts", url.Values{"name": {"welcome"}, "value": {"Hello dear VIP"}, "license_key": {key}})
	contentFlashHas(t, p, "saved for this key")
	if p.URL != base+"/texts" || !p.Has("Hello dear VIP") {
		t.Fatalf("after saving an override: %s %s", p.URL, p.Text())
	}
	s.get(base + "/texts?license_key=" + url.QueryEscape(key))
	contentFlashHas(t, s.post(base+"/texts", url.Values{"name": {"banner"}, "value": {"Only you"}, "license_key": {key}}), "saved for this key")
	texts := contentClientTexts(t, app, key)
	if texts["welcome"] != "Hello dear VIP" || texts["banner"] != "Only you" {
		t.Fatalf("text.php for the key: %v", texts)
	}
	if texts := contentClientTexts(t, app, ""); texts["welcome"] != "Hello everyone" || texts["banner"] != nil {
		t.Fatalf("text.php without key: %v", texts)
	}
	// Removing an override needs confirmation, then the key sees the default.
	p = s.post(base+"/texts/delete", url.Values{"name": {"welcome"}, "license_key": {key}}).must(t)
	if !p.Has("Remove this key's text welcome?") {
		t.Fatalf("no confirmation: %s", p.Text())
	}
	if contentClientTexts(t, app, key)["welcome"] != "Hello dear VIP" {
		t.Fatal("override removed without confirmation")
	}
	contentFlashHas(t, s.post(base+"/texts/delete", url.Values{"name": {"welcome"}, "license_key": {key}, "confirm": {"yes"}}), "Text deleted.")
	if got := contentClientTexts(t, app, key)["welcome"]; got != "Hello everyone" {
		t.Fatalf("after removing the override the key sees %v", got)
	}
	// An unknown key is said so, the defaults still shown.
	p = s.get(base + "/texts?license_key=NOPE-NOPE").must(t)
	if !p.Has("not found") && !p.Has("Not found") {
		t.Fatalf("unknown key not reported: %s", p.Text())
	}
}

func TestContentSlides(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "Summer sale", "body": "Half price",
		"image_url": "https://example.com/sale.png"})
	p := s.get(base + "/slides").must(t)
	if !p.Has("Summer sale") || !p.Has("Half price") || !strings.Contains(p.Body, `<a href="https://example.com/sale.png"`) {
		t.Fatalf("seeded slide not shown: %s", p.Text())
	}
	if !strings.Contains(p.Body, `class="preview"`) {
		t.Fatal("no preview box")
	}

	// Create.
	p = s.post(base+"/slides", url.Values{"title": {"New feature"}, "body": {"Try it"}, "order": {"2"}, "active": {"on"},
		"starts_at": {"2026-12-01T10:00"}})
	contentFlashHas(t, p, "Slide created.")
	sl := contentFind(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides"), "title", "New feature")
	if sl == nil || sl["body"] != "Try it" || sl["order"] != float64(2) || sl["active"] != true || sl["starts_at"] != "2026-12-01T10:00:00Z" {
		t.Fatalf("created slide: %v", sl)
	}
	id := contentID(sl)
	// Edit.
	contentFlashHas(t, s.post(base+"/slides/"+id, url.Values{"title": {"Renamed"}, "body": {"Other"}, "order": {"3"}}), "Slide saved.")
	sl = contentFind(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides"), "id", id)
	if sl["title"] != "Renamed" || sl["body"] != "Other" || sl["active"] != false || sl["starts_at"] != nil {
		t.Fatalf("edited slide: %v", sl)
	}
	// Refused: empty title, non-numeric order, non-http image.
	for _, form := range []url.Values{
		{"title": {""}, "body": {"x"}},
		{"title": {"T"}, "order": {"first"}},
		{"title": {"T"}, "image_url": {"javascript:alert(1)"}},
	} {
		p = s.post(base+"/slides", form)
		if f := p.flash(); !strings.Contains(f, "MISSING_FIELDS") {
			t.Fatalf("%v: flash %q", form, f)
		}
	}
	if n := len(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides")); n != 2 {
		t.Fatalf("%d slides after refused input, want 2", n)
	}
	p = s.post(base+"/slides/"+id, url.Values{"title": {""}})
	if f := p.flash(); !strings.Contains(f, "title") {
		t.Fatalf("empty title on edit: flash %q", f)
	}
	if sl = contentFind(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides"), "id", id); sl["title"] != "Renamed" {
		t.Fatalf("refused edit changed the slide: %v", sl)
	}
	// Delete: confirmation first.
	p = s.post(base+"/slides/"+id+"/delete", url.Values{"back": {base + "/slides"}}).must(t)
	if !p.Has("Delete this slide?") || contentFind(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides"), "id", id) == nil {
		t.Fatal("slide deleted without confirmation")
	}
	if !strings.Contains(p.Body, `href="`+base+`/slides">Cancel`) {
		t.Fatal("the confirmation's Cancel does not return to the slides")
	}
	contentFlashHas(t, s.post(base+"/slides/"+id+"/delete", url.Values{"confirm": {"yes"}}), "Slide deleted.")
	if contentFind(contentList(t, s, "/api/admin/slides.php?app_id="+app.ID, "slides"), "id", id) != nil {
		t.Fatal("slide not deleted")
	}
}

// The preview renders a slide as text: its body's markup escaped, its
// image as a link showing the URL, never as an image element.
func TestContentSlidePreviewIsText(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "Plain", "body": "line one <b>bold</b>\nline two",
		"image_url": "https://example.com/pic.png", "link_url": "https://example.com/more"})
	p := s.get(base + "/slides").must(t)
	if strings.Contains(p.Body, "<img") || strings.Contains(p.Body, "<b>bold</b>") {
		t.Fatal("slide preview carries markup")
	}
	m := regexp.MustCompile(`(?s)<div class="preview"[^>]*>(.*?)</div>`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatal("no preview box")
	}
	for _, want := range []string{"line one &lt;b&gt;bold&lt;/b&gt;", `<a href="https://example.com/pic.png" rel="noopener noreferrer">https://example.com/pic.png</a>`,
		`<a href="https://example.com/more" rel="noopener noreferrer">https://example.com/more</a>`} {
		if !strings.Contains(m[1], want) {
			t.Fatalf("preview lacks %q: %s", want, m[1])
		}
	}
}

func TestContentInfo(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("PUT", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "settings": map[string]any{
		"download_url": "https://example.com/dl", "branding": map[string]any{"primary_color": "#112233", "website_url": "https://example.com"}}})
	p := s.get(base + "/info").must(t)
	if !p.Has("https://example.com/dl") || !strings.Contains(p.Body, `value="#112233"`) || !p.Has("Content App") {
		t.Fatalf("seeded info not shown: %s", p.Text())
	}
	form := url.Values{"name": {"Renamed App"}, "version": {"2.0.0"}, "download_url": {"https://example.com/v2"},
		"login_message": {"Welcome back"}, "logo_url": {"https://example.com/logo.png"}, "website_url": {"https://example.org"},
		"support_email": {"help@example.com"}, "primary_color": {"#aa0000"}, "accent_color": {"#00bb00"}}
	contentFlashHas(t, s.post(base+"/info", form), "App info saved.")
	r := app.Get("/api/app/info.php", nil)
	ai := r.Obj("app")
	br, _ := ai["branding"].(map[string]any)
	if ai["name"] != "Renamed App" || ai["version"] != "2.0.0" || ai["download_url"] != "https://example.com/v2" || ai["login_message"] != "Welcome back" ||
		br["logo_url"] != "https://example.com/logo.png" || br["support_email"] != "help@example.com" || br["primary_color"] != "#aa0000" || br["accent_color"] != "#00bb00" {
		t.Fatalf("info.php after saving: %v", r.Body)
	}
	// Refused: a bad colour and a non-http logo change nothing.
	s.get(base + "/info")
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("name", "Should Not Stick")
	bad.Set("primary_color", "red")
	p = s.post(base+"/info", bad)
	if f := p.flash(); !strings.Contains(f, "colors must be #RRGGBB") {
		t.Fatalf("bad colour: flash %q", f)
	}
	bad.Set("primary_color", "#aa0000")
	bad.Set("logo_url", "javascript:alert(1)")
	if f := s.post(base+"/info", bad).flash(); !strings.Contains(f, "logo_url") {
		t.Fatalf("bad logo: flash %q", f)
	}
	if ai := app.Get("/api/app/info.php", nil).Obj("app"); ai["name"] != "Renamed App" {
		t.Fatalf("refused input changed the app: %v", ai)
	}
}

func TestContentLinks(t *testing.T) {
	s, app, base := contentSite(t)
	l := s.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": app.ID, "platform": "discord", "url": "https://discord.gg/x", "label": "Chat with us"}).Obj("social_link")
	for range 3 {
		if r := app.Env("/api/app/social-click.php", map[string]any{"link_id": l["id"]}); r.Body["success"] != true {
			t.Fatalf("click: %v", r)
		}
	}
	p := s.get(base + "/links").must(t)
	if !p.Has("Chat with us") || !p.Has("discord") || !strings.Contains(p.Body, "<td>3</td>") {
		t.Fatalf("seeded link or its clicks not shown: %s", p.Text())
	}
	// Create.
	contentFlashHas(t, s.post(base+"/links", url.Values{"platform": {"GitHub"}, "url": {"https://github.com/x"}, "label": {"Code"}, "order": {"5"}}), "Link created.")
	gh := contentFind(contentList(t, s, "/api/admin/social-links.php?app_id="+app.ID, "social_links"), "platform", "github")
	if gh == nil || gh["label"] != "Code" || gh["order"] != float64(5) {
		t.Fatalf("created link: %v", gh)
	}
	// Edit.
	id := contentID(gh)
	contentFlashHas(t, s.post(base+"/links/"+id, url.Values{"platform": {"github"}, "url": {"https://github.com/y"}, "label": {"Source"}}), "Link saved.")
	info := app.Get("/api/app/info.php", nil)
	var found bool
	for _, v := range info.Body["social_links"].([]any) {
		m := v.(map[string]any)
		if m["platform"] == "github" && m["url"] == "https://github.com/y" && m["label"] == "Source" {
			found = true
		}
	}
	if !found {
		t.Fatalf("info.php links after edit: %v", info.Body["social_links"])
	}
	// Refused: bad URL, non-numeric order, missing fields.
	for _, form := range []url.Values{
		{"platform": {"x"}, "url": {"ftp://example.com"}},
		{"platform": {"x"}, "url": {"https://x.example"}, "order": {"one"}},
		{"platform": {""}, "url": {""}},
	} {
		if f := s.post(base+"/links", form).flash(); !strings.Contains(f, "MISSING_FIELDS") {
			t.Fatalf("%v: flash %q", form, f)
		}
	}
	if n := len(contentList(t, s, "/api/admin/social-links.php?app_id="+app.ID, "social_links")); n != 2 {
		t.Fatalf("%d links after refused input", n)
	}
	// Delete with confirmation only.
	p = s.post(base+"/links/"+id+"/delete", nil).must(t)
	if !p.Has("Delete this social link?") || len(contentList(t, s, "/api/admin/social-links.php?app_id="+app.ID, "social_links")) != 2 {
		t.Fatal("deleted without confirmation")
	}
	contentFlashHas(t, s.post(base+"/links/"+id+"/delete", url.Values{"confirm": {"yes"}}), "Link deleted.")
	if contentFind(contentList(t, s, "/api/admin/social-links.php?app_id="+app.ID, "social_links"), "id", id) != nil {
		t.Fatal("link not deleted")
	}
}

func TestContentChangelog(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("POST", "/api/admin/changelog.php", map[string]any{"app_id": app.ID, "version": "1.0.0", "title": "First release", "category": "new", "published": true})
	p := s.get(base + "/changelog").must(t)
	if !p.Has("First release") || !p.Has("published") {
		t.Fatalf("seeded entry not shown: %s", p.Text())
	}

	// A draft: listed as draft, not in the client changelog.
	contentFlashHas(t, s.post(base+"/changelog", url.Values{"version": {"1.1.0"}, "title": {"Dark mode"}, "category": {"improved"}, "body": {"Easier on the eyes"}}), "Draft saved")
	e := contentFind(contentList(t, s, "/api/admin/changelog.php?app_id="+app.ID, "entries"), "title", "Dark mode")
	if e == nil || e["published"] != false || e["body"] != "Easier on the eyes" || e["category"] != "improved" {
		t.Fatalf("draft: %v", e)
	}
	if got := contentClientChangelog(t, s, app.ID); len(got) != 1 || got[0] != "First release" {
		t.Fatalf("client changelog with a draft: %v", got)
	}
	p = s.get(base + "/changelog").must(t)
	if !p.Has("Dark mode draft") {
		t.Fatalf("draft not marked: %s", p.Text())
	}
	id := contentID(e)
	// Edit keeps it a draft.
	contentFlashHas(t, s.post(base+"/changelog/"+id, url.Values{"version": {"1.1.0"}, "title": {"Dark theme"}, "category": {"new"}, "body": {"Now"}}), "Entry saved.")
	if got := contentClientChangelog(t, s, app.ID); len(got) != 1 {
		t.Fatalf("edited draft went live: %v", got)
	}
	// Publish through the page.
	contentFlashHas(t, s.post(base+"/changelog/"+id+"/publish", nil), "Entry published.")
	if got := contentClientChangelog(t, s, app.ID); len(got) != 2 || !strings.Contains(strings.Join(got, ","), "Dark theme") {
		t.Fatalf("client changelog after publishing: %v", got)
	}
	// Unpublish.
	contentFlashHas(t, s.post(base+"/changelog/"+id+"/unpublish", nil), "unpublished")
	if got := contentClientChangelog(t, s, app.ID); len(got) != 1 {
		t.Fatalf("client changelog after unpublishing: %v", got)
	}
	// Publish at creation.
	contentFlashHas(t, s.post(base+"/changelog", url.Values{"title": {"Hotfix"}, "category": {"fixed"}, "publish": {"on"}}), "Entry published.")
	if got := contentClientChangelog(t, s, app.ID); len(got) != 2 {
		t.Fatalf("client changelog after publishing at creation: %v", got)
	}
	// Refused: empty title, on create and on edit.
	if f := s.post(base+"/changelog", url.Values{"title": {""}, "category": {"new"}}).flash(); !strings.Contains(f, "title") {
		t.Fatalf("empty title: flash %q", f)
	}
	if f := s.post(base+"/changelog/"+id, url.Values{"title": {"  "}, "category": {"new"}}).flash(); !strings.Contains(f, "title") {
		t.Fatalf("empty title on edit: flash %q", f)
	}
	entries := contentList(t, s, "/api/admin/changelog.php?app_id="+app.ID, "entries")
	if len(entries) != 3 || contentFind(entries, "id", id)["title"] != "Dark theme" {
		t.Fatalf("refused input changed entries: %v", entries)
	}
	// Delete: confirmation first.
	p = s.post(base+"/changelog/"+id+"/delete", nil).must(t)
	if !p.Has("Delete this changelog entry?") || len(contentList(t, s, "/api/admin/changelog.php?app_id="+app.ID, "entries")) != 3 {
		t.Fatal("deleted without confirmation")
	}
	contentFlashHas(t, s.post(base+"/changelog/"+id+"/delete", url.Values{"confirm": {"yes"}}), "Entry deleted.")
	if len(contentList(t, s, "/api/admin/changelog.php?app_id="+app.ID, "entries")) != 2 {
		t.Fatal("entry not deleted")
	}
}

func TestContentPricing(t *testing.T) {
	s, app, base := contentSite(t)
	s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "level", "name": "Pro monthly", "price": 5, "currency": "USD", "interval": "month"})
	p := s.get(base + "/pricing").must(t)
	if !p.Has("Pro monthly") || !p.Has("5.00 USD") {
		t.Fatalf("seeded level not shown: %s", p.Text())
	}
	// Create a plan.
	contentFlashHas(t, s.post(base+"/pricing", url.Values{"type": {"plan"}, "name": {"Lifetime"}, "description": {"Forever"}, "price": {"49.99"},
		"currency": {"eur"}, "interval": {"once"}, "key_type": {"lifetime"}, "max_devices": {"3"}, "features": {`{"pro": true}`}, "active": {"on"}}), "Price created.")
	plans := contentList(t, s, "/api/admin/pricing.php?app_id="+app.ID, "plans")
	pl := contentFind(plans, "name", "Lifetime")
	if pl == nil || pl["price_cents"] != float64(4999) || pl["currency"] != "EUR" || pl["key_type"] != "lifetime" || pl["max_devices"] != float64(3) || pl["active"] != true {
		t.Fatalf("created plan: %v", pl)
	}
	if f, _ := pl["features"].(map[string]any); f["pro"] != true {
		t.Fatalf("plan features: %v", pl["features"])
	}
	// It is on the public price list.
	r := s.Do("GET", "/api/app/pricing.php?app_id="+app.ID, nil, nil)
	if len(r.Body["plans"].([]any)) != 1 || len(r.Body["levels"].([]any)) != 1 {
		t.Fatalf("public pricing: %v", r)
	}
	// Edit: rename, new price, hide.
	id := contentID(pl)
	contentFlashHas(t, s.post(base+"/pricing/"+id, url.Values{"name": {"Lifetime deal"}, "price": {"39"}, "currency": {"EUR"}, "interval": {"once"},
		"key_type": {"lifetime"}, "max_devices": {"3"}}), "Price saved.")
	pl = contentFind(contentList(t, s, "/api/admin/pricing.php?app_id="+app.ID, "plans"), "id", id)
	if pl["name"] != "Lifetime deal" || pl["price_cents"] != float64(3900) || pl["active"] != false {
		t.Fatalf("edited plan: %v", pl)
	}
	if r := s.Do("GET", "/api/app/pricing.php?app_id="+app.ID, nil, nil); len(r.Body["plans"].([]any)) != 0 {
		t.Fatalf("hidden plan still listed: %v", r)
	}
	// Refused: non-numeric price, empty name, bad interval, bad features.
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"type": {"plan"}, "name": {"X"}, "price": {"ten"}, "currency": {"USD"}, "interval": {"once"}, "key_type": {"lifetime"}}, "Price: enter an amount"},
		{url.Values{"type": {"plan"}, "name": {""}, "price": {"1"}, "currency": {"USD"}, "interval": {"once"}, "key_type": {"lifetime"}}, "name"},
		{url.Values{"type": {"level"}, "name": {"Y"}, "price": {"1"}, "currency": {"USD"}, "interval": {"once"}, "key_type": {"days"}}, "interval"},
		{url.Values{"type": {"plan"}, "name": {"Z"}, "price": {"1"}, "currency": {"USD"}, "interval": {"once"}, "key_type": {"lifetime"}, "features": {"{nope"}}, "Features"},
		{url.Values{"type": {"plan"}, "name": {"Z"}, "price": {"1"}, "currency": {"USD"}, "interval": {"once"}, "key_type": {"lifetime"}, "max_devices": {"many"}}, "whole number"},
	} {
		if f := s.post(base+"/pricing", c.form).flash(); !strings.Contains(f, c.want) || !strings.Contains(f, "MISSING_FIELDS") {
			t.Fatalf("%v: flash %q, want %q", c.form, f, c.want)
		}
	}
	if f := s.post(base+"/pricing/"+id, url.Values{"name": {"Lifetime deal"}, "price": {"1,5"}, "currency": {"EUR"}, "interval": {"once"}, "key_type": {"lifetime"}}).flash(); !strings.Contains(f, "Price") {
		t.Fatalf("non-numeric price on edit: flash %q", f)
	}
	all := s.MustAdmin("GET", "/api/admin/pricing.php?app_id="+app.ID, nil)
	if len(all.Body["plans"].([]any)) != 1 || len(all.Body["levels"].([]any)) != 1 {
		t.Fatalf("refused input changed prices: %v", all)
	}
	if pl = contentFind(contentList(t, s, "/api/admin/pricing.php?app_id="+app.ID, "plans"), "id", id); pl["price_cents"] != float64(3900) {
		t.Fatalf("refused edit changed the plan: %v", pl)
	}
	// Delete: confirmation first.
	p = s.post(base+"/pricing/"+id+"/delete", nil).must(t)
	if !p.Has("Delete this price?") || contentFind(contentList(t, s, "/api/admin/pricing.php?app_id="+app.ID, "plans"), "id", id) == nil {
		t.Fatal("deleted without confirmation")
	}
	contentFlashHas(t, s.post(base+"/pricing/"+id+"/delete", url.Values{"confirm": {"yes"}}), "Price deleted.")
	if len(contentList(t, s, "/api/admin/pricing.php?app_id="+app.ID, "plans")) != 0 {
		t.Fatal("plan not deleted")
	}
}

// contentOrder places a public order for plan and returns its id.
func contentOrder(t *testing.T, s *site, appID string, plan any, email string) string {
	t.Helper()
	r := s.Do("POST", "/api/app/pricing.php", nil, []byte(fmt.Sprintf(`{"app_id":%q,"plan_id":%v,"email":%q}`, appID, plan, email)))
	if r.Status != 200 || r.Str("order_id") == "" {
		t.Fatalf("order: %v", r)
	}
	return r.Str("order_id")
}

func TestContentOrders(t *testing.T) {
	s, app, base := contentSite(t)
	plan := s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": "Basic", "price": 10, "currency": "USD",
		"key_type": "lifetime"}).Obj("plan")
	id := contentOrder(t, s, app.ID, plan["id"], "buyer@example.com")
	p := s.get(base + "/orders").must(t)
	if !p.Has(id) || !p.Has("buyer@example.com") || !p.Has("pending") || !p.Has("10.00 USD") {
		t.Fatalf("seeded order not shown: %s", p.Text())
	}
	order := func() map[string]any {
		return contentFind(contentList(t, s, "/api/admin/orders.php?app_id="+app.ID, "orders"), "order_id", id)
	}
	// Refund of a pending order is refused by the API (after confirmation).
	if f := s.post(base+"/orders/"+id+"/refund", url.Values{"confirm": {"yes"}}).flash(); !strings.Contains(f, "CONFLICT") {
		t.Fatalf("refund of a pending order: flash %q", f)
	}
	// Approve.
	contentFlashHas(t, s.post(base+"/orders/"+id+"/approve", url.Values{"payment_ref": {"bank-42"}}), "approved")
	o := order()
	keys, _ := o["license_keys"].([]any)
	if o["status"] != "fulfilled" || o["payment_ref"] != "bank-42" || len(keys) != 1 {
		t.Fatalf("approved order: %v", o)
	}
	key := keys[0].(string)
	p = s.get(base + "/orders").must(t)
	if !p.Has(key) || !p.Has("fulfilled") {
		t.Fatalf("fulfilled order not shown: %s", p.Text())
	}
	// Refund needs confirmation.
	p = s.post(base+"/orders/"+id+"/refund", url.Values{"reason": {"chargeback"}}).must(t)
	if !p.Has("Refund order "+id+"?") || order()["status"] != "fulfilled" {
		t.Fatalf("refunded without confirmation: %s", p.Text())
	}
	contentFlashHas(t, s.post(base+"/orders/"+id+"/refund", url.Values{"reason": {"chargeback"}, "confirm": {"yes"}}), "refunded")
	if order()["status"] != "refunded" {
		t.Fatalf("order after refund: %v", order())
	}
	kr := s.MustAdmin("GET", "/api/admin/keys.php?app_id="+app.ID+"&license_key="+url.QueryEscape(key), nil)
	if st := kr.Obj("key")["status"]; st != "banned" {
		t.Fatalf("refunded order's key is %v, want banned", st)
	}
	// A new fulfilment secret: confirmation first, then shown once and it works.
	p = s.post(base+"/orders/secret", nil).must(t)
	if !p.Has("Make a new fulfilment secret?") || strings.Contains(p.Body, `id="fulfil-secret"`) {
		t.Fatal("secret made without confirmation")
	}
	p = s.post(base+"/orders/secret", url.Values{"confirm": {"yes"}}).must(t)
	m := contentRegexp(p.Body, `id="fulfil-secret" class="secret">([^<]+)<`)
	if m == "" {
		t.Fatalf("secret not shown: %s", p.Text())
	}
	id2 := contentOrder(t, s, app.ID, plan["id"], "second@example.com")
	r := s.Do("POST", "/api/app/fulfill.php", nil, []byte(fmt.Sprintf(`{"order_id":%q,"secret":%q}`, id2, m)))
	if r.Status != 200 || r.Str("status") != "fulfilled" {
		t.Fatalf("fulfil with the shown secret: %v", r)
	}
}

func TestContentSubscriptions(t *testing.T) {
	s, app, base := contentSite(t)
	level := s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "level", "name": "Gold", "price": 7, "currency": "USD", "interval": "month"}).Obj("plan")
	oid := contentOrder(t, s, app.ID, level["id"], "sub@example.com")
	s.MustAdmin("POST", "/api/admin/orders.php?action=approve", map[string]any{"app_id": app.ID, "order_id": oid})
	subs := contentList(t, s, "/api/admin/subscriptions.php?app_id="+app.ID, "subscriptions")
	if len(subs) != 1 {
		t.Fatalf("subscriptions: %v", subs)
	}
	id := contentID(subs[0])
	p := s.get(base + "/subscriptions").must(t)
	if !p.Has("Gold") || !p.Has("sub@example.com") || !p.Has("active") || !p.Has(subs[0]["license_key"].(string)) {
		t.Fatalf("seeded subscription not shown: %s", p.Text())
	}
	// Cancel needs confirmation.
	p = s.post(base+"/subscriptions/"+id+"/cancel", nil).must(t)
	if !p.Has("Cancel this subscription?") {
		t.Fatalf("no confirmation: %s", p.Text())
	}
	if contentList(t, s, "/api/admin/subscriptions.php?app_id="+app.ID, "subscriptions")[0]["status"] != "active" {
		t.Fatal("cancelled without confirmation")
	}
	contentFlashHas(t, s.post(base+"/subscriptions/"+id+"/cancel", url.Values{"confirm": {"yes"}}), "Subscription cancelled.")
	if st := contentList(t, s, "/api/admin/subscriptions.php?app_id="+app.ID, "subscriptions")[0]["status"]; st != "cancelled" {
		t.Fatalf("status after cancel: %v", st)
	}
	p = s.get(base + "/subscriptions").must(t)
	if !p.Has("cancelled") || strings.Contains(p.Body, "/cancel") {
		t.Fatalf("cancelled subscription still offers cancel: %s", p.Text())
	}
	// Cancelling again is refused by the API with its message.
	if f := s.post(base+"/subscriptions/"+id+"/cancel", url.Values{"confirm": {"yes"}}).flash(); !strings.Contains(f, "already cancelled") {
		t.Fatalf("second cancel: flash %q", f)
	}
}

// User-provided text with markup is shown escaped on every content page.
func TestContentEscapesUserText(t *testing.T) {
	s, app, base := contentSite(t)
	payloads := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}
	escaped := []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`}
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	for i, pl := range payloads {
		n := fmt.Sprint(i)
		s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "t" + n, "value": pl})
		s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "o" + n, "value": pl, "license_key": key})
		s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": pl, "body": pl})
		s.MustAdmin("POST", "/api/admin/changelog.php", map[string]any{"app_id": app.ID, "title": pl, "body": pl, "version": "1." + n, "category": "new"})
		s.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": app.ID, "platform": "p" + n, "url": "https://example.com/" + n, "label": pl})
		s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": pl, "description": pl, "price": 1, "currency": "USD", "key_type": "lifetime"})
	}
	s.MustAdmin("PUT", "/api/admin/apps.php", map[string]any{"app_id": app.ID, "settings": map[string]any{"login_message": payloads[0] + payloads[1]}})
	shows := map[string]bool{"texts": true, "texts?license_key=" + url.QueryEscape(key): true, "slides": true, "changelog": true, "links": true,
		"pricing": true, "info": true, "orders": false, "subscriptions": false}
	for sec, has := range shows {
		p := s.get(base + "/" + sec).must(t)
		for i, pl := range payloads {
			if strings.Contains(p.Body, pl) {
				t.Errorf("%s: raw payload %q in the page", sec, pl)
			}
			if has && !strings.Contains(p.Body, escaped[i]) {
				t.Errorf("%s: escaped payload %q not in the page", sec, escaped[i])
			}
		}
		if strings.Contains(p.Body, "<img") || strings.Count(p.Body, "<script") != 1 { // the layout's own app.js only
			t.Errorf("%s: markup from user text", sec)
		}
	}
}
