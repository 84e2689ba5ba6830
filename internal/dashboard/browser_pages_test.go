package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/keyward/keyward/internal/kwtest"
)

// The browser tests of every page: a crawl of the whole panel over rich
// data at a desktop and a phone width, the confirm dialog by keyboard, and
// the screenshots the README shows.

// demo is the data pagesDemo builds: one realistic app with history.
type demo struct {
	app      *kwtest.App
	keys     []string // 24 keys, each with a customer note
	live     string   // a key with a live session and two devices
	banned   string   // a key banned (a webhook delivery followed)
	release  string   // the id of the 25 % release
	webhook  string   // the id of the webhook with a delivery
	reseller string   // the id of a reseller
	account  string   // an app user account's name
}

// pagesFreshAdmin gives s a new admin API client: kwtest caches the admin
// token, which expires (12 h of the test clock) once the clock has been
// advanced through days of history. The dashboard's own session is not
// touched.
func pagesFreshAdmin(s *site) {
	s.Server = &kwtest.Server{Server: s.Server.Server, T: s.t, URL: s.URL, Clock: s.Clock, DatabaseURL: s.DatabaseURL, DataDir: s.DataDir}
}

// pagesDemo builds the demo app "Acme Photo Studio": keys with notes, four
// weeks of client activity (logins, activations, refusals, trials, update
// checks, sampled live sessions) on the test clock, then content, a release
// at 25 % rollout with an artifact, a webhook with a delivery, resellers, a
// device-reset request, an app user account and live sessions, now.
func pagesDemo(t *testing.T, s *site) *demo {
	t.Helper()
	ctx := context.Background()
	d := &demo{app: s.CreateApp("Acme Photo Studio")}
	app := d.app
	s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{
		"trial_enabled": true, "accounts_enabled": true, "account_signup_days": 30}})
	customers := []string{"Jane Cooper", "Wade Warren", "Esther Howard", "Cameron Williamson", "Brooklyn Simmons", "Leslie Alexander",
		"Jenny Wilson", "Guy Hawkins", "Robert Fox", "Jacob Jones", "Kristin Watson", "Cody Fisher", "Savannah Nguyen", "Eleanor Pena",
		"Ralph Edwards", "Courtney Henry", "Theresa Webb", "Darlene Robertson", "Albert Flores", "Marvin McKinney", "Dianne Russell",
		"Arlene McCoy", "Floyd Miles", "Devon Lane"}
	for i, who := range customers {
		typ, days := "days", 30
		switch i % 3 {
		case 1:
			typ, days = "lifetime", 0
		case 2:
			days = 365
		}
		k := app.GenerateKeys(1, typ, days, 1+i%3)[0]
		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "license_key": k, "note": who + " — order #" + fmt.Sprint(4810+i*7)})
		d.keys = append(d.keys, k)
	}

	// Four weeks of history: every day a few more keys sign in for the
	// first time and earlier ones come back (fewer at weekends), someone
	// mistypes a key, a trial starts now and then, the clients check for
	// updates; the live sessions are sampled, then signed out.
	for day := range 28 {
		s.Clock.Advance(20*time.Hour + time.Duration(day%5)*time.Hour)
		first := min(len(d.keys)-5, day*len(d.keys)/28) // the last keys stay unused
		every := 2
		if day%7 >= 5 {
			every = 4
		}
		var open [][2]string
		for i := 0; i <= first; i++ {
			if (i+day)%every == 0 || i == first {
				open = append(open, [2]string{app.Login(d.keys[i], fmt.Sprintf("PC-%02d", i)), d.keys[i]})
			}
		}
		for range day % 3 {
			app.Env("/api/auth/login.php", map[string]any{"license_key": "ACME-TYPO-0000", "hwid": "PC-99"})
		}
		if day%6 == 1 {
			r := app.Plain("/api/auth/trial.php", map[string]any{"hwid": fmt.Sprintf("TRIAL-%02d", day)})
			if r.Body["success"] != true || r.Str("session_id") == "" {
				t.Fatalf("trial: %s", r)
			}
			open = append(open, [2]string{r.Str("session_id"), r.Str("trial_key")})
		}
		for _, o := range open {
			v := "2.0.0"
			if day > 12 && o[1] != d.keys[0] {
				v = "2.0.1"
			}
			app.Env("/api/update/check.php", map[string]any{"v": v, "hwid": "PC-" + o[1][:2]})
		}
		if err := s.Analytics.Sample(ctx, s.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		for _, o := range open {
			if r := app.Env("/api/auth/logout.php", map[string]any{"session_id": o[0]}); r.Body["success"] != true {
				t.Fatalf("logout: %v", r.Body)
			}
		}
		if err := s.Usage.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s.Updates.FlushChecks(ctx)
	}
	pagesFreshAdmin(s)
	app = s.NewApp(app.ID, app.Secret)
	d.app = app

	// Content.
	for name, v := range map[string]string{"welcome": "Welcome back to Acme Photo Studio!", "support_email": "help@acme.example",
		"export_hint": "Exports keep your original files untouched."} {
		s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": name, "value": v})
	}
	s.MustAdmin("PUT", "/api/admin/texts.php", map[string]any{"app_id": app.ID, "name": "welcome", "value": "Welcome back, studio customer!", "license_key": d.keys[1]})
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "New: RAW support", "body": "Open RAW files from 40 more cameras."})
	s.MustAdmin("POST", "/api/admin/slides.php", map[string]any{"app_id": app.ID, "title": "Spring sale", "body": "Lifetime licences at 30 % off this week."})
	for _, e := range []map[string]any{
		{"version": "2.0.0", "title": "A new editor", "body": "Layers, masks and a faster brush engine.", "category": "new", "published": true},
		{"version": "2.0.1", "title": "Crash on export fixed", "body": "Exports of very large panoramas no longer crash.", "category": "fixed", "published": true},
		{"version": "2.1.0", "title": "Batch watermarking", "body": "Watermark a whole folder at once.", "category": "new"},
	} {
		e["app_id"] = app.ID
		s.MustAdmin("POST", "/api/admin/changelog.php", e)
	}
	s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": "Studio lifetime", "description": "Every update, forever.",
		"price": 79, "currency": "USD", "key_type": "lifetime"})
	s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "level", "name": "Studio monthly", "price": 7, "currency": "USD", "interval": "month"})
	s.MustAdmin("POST", "/api/admin/social-links.php", map[string]any{"app_id": app.ID, "platform": "discord", "url": "https://discord.gg/acme", "label": "Chat with other photographers"})

	// Releases: 2.0.1 for everyone, 2.1.0 to a quarter of the devices.
	app.Release("2.0.1", bytes.Repeat([]byte("acme-2.0.1 "), 4000), map[string]any{"changelog": "Crash on export fixed."})
	d.release = fmt.Sprint(app.Release("2.1.0", bytes.Repeat([]byte("acme-2.1.0 "), 5000), map[string]any{
		"changelog": "Batch watermarking and a faster catalogue.", "rollout_percent": 25}))

	// A webhook that has received a delivery: a ban.
	rc := newWebhooksReceiver(t)
	w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app.ID, "url": rc.URL + "/keyward",
		"events": []string{"key.banned"}, "description": "Shop back office"}).Obj("webhook")
	d.webhook = fmt.Sprint(w["id"])
	d.banned = d.keys[5]
	if r := app.KeyAction("ban", d.banned, map[string]any{"reason": "Chargeback"}); r.Status != 200 {
		t.Fatalf("ban: %s", r)
	}
	webhooksDispatch(t, s)
	if len(rc.hits()) == 0 {
		t.Fatal("the webhook received nothing")
	}

	// Resellers.
	for _, name := range []string{"Pixel Shop", "Lens & Light"} {
		r := s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": name, "email": "sales@" + strings.ToLower(strings.Fields(name)[0]) + ".example",
			"products": []map[string]any{{"id": "year", "name": "1 year", "key_type": "days", "duration_value": 365, "max_devices": 1, "price": 29}}})
		if d.reseller == "" {
			d.reseller = r.Obj("reseller")["id"].(string)
		}
	}
	s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "action": "topup", "id": d.reseller, "amount": 250})

	// A device-reset request, an app user account, live sessions.
	if r := app.Plain("/api/auth/request-hwid-reset.php", map[string]any{"license_key": d.keys[0], "reason": "New laptop, the old one was stolen"}); r.Body["success"] != true {
		t.Fatalf("reset request: %s", r)
	}
	d.account = "jane.cooper"
	if r := app.Plain("/api/auth/account-register.php", map[string]any{"username": d.account, "password": "correct horse 1", "email": "jane@example.com"}); r.Body["success"] != true {
		t.Fatalf("register: %s", r)
	}
	d.live = d.keys[2]
	app.Login(d.live, "STUDIO-MAC")
	app.Login(d.live, "STUDIO-PC")
	app.Login(d.keys[4], "PC-04")
	app.Login(d.keys[7], "PC-07")
	if err := s.Analytics.Sample(ctx, s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return d
}

// signInBrowser signs the test admin in through the sign-in form.
func signInBrowser(b *browser) {
	b.t.Helper()
	b.open("/dashboard/login")
	b.fill("#username", "admin")
	b.fill("#password", kwtest.AdminPassword)
	b.click("form[action='/dashboard/login'] button[type=submit]")
	if p := b.path(); p != "/dashboard/" {
		b.t.Fatalf("sign-in through the form ended at %s: %.500s", p, b.bodyText())
	}
}

// pageFacts is what pagesCheck reads from the page in one round trip.
type pageFacts struct {
	Status      int      `json:"status"`
	H1          string   `json:"h1"`
	Styled      bool     `json:"styled"`
	BadAssets   []string `json:"badAssets"`
	InnerWidth  int      `json:"innerWidth"`
	ScrollWidth int      `json:"scrollWidth"`
	TooWide     []string `json:"tooWide"`
	Links       []string `json:"links"`
}

// pageFactsJS reads the navigation's HTTP status, the <h1>, whether app.css
// applied, subresources that failed, the document's width against the
// window's (and, when it is wider, the outermost elements that stick out
// and are not inside a scrolling container), and the page's links (without
// download links).
const pageFactsJS = `(() => {
	const nav = performance.getEntriesByType("navigation")[0];
	const h1 = document.querySelector("h1");
	const bad = performance.getEntriesByType("resource").filter(e => e.responseStatus >= 400).map(e => e.name + " " + e.responseStatus);
	const w = window.innerWidth, sw = document.documentElement.scrollWidth;
	const wide = [];
	if (sw > w + 1) {
		// Whether a scrolling or clipping ancestor contains el: an
		// absolutely positioned element escapes those below its
		// containing block (its offsetParent), a fixed one all of them.
		const clipped = el => {
			const pos = getComputedStyle(el).position;
			if (pos === "fixed") { return false; }
			let p = pos === "absolute" ? el.offsetParent : el.parentElement;
			for (; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
				const o = getComputedStyle(p).overflowX; if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip") { return true; } }
			return false; };
		for (const el of document.body.querySelectorAll("*")) {
			const r = el.getBoundingClientRect();
			if (r.right > w + 1 && !clipped(el) && !(el.parentElement && el.parentElement.getBoundingClientRect().right > w + 1 && !clipped(el.parentElement) && el.parentElement !== document.body)) {
				wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") + " right=" + Math.round(r.right));
				if (wide.length >= 5) { break; }
			}
		}
		// Else text (a long word) overflows its box.
		for (const el of document.body.querySelectorAll("*")) {
			if (wide.length === 0 && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && getComputedStyle(el).overflowX === "visible" && !clipped(el) &&
				el.getBoundingClientRect().left + el.scrollWidth > w + 1 && !el.querySelector("*:not(br):not(a):not(b):not(i):not(em):not(strong)")) {
				wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " overflowing text: " + el.textContent.trim().slice(0, 60));
			}
		}
	}
	return {
		status: nav ? nav.responseStatus : 0,
		h1: h1 ? h1.innerText.trim() : "",
		styled: getComputedStyle(document.body).marginTop === "0px" && document.styleSheets.length > 0,
		badAssets: bad, innerWidth: w, scrollWidth: sw, tooWide: wide,
		links: Array.from(document.querySelectorAll("a[href]")).filter(a => !a.hasAttribute("download")).map(a => a.href),
	};
})()`

// pagesCheck reads the current page's facts and reports every problem with
// t.Errorf (the crawl goes on): not a 200, no <h1>, app.css not applied, a
// failed asset, console errors, exceptions or CSP violations, and, when
// phone is set, a document wider than the window.
func pagesCheck(b *browser, where string, phone bool) pageFacts {
	b.t.Helper()
	f := value(b, "facts of "+where, chromedp.Evaluate[pageFacts](pageFactsJS))
	if f.Status != 200 {
		b.t.Errorf("%s: answered %d", where, f.Status)
	}
	if f.H1 == "" {
		b.t.Errorf("%s: the page has no <h1> (or an empty one)", where)
	}
	if !f.Styled {
		b.t.Errorf("%s: app.css did not apply", where)
	}
	for _, a := range f.BadAssets {
		b.t.Errorf("%s: an asset failed: %s", where, a)
	}
	if phone && f.ScrollWidth > f.InnerWidth+1 {
		b.t.Errorf("%s: at %d px the page scrolls sideways (document %d px wide); sticking out: %v", where, f.InnerWidth, f.ScrollWidth, f.TooWide)
	}
	b.clean(where)
	return f
}

// sameSite returns the dashboard path and query of link, or "" when it is
// not a page to crawl: another origin, an asset, sign-out. kind is what the
// crawl dedupes by: the path and the names of the query's parameters, so
// that a filter link (the audit log has one per target and per action) is
// visited once per kind of filter, not once per value.
func sameSite(base *url.URL, link string) (page, kind string) {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != base.Scheme || u.Host != base.Host || !strings.HasPrefix(u.Path, "/dashboard/") ||
		strings.HasPrefix(u.Path, "/dashboard/assets/") || u.Path == "/dashboard/logout" {
		return "", ""
	}
	if u.RawQuery == "" {
		return u.Path, u.Path
	}
	q := u.Query()
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	slices.Sort(names)
	return u.Path + "?" + u.RawQuery, u.Path + "?" + strings.Join(names, "&")
}

// TestBrowserEveryPageRunsCleanly crawls every dashboard page reachable by
// links from the apps list, over an app with data on every page, in
// Chromium at 1280×900 and again at 390×844: each page must answer 200 with
// an <h1>, load its assets, raise no console error, exception or CSP
// violation, and on the phone not scroll sideways (wide tables scroll in
// their .table-wrap; the page does not).
func TestBrowserEveryPageRunsCleanly(t *testing.T) {
	chromium(t) // skip before starting anything
	s := newSite(t)
	d := pagesDemo(t, s)
	second := s.CreateApp("Empty app") // the empty states too
	b := newBrowser(t, s, 1280, 900)
	signInBrowser(b)
	base, _ := url.Parse(s.URL)

	const limit = 150
	queue := []string{"/dashboard/"}
	seen := map[string]bool{"/dashboard/": true} // paths, and paths with query kinds
	for i := 0; i < len(queue); i++ {
		p := queue[i]
		b.open(p)
		f := pagesCheck(b, p+" at 1280", false)
		for _, l := range f.Links {
			if q, kind := sameSite(base, l); q != "" && !seen[kind] {
				seen[kind] = true
				queue = append(queue, q)
			}
		}
		if len(queue) > limit {
			t.Fatalf("more than %d pages to crawl; the crawl is running away: %v", limit, queue[len(queue)-20:])
		}
	}
	// The crawl must have reached the data: a key, the release, the
	// webhook, the reseller, the account, every menu entry of the app.
	ap := "/dashboard/apps/" + d.app.ID
	for _, want := range []string{ap, ap + "/keys", ap + "/keys/" + url.PathEscape(d.live), ap + "/sessions", ap + "/resets", ap + "/accounts",
		ap + "/accounts/" + d.account, ap + "/trials", ap + "/content", ap + "/content/texts", ap + "/content/changelog", ap + "/updates",
		ap + "/updates/" + d.release, ap + "/webhooks", ap + "/webhooks/" + d.webhook, ap + "/analytics", ap + "/detections", ap + "/audit", ap + "/resellers",
		ap + "/resellers/" + d.reseller, "/dashboard/audit", "/dashboard/profile", "/dashboard/apps/" + second.ID} {
		if !seen[want] {
			t.Errorf("the crawl never reached %s", want)
		}
	}
	t.Logf("crawled %d pages", len(queue))

	// The same pages on a phone.
	b.run("phone viewport", chromedp.EmulateViewport(390, 844))
	for _, p := range queue {
		b.open(p)
		f := pagesCheck(b, p+" at 390", true)
		if f.InnerWidth != 390 {
			t.Fatalf("the phone viewport is %d px wide, not 390", f.InnerWidth)
		}
	}
	// What the browser reports after a page's check is read with the
	// next page's; the last page's late reports are read here.
	b.open("/dashboard/")
	b.clean("the last pages")
}

// pagesConfirmState is the confirm dialog's state.
type pagesConfirmState struct {
	Open    bool   `json:"open"`
	Focus   string `json:"focus"`
	Text    string `json:"text"`
	OldPage bool   `json:"oldPage"`
}

// pagesConfirm waits until the dialog is open (or closed) with focus on the
// element focus selects (when open), and returns its state.
func pagesConfirm(b *browser, what string, open bool, focus string) pagesConfirmState {
	b.t.Helper()
	js := `(() => { const d = document.getElementById("kw-confirm"), a = document.activeElement;
		return {open: d.open, focus: a ? (a.hasAttribute("data-dialog-ok") ? "ok" : a.hasAttribute("data-dialog-cancel") ? "cancel" : a.tagName.toLowerCase()) : "",
			text: document.getElementById("kw-confirm-text").textContent, oldPage: window.kwOld === true}; })()`
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := value(b, what, chromedp.Evaluate[pagesConfirmState](js))
		if st.Open == open && (!open || st.Focus == focus) {
			return st
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: dialog open=%v with focus on %q, want open=%v focus %q", what, st.Open, st.Focus, open, focus)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrowserConfirmDialogIsKeyboardUsable: the Ban form of a key page asks
// in the <dialog>, which opens with focus on Cancel; Escape closes it and
// nothing happens; Tab then Enter on the OK button bans the key.
func TestBrowserConfirmDialogIsKeyboardUsable(t *testing.T) {
	chromium(t) // skip before starting anything
	s := newSite(t)
	app := s.CreateApp("Dialogs")
	key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
	app.Login(key, "PC-1") // activated: "active", not "unused"
	b := newBrowser(t, s, 1280, 900)
	signInBrowser(b)
	page := "/dashboard/apps/" + app.ID + "/keys/" + url.PathEscape(key)
	b.open(page)
	b.mustSee("key page", key, "active")
	ban := `form[data-confirm^="Ban this key"] button[type=submit]`

	// Submit: the dialog asks, focus on Cancel, the page stays.
	b.run("mark the page", jsDo(`window.kwOld = true`))
	b.run("fill the reason", chromedp.SendKeys(chromedp.CSS("#ka-reason"), "Refund requested"))
	b.run("submit the ban form", chromedp.Click(chromedp.CSS(ban), chromedp.NodeVisible))
	st := pagesConfirm(b, "after submitting Ban", true, "cancel")
	if !strings.HasPrefix(st.Text, "Ban this key?") || !st.OldPage {
		t.Fatalf("dialog text %q, same page %v", st.Text, st.OldPage)
	}

	// Escape: closed, nothing sent.
	b.run("press Escape", chromedp.KeyEvent(kb.Escape))
	st = pagesConfirm(b, "after Escape", false, "")
	if !st.OldPage || b.path() != page {
		t.Fatalf("Escape left the page: at %s", b.path())
	}
	if k := keysAPI(s, app, key); k["status"] != "active" {
		t.Fatalf("after Escape the key is %v", k["status"])
	}

	// Again: Tab to the OK button, Enter: banned.
	b.run("submit the ban form again", chromedp.Click(chromedp.CSS(ban), chromedp.NodeVisible))
	pagesConfirm(b, "after submitting Ban again", true, "cancel")
	b.run("press Tab", chromedp.KeyEvent(kb.Tab))
	pagesConfirm(b, "after Tab", true, "ok")
	b.follow("press Enter on the OK button", chromedp.KeyEvent(kb.Enter))
	if p := b.path(); p != page {
		t.Fatalf("after the ban the browser is at %s, want %s", p, page)
	}
	if k := keysAPI(s, app, key); k["status"] != "banned" {
		t.Fatalf("after Enter on OK the key is %v", k["status"])
	}
	b.mustSee("after the ban", "Key banned.", "banned", "Unban")
	b.clean("confirm dialog")
}

// shot saves a screenshot of the page, width CSS pixels wide and at most
// maxHeight high (from the top, so long pages stay small files), as
// docs/screenshots/name.png when KEYWARD_SCREENSHOTS=1 (the README links
// these pictures), and into $KEYWARD_ARTIFACTS/screenshots when that is set,
// so a CI run keeps what the pages looked like.
func shot(b *browser, name string, width, maxHeight int) {
	b.t.Helper()
	var dirs []string
	if os.Getenv("KEYWARD_SCREENSHOTS") == "1" {
		dirs = append(dirs, filepath.Join("..", "..", "docs", "screenshots"))
	}
	if d := os.Getenv("KEYWARD_ARTIFACTS"); d != "" {
		dirs = append(dirs, filepath.Join(d, "screenshots"))
	}
	if len(dirs) == 0 {
		return
	}
	h := value(b, "page height", chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	h = min(h, maxHeight)
	b.run("viewport for "+name, chromedp.EmulateViewport(int64(width), int64(h)))
	png := value(b, "screenshot "+name, chromedp.CaptureScreenshot())
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// TestBrowserScreenshotsOfTheMainPages walks the main pages over the demo
// app, checks each shows what it is for, and saves screenshots of them
// (docs/screenshots with KEYWARD_SCREENSHOTS=1; the README shows them).
func TestBrowserScreenshotsOfTheMainPages(t *testing.T) {
	chromium(t) // skip before starting anything
	s := newSite(t)
	d := pagesDemo(t, s)
	b := newBrowser(t, s, 1280, 900)
	ap := "/dashboard/apps/" + d.app.ID

	b.open("/dashboard/login")
	b.mustSee("sign-in page", "Username", "Password", "Sign in")
	b.clean("sign-in page")
	shot(b, "01-login", 1280, 900)
	b.run("desktop viewport", chromedp.EmulateViewport(1280, 900))
	signInBrowser(b)

	pages := []struct {
		name, path, h1 string
		see            []string
	}{
		{"02-apps", "/dashboard/", "Apps", []string{"Acme Photo Studio"}},
		{"03-app-settings", ap, "Acme Photo Studio", []string{"Heartbeat"}},
		{"04-keys", ap + "/keys", "Keys", []string{d.keys[0], "Jane Cooper", "banned"}},
		{"05-key", ap + "/keys/" + url.PathEscape(d.live), d.live, []string{"STUDIO-MAC", "STUDIO-PC", "Esther Howard"}},
		{"06-sessions", ap + "/sessions", "Live sessions", []string{"STUDIO-MAC", d.live}},
		{"07-content-texts", ap + "/content/texts", "Texts", []string{"welcome", "support_email", "export_hint", "Texts for"}},
		{"08-changelog", ap + "/content/changelog", "Changelog", []string{"Batch watermarking", "Crash on export fixed"}},
		{"09-updates", ap + "/updates", "Updates", []string{"2.1.0", "2.0.1", "25"}},
		{"10-release", ap + "/updates/" + d.release, "2.1.0", []string{"Rollout 25 %", "update-2.1.0.bin", "55.0 kB"}},
		{"11-webhooks", ap + "/webhooks", "Webhooks", []string{"Shop back office", "key.banned"}},
		{"12-webhook", ap + "/webhooks/" + d.webhook, "Webhook http://127.0.0.1:", []string{"key.banned", "200"}},
		{"13-analytics", ap + "/analytics?range=30d", "Analytics", []string{"Logins", "Activations"}},
		{"14-audit", "/dashboard/audit", "Audit", []string{"key.ban"}},
		{"15-resellers", ap + "/resellers", "Resellers", []string{"Pixel Shop", "Lens & Light"}},
		{"16-profile", "/dashboard/profile", "Your account", []string{"admin", "Change password", "Two-factor sign-in"}},
	}
	for _, p := range pages {
		b.open(p.path)
		if got := b.path(); got != p.path {
			t.Errorf("%s: opened %s, at %s", p.name, p.path, got)
		}
		h1 := b.text("h1")
		if p.h1 != "" && !strings.Contains(h1, p.h1) {
			t.Errorf("%s: heading %q, want it to contain %q", p.name, h1, p.h1)
		}
		b.mustSee(p.name, p.see...)
		pagesCheck(b, p.name, false)
		shot(b, p.name, 1280, 1600)
		b.run("desktop viewport", chromedp.EmulateViewport(1280, 900))
	}

	for _, p := range []struct{ name, path string }{{"17-keys-mobile", ap + "/keys"}, {"18-analytics-mobile", ap + "/analytics?range=30d"}} {
		b.run("phone viewport", chromedp.EmulateViewport(390, 844))
		b.open(p.path)
		pagesCheck(b, p.name, true)
		shot(b, p.name, 390, 2400)
	}
}
