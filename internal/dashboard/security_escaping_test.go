package dashboard_test

// Security test of escaping: user input in every field is rendered inert on
// every page, and markup sent in paths, queries and forms comes back escaped.

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// secPayload is the markup planted in field n: a script element and an
// attribute break-out, each naming n.
func secPayload(n int) string {
	return fmt.Sprintf(`"><img src=x onerror=alert(%d)><script>alert("xss-%d")</script>`, n, n)
}

// Markup from users (apps' names, key notes, devices, customers' accounts
// and reset reasons, content, releases, webhooks, resellers, the owner's
// token and e-mail — and so the audit log) is shown escaped on every page:
// no page carries the planted markup, and most planted values are shown
// (escaped) somewhere, which proves the pages rendered them. Pages hold no
// inline scripts or event handlers.
func TestSecurityEveryPageEscapesUserInput(t *testing.T) {
	s := newSite(t)
	fields := map[int]string{}
	sd, app, key := secSeed(t, s, func(field, kind string) string {
		n := len(fields) + 1
		fields[n] = field
		switch kind {
		case "url":
			return "https://example.com/?q=" + secPayload(n)
		case "email":
			return `"><img src=x onerror=alert(` + fmt.Sprint(n) + `)>@example.com`
		}
		return secPayload(n)
	})
	s.signIn()
	pages := secCrawl(t, s, secExtra(app, key)...)
	pages = append(pages, secResultPages(t, s, app)...)
	secCheckPages(t, pages)

	raw := regexp.MustCompile(`(?i)<script>alert\(|<img src=x onerror`)
	shown := map[int]bool{}
	check := func(p *secPage) {
		t.Helper()
		if p.Doc == nil {
			return
		}
		if m := raw.FindAllString(p.Body, -1); m != nil {
			t.Errorf("%s: unescaped user markup %q", p.Path, m)
		}
		for n := range fields {
			if strings.Contains(p.Body, fmt.Sprintf(`&lt;script&gt;alert(&#34;xss-%d&#34;)`, n)) ||
				strings.Contains(p.Body, fmt.Sprintf(`onerror=alert(%d)&gt;`, n)) {
				shown[n] = true
			}
		}
		secWalk(p.Doc, func(e *html.Node) {
			for _, a := range e.Attr {
				if strings.HasPrefix(a.Key, "on") || a.Key == "style" || (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					t.Errorf("%s: %s has %s=%q", p.Path, secDescribe(e), a.Key, a.Val)
				}
			}
			if e.Data == "script" {
				src, hasSrc := secAttr(e, "src")
				typ, _ := secAttr(e, "type")
				if hasSrc && !strings.HasPrefix(src, "/dashboard/assets/") || !hasSrc && typ != "application/json" {
					t.Errorf("%s: %s (src %q type %q) is neither our asset nor JSON data", p.Path, secDescribe(e), src, typ)
				}
			}
		})
	}
	for _, p := range pages {
		check(p)
	}
	// Every value the API took must show up (escaped) somewhere: that
	// proves the pages rendered it, and that it reads as typed (the key
	// history once showed "\u003c" for "<").
	var missing []string
	for n, f := range fields {
		if !shown[n] && !secIn(sd.refused, f) {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	t.Logf("%d fields planted (%d refused the payload by the API: %v); %d shown escaped", len(fields), len(sd.refused), sd.refused, len(shown))
	if len(missing) > 0 {
		t.Errorf("planted values not found escaped on any page: %v", missing)
	}

	// Reflected input: markup in a page's path or query, and in every
	// field (hidden ones too) of every POST form, comes back escaped — in
	// error pages, refusals, flashes and confirmation pages.
	get := func(path string) *secPage {
		p := &secPage{Path: path, webPage: s.get(path)}
		p.Doc, _ = html.Parse(strings.NewReader(p.Body))
		return p
	}
	base := "/dashboard/apps/" + url.PathEscape(app.ID)
	n := 900
	pl := func() string { n++; return secPayload(n) }
	qp := func() string { return url.QueryEscape(pl()) }
	pp := func() string { return url.PathEscape(pl()) }
	for _, path := range []string{base + "/keys?q=" + qp() + "&hwid=" + qp() + "&status=" + qp() + "&key_type=" + qp() + "&limit=" + qp(),
		"/dashboard/audit?action=" + qp() + "&target=" + qp() + "&actor_id=" + qp(), base + "/audit?action=" + qp() + "&since=" + qp(),
		base + "/content/texts?license_key=" + qp(), base + "/updates/explain?v=" + qp() + "&channel=" + qp() + "&hwid=" + qp() + "&license_key=" + qp(),
		base + "/accounts?q=" + qp(), base + "/resets?status=" + qp(), base + "/analytics?days=" + qp() + "&range=" + qp(),
		base + "/keys/" + pp(), base + "/accounts/" + pp(), base + "/resellers/" + pp(), base + "/webhooks/" + pp(), base + "/updates/" + pp(),
		"/dashboard/apps/" + pp() + "/keys", "/dashboard/" + pp(), "/dashboard/login?next=" + qp()} {
		check(get(path))
	}
	s.get("/dashboard/")
	tried := map[string]bool{}
	for _, f := range secForms(pages) {
		key := f.Action + " " + f.Values.Get("action")
		if f.Method != "post" || tried[key] || f.Action == "/dashboard/logout" || strings.HasPrefix(f.Enctype, "multipart/") {
			continue
		}
		tried[key] = true
		form := url.Values{}
		secWalk(f.Node, func(e *html.Node) {
			if name, _ := secAttr(e, "name"); name != "" && name != "csrf" && name != "confirm" && (e.Data == "input" || e.Data == "textarea" || e.Data == "select") {
				form.Set(name, pl())
			}
		})
		p := &secPage{Path: "POST " + f.Action + " (markup in every field)", webPage: s.post(f.Action, form)}
		p.Doc, _ = html.Parse(strings.NewReader(p.Body))
		check(p)
		if p.Status >= 500 {
			t.Errorf("%s: status %d: %s", p.Path, p.Status, secShort(p.Text()))
		}
	}
	t.Logf("reflected: %d pages, %d forms", 16, len(tried))
	if p := s.get("/dashboard/"); p.Status != 200 || p.URL != "/dashboard/" {
		t.Errorf("signed out by the forms (so later ones showed only the sign-in page): %d at %s", p.Status, p.URL)
	}
}

func secIn(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
