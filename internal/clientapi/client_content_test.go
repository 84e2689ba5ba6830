package clientapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Client-facing remote content routes: app/info.php, app/text.php,
// app/slides.php, app/social-click.php and the public app/changelog.php
// (sdk-compat §1.12–§1.14, §1.16, §7.17; api-reference "Content"). Helpers
// start with cnt so they do not collide with other test files.

const (
	cntInfo      = "/api/app/info.php"
	cntText      = "/api/app/text.php"
	cntSlides    = "/api/app/slides.php"
	cntClick     = "/api/app/social-click.php"
	cntChangelog = "/api/app/changelog.php"
)

// cntKeys returns the sorted keys of m.
func cntKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cntExactKeys fails unless m has exactly the keys want.
func cntExactKeys(t testing.TB, what string, m map[string]any, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := cntKeys(m)
	if len(got) != len(want) {
		t.Fatalf("%s keys = %v, want %v (%v)", what, got, want, m)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s keys = %v, want %v (%v)", what, got, want, m)
		}
	}
}

// cntLink creates a social link and returns its id.
func cntLink(t testing.TB, a *kwtest.App, platform, link, label string, order int) int64 {
	t.Helper()
	r := a.S.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": a.ID, "platform": platform,
		"url": link, "label": label, "order": order})
	return int64(kwtest.Num(t, "social_link.id", r.Obj("social_link")["id"]))
}

// cntGetInfo fetches info.php and returns the inner reply decoded with
// json.Number numbers.
func cntGetInfo(t testing.TB, a *kwtest.App) map[string]any {
	t.Helper()
	r := a.Get(cntInfo, nil)
	if !r.Sealed {
		t.Fatalf("info.php reply is not an envelope: %s", r)
	}
	r.OK(t)
	return kwtest.Numbers(t, clInner(t, a, r))
}

func TestContentInfo(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Info App")
		other := s.CreateApp("Other App")

		// A fresh app: defaults, no links (an empty array, not null).
		m := cntGetInfo(t, a)
		cntExactKeys(t, "info", m, "success", "app", "social_links")
		app, ok := m["app"].(map[string]any)
		if !ok {
			t.Fatalf("app = %#v", m["app"])
		}
		cntExactKeys(t, "app", app, "name", "version", "download_url", "login_message", "message",
			"maintenance_mode", "maintenance_msg", "branding")
		if app["name"] != "Info App" || app["version"] != "1.0.0" || app["maintenance_mode"] != false ||
			app["download_url"] != "" || app["login_message"] != "" || app["message"] != "" {
			t.Fatalf("fresh app block = %v", app)
		}
		if _, ok := app["maintenance_msg"].(string); !ok {
			t.Fatalf("maintenance_msg = %#v, want a string", app["maintenance_msg"])
		}
		if links, ok := m["social_links"].([]any); !ok || len(links) != 0 {
			t.Fatalf("social_links of a fresh app = %#v, want []", m["social_links"])
		}

		// Settings, version and links set through the admin API show up.
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"version": "2.3.4"})
		branding := map[string]any{"logo_url": "https://cdn.example.com/logo.png", "primary_color": "#112233",
			"accent_color": "#AABBCC", "website_url": "https://example.com", "support_email": "help@example.com"}
		a.SetSettings(t, map[string]any{"download_url": "https://example.com/dl", "login_message": "Welcome back!",
			"maintenance": true, "maintenance_message": "Down for upgrades.", "branding": branding})

		ids := map[string]int64{}
		ids["discord"] = cntLink(t, a, "discord", "https://discord.gg/x", "Discord", 2)
		ids["twitter"] = cntLink(t, a, "twitter", "https://twitter.com/x", "Twitter", 1)
		ids["github"] = cntLink(t, a, "github", "https://github.com/x", "", 2) // same order as discord, later id
		ids["youtube"] = cntLink(t, a, "youtube", "https://youtube.com/x", "YT", -5)
		cntLink(t, other, "discord", "https://discord.gg/other", "Other", 0)

		m = cntGetInfo(t, a)
		app = m["app"].(map[string]any)
		want := map[string]any{"name": "Info App", "version": "2.3.4", "download_url": "https://example.com/dl",
			"login_message": "Welcome back!", "message": "Welcome back!", "maintenance_mode": true,
			"maintenance_msg": "Down for upgrades."}
		for k, v := range want {
			if app[k] != v {
				t.Fatalf("app.%s = %#v, want %#v (app %v)", k, app[k], v, app)
			}
		}
		b, ok := app["branding"].(map[string]any)
		if !ok {
			t.Fatalf("branding = %#v", app["branding"])
		}
		cntExactKeys(t, "branding", b, "logo_url", "primary_color", "accent_color", "website_url", "support_email")
		for k, v := range branding {
			if b[k] != v {
				t.Fatalf("branding.%s = %#v, want %#v", k, b[k], v)
			}
		}
		links, ok := m["social_links"].([]any)
		if !ok {
			t.Fatalf("social_links = %#v", m["social_links"])
		}
		order := []struct{ platform, url, label string }{
			{"youtube", "https://youtube.com/x", "YT"}, {"twitter", "https://twitter.com/x", "Twitter"},
			{"discord", "https://discord.gg/x", "Discord"}, {"github", "https://github.com/x", ""}}
		if len(links) != len(order) {
			t.Fatalf("social_links = %v, want %d links of this app only", links, len(order))
		}
		for i, w := range order {
			l := links[i].(map[string]any)
			cntExactKeys(t, "social link", l, "id", "platform", "url", "label")
			if id := kwtest.Int(t, "social_links.id", l["id"]); id != ids[w.platform] {
				t.Fatalf("social_links[%d].id = %d, want %d (%v)", i, id, ids[w.platform], links)
			}
			if l["platform"] != w.platform || l["url"] != w.url || l["label"] != w.label {
				t.Fatalf("social_links[%d] = %v, want %v (order by order then id)", i, l, w)
			}
		}

		// Maintenance off again.
		a.SetSettings(t, map[string]any{"maintenance": false})
		app = cntGetInfo(t, a)["app"].(map[string]any)
		if app["maintenance_mode"] != false {
			t.Fatalf("maintenance_mode = %#v, want false", app["maintenance_mode"])
		}
		if _, ok := app["maintenance_msg"].(string); !ok {
			t.Fatalf("maintenance_msg = %#v, want a string", app["maintenance_msg"])
		}

		// The other app sees its own block and links.
		om := cntGetInfo(t, other)
		if om["app"].(map[string]any)["name"] != "Other App" || len(om["social_links"].([]any)) != 1 {
			t.Fatalf("other app info = %v", om)
		}

		// Refusals before the secret is verified are plain.
		s.Do("GET", cntInfo, nil, nil).PlainFail(t, 401, "INVALID_APP")
		s.Do("GET", cntInfo, http.Header{"X-App-Secret": {"not-a-secret"}}, nil).PlainFail(t, 401, "INVALID_APP")
		r := a.Plain(cntInfo, "")
		r.PlainFail(t, 405, "METHOD_NOT_ALLOWED")
		if got := r.Header.Get("Allow"); got != "GET" {
			t.Fatalf("Allow = %q, want GET", got)
		}
	})
}

// cntTexts fetches text.php with query (may be "") and an optional bearer
// key, and returns the opened reply.
func cntTexts(t testing.TB, a *kwtest.App, query, bearer string) *kwtest.Reply {
	t.Helper()
	path := cntText
	if query != "" {
		path += "?" + query
	}
	var h http.Header
	if bearer != "" {
		h = http.Header{"Authorization": {"Bearer " + bearer}}
	}
	r := a.Get(path, h)
	if !r.Sealed {
		t.Fatalf("text.php reply is not an envelope: %s", r)
	}
	r.OK(t)
	return r
}

// cntSameTexts fails unless the reply's texts object is exactly want.
func cntSameTexts(t testing.TB, what string, r *kwtest.Reply, want map[string]string) {
	t.Helper()
	got, ok := r.Body["texts"].(map[string]any)
	if !ok {
		t.Fatalf("%s: texts = %#v, want an object", what, r.Body["texts"])
	}
	if len(got) != len(want) {
		t.Fatalf("%s: texts = %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: texts = %v, want %v", what, got, want)
		}
	}
}

// cntSetText sets an app default (key "") or a key's override.
func cntSetText(t testing.TB, a *kwtest.App, key, name, value string) {
	t.Helper()
	body := map[string]any{"app_id": a.ID, "name": name, "value": value}
	if key != "" {
		body["license_key"] = key
	}
	a.S.MustAdmin("PUT", "/api/admin/texts.php", body)
}

func TestContentText(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Texts A")
		b := s.CreateApp("Texts B")
		ka := a.GenerateKeys(2, "lifetime", 0, 1)
		kb := b.GenerateKeys(1, "lifetime", 0, 1)[0]
		vip, plain := ka[0], ka[1]

		// No texts yet: an empty object, never null.
		r := cntTexts(t, b, "", "")
		cntSameTexts(t, "no texts", r, map[string]string{})

		cntSetText(t, a, "", "welcome", "Hello")
		cntSetText(t, a, "", "motd", "Have a nice day")
		cntSetText(t, a, vip, "welcome", "Hello, VIP")
		cntSetText(t, a, vip, "vip_only", "Secret menu")
		cntSetText(t, a, plain, "motd", "") // an empty override still wins
		cntSetText(t, b, "", "welcome", "Hello from B")
		cntSetText(t, b, kb, "welcome", "B VIP")
		// An override needs a key of that very app.
		s.Admin("PUT", "/api/admin/texts.php", map[string]any{"app_id": b.ID, "license_key": vip,
			"name": "welcome", "value": "leak"}).JSONFail(t,
			404, "NOT_FOUND")

		defaults := map[string]string{"welcome": "Hello", "motd": "Have a nice day"}
		plainTexts := map[string]string{"welcome": "Hello", "motd": ""}
		vipTexts := map[string]string{"welcome": "Hello, VIP", "motd": "Have a nice day", "vip_only": "Secret menu"}

		cntSameTexts(t, "no key", cntTexts(t, a, "", ""), defaults)
		cntSameTexts(t, "bearer vip", cntTexts(t, a, "", vip), vipTexts)
		cntSameTexts(t, "?key=vip", cntTexts(t, a, "key="+url.QueryEscape(vip), ""), vipTexts)
		cntSameTexts(t, "bearer key with an empty override", cntTexts(t, a, "", plain), plainTexts)
		cntSameTexts(t, "?key= with an empty override", cntTexts(t, a, "key="+url.QueryEscape(plain), ""), plainTexts)
		cntSameTexts(t, "unknown bearer key", cntTexts(t, a, "", "NOPE-NOPE-NOPE-NOPE"), defaults)
		cntSameTexts(t, "unknown ?key=", cntTexts(t, a, "key=NOPE-NOPE", ""), defaults)
		cntSameTexts(t, "empty ?key=", cntTexts(t, a, "key=", ""), defaults)

		// Overrides are per app: the other app's key string gets no override
		// here, and this app's key gets none there.
		cntSameTexts(t, "B's key on A", cntTexts(t, a, "", kb), defaults)
		cntSameTexts(t, "A's VIP key on B", cntTexts(t, b, "", vip), map[string]string{"welcome": "Hello from B"})
		cntSameTexts(t, "A's VIP key on B (?key=)", cntTexts(t, b, "key="+url.QueryEscape(vip), ""), map[string]string{"welcome": "Hello from B"})
		cntSameTexts(t, "B's key on B", cntTexts(t, b, "", kb), map[string]string{"welcome": "B VIP"})

		// ?name= returns one text.
		for _, c := range []struct {
			name, extra, bearer, want string
		}{
			{"welcome", "", "", "Hello"},
			{"welcome", "", vip, "Hello, VIP"},
			{"welcome", "&key=" + url.QueryEscape(vip), "", "Hello, VIP"},
			{"motd", "", vip, "Have a nice day"},
			{"vip_only", "", vip, "Secret menu"},
		} {
			r := cntTexts(t, a, "name="+c.name+c.extra, c.bearer)
			if r.Body["text"] != c.want {
				t.Fatalf("name=%s%s (bearer %q): text = %#v, want %q", c.name, c.extra, c.bearer, r.Body["text"], c.want)
			}
			cntSameTexts(t, "name="+c.name, r, map[string]string{c.name: c.want})
		}
		for _, c := range []struct{ query, bearer string }{
			{"name=nope", ""}, {"name=vip_only", ""}, {"name=vip_only", plain}, {"name=nope", vip},
		} {
			r := cntTexts(t, a, c.query, c.bearer)
			if v, ok := r.Body["text"]; !ok || v != nil {
				t.Fatalf("%s (bearer %q): text = %#v (present %v), want null", c.query, c.bearer, v, ok)
			}
			cntSameTexts(t, c.query, r, map[string]string{})
		}

		// Deleting the key removes its overrides.
		s.MustAdmin("DELETE", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": vip})
		cntSameTexts(t, "deleted key", cntTexts(t, a, "", vip), defaults)
		cntSameTexts(t, "deleted key, ?key=", cntTexts(t, a, "key="+url.QueryEscape(vip), ""), defaults)
		s.Admin("GET", "/api/admin/texts.php?app_id="+a.ID+"&license_key="+url.QueryEscape(vip), nil).JSONFail(t, 404, "NOT_FOUND")
		cntSameTexts(t, "B's key after A's key went", cntTexts(t, b, "", kb), map[string]string{"welcome": "B VIP"})

		// Refusals before the secret is verified are plain.
		s.Do("GET", cntText, http.Header{"Authorization": {"Bearer " + plain}}, nil).PlainFail(t, 401, "INVALID_APP")
		a.Plain(cntText, "").PlainFail(t, 405, "METHOD_NOT_ALLOWED")
	})
}

// cntSlide creates a slide from body (app_id added) and returns its id.
func cntSlide(t testing.TB, a *kwtest.App, body map[string]any) int64 {
	t.Helper()
	body["app_id"] = a.ID
	r := a.S.MustAdmin("POST", "/api/admin/slides.php", body)
	return int64(kwtest.Num(t, "slide.id", r.Obj("slide")["id"]))
}

// cntLiveSlides asks slides.php with inner and returns the slides, checking
// the reply is a sealed success and every slide has the contract's fields.
func cntLiveSlides(t testing.TB, a *kwtest.App, inner any) []map[string]any {
	t.Helper()
	r := a.Env(cntSlides, inner)
	if !r.Sealed {
		t.Fatalf("slides.php reply is not an envelope: %s", r)
	}
	r.OK(t)
	m := kwtest.Numbers(t, clInner(t, a, r))
	raw, ok := m["slides"].([]any)
	if !ok {
		t.Fatalf("slides = %#v, want an array", m["slides"])
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		sl := v.(map[string]any)
		cntExactKeys(t, "slide", sl, "id", "title", "body", "image_url", "link_url", "order", "starts_at", "ends_at")
		kwtest.Int(t, "slide.id", sl["id"])
		kwtest.Int(t, "slide.order", sl["order"])
		for _, f := range []string{"starts_at", "ends_at"} {
			if sl[f] != nil {
				kwtest.WireTime(t, "slide."+f, sl[f])
			}
		}
		out[i] = sl
	}
	return out
}

// cntSlideIDs returns the ids of slides.
func cntSlideIDs(t testing.TB, slides []map[string]any) []int64 {
	t.Helper()
	out := make([]int64, len(slides))
	for i, sl := range slides {
		out[i] = kwtest.Int(t, "slide.id", sl["id"])
	}
	return out
}

// cntExpectSlides fails unless both forms of the request show exactly ids,
// in order.
func cntExpectSlides(t testing.TB, a *kwtest.App, what string, ids ...int64) {
	t.Helper()
	for _, inner := range []any{map[string]any{"action": "get_slides"}, map[string]any{}} {
		got := cntSlideIDs(t, cntLiveSlides(t, a, inner))
		if len(got) != len(ids) {
			t.Fatalf("%s: request %v shows slides %v, want %v", what, inner, got, ids)
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("%s: request %v shows slides %v, want %v", what, inner, got, ids)
			}
		}
	}
}

func TestContentSlides(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Slides")
		other := s.CreateApp("Other")
		t0 := s.Clock.Now()
		at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }

		cntExpectSlides(t, a, "no slides")

		later := cntSlide(t, a, map[string]any{"title": "Later", "body": "b1", "image_url": "https://cdn.example.com/1.png",
			"link_url": "https://example.com/1", "order": 5})
		first := cntSlide(t, a, map[string]any{"title": "First", "order": 1, "active": true})
		tie := cntSlide(t, a, map[string]any{"title": "Tie", "order": 5}) // same order as later, higher id
		inactive := cntSlide(t, a, map[string]any{"title": "Inactive", "order": 0, "active": false})
		// Inactive inside its window: never shown below.
		cntSlide(t, a, map[string]any{"title": "Inactive in window", "order": 0, "active": false,
			"starts_at": at(-time.Hour), "ends_at": at(10 * time.Hour)})
		scheduled := cntSlide(t, a, map[string]any{"title": "Scheduled", "order": 2,
			"starts_at": at(time.Hour), "ends_at": at(3 * time.Hour)})
		expiring := cntSlide(t, a, map[string]any{"title": "Expiring", "order": 3, "ends_at": at(2 * time.Hour)})
		negative := cntSlide(t, a, map[string]any{"title": "Negative", "order": -1})
		cntSlide(t, other, map[string]any{"title": "Other app", "order": 0})

		// Fields of one slide as the client sees them.
		var got map[string]any
		for _, sl := range cntLiveSlides(t, a, map[string]any{"action": "get_slides"}) {
			if kwtest.Int(t, "id", sl["id"]) == later {
				got = sl
			}
		}
		if got == nil || got["title"] != "Later" || got["body"] != "b1" || got["image_url"] != "https://cdn.example.com/1.png" ||
			got["link_url"] != "https://example.com/1" || kwtest.Int(t, "order", got["order"]) != 5 ||
			got["starts_at"] != nil || got["ends_at"] != nil {
			t.Fatalf("slide Later = %v", got)
		}

		cntExpectSlides(t, a, "at t0", negative, first, expiring, later, tie)
		s.Clock.Advance(time.Hour - time.Second)
		cntExpectSlides(t, a, "1 s before the scheduled start", negative, first, expiring, later, tie)
		s.Clock.Advance(time.Second)
		cntExpectSlides(t, a, "at starts_at (inclusive)", negative, first, scheduled, expiring, later, tie)
		for _, sl := range cntLiveSlides(t, a, map[string]any{}) {
			if kwtest.Int(t, "id", sl["id"]) == scheduled && (sl["starts_at"] != at(time.Hour) || sl["ends_at"] != at(3*time.Hour)) {
				t.Fatalf("scheduled slide window = %v .. %v, want %s .. %s", sl["starts_at"], sl["ends_at"], at(time.Hour), at(3*time.Hour))
			}
		}
		s.Clock.Advance(time.Hour - time.Second)
		cntExpectSlides(t, a, "1 s before ends_at", negative, first, scheduled, expiring, later, tie)
		s.Clock.Advance(time.Second)
		cntExpectSlides(t, a, "at ends_at (exclusive)", negative, first, scheduled, later, tie)
		s.Clock.Advance(time.Hour)
		cntExpectSlides(t, a, "after the scheduled window", negative, first, later, tie)

		// Switching slides on and off through the admin API.
		s.MustAdmin("PUT", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "id": inactive, "active": true})
		s.MustAdmin("PUT", "/api/admin/slides.php", map[string]any{"app_id": a.ID, "id": first, "active": false})
		cntExpectSlides(t, a, "after toggling", negative, inactive, later, tie)

		// Only get_slides (or no action) is understood; failures are sealed.
		a.Env(cntSlides, map[string]any{"action": "other"}).SealedFail(t, "MISSING_FIELDS")
		a.Env(cntSlides, map[string]any{"action": 7}).SealedFail(t, "MISSING_FIELDS")
		a.Env(cntSlides, []any{}).SealedFail(t, "MISSING_FIELDS")

		// The other app sees only its own slide.
		if got := cntLiveSlides(t, other, map[string]any{"action": "get_slides"}); len(got) != 1 || got[0]["title"] != "Other app" {
			t.Fatalf("other app slides = %v", got)
		}

		// Plain refusals before verification; GET is not a slides method.
		s.Do("POST", cntSlides, nil, a.Seal(map[string]any{}).Marshal()).PlainFail(t, 401, "INVALID_APP")
		a.Get(cntSlides, nil).PlainFail(t, 405, "METHOD_NOT_ALLOWED")
	})
}

// cntClicks returns the click counts of the app's links by id, as the admin
// API shows them.
func cntClicks(t testing.TB, a *kwtest.App) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for _, l := range a.S.MustAdmin("GET", "/api/admin/social-links.php?app_id="+a.ID, nil).List(t, "social_links") {
		out[int64(kwtest.Num(t, "id", l["id"]))] = kwtest.Num(t, "clicks", l["clicks"])
	}
	return out
}

// cntExpectClicks fails unless the app's links have exactly want clicks.
func cntExpectClicks(t testing.TB, a *kwtest.App, what string, want map[int64]int) {
	t.Helper()
	got := cntClicks(t, a)
	if len(got) != len(want) {
		t.Fatalf("%s: clicks = %v, want %v", what, got, want)
	}
	for id, n := range want {
		if got[id] != n {
			t.Fatalf("%s: clicks = %v, want %v", what, got, want)
		}
	}
}

// cntClickOK sends a social click and fails unless it is a sealed success.
func cntClickOK(t testing.TB, a *kwtest.App, inner map[string]any) {
	t.Helper()
	r := a.Env(cntClick, inner)
	if !r.Sealed {
		t.Fatalf("social-click %v: reply is not an envelope: %s", inner, r)
	}
	r.OK(t)
}

// cntPostSealed seals inner and POSTs it from any goroutine (no testing.T),
// returning an error unless the answer is a sealed success.
func cntPostSealed(a *kwtest.App, path string, inner map[string]any) error {
	b, err := json.Marshal(inner)
	if err != nil {
		return err
	}
	env, err := a.Keys.Seal(b, a.S.Clock.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", a.S.URL+path, bytes.NewReader(env.Marshal()))
	if err != nil {
		return err
	}
	req.Header.Set("X-App-Secret", a.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !envelope.IsEnvelope(raw) {
		return fmt.Errorf("%v: %d %s", inner, resp.StatusCode, raw)
	}
	renv, err := envelope.Parse(raw)
	if err != nil {
		return err
	}
	plain, _, err := a.Keys.Verify(renv, a.S.Clock.Now())
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(plain, &m); err != nil || m["success"] != true {
		return fmt.Errorf("%v: inner reply %s", inner, plain)
	}
	return nil
}

func TestContentSocialClick(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		// The concurrent clients below leave pre-dialed connections that
		// never carried a request; http.Server.Shutdown waits 5 s for such
		// connections, so drop them before the server closes.
		t.Cleanup(kwtest.HTTP.CloseIdleConnections)
		a := s.CreateApp("Clicks")
		other := s.CreateApp("Other")
		d1 := cntLink(t, a, "discord", "https://discord.gg/one", "Discord 1", 1)
		d0 := cntLink(t, a, "discord", "https://discord.gg/zero", "Discord 0", 0) // first discord by order
		tw := cntLink(t, a, "twitter", "https://twitter.com/x", "Twitter", 2)
		od := cntLink(t, other, "discord", "https://discord.gg/other", "Other", 0)
		want := map[int64]int{d1: 0, d0: 0, tw: 0}
		cntExpectClicks(t, a, "fresh links", want)

		cntClickOK(t, a, map[string]any{"link_id": d1})
		want[d1]++
		cntExpectClicks(t, a, "link_id", want)

		cntClickOK(t, a, map[string]any{"platform": "discord"})
		want[d0]++
		cntExpectClicks(t, a, "platform discord", want)

		cntClickOK(t, a, map[string]any{"platform": " Discord "}) // trimmed, case-folded
		want[d0]++
		cntExpectClicks(t, a, "platform \" Discord \"", want)

		cntClickOK(t, a, map[string]any{"link_id": strconv.FormatInt(tw, 10)})
		want[tw]++
		cntExpectClicks(t, a, "link_id as a string of digits", want)

		// Refusals are sealed and count nothing.
		for _, c := range []struct {
			inner map[string]any
			code  string
		}{
			{map[string]any{"link_id": 999999}, "NOT_FOUND"},
			{map[string]any{"link_id": od}, "NOT_FOUND"}, // a link of another app
			{map[string]any{"platform": "mastodon"}, "NOT_FOUND"},
			{map[string]any{}, "MISSING_FIELDS"},
			{map[string]any{"link_id": nil}, "MISSING_FIELDS"},
			{map[string]any{"link_id": 0}, "MISSING_FIELDS"},
			{map[string]any{"link_id": "abc"}, "MISSING_FIELDS"},
			{map[string]any{"link_id": 1.5}, "MISSING_FIELDS"},
			{map[string]any{"link_id": true}, "MISSING_FIELDS"},
			{map[string]any{"platform": 3}, "MISSING_FIELDS"},
		} {
			a.Env(cntClick, c.inner).SealedFail(t, c.code)
		}
		cntExpectClicks(t, a, "after refusals", want)
		cntExpectClicks(t, other, "other app after refusals", map[int64]int{od: 0})

		// A replayed envelope is answered again but counted once.
		raw := a.Seal(map[string]any{"link_id": tw}).Marshal()
		r1 := a.PostEnvelope(cntClick, raw)
		r1.OK(t)
		r2 := a.PostEnvelope(cntClick, raw)
		if !r2.Sealed {
			t.Fatalf("replay answer is not an envelope: %s", r2)
		}
		r2.OK(t)
		if string(clInner(t, a, r1)) != string(clInner(t, a, r2)) {
			t.Fatalf("replay answered %s, first answer %s", clInner(t, a, r2), clInner(t, a, r1))
		}
		want[tw]++
		cntExpectClicks(t, a, "replayed envelope", want)

		// Concurrent clicks: 50 clients × 4 clicks, every one counted.
		const clients, each = 50, 4
		var wg sync.WaitGroup
		errs := make(chan error, clients*each)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					if err := cntPostSealed(a, cntClick, map[string]any{"link_id": d1, "n": i*each + j}); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
		want[d1] += clients * each
		cntExpectClicks(t, a, "after concurrent clicks", want)

		// Concurrent clicks by platform land on the first discord link.
		errs = make(chan error, clients)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := cntPostSealed(a, cntClick, map[string]any{"platform": "discord", "n": i}); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
		want[d0] += clients
		cntExpectClicks(t, a, "after concurrent platform clicks", want)

		// Plain refusals before verification.
		s.Do("POST", cntClick, nil, a.Seal(map[string]any{"link_id": d1}).Marshal()).PlainFail(t, 401, "INVALID_APP")
		a.Plain(cntClick, map[string]any{"link_id": d1}).PlainFail(t, 400, "CRYPTO_ERROR")
		cntExpectClicks(t, a, "after plain refusals", want)
	})
}

// A replayed social click is counted once even when the copy reaches another
// keyward process sharing the database.
func TestContentSocialClickReplayAcrossServers(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s1 := kwtest.Boot(t, engine, nil)
		s2 := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: s1.Clock, DataDir: s1.DataDir,
			DatabaseURL: s1.DatabaseURL, ReapEvery: time.Hour})
		a1 := s1.CreateApp("Shared")
		a2 := s2.NewApp(a1.ID, a1.Secret)
		id := cntLink(t, a1, "discord", "https://discord.gg/x", "Discord", 0)

		raw := a1.Seal(map[string]any{"link_id": id}).Marshal()
		r1 := a1.PostEnvelope(cntClick, raw)
		r1.OK(t)
		r2 := a2.PostEnvelope(cntClick, raw)
		if !r2.Sealed {
			t.Fatalf("replay on the second server: %s", r2)
		}
		r2.OK(t)
		cntExpectClicks(t, a1, "one envelope on two servers", map[int64]int{id: 1})

		// Fresh envelopes on both servers all count.
		cntClickOK(t, a2, map[string]any{"link_id": id})
		cntClickOK(t, a1, map[string]any{"link_id": id})
		cntExpectClicks(t, a1, "fresh envelopes", map[int64]int{id: 3})
	})
}

// cntEntry creates a changelog entry and returns its id.
func cntEntry(t testing.TB, a *kwtest.App, version, title, category string, published bool) int64 {
	t.Helper()
	r := a.S.MustAdmin("POST", "/api/admin/changelog.php", map[string]any{"app_id": a.ID, "version": version,
		"title": title, "body": "Body of " + title, "category": category, "published": published})
	return int64(kwtest.Num(t, "entry.id", r.Obj("entry")["id"]))
}

// cntChangelogGet GETs the public changelog with query, no credentials.
func cntChangelogGet(s *kwtest.Server, query string) *kwtest.Reply {
	s.T.Helper()
	return s.Do("GET", cntChangelog+"?"+query, nil, nil)
}

// cntEntries GETs the public changelog and returns its entries, checking the
// reply is a plain success and every entry has the contract's fields.
func cntEntries(t testing.TB, s *kwtest.Server, query string) []map[string]any {
	t.Helper()
	r := cntChangelogGet(s, query)
	if r.Sealed || envelope.IsEnvelope(r.Raw) {
		t.Fatalf("changelog %s: reply is an envelope, want plain JSON", query)
	}
	r.OK(t)
	m := kwtest.Numbers(t, r.Raw)
	raw, ok := m["entries"].([]any)
	if !ok {
		t.Fatalf("changelog %s: entries = %#v, want an array", query, m["entries"])
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		e := v.(map[string]any)
		cntExactKeys(t, "entry", e, "id", "version", "title", "body", "category", "published_at")
		kwtest.Int(t, "entry.id", e["id"])
		kwtest.WireTime(t, "entry.published_at", e["published_at"])
		out[i] = e
	}
	return out
}

// cntExpectEntries fails unless the changelog for query lists exactly ids.
func cntExpectEntries(t testing.TB, s *kwtest.Server, query string, ids ...int64) {
	t.Helper()
	es := cntEntries(t, s, query)
	got := make([]int64, len(es))
	for i, e := range es {
		got[i] = kwtest.Int(t, "entry.id", e["id"])
	}
	if len(got) != len(ids) {
		t.Fatalf("changelog %s = %v, want %v", query, got, ids)
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("changelog %s = %v, want %v", query, got, ids)
		}
	}
}

func TestContentChangelog(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Changelog")
		other := s.CreateApp("Other")
		q := "app_id=" + a.ID + "&"
		base := s.Clock.Now() // 2026-11-01T12:00:00Z
		to := func(at time.Time) {
			if d := at.Sub(s.Clock.Now()); d > 0 {
				s.Clock.Advance(d)
			}
		}
		day := func(d, h, m, sec int) time.Time { return time.Date(2026, 11, d, h, m, sec, 0, time.UTC) }

		cntExpectEntries(t, s, q) // no entries yet: []

		published := map[int64]time.Time{}
		pub := func(at time.Time, version, title, category string) int64 {
			to(at)
			id := cntEntry(t, a, version, title, category, true)
			published[id] = at
			return id
		}
		e1 := pub(base, "1.0", "Initial release", "new")
		draft := cntEntry(t, a, "9.9", "Draft", "new", false)
		e2 := pub(day(2, 12, 0, 0), "1.2", "Bug fixes", "fixed")
		withdrawn := pub(day(3, 8, 0, 0), "1.3", "Withdrawn", "improved")
		e3 := pub(day(4, 23, 59, 59), "1.9", "Faster", "improved")
		e4 := pub(day(5, 0, 0, 0), "1.10", "Hardening", "security")
		e5 := pub(day(5, 9, 59, 59), "", "No version", "removed")
		e6 := pub(day(5, 10, 0, 0), "1.10.1", "Old API", "deprecated")
		to(day(6, 8, 0, 0))
		s.MustAdmin("PUT", "/api/admin/changelog.php", map[string]any{"app_id": a.ID, "id": withdrawn, "published": false})
		e7 := pub(day(6, 9, 0, 0), "2.0.0-beta", "Preview", "new")
		cntEntry(t, other, "5.0", "Other app", "new", true)
		to(day(7, 0, 0, 0))

		all := []int64{e7, e6, e5, e4, e3, e2, e1}
		cntExpectEntries(t, s, q, all...)

		// Fields of an entry.
		for _, e := range cntEntries(t, s, q) {
			id := kwtest.Int(t, "id", e["id"])
			if e["published_at"] != published[id].Format(time.RFC3339) {
				t.Fatalf("entry %d published_at = %v, want %s", id, e["published_at"], published[id].Format(time.RFC3339))
			}
			if id == e4 && (e["version"] != "1.10" || e["title"] != "Hardening" || e["body"] != "Body of Hardening" || e["category"] != "security") {
				t.Fatalf("entry e4 = %v", e)
			}
			if id == e5 && e["version"] != "" {
				t.Fatalf("entry without version = %v, want version \"\"", e)
			}
		}

		// limit: default 20, 1 to 50.
		cntExpectEntries(t, s, q+"limit=1", e7)
		cntExpectEntries(t, s, q+"limit=3", e7, e6, e5)
		cntExpectEntries(t, s, q+"limit=50", all...)
		for _, bad := range []string{"0", "51", "x", "-1", "1.5", "%20"} {
			cntChangelogGet(s, q+"limit="+bad).PlainFail(t, 400, "MISSING_FIELDS")
		}

		// category.
		for cat, ids := range map[string][]int64{"new": {e7, e1}, "improved": {e3}, "fixed": {e2}, "removed": {e5},
			"security": {e4}, "deprecated": {e6}} {
			cntExpectEntries(t, s, q+"category="+cat, ids...)
		}
		cntChangelogGet(s, q+"category=bugfix").PlainFail(t, 400, "MISSING_FIELDS")

		// since: a date, a date-time, or a version.
		cntExpectEntries(t, s, q+"since=2026-11-05", e7, e6, e5, e4)
		cntExpectEntries(t, s, q+"since=2026-11-05T10:00:00Z", e7, e6)
		cntExpectEntries(t, s, q+"since="+url.QueryEscape("2026-11-05T11:00:00+01:00"), e7, e6)
		cntExpectEntries(t, s, q+"since=2026-11-07", []int64{}...)
		cntExpectEntries(t, s, q+"since=2026-01-01", all...)
		cntExpectEntries(t, s, q+"since=1.2", e7, e6, e4, e3, e2)
		cntExpectEntries(t, s, q+"since=1.10", e7, e6, e4) // 1.9 < 1.10
		cntExpectEntries(t, s, q+"since=v1.10", e7, e6, e4)
		cntExpectEntries(t, s, q+"since=1.9", e7, e6, e4, e3)
		cntExpectEntries(t, s, q+"since=1.10.1", e7, e6)
		cntExpectEntries(t, s, q+"since=2.0.0-alpha", e7)
		cntExpectEntries(t, s, q+"since=2.0.0", []int64{}...) // 2.0.0-beta comes before 2.0.0
		for _, bad := range []string{"garbage", "yesterday", "1.2.x", "2026-11-05T10:00"} {
			cntChangelogGet(s, q+"since="+url.QueryEscape(bad)).PlainFail(t, 400, "MISSING_FIELDS")
		}

		// Filters combine.
		cntExpectEntries(t, s, q+"category=new&since=1.2", e7)
		cntExpectEntries(t, s, q+"limit=2&since=2026-11-05", e7, e6)
		cntExpectEntries(t, s, q+"category=improved&since=2026-11-05", []int64{}...)

		// Drafts and withdrawn entries never show; publishing a draft shows
		// it as published now, withdrawing hides it again.
		to(day(8, 0, 0, 0))
		s.MustAdmin("PUT", "/api/admin/changelog.php", map[string]any{"app_id": a.ID, "id": draft, "published": true})
		es := cntEntries(t, s, q+"limit=1")
		if len(es) != 1 || kwtest.Int(t, "id", es[0]["id"]) != draft || es[0]["published_at"] != "2026-11-08T00:00:00Z" {
			t.Fatalf("published draft = %v, want id %d at 2026-11-08T00:00:00Z", es, draft)
		}
		s.MustAdmin("PUT", "/api/admin/changelog.php", map[string]any{"app_id": a.ID, "id": draft, "published": false})
		cntExpectEntries(t, s, q, all...)
		s.MustAdmin("PUT", "/api/admin/changelog.php?app_id="+a.ID, map[string]any{"id": e2, "published": false})
		cntExpectEntries(t, s, q, e7, e6, e5, e4, e3, e1)

		// The default limit is 20.
		many := s.CreateApp("Many")
		var manyIDs []int64
		for i := range 25 {
			s.Clock.Advance(time.Minute)
			manyIDs = append([]int64{cntEntry(t, many, "1."+strconv.Itoa(i), "Entry "+strconv.Itoa(i), "fixed", true)}, manyIDs...)
		}
		cntExpectEntries(t, s, "app_id="+many.ID, manyIDs[:20]...)
		cntExpectEntries(t, s, "app_id="+many.ID+"&limit=", manyIDs[:20]...)
		cntExpectEntries(t, s, "app_id="+many.ID+"&limit=50", manyIDs...)
		cntExpectEntries(t, s, "app_id="+many.ID+"&limit=20&since=1.20", manyIDs[:5]...)

		// app_id is required and must name an app; a secret is not needed,
		// and one (even another app's) changes nothing.
		cntChangelogGet(s, "").PlainFail(t, 400, "MISSING_FIELDS")
		cntChangelogGet(s, "app_id=").PlainFail(t, 400, "MISSING_FIELDS")
		cntChangelogGet(s, "app_id=00000000-0000-4000-8000-000000000000").PlainFail(t, 404, "NOT_FOUND")
		cntChangelogGet(s, "app_id=not-a-uuid").PlainFail(t, 404, "NOT_FOUND")
		r := s.Do("GET", cntChangelog+"?"+q, http.Header{"X-App-Secret": {other.Secret}}, nil)
		r.OK(t)
		if r.Sealed || envelope.IsEnvelope(r.Raw) || len(r.Body["entries"].([]any)) != 6 {
			t.Fatalf("changelog with another app's secret: %s", r)
		}
		r = s.Do("POST", cntChangelog+"?"+q, nil, nil)
		r.PlainFail(t, 405, "METHOD_NOT_ALLOWED")
	})
}
