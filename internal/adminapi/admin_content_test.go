package adminapi_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Admin API of remote content: texts.php, slides.php, social-links.php and
// changelog.php, and the branding settings of apps.php. Helpers start with
// adc so they do not collide with other test files.

const (
	adcTexts  = "/api/admin/texts.php"
	adcSlides = "/api/admin/slides.php"
	adcLinks  = "/api/admin/social-links.php"
	adcLog    = "/api/admin/changelog.php"
	adcPublic = "/api/app/changelog.php"
)

// adcBody returns body with app_id set to appID.
func adcBody(appID string, body map[string]any) map[string]any {
	out := map[string]any{"app_id": appID}
	for k, v := range body {
		out[k] = v
	}
	return out
}

// adcID returns a JSON id as an int64.
func adcID(t testing.TB, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f <= 0 || f != float64(int64(f)) {
		t.Fatalf("id %#v is not a positive integer", v)
	}
	return int64(f)
}

// adcSame fails unless got and want hold exactly the same fields.
func adcSame(t testing.TB, what string, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// adcWith returns a copy of m with the given fields changed.
func adcWith(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// adcAudit returns the app's audit entries of action, newest first.
func adcAudit(t testing.TB, a *kwtest.App, action string) []map[string]any {
	t.Helper()
	return a.S.Audit(t, "app_id="+url.QueryEscape(a.ID)+"&action="+url.QueryEscape(action)+"&limit=1000")
}

// adcFind returns the object of list whose id is id, failing if there is none.
func adcFind(t testing.TB, list []map[string]any, id int64) map[string]any {
	t.Helper()
	for _, m := range list {
		if adcID(t, m["id"]) == id {
			return m
		}
	}
	t.Fatalf("no id %d in %v", id, list)
	return nil
}

func adcIDs(t testing.TB, list []map[string]any) []int64 {
	t.Helper()
	out := []int64{}
	for _, m := range list {
		out = append(out, adcID(t, m["id"]))
	}
	return out
}

// adcPublished returns the app's changelog.published events' data.
func adcPublished(t testing.TB, s *kwtest.Server, appID string) []map[string]any {
	t.Helper()
	evs, err := s.DB.Events(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Type == content.ChangelogPublished && e.AppID == appID {
			out = append(out, e.Data)
		}
	}
	return out
}

// ---- texts.php

func TestAdminContentTexts(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Texts")
		b := s.CreateApp("Other")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		bKey := b.GenerateKeys(1, "lifetime", 0, 1)[0]
		put := func(body map[string]any) *kwtest.Reply { return s.Admin("PUT", adcTexts, adcBody(a.ID, body)) }
		get := func(key string) *kwtest.Reply {
			p := adcTexts + "?app_id=" + a.ID
			if key != "" {
				p += "&license_key=" + url.QueryEscape(key)
			}
			return s.Admin("GET", p, nil)
		}
		textsOf := func(r *kwtest.Reply, field string) map[string]any {
			t.Helper()
			if r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("GET texts: %s", r)
			}
			m, ok := r.Body[field].(map[string]any)
			if !ok {
				t.Fatalf("GET texts: no %s object: %s", field, r)
			}
			return m
		}

		r := put(map[string]any{"name": "welcome", "value": "Hello"})
		if r.Status != 200 || r.Body["success"] != true || r.Body["name"] != "welcome" || r.Body["value"] != "Hello" {
			t.Fatalf("PUT text: %s", r)
		}
		long, big := strings.Repeat("n", 100), strings.Repeat("v", 10000)
		for _, body := range []map[string]any{
			{"name": "footer", "value": "© 2026 ✓"},
			{"name": "welcome", "value": "Hello VIP", "license_key": " " + keys[0] + " "}, // padded key
			{"name": "welcome", "value": "Hi"},                                            // upsert
			{"name": long, "value": "longest name"},
			{"name": "big", "value": big},
			{"name": "a.B-c_9", "value": ""},
		} {
			if r := put(body); r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("PUT %v: %s", body["name"], r)
			}
		}
		defaults := map[string]any{"welcome": "Hi", "footer": "© 2026 ✓", long: "longest name", "big": big, "a.B-c_9": ""}
		r = get("")
		adcSame(t, "texts", textsOf(r, "texts"), defaults)
		if _, has := r.Body["overrides"]; has {
			t.Errorf("GET without license_key has overrides: %s", r)
		}
		r = get(keys[0])
		adcSame(t, "texts with a key", textsOf(r, "texts"), defaults)
		adcSame(t, "overrides of keys[0]", textsOf(r, "overrides"), map[string]any{"welcome": "Hello VIP"})
		adcSame(t, "overrides of a key without any", textsOf(get(keys[1]), "overrides"), map[string]any{})
		get("NOPE0-NOPE0-NOPE0-NOPE0").JSONFail(t, 404, "NOT_FOUND")
		get(bKey).JSONFail(t, 404, "NOT_FOUND")

		// Refusals change nothing and write no audit entry.
		for name, body := range map[string]map[string]any{
			"name with a space":   {"name": "has space", "value": "x"},
			"name of 101":         {"name": strings.Repeat("n", 101), "value": "x"},
			"non-ASCII name":      {"name": "wëlcome", "value": "x"},
			"name with a slash":   {"name": "a/b", "value": "x"},
			"empty name":          {"name": "", "value": "x"},
			"blank name":          {"name": "   ", "value": "x"},
			"no name":             {"value": "x"},
			"numeric name":        {"name": 5, "value": "x"},
			"value of 10001":      {"name": "welcome", "value": strings.Repeat("v", 10001)},
			"numeric value":       {"name": "welcome", "value": 5},
			"object value":        {"name": "welcome", "value": map[string]any{"a": 1}},
			"numeric license_key": {"name": "welcome", "value": "x", "license_key": 5},
		} {
			t.Run(name, func(t *testing.T) { put(body).JSONFail(t, 400, "MISSING_FIELDS") })
		}
		put(map[string]any{"name": "welcome", "value": "x", "license_key": "NOPE0-NOPE0-NOPE0-NOPE0"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"name": "welcome", "value": "x", "license_key": bKey}).JSONFail(t, 404, "NOT_FOUND")
		r = get(keys[0])
		adcSame(t, "texts after refusals", textsOf(r, "texts"), defaults)
		adcSame(t, "overrides after refusals", textsOf(r, "overrides"), map[string]any{"welcome": "Hello VIP"})

		del := func(body map[string]any) *kwtest.Reply { return s.Admin("DELETE", adcTexts, adcBody(a.ID, body)) }
		del(map[string]any{"name": "nope"}).JSONFail(t, 404, "NOT_FOUND")
		del(map[string]any{"name": "welcome", "license_key": keys[1]}).JSONFail(t, 404, "NOT_FOUND")
		del(map[string]any{"name": "welcome", "license_key": "NOPE0-NOPE0-NOPE0-NOPE0"}).JSONFail(t, 404, "NOT_FOUND")
		del(map[string]any{"name": "welcome", "license_key": bKey}).JSONFail(t, 404, "NOT_FOUND")
		del(map[string]any{}).JSONFail(t, 400, "MISSING_FIELDS")
		// b's texts are b's: deleting a's name through b finds nothing.
		s.Admin("DELETE", adcTexts, map[string]any{"app_id": b.ID, "name": "footer"}).JSONFail(t, 404, "NOT_FOUND")

		r = del(map[string]any{"name": "welcome", "license_key": keys[0]})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("DELETE override: %s", r)
		}
		r = get(keys[0])
		adcSame(t, "texts after deleting the override", textsOf(r, "texts"), defaults)
		adcSame(t, "overrides after deleting the override", textsOf(r, "overrides"), map[string]any{})
		if r := s.Admin("DELETE", adcTexts+"?app_id="+a.ID+"&name=footer", nil); r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("DELETE with query parameters: %s", r)
		}
		delete(defaults, "footer")
		adcSame(t, "texts after deleting footer", textsOf(get(""), "texts"), defaults)
		del(map[string]any{"name": "footer"}).JSONFail(t, 404, "NOT_FOUND")

		// Audit: one text.set per accepted PUT, one text.delete per delete;
		// an override's target is key/name.
		set := adcAudit(t, a, "text.set")
		if len(set) != 7 {
			t.Fatalf("%d text.set entries, want 7: %v", len(set), set)
		}
		if e := set[len(set)-3]; e["target"] != keys[0]+"/welcome" || e["details"].(map[string]any)["value"] != "Hello VIP" {
			t.Errorf("override's text.set entry: %v", e)
		}
		if e := set[len(set)-1]; e["target"] != "welcome" || e["details"].(map[string]any)["value"] != "Hello" {
			t.Errorf("first text.set entry: %v", e)
		}
		dels := adcAudit(t, a, "text.delete")
		if len(dels) != 2 || dels[0]["target"] != "footer" || dels[1]["target"] != keys[0]+"/welcome" {
			t.Fatalf("text.delete entries: %v", dels)
		}
		if n := len(adcAudit(t, b, "text.set")) + len(adcAudit(t, b, "text.delete")); n != 0 {
			t.Errorf("%d text entries for the other app, want none", n)
		}
	})
}

// ---- slides.php

func TestAdminContentSlides(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Slides")
		b := s.CreateApp("Other")
		now := func() string { return license.Timestamp(s.Clock.Now()) }
		post := func(body map[string]any) *kwtest.Reply { return s.Admin("POST", adcSlides, adcBody(a.ID, body)) }
		mustPost := func(app *kwtest.App, body map[string]any) map[string]any {
			t.Helper()
			r := s.MustAdmin("POST", adcSlides, adcBody(app.ID, body))
			return r.Obj("slide")
		}
		list := func(app *kwtest.App) []map[string]any {
			t.Helper()
			return s.MustAdmin("GET", adcSlides+"?app_id="+app.ID, nil).List(t, "slides")
		}
		updates := 0
		put := func(body map[string]any) *kwtest.Reply {
			t.Helper()
			r := s.Admin("PUT", adcSlides, adcBody(a.ID, body))
			if r.Status == 200 {
				updates++
			}
			return r
		}

		// Defaults: active, order 0, no window, empty texts.
		launch := mustPost(a, map[string]any{"title": "Launch"})
		launchID := adcID(t, launch["id"])
		adcSame(t, "created slide", launch, map[string]any{"id": launch["id"], "title": "Launch", "body": "", "image_url": "",
			"link_url": "", "order": 0.0, "active": true, "starts_at": nil, "ends_at": nil, "created_at": now(), "updated_at": now()})
		sale := mustPost(a, map[string]any{"title": "Sale", "body": "Half price", "image_url": "https://cdn.example.com/s.png",
			"link_url": "https://example.com/sale", "order": -5, "active": false, "starts_at": "2026-11-02T00:00:00Z",
			"ends_at": "2026-11-03T00:00:00+01:00"})
		saleID := adcID(t, sale["id"])
		adcSame(t, "created slide with every field", sale, map[string]any{"id": sale["id"], "title": "Sale", "body": "Half price",
			"image_url": "https://cdn.example.com/s.png", "link_url": "https://example.com/sale", "order": -5.0, "active": false,
			"starts_at": "2026-11-02T00:00:00Z", "ends_at": "2026-11-02T23:00:00Z", "created_at": now(), "updated_at": now()})
		// app_id in the query works too.
		r := s.MustAdmin("POST", adcSlides+"?app_id="+a.ID, map[string]any{"title": "Third", "order": 10, "starts_at": nil})
		third := r.Obj("slide")
		thirdID := adcID(t, third["id"])
		bSlide := mustPost(b, map[string]any{"title": "Other app"})
		bID := adcID(t, bSlide["id"])

		// GET lists every slide, inactive ones too, by order.
		got := list(a)
		if ids := adcIDs(t, got); !reflect.DeepEqual(ids, []int64{saleID, launchID, thirdID}) {
			t.Fatalf("slides %v, want sale, launch, third", ids)
		}
		adcSame(t, "listed sale", got[0], sale)
		adcSame(t, "listed launch", got[1], launch)
		adcSame(t, "listed third", got[2], third)

		for name, body := range map[string]map[string]any{
			"no title":               {"body": "x"},
			"blank title":            {"title": "   "},
			"title of 201":           {"title": strings.Repeat("t", 201)},
			"numeric title":          {"title": 5},
			"body of 10001":          {"title": "x", "body": strings.Repeat("b", 10001)},
			"javascript: image_url":  {"title": "x", "image_url": "javascript:alert(1)"},
			"ftp link_url":           {"title": "x", "link_url": "ftp://example.com/f"},
			"link_url without host":  {"title": "x", "link_url": "http://"},
			"javascript: link_url":   {"title": "x", "link_url": "javascript:alert(1)"},
			"unparsable starts_at":   {"title": "x", "starts_at": "tomorrow"},
			"numeric starts_at":      {"title": "x", "starts_at": 1767225600},
			"date-only ends_at":      {"title": "x", "ends_at": "2027-01-01"},
			"ends_at before":         {"title": "x", "starts_at": "2027-01-02T00:00:00Z", "ends_at": "2027-01-01T00:00:00Z"},
			"ends_at equal":          {"title": "x", "starts_at": "2027-01-01T00:00:00Z", "ends_at": "2027-01-01T01:00:00+01:00"},
			"order above max":        {"title": "x", "order": 1000001},
			"order below min":        {"title": "x", "order": -1000001},
			"order not a number":     {"title": "x", "order": "abc"},
			"fractional order":       {"title": "x", "order": 1.5},
			"active not a boolean":   {"title": "x", "active": "yes"},
			"active as a number":     {"title": "x", "active": 1},
			"image_url not a string": {"title": "x", "image_url": []any{"https://x.example"}},
		} {
			t.Run(name, func(t *testing.T) { post(body).JSONFail(t, 400, "MISSING_FIELDS") })
		}
		if n := len(list(a)); n != 3 {
			t.Fatalf("%d slides after refused creations, want 3", n)
		}

		// PUT changes only the fields present.
		s.Clock.Advance(time.Minute)
		r = put(map[string]any{"id": launchID, "title": "Launch!"})
		if r.Status != 200 {
			t.Fatalf("PUT title: %s", r)
		}
		launch = adcWith(launch, "title", "Launch!", "updated_at", now())
		adcSame(t, "PUT reply", r.Obj("slide"), launch)
		adcSame(t, "slide after PUT title", adcFind(t, list(a), launchID), launch)
		// id in the query.
		if r := s.Admin("PUT", adcSlides+"?app_id="+a.ID+"&id="+strconv.FormatInt(launchID, 10), map[string]any{"body": "New body"}); r.Status != 200 {
			t.Fatalf("PUT with id in the query: %s", r)
		} else {
			updates++
		}
		launch = adcWith(launch, "body", "New body")
		adcSame(t, "slide after PUT body", adcFind(t, list(a), launchID), launch)

		// A body with one bad field changes nothing, not even its good fields.
		s.Clock.Advance(time.Minute)
		for name, body := range map[string]map[string]any{
			"order not a number":   {"title": "Changed", "order": "abc"},
			"active not a boolean": {"title": "Changed", "active": "no"},
			"numeric starts_at":    {"title": "Changed", "starts_at": 5},
			"unparsable ends_at":   {"title": "Changed", "ends_at": "soon"},
			"numeric image_url":    {"title": "Changed", "image_url": 5},
			"javascript: link_url": {"title": "Changed", "link_url": "javascript:alert(1)"},
			"empty title":          {"body": "Changed", "title": ""},
			"order out of range":   {"title": "Changed", "order": 2000000},
			"ends_at before start": {"title": "Changed", "starts_at": "2027-01-02T00:00:00Z", "ends_at": "2027-01-01T00:00:00Z"},
			"body of 10001":        {"title": "Changed", "body": strings.Repeat("b", 10001)},
			"active as a list":     {"title": "Changed", "active": []any{}},
		} {
			t.Run("PUT "+name, func(t *testing.T) {
				put(adcBody(a.ID, adcWith(body, "id", launchID))).JSONFail(t, 400, "MISSING_FIELDS")
			})
		}
		// The stored window is checked too: an ends_at before the stored starts_at.
		put(map[string]any{"id": saleID, "ends_at": "2026-11-01T00:00:00Z"}).JSONFail(t, 400, "MISSING_FIELDS")
		got = list(a)
		adcSame(t, "launch after refused PUTs", adcFind(t, got, launchID), launch)
		adcSame(t, "sale after a refused PUT", adcFind(t, got, saleID), sale)

		// null or "" clears a time; the other end and every other field stay.
		r = put(map[string]any{"id": saleID, "starts_at": nil})
		if r.Status != 200 {
			t.Fatalf("clear starts_at: %s", r)
		}
		sale = adcWith(sale, "starts_at", nil, "updated_at", now())
		adcSame(t, "sale after clearing starts_at", adcFind(t, list(a), saleID), sale)
		if r := put(map[string]any{"id": saleID, "ends_at": ""}); r.Status != 200 {
			t.Fatalf("clear ends_at: %s", r)
		}
		sale = adcWith(sale, "ends_at", nil)
		adcSame(t, "sale after clearing ends_at", adcFind(t, list(a), saleID), sale)
		// Several fields at once, id as a string of digits.
		r = put(map[string]any{"id": strconv.FormatInt(launchID, 10), "active": false, "order": 20,
			"starts_at": "2026-12-01T08:00:00Z", "ends_at": "2026-12-02T08:00:00Z", "image_url": "http://img.example/x.png"})
		if r.Status != 200 {
			t.Fatalf("PUT several fields: %s", r)
		}
		launch = adcWith(launch, "active", false, "order", 20.0, "starts_at", "2026-12-01T08:00:00Z",
			"ends_at", "2026-12-02T08:00:00Z", "image_url", "http://img.example/x.png", "updated_at", now())
		got = list(a)
		adcSame(t, "launch after PUT of several fields", adcFind(t, got, launchID), launch)
		if ids := adcIDs(t, got); !reflect.DeepEqual(ids, []int64{saleID, thirdID, launchID}) {
			t.Errorf("order after moving launch to 20: %v", ids)
		}

		// Unknown ids and other apps' ids are NOT_FOUND; a missing or bad id is a 400.
		put(map[string]any{"id": 999999, "title": "x"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"id": bID, "title": "hijacked"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("PUT", adcSlides, map[string]any{"app_id": b.ID, "id": launchID, "title": "hijacked"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"title": "no id"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": "abc", "title": "x"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("PUT", adcSlides+"?app_id="+a.ID+"&id=abc", map[string]any{"title": "x"}).JSONFail(t, 400, "MISSING_FIELDS")
		adcSame(t, "b's slide after a's edits", list(b)[0], bSlide)

		// DELETE, by body or query id.
		s.Admin("DELETE", adcSlides, map[string]any{"app_id": a.ID, "id": bID}).JSONFail(t, 404, "NOT_FOUND")
		r = s.Admin("DELETE", adcSlides, map[string]any{"app_id": a.ID, "id": thirdID})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("DELETE slide: %s", r)
		}
		s.Admin("DELETE", adcSlides, map[string]any{"app_id": a.ID, "id": thirdID}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", adcSlides, map[string]any{"app_id": a.ID}).JSONFail(t, 400, "MISSING_FIELDS")
		if ids := adcIDs(t, list(a)); !reflect.DeepEqual(ids, []int64{saleID, launchID}) {
			t.Fatalf("slides after DELETE: %v", ids)
		}
		s.MustAdmin("DELETE", adcSlides+"?app_id="+a.ID+"&id="+strconv.FormatInt(saleID, 10), nil)
		if ids := adcIDs(t, list(a)); !reflect.DeepEqual(ids, []int64{launchID}) {
			t.Fatalf("slides after DELETE by query: %v", ids)
		}
		if n := len(list(b)); n != 1 {
			t.Fatalf("b has %d slides after a's deletes, want 1", n)
		}

		// Audit: one entry per accepted change.
		creates := adcAudit(t, a, "slide.create")
		if len(creates) != 3 || creates[2]["target"] != "Launch" || adcID(t, creates[2]["details"].(map[string]any)["id"]) != launchID {
			t.Fatalf("slide.create entries: %v", creates)
		}
		if ups := adcAudit(t, a, "slide.update"); len(ups) != updates {
			t.Fatalf("%d slide.update entries, want %d: %v", len(ups), updates, ups)
		} else if adcID(t, ups[0]["details"].(map[string]any)["id"]) != launchID || ups[0]["target"] != "Launch!" {
			t.Errorf("latest slide.update entry: %v", ups[0])
		}
		dels := adcAudit(t, a, "slide.delete")
		if len(dels) != 2 || adcID(t, dels[1]["details"].(map[string]any)["id"]) != thirdID ||
			adcID(t, dels[0]["details"].(map[string]any)["id"]) != saleID {
			t.Fatalf("slide.delete entries: %v", dels)
		}
	})
}

// ---- social-links.php

func TestAdminContentSocialLinks(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Links")
		b := s.CreateApp("Other")
		now := func() string { return license.Timestamp(s.Clock.Now()) }
		list := func(app *kwtest.App) []map[string]any {
			t.Helper()
			return s.MustAdmin("GET", adcLinks+"?app_id="+app.ID, nil).List(t, "social_links")
		}
		post := func(body map[string]any) *kwtest.Reply { return s.Admin("POST", adcLinks, adcBody(a.ID, body)) }
		put := func(body map[string]any) *kwtest.Reply { return s.Admin("PUT", adcLinks, adcBody(a.ID, body)) }

		r := post(map[string]any{"platform": "discord", "url": "https://discord.gg/x", "label": "Chat", "order": 2})
		if r.Status != 200 {
			t.Fatalf("POST link: %s", r)
		}
		discord := r.Obj("social_link")
		dID := adcID(t, discord["id"])
		adcSame(t, "created link", discord, map[string]any{"id": discord["id"], "platform": "discord", "url": "https://discord.gg/x",
			"label": "Chat", "order": 2.0, "clicks": 0.0, "created_at": now(), "updated_at": now()})
		// clicks cannot be set by the admin.
		r = post(map[string]any{"platform": "github", "url": "https://github.com/x", "clicks": 99})
		if r.Status != 200 {
			t.Fatalf("POST link: %s", r)
		}
		github := r.Obj("social_link")
		gID := adcID(t, github["id"])
		adcSame(t, "created link with defaults", github, map[string]any{"id": github["id"], "platform": "github",
			"url": "https://github.com/x", "label": "", "order": 0.0, "clicks": 0.0, "created_at": now(), "updated_at": now()})
		bLink := s.MustAdmin("POST", adcLinks, map[string]any{"app_id": b.ID, "platform": "discord", "url": "https://discord.gg/b"}).Obj("social_link")
		bID := adcID(t, bLink["id"])
		got := list(a)
		if ids := adcIDs(t, got); !reflect.DeepEqual(ids, []int64{gID, dID}) {
			t.Fatalf("links %v, want github then discord (by order)", ids)
		}
		adcSame(t, "listed github", got[0], github)
		adcSame(t, "listed discord", got[1], discord)

		for name, body := range map[string]map[string]any{
			"no platform":                {"url": "https://x.example"},
			"upper-case platform":        {"platform": "Discord", "url": "https://x.example"},
			"platform with a space":      {"platform": "dis cord", "url": "https://x.example"},
			"platform of 65":             {"platform": strings.Repeat("p", 65), "url": "https://x.example"},
			"numeric platform":           {"platform": 5, "url": "https://x.example"},
			"no url":                     {"platform": "discord"},
			"empty url":                  {"platform": "discord", "url": ""},
			"javascript: url":            {"platform": "discord", "url": "javascript:alert(1)"},
			"ftp url":                    {"platform": "discord", "url": "ftp://x.example/"},
			"relative url":               {"platform": "discord", "url": "/invite"},
			"label of 201":               {"platform": "discord", "url": "https://x.example", "label": strings.Repeat("l", 201)},
			"order out of range":         {"platform": "discord", "url": "https://x.example", "order": 2000000},
			"order not a number":         {"platform": "discord", "url": "https://x.example", "order": "x"},
			"url not a string":           {"platform": "discord", "url": true},
			"label not a string":         {"platform": "discord", "url": "https://x.example", "label": 1},
			"url of more than 2048 char": {"platform": "discord", "url": "https://x.example/" + strings.Repeat("u", 2048)},
		} {
			t.Run(name, func(t *testing.T) { post(body).JSONFail(t, 400, "MISSING_FIELDS") })
		}
		if n := len(list(a)); n != 2 {
			t.Fatalf("%d links after refused creations, want 2", n)
		}

		// Clicks from the client API, by id and by platform.
		for _, inner := range []map[string]any{{"link_id": dID}, {"link_id": dID}, {"link_id": dID}, {"platform": "discord"}} {
			a.Env("/api/app/social-click.php", inner).OK(t)
		}
		discord = adcWith(discord, "clicks", 4.0)
		adcSame(t, "discord after 4 clicks", adcFind(t, list(a), dID), discord)

		// PUT keeps clicks and every field not sent, even when clicks is sent.
		s.Clock.Advance(time.Minute)
		r = put(map[string]any{"id": dID, "label": "Community", "clicks": 0})
		if r.Status != 200 {
			t.Fatalf("PUT label: %s", r)
		}
		discord = adcWith(discord, "label", "Community", "updated_at", now())
		adcSame(t, "PUT reply", r.Obj("social_link"), discord)
		adcSame(t, "discord after PUT", adcFind(t, list(a), dID), discord)
		r = s.Admin("PUT", adcLinks+"?app_id="+a.ID+"&id="+strconv.FormatInt(dID, 10), map[string]any{"url": "https://discord.gg/new", "order": -1})
		if r.Status != 200 {
			t.Fatalf("PUT with id in the query: %s", r)
		}
		discord = adcWith(discord, "url", "https://discord.gg/new", "order", -1.0)
		got = list(a)
		adcSame(t, "discord after second PUT", adcFind(t, got, dID), discord)
		if ids := adcIDs(t, got); !reflect.DeepEqual(ids, []int64{dID, gID}) {
			t.Errorf("links after moving discord to -1: %v", ids)
		}
		// Refused PUTs change nothing.
		s.Clock.Advance(time.Minute)
		for _, body := range []map[string]any{
			{"id": dID, "label": "Changed", "platform": "Discord"},
			{"id": dID, "label": "Changed", "url": "javascript:alert(1)"},
			{"id": dID, "label": "Changed", "url": ""},
			{"id": dID, "label": "Changed", "order": "first"},
			{"id": dID, "label": 7},
		} {
			put(body).JSONFail(t, 400, "MISSING_FIELDS")
		}
		put(map[string]any{"id": 999999, "label": "x"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"id": bID, "label": "hijacked"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"label": "no id"}).JSONFail(t, 400, "MISSING_FIELDS")
		adcSame(t, "discord after refused PUTs", adcFind(t, list(a), dID), discord)
		adcSame(t, "b's link after a's edits", list(b)[0], bLink)

		s.Admin("DELETE", adcLinks, map[string]any{"app_id": a.ID, "id": bID}).JSONFail(t, 404, "NOT_FOUND")
		s.MustAdmin("DELETE", adcLinks, map[string]any{"app_id": a.ID, "id": dID})
		s.Admin("DELETE", adcLinks, map[string]any{"app_id": a.ID, "id": dID}).JSONFail(t, 404, "NOT_FOUND")
		if ids := adcIDs(t, list(a)); !reflect.DeepEqual(ids, []int64{gID}) {
			t.Fatalf("links after DELETE: %v", ids)
		}
		if n := len(list(b)); n != 1 {
			t.Fatalf("b has %d links after a's delete, want 1", n)
		}

		creates := adcAudit(t, a, "social_link.create")
		if len(creates) != 2 || creates[1]["target"] != "discord" || creates[1]["details"].(map[string]any)["url"] != "https://discord.gg/x" {
			t.Fatalf("social_link.create entries: %v", creates)
		}
		if ups := adcAudit(t, a, "social_link.update"); len(ups) != 2 || ups[0]["details"].(map[string]any)["url"] != "https://discord.gg/new" {
			t.Fatalf("social_link.update entries: %v", ups)
		}
		if dels := adcAudit(t, a, "social_link.delete"); len(dels) != 1 || adcID(t, dels[0]["details"].(map[string]any)["id"]) != dID {
			t.Fatalf("social_link.delete entries: %v", dels)
		}
	})
}

// ---- changelog.php

func TestAdminContentChangelog(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Changelog")
		now := func() string { return license.Timestamp(s.Clock.Now()) }
		public := func() []map[string]any {
			t.Helper()
			r := s.Do("GET", adcPublic+"?app_id="+a.ID, nil, nil)
			if r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("public changelog: %s", r)
			}
			return r.List(t, "entries")
		}
		list := func() []map[string]any {
			t.Helper()
			return s.MustAdmin("GET", adcLog+"?app_id="+a.ID, nil).List(t, "entries")
		}
		post := func(body map[string]any) *kwtest.Reply { return s.Admin("POST", adcLog, adcBody(a.ID, body)) }
		put := func(body map[string]any) *kwtest.Reply { return s.Admin("PUT", adcLog, adcBody(a.ID, body)) }
		mustPut := func(body map[string]any) map[string]any {
			t.Helper()
			r := put(body)
			if r.Status != 200 || r.Body["success"] != true {
				t.Fatalf("PUT %v: %s", body, r)
			}
			return r.Obj("entry")
		}

		// A draft: listed for the admin, not public, no event.
		r := post(map[string]any{"version": "1.4.0", "title": "Dark mode", "body": "Finally.", "category": "new"})
		if r.Status != 200 {
			t.Fatalf("POST draft: %s", r)
		}
		draft := r.Obj("entry")
		id := adcID(t, draft["id"])
		adcSame(t, "draft", draft, map[string]any{"id": draft["id"], "version": "1.4.0", "title": "Dark mode", "body": "Finally.",
			"category": "new", "published": false, "published_at": nil, "created_at": now(), "updated_at": now()})
		adcSame(t, "admin list", list()[0], draft)
		if es := public(); len(es) != 0 {
			t.Fatalf("public changelog shows a draft: %v", es)
		}
		if evs := adcPublished(t, s, a.ID); len(evs) != 0 {
			t.Fatalf("a draft recorded %v", evs)
		}

		// Publishing: published_at is now, one event.
		s.Clock.Advance(time.Hour)
		publishedAt := now()
		e := mustPut(map[string]any{"id": id, "published": true})
		want := adcWith(draft, "published", true, "published_at", publishedAt, "updated_at", publishedAt)
		adcSame(t, "published entry", e, want)
		evs := adcPublished(t, s, a.ID)
		if len(evs) != 1 {
			t.Fatalf("%d changelog.published events, want 1: %v", len(evs), evs)
		}
		adcSame(t, "event data", evs[0], map[string]any{"app_id": a.ID, "id": float64(id), "version": "1.4.0", "title": "Dark mode",
			"category": "new"})
		pub := public()
		if len(pub) != 1 {
			t.Fatalf("public changelog after publishing: %v", pub)
		}
		adcSame(t, "public entry", pub[0], map[string]any{"id": float64(id), "version": "1.4.0", "title": "Dark mode",
			"body": "Finally.", "category": "new", "published_at": publishedAt})

		// Publishing again, or editing, keeps the first published_at and records nothing.
		s.Clock.Advance(time.Hour)
		e = mustPut(map[string]any{"id": id, "published": true, "title": "Dark mode!"})
		want = adcWith(want, "title", "Dark mode!", "updated_at", now())
		adcSame(t, "entry published twice", e, want)
		s.Clock.Advance(time.Minute)
		e = mustPut(map[string]any{"id": id, "body": "Finally, dark."})
		want = adcWith(want, "body", "Finally, dark.", "updated_at", now())
		adcSame(t, "edited published entry", e, want)
		adcSame(t, "listed entry", list()[0], want)
		if evs := adcPublished(t, s, a.ID); len(evs) != 1 {
			t.Fatalf("%d changelog.published events after republishing and editing, want 1", len(evs))
		}

		// Withdrawing: a draft again, gone from the public changelog.
		s.Clock.Advance(time.Minute)
		e = mustPut(map[string]any{"id": id, "published": false})
		want = adcWith(want, "published", false, "published_at", nil, "updated_at", now())
		adcSame(t, "withdrawn entry", e, want)
		if es := public(); len(es) != 0 {
			t.Fatalf("public changelog shows a withdrawn entry: %v", es)
		}
		if evs := adcPublished(t, s, a.ID); len(evs) != 1 {
			t.Fatalf("withdrawing recorded an event: %v", evs)
		}
		// Going live again is a new going-live.
		s.Clock.Advance(time.Minute)
		e = mustPut(map[string]any{"id": id, "published": true})
		if e["published_at"] != now() {
			t.Fatalf("republished entry: %v, want published_at %s", e, now())
		}
		if evs := adcPublished(t, s, a.ID); len(evs) != 2 {
			t.Fatalf("%d events after going live again, want 2", len(evs))
		}

		// POST with published:true publishes at once, with one event.
		s.Clock.Advance(time.Minute)
		r = post(map[string]any{"version": "1.5.0", "title": "Security fix", "category": "security", "published": true})
		if r.Status != 200 {
			t.Fatalf("POST published: %s", r)
		}
		live := r.Obj("entry")
		liveID := adcID(t, live["id"])
		adcSame(t, "entry published on creation", live, map[string]any{"id": live["id"], "version": "1.5.0", "title": "Security fix",
			"body": "", "category": "security", "published": true, "published_at": now(), "created_at": now(), "updated_at": now()})
		evs = adcPublished(t, s, a.ID)
		n := 0
		for _, ev := range evs {
			if ev["id"] == float64(liveID) {
				n++
				if ev["version"] != "1.5.0" || ev["category"] != "security" || ev["title"] != "Security fix" {
					t.Errorf("event of the new entry: %v", ev)
				}
			}
		}
		if n != 1 || len(evs) != 3 {
			t.Fatalf("events after POST published: %v, want one more for entry %d", evs, liveID)
		}
		if ids := adcIDs(t, public()); !reflect.DeepEqual(ids, []int64{liveID, id}) {
			t.Fatalf("public changelog %v, want newest first", ids)
		}

		// Refusals.
		for name, body := range map[string]map[string]any{
			"no category":           {"title": "x"},
			"unknown category":      {"title": "x", "category": "bugfix"},
			"capitalised category":  {"title": "x", "category": "New"},
			"no title":              {"category": "new"},
			"blank title":           {"title": " ", "category": "new"},
			"version of 65":         {"title": "x", "category": "new", "version": strings.Repeat("1", 65)},
			"body of 100001":        {"title": "x", "category": "new", "body": strings.Repeat("b", 100001)},
			"published not boolean": {"title": "x", "category": "new", "published": "yes"},
			"numeric version":       {"title": "x", "category": "new", "version": 1.4},
		} {
			t.Run(name, func(t *testing.T) { post(body).JSONFail(t, 400, "MISSING_FIELDS") })
		}
		before := list()
		for _, body := range []map[string]any{
			{"id": id, "title": "Changed", "category": "bugfix"},
			{"id": id, "title": "Changed", "category": ""},
			{"id": id, "title": "Changed", "published": "no"},
			{"id": id, "title": ""},
		} {
			put(body).JSONFail(t, 400, "MISSING_FIELDS")
		}
		put(map[string]any{"id": 999999, "title": "x"}).JSONFail(t, 404, "NOT_FOUND")
		put(map[string]any{"title": "x"}).JSONFail(t, 400, "MISSING_FIELDS")
		if after := list(); !reflect.DeepEqual(after, before) {
			t.Fatalf("refused changes changed entries:\n %v\n %v", before, after)
		}
		if evs := adcPublished(t, s, a.ID); len(evs) != 3 {
			t.Fatalf("refusals recorded events: %v", evs)
		}

		// DELETE.
		s.MustAdmin("DELETE", adcLog, map[string]any{"app_id": a.ID, "id": liveID})
		s.Admin("DELETE", adcLog, map[string]any{"app_id": a.ID, "id": liveID}).JSONFail(t, 404, "NOT_FOUND")
		if ids := adcIDs(t, public()); !reflect.DeepEqual(ids, []int64{id}) {
			t.Fatalf("public changelog after DELETE: %v", ids)
		}

		if c := adcAudit(t, a, "changelog.create"); len(c) != 2 || c[0]["details"].(map[string]any)["published"] != true ||
			c[1]["details"].(map[string]any)["published"] != false {
			t.Fatalf("changelog.create entries: %v", c)
		}
		if u := adcAudit(t, a, "changelog.update"); len(u) != 5 {
			t.Fatalf("%d changelog.update entries, want 5: %v", len(u), u)
		}
		if d := adcAudit(t, a, "changelog.delete"); len(d) != 1 || adcID(t, d[0]["details"].(map[string]any)["id"]) != liveID {
			t.Fatalf("changelog.delete entries: %v", d)
		}
	})
}

// ---- every route

// Every content route needs a bearer token, an existing app_id and one of
// its methods; refusals create nothing.
func TestAdminContentRoutes(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Routes")
		valid := map[string]map[string]any{
			adcTexts:  {"name": "welcome", "value": "Hello", "id": 1},
			adcSlides: {"title": "Slide", "id": 1},
			adcLinks:  {"platform": "discord", "url": "https://discord.gg/x", "id": 1},
			adcLog:    {"title": "Entry", "category": "new", "id": 1},
		}
		for _, rt := range []struct {
			path    string
			methods []string
			allow   string
			list    string
		}{
			{adcTexts, []string{"GET", "PUT", "DELETE"}, "DELETE, GET, PUT", "texts"},
			{adcSlides, []string{"GET", "POST", "PUT", "DELETE"}, "DELETE, GET, POST, PUT", "slides"},
			{adcLinks, []string{"GET", "POST", "PUT", "DELETE"}, "DELETE, GET, POST, PUT", "social_links"},
			{adcLog, []string{"GET", "POST", "PUT", "DELETE"}, "DELETE, GET, POST, PUT", "entries"},
		} {
			t.Run(strings.TrimPrefix(rt.path, "/api/admin/"), func(t *testing.T) {
				for _, m := range rt.methods {
					body := valid[rt.path]
					var raw []byte
					if m != "GET" {
						raw = kwtest.JSON(t, body)
					}
					// No app_id, a blank one, an unknown one.
					s.Do(m, rt.path, kwtest.Bearer(s.AdminToken()), raw).JSONFail(t, 400, "MISSING_FIELDS")
					s.Do(m, rt.path+"?app_id=%20%20", kwtest.Bearer(s.AdminToken()), raw).JSONFail(t, 400, "MISSING_FIELDS")
					s.Do(m, rt.path+"?app_id=00000000-0000-0000-0000-000000000000", kwtest.Bearer(s.AdminToken()), raw).JSONFail(t, 404, "NOT_FOUND")
					if m != "GET" {
						s.Admin(m, rt.path, adcBody("no-such-app", body)).JSONFail(t, 404, "NOT_FOUND")
					}
					// No or a bad bearer token, with everything else right.
					path := rt.path + "?app_id=" + a.ID
					s.Do(m, path, http.Header{"Content-Type": {"application/json"}}, raw).JSONFail(t, 401, "UNAUTHORIZED")
					s.Do(m, path, kwtest.Bearer("not-a-token"), raw).JSONFail(t, 401, "UNAUTHORIZED")
					s.Do(m, path, http.Header{"Authorization": {"Basic YWRtaW46eA=="}}, raw).JSONFail(t, 401, "UNAUTHORIZED")
				}
				for _, m := range []string{"PATCH", "POST", "OPTIONS"} {
					if slices.Contains(rt.methods, m) {
						continue
					}
					r := s.Do(m, rt.path+"?app_id="+a.ID, kwtest.Bearer(s.AdminToken()), kwtest.JSON(t, valid[rt.path]))
					if r.Status != 405 || r.Header.Get("Allow") != rt.allow {
						t.Fatalf("%s: %s, Allow %q; want 405 with Allow %q", m, r, r.Header.Get("Allow"), rt.allow)
					}
					r.JSONFail(t, 405, "METHOD_NOT_ALLOWED")
				}
				// Nothing was created by any refusal.
				r := s.MustAdmin("GET", rt.path+"?app_id="+a.ID, nil)
				if rt.path == adcTexts {
					if texts := r.Obj("texts"); len(texts) != 0 {
						t.Fatalf("texts after refusals: %v", texts)
					}
				} else if l := r.List(t, rt.list); len(l) != 0 {
					t.Fatalf("%s after refusals: %v", rt.list, l)
				}
			})
		}
		if e := s.Audit(t, "app_id="+a.ID+"&limit=1000"); len(e) != 1 || e[0]["action"] != "app.create" {
			t.Fatalf("audit after refusals: %v", e)
		}
	})
}

// ---- branding

// Branding settings are validated: http(s) URLs, #RRGGBB colors, an e-mail
// address; a refused change changes nothing.
func TestAdminContentBranding(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		a := s.CreateApp("Brand")
		path := "/api/admin/apps.php?app_id=" + a.ID
		branding := func() map[string]any {
			t.Helper()
			b, ok := s.AppSettings(t, a.ID)["branding"].(map[string]any)
			if !ok {
				t.Fatalf("settings have no branding object: %v", s.AppSettings(t, a.ID))
			}
			return b
		}
		adcSame(t, "default branding", branding(), map[string]any{"logo_url": "", "primary_color": "", "accent_color": "",
			"website_url": "", "support_email": ""})

		s.MustAdmin("PUT", path, map[string]any{"settings": map[string]any{"branding": map[string]any{
			"primary_color": "#12ab9F", "website_url": "https://x.example"}}})
		want := map[string]any{"logo_url": "", "primary_color": "#12ab9F", "accent_color": "", "website_url": "https://x.example",
			"support_email": ""}
		adcSame(t, "branding after PUT", branding(), want)
		full := map[string]any{"logo_url": "http://cdn.x.example/logo.png", "primary_color": "#000000", "accent_color": "#FFFFFF",
			"website_url": "https://x.example/home?x=1", "support_email": "help@x.example"}
		s.MustAdmin("PUT", path, map[string]any{"branding": full}) // top-level form
		adcSame(t, "branding with every field", branding(), full)
		// The app shows it to its clients.
		info := a.Get("/api/app/info.php", nil)
		if app, _ := info.Body["app"].(map[string]any); app == nil || !reflect.DeepEqual(app["branding"], full) {
			t.Fatalf("info.php branding: %v", info.Body)
		}

		updates := len(s.Audit(t, "action=app.update&app_id="+a.ID))
		for name, br := range map[string]any{
			"named color":             map[string]any{"primary_color": "red"},
			"short color":             map[string]any{"primary_color": "#12ab9"},
			"color without #":         map[string]any{"primary_color": "12ab9F"},
			"color with a non-hex":    map[string]any{"primary_color": "#12ab9G"},
			"long accent color":       map[string]any{"accent_color": "#1234567"},
			"rgb() color":             map[string]any{"accent_color": "rgb(1,2,3)"},
			"javascript: website_url": map[string]any{"website_url": "javascript:alert(1)"},
			"website_url w/o scheme":  map[string]any{"website_url": "x.example"},
			"ftp logo_url":            map[string]any{"logo_url": "ftp://x.example/logo.png"},
			"data: logo_url":          map[string]any{"logo_url": "data:image/png;base64,AAAA"},
			"logo_url of 2049":        map[string]any{"logo_url": "https://x.example/" + strings.Repeat("l", 2049-len("https://x.example/"))},
			"support_email no @":      map[string]any{"support_email": "nobody"},
			"support_email space":     map[string]any{"support_email": "a b@x.example"},
			"numeric color":           map[string]any{"primary_color": 5},
			"unknown field":           map[string]any{"font": "Comic Sans"},
			"branding not an object":  "red",
		} {
			t.Run(name, func(t *testing.T) {
				s.Admin("PUT", path, map[string]any{"settings": map[string]any{"branding": br}}).JSONFail(t, 400, "MISSING_FIELDS")
			})
		}
		s.Admin("PUT", path, map[string]any{"branding": map[string]any{"primary_color": "red"}}).JSONFail(t, 400, "MISSING_FIELDS")
		// One bad branding field refuses the whole edit, other settings too.
		s.Admin("PUT", path, map[string]any{"name": "Renamed", "settings": map[string]any{"login_message": "changed",
			"branding": map[string]any{"primary_color": "#000000", "website_url": "javascript:alert(1)"}}}).JSONFail(t,
			400, "MISSING_FIELDS")

		adcSame(t, "branding after refusals", branding(), full)
		if app := s.AppView(t, a.ID); app["name"] != "Brand" || app["settings"].(map[string]any)["login_message"] != "" {
			t.Fatalf("refused edit changed the app: %v", app)
		}
		if n := len(s.Audit(t, "action=app.update&app_id="+a.ID)); n != updates {
			t.Fatalf("%d app.update entries after refusals, want %d", n, updates)
		}
	})
}
