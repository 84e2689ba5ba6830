package dashboard_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/keyward/keyward/internal/kwtest"
)

// updatesReleases lists an app's releases through the admin API.
func updatesReleases(t *testing.T, s *site, app *kwtest.App) []map[string]any {
	t.Helper()
	r := s.MustAdmin("GET", "/api/admin/updates.php?app_id="+url.QueryEscape(app.ID), nil)
	raw, _ := r.Body["releases"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		out = append(out, v.(map[string]any))
	}
	return out
}

// updatesRelease reads one release through the admin API.
func updatesRelease(t *testing.T, s *site, app *kwtest.App, id string) map[string]any {
	t.Helper()
	return s.MustAdmin("GET", "/api/admin/updates.php?app_id="+url.QueryEscape(app.ID)+"&id="+id, nil).Obj("release")
}

func updatesSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// updatesUploadJS posts a file as app.js does: the raw body, the fields in
// the query, the CSRF token in a header, asking for JSON.
func updatesUploadJS(t *testing.T, s *site, path string, q url.Values, file []byte) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path+"?"+q.Encode(), bytes.NewReader(file))
	req.Header.Set("X-CSRF-Token", s.csrf)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("upload answer is not JSON: %d %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// updatesUploadForm posts the upload form as a browser without JavaScript
// does: multipart/form-data with the CSRF token as a field.
func updatesUploadForm(t *testing.T, s *site, path string, fields map[string]string, name string, file []byte) *webPage {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("csrf", s.csrf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(file)
	mw.Close()
	req, _ := http.NewRequest("POST", s.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return s.send(req)
}

// updatesOffered is the version a client's update check is offered ("" for none).
func updatesOffered(t *testing.T, app *kwtest.App, v, hwid string) string {
	t.Helper()
	r := app.Env("/api/update/check.php", map[string]any{"v": v, "hwid": hwid, "os": "windows", "arch": "x64"})
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("update check: %s", r)
	}
	if r.Body["update_available"] != true {
		return ""
	}
	return fmt.Sprint(r.Obj("update")["version"])
}

func TestUpdatesReleaseLifecycle(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Updater")
	base := "/dashboard/apps/" + app.ID + "/updates"

	p := s.get(base).must(t)
	if !p.Has("No releases yet") {
		t.Fatalf("empty list: %s", p.Text())
	}

	// A refused version shows the API's message and creates nothing.
	p = s.post(base, url.Values{"version": {"1.2"}, "channel": {"stable"}, "rollout_percent": {"100"}}).must(t)
	if f := p.flash(); !strings.Contains(f, "MISSING_FIELDS") || p.URL != base {
		t.Fatalf("bad version: flash %q at %s", f, p.URL)
	}
	s.get(base)
	p = s.post(base, url.Values{"version": {"1.2.0"}, "rollout_percent": {"lots"}}).must(t)
	if f := p.flash(); !strings.Contains(f, "percentage") {
		t.Fatalf("bad rollout: flash %q", f)
	}
	if n := len(updatesReleases(t, s, app)); n != 0 {
		t.Fatalf("refused creates left %d releases", n)
	}

	// Create.
	s.get(base)
	p = s.post(base, url.Values{"version": {"1.2.0"}, "channel": {"stable"}, "changelog": {"Faster <sync>"}, "rollout_percent": {"100"}, "is_mandatory": {"on"}}).must(t)
	rels := updatesReleases(t, s, app)
	if len(rels) != 1 || rels[0]["version"] != "1.2.0" || rels[0]["status"] != "draft" || rels[0]["is_mandatory"] != true || rels[0]["changelog"] != "Faster <sync>" {
		t.Fatalf("created release: %v", rels)
	}
	id := fmt.Sprint(rels[0]["id"])
	relPath := base + "/" + id
	if p.URL != relPath || !p.Has("Release 1.2.0") || !p.Has("draft") || !strings.Contains(p.Body, "Faster &lt;sync&gt;") {
		t.Fatalf("after create at %s: %s", p.URL, p.Text())
	}

	// A draft is not offered to clients.
	if v := updatesOffered(t, app, "1.0.0", "PC-1"); v != "" {
		t.Fatalf("draft offered: %q", v)
	}

	// Upload through the octet-stream route (what app.js sends).
	art := make([]byte, 3<<20) // larger than the 1 MiB a form may be
	rand.Read(art)
	status, ans := updatesUploadJS(t, s, relPath+"/upload", url.Values{"os": {"windows"}, "arch": {"x64"}, "file_name": {"MyApp.exe"}}, art)
	if status != 200 || ans["redirect"] != relPath {
		t.Fatalf("JS upload: %d %v", status, ans)
	}
	arts, _ := updatesRelease(t, s, app, id)["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("artifacts after upload: %v", arts)
	}
	a0 := arts[0].(map[string]any)
	if a0["sha256"] != updatesSum(art) || a0["size"] != float64(len(art)) || a0["os"] != "windows" || a0["arch"] != "x64" || a0["file_name"] != "MyApp.exe" {
		t.Fatalf("stored artifact %v, want sha256 %s size %d", a0, updatesSum(art), len(art))
	}
	p = s.get(relPath).must(t)
	if !p.Has(updatesSum(art)) || !p.Has("Artifact stored") || !p.Has("MyApp.exe") {
		t.Fatalf("release page after upload: %s", p.Text())
	}

	// A wrong sha256 is refused with the API's message, as JSON; nothing kept.
	status, ans = updatesUploadJS(t, s, relPath+"/upload", url.Values{"os": {"linux"}, "sha256": {strings.Repeat("0", 64)}}, []byte("other bytes"))
	if status != 400 || !strings.Contains(fmt.Sprint(ans["message"]), "CHECKSUM_MISMATCH") {
		t.Fatalf("mismatched upload: %d %v", status, ans)
	}
	if arts, _ := updatesRelease(t, s, app, id)["artifacts"].([]any); len(arts) != 1 {
		t.Fatalf("refused upload kept an artifact: %v", arts)
	}

	// Without JavaScript: a small multipart upload, then a redirect.
	s.get(relPath)
	small := []byte("#!/bin/sh\necho linux build\n")
	p = updatesUploadForm(t, s, relPath+"/upload", map[string]string{"os": "linux", "arch": "arm64", "sha256": ""}, "myapp-linux", small).must(t)
	if p.URL != relPath || !strings.Contains(p.flash(), "Artifact stored") {
		t.Fatalf("form upload: at %s flash %q", p.URL, p.flash())
	}
	found := false
	arts, _ = updatesRelease(t, s, app, id)["artifacts"].([]any)
	for _, a := range arts {
		a := a.(map[string]any)
		if a["os"] == "linux" && a["arch"] == "arm64" {
			found = a["sha256"] == updatesSum(small) && a["size"] == float64(len(small)) && a["file_name"] == "myapp-linux"
		}
	}
	if !found {
		t.Fatalf("form upload not stored as sent: %v", arts)
	}

	// A multipart upload carrying the CSRF token as a header streams from
	// the connection, whatever its size.
	big := make([]byte, 2<<20)
	rand.Read(big)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("os", "macos")
	fw, _ := mw.CreateFormFile("file", "MyApp.dmg")
	fw.Write(big)
	mw.Close()
	req, _ := http.NewRequest("POST", s.URL+relPath+"/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-CSRF-Token", s.csrf)
	if p = s.send(req).must(t); !strings.Contains(p.flash(), "Artifact stored") {
		t.Fatalf("streamed multipart upload: %q", p.flash())
	}
	found = false
	arts, _ = updatesRelease(t, s, app, id)["artifacts"].([]any)
	for _, a := range arts {
		a := a.(map[string]any)
		if a["os"] == "macos" {
			found = a["sha256"] == updatesSum(big) && a["size"] == float64(len(big)) && a["file_name"] == "MyApp.dmg"
		}
	}
	if !found {
		t.Fatalf("streamed multipart upload not stored as sent: %v", arts)
	}

	// Without JavaScript the form names its CSRF token in its action URL
	// (as the page renders it), so a large file streams too.
	page := s.get(relPath).must(t)
	action := regexp.MustCompile(`enctype="multipart/form-data" action="([^"]+)"`).FindStringSubmatch(page.Body)
	if action == nil || !strings.Contains(html.UnescapeString(action[1]), "/upload?csrf="+s.csrf) {
		t.Fatalf("upload form action %v does not carry the CSRF token", action)
	}
	p = updatesUploadForm(t, s, html.UnescapeString(action[1]), map[string]string{"os": "linux", "arch": "x86"}, "big.tar.gz", big)
	if p.must(t); !strings.Contains(p.flash(), "Artifact stored") {
		t.Fatalf("large no-JS upload: %q", p.flash())
	}
	found = false
	arts, _ = updatesRelease(t, s, app, id)["artifacts"].([]any)
	for _, a := range arts {
		a := a.(map[string]any)
		if a["os"] == "linux" && a["arch"] == "x86" {
			found = a["sha256"] == updatesSum(big) && a["size"] == float64(len(big))
		}
	}
	if !found || len(arts) != 4 {
		t.Fatalf("large no-JS upload not stored as sent: %v", arts)
	}
	// Without the token in the URL a large form cannot carry it past the
	// form cap: refused, nothing stored.
	p = updatesUploadForm(t, s, relPath+"/upload", map[string]string{"os": "windows", "arch": "arm64"}, "big", big)
	if p.Status != http.StatusForbidden {
		t.Fatalf("large upload without a token in the URL: %d", p.Status)
	}
	if arts, _ = updatesRelease(t, s, app, id)["artifacts"].([]any); len(arts) != 4 {
		t.Fatalf("artifacts after refused large form: %v", arts)
	}
	s.get(relPath)

	// Rollout 25 % through the slider's form.
	p = s.post(relPath+"/rollout", url.Values{"rollout_percent": {"25"}}).must(t)
	if !p.Has("Rollout saved") || !p.Has("25 %") || !strings.Contains(p.Body, `value="25"`) {
		t.Fatalf("after rollout: %s", p.Text())
	}
	if r := updatesRelease(t, s, app, id); r["rollout"] != float64(2500) {
		t.Fatalf("API rollout %v, want 2500", r["rollout"])
	}
	p = s.post(relPath+"/rollout", url.Values{"rollout_percent": {"150"}}).must(t)
	if f := p.flash(); !strings.Contains(f, "rollout_percent") {
		t.Fatalf("rollout 150: flash %q", f)
	}
	if r := updatesRelease(t, s, app, id); r["rollout"] != float64(2500) {
		t.Fatalf("refused rollout changed it to %v", r["rollout"])
	}
	p = s.get(base).must(t)
	if !p.Has("1.2.0") || !p.Has("25 %") || !p.Has(updatesSum(art)) || !p.Has("windows/x64") {
		t.Fatalf("list: %s", p.Text())
	}

	// Publish, at 100 %: a client sees it.
	s.get(relPath)
	s.post(relPath+"/rollout", url.Values{"rollout_percent": {"100"}}).must(t)
	p = s.post(relPath+"/publish", nil).must(t)
	if !p.Has("Release published") || updatesRelease(t, s, app, id)["status"] != "published" {
		t.Fatalf("publish: %s", p.Text())
	}
	if v := updatesOffered(t, app, "1.0.0", "PC-1"); v != "1.2.0" {
		t.Fatalf("published release offered %q", v)
	}

	// Halt needs a confirmation; without it nothing changes.
	p = s.post(relPath+"/halt", nil).must(t)
	if !p.Has("Halt this rollout?") || updatesRelease(t, s, app, id)["status"] != "published" {
		t.Fatalf("unconfirmed halt: %s", p.Text())
	}
	p = s.post(relPath+"/halt", url.Values{"confirm": {"yes"}}).must(t)
	if !p.Has("Rollout halted") || !p.Has("halted") || updatesRelease(t, s, app, id)["status"] != "halted" {
		t.Fatalf("halt: %s", p.Text())
	}
	// A halted rollout cannot be changed: the API says so.
	p = s.post(relPath+"/rollout", url.Values{"rollout_percent": {"50"}}).must(t)
	if f := p.flash(); !strings.Contains(f, "ROLLOUT_HALTED") || updatesRelease(t, s, app, id)["rollout"] != float64(10000) {
		t.Fatalf("rollout while halted: flash %q", f)
	}
	p = s.post(relPath+"/resume", nil).must(t)
	if !p.Has("Rollout resumed") || updatesRelease(t, s, app, id)["status"] != "published" {
		t.Fatalf("resume: %s", p.Text())
	}

	// Yank (confirmed): the client no longer gets it.
	p = s.post(relPath+"/yank", nil).must(t)
	if !p.Has("Yank this release?") || updatesRelease(t, s, app, id)["status"] != "published" {
		t.Fatalf("unconfirmed yank: %s", p.Text())
	}
	s.post(relPath+"/yank", url.Values{"confirm": {"yes"}}).must(t)
	if updatesRelease(t, s, app, id)["status"] != "yanked" {
		t.Fatal("yank did not yank")
	}
	if v := updatesOffered(t, app, "1.0.0", "PC-1"); v != "" {
		t.Fatalf("yanked release offered %q", v)
	}
}

func TestUpdatesEditAndDeleteDraft(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Editor")
	id := fmt.Sprint(app.CreateRelease("2.0.0-beta.1", map[string]any{"channel": "beta"}))
	relPath := "/dashboard/apps/" + app.ID + "/updates/" + id

	s.get(relPath).must(t)
	p := s.post(relPath+"/edit", url.Values{"channel": {"alpha"}, "changelog": {"New notes"}, "min_version": {"1.5.0"}, "is_mandatory": {"on"}}).must(t)
	r := updatesRelease(t, s, app, id)
	if !p.Has("Release saved") || r["channel"] != "alpha" || r["changelog"] != "New notes" || r["min_version"] != "1.5.0" || r["is_mandatory"] != true {
		t.Fatalf("edit: %v / %s", r, p.flash())
	}
	// A pre-release cannot go on stable: the API's message, nothing changed.
	p = s.post(relPath+"/edit", url.Values{"channel": {"stable"}, "changelog": {"Other"}}).must(t)
	if r := updatesRelease(t, s, app, id); !strings.Contains(p.flash(), "cannot go to stable") || r["channel"] != "alpha" || r["changelog"] != "New notes" {
		t.Fatalf("refused edit: flash %q, release %v", p.flash(), r)
	}
	// Publishing without an artifact is refused.
	p = s.post(relPath+"/publish", nil).must(t)
	if !strings.Contains(p.flash(), "NO_ARTIFACT") || updatesRelease(t, s, app, id)["status"] != "draft" {
		t.Fatalf("publish without artifact: %q", p.flash())
	}

	// Delete asks first.
	p = s.post(relPath+"/delete", nil).must(t)
	if !p.Has("Delete this draft?") || len(updatesReleases(t, s, app)) != 1 {
		t.Fatalf("unconfirmed delete: %s", p.Text())
	}
	p = s.post(relPath+"/delete", url.Values{"confirm": {"yes"}}).must(t)
	if !p.Has("Draft deleted") || len(updatesReleases(t, s, app)) != 0 {
		t.Fatalf("delete: %s", p.Text())
	}
	if p := s.get(relPath); p.Status != 404 {
		t.Fatalf("deleted release page: %d", p.Status)
	}
}

func TestUpdatesExplainAndMinSupported(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Explainer")
	app.Release("1.1.0", []byte("one-one"), nil)
	app.Release("1.3.0-beta.1", []byte("beta"), map[string]any{"channel": "beta"})
	base := "/dashboard/apps/" + app.ID + "/updates"

	p := s.get(base + "/explain").must(t)
	if !p.Has("Installed version") || p.Has("Decision") {
		t.Fatalf("explain form: %s", p.Text())
	}
	p = s.get(base + "/explain?" + url.Values{"v": {"1.0.0"}, "channel": {"stable"}, "hwid": {"PC-9"}}.Encode()).must(t)
	want := s.MustAdmin("GET", "/api/admin/updates.php?"+url.Values{"app_id": {app.ID}, "action": {"explain"}, "v": {"1.0.0"}, "channel": {"stable"}, "hwid": {"PC-9"}}.Encode(), nil)
	reasons, _ := want.Body["reasons"].([]any)
	if len(reasons) != 2 {
		t.Fatalf("API explain: %v", want.Body)
	}
	if !p.Has("update offered") || !p.Has("1.1.0") {
		t.Fatalf("explain result: %s", p.Text())
	}
	for _, r := range reasons {
		r := r.(map[string]any)
		if !p.Has(fmt.Sprint(r["outcome"])) || !p.Has(fmt.Sprint(r["detail"])) {
			t.Fatalf("explain page lacks the API's reason %v: %s", r, p.Text())
		}
	}
	// A version that is not semantic: the API's message on the page.
	p = s.get(base + "/explain?v=latest").must(t)
	if !p.Has("MISSING_FIELDS") || p.Has("Decision") {
		t.Fatalf("bad version: %s", p.Text())
	}

	// Minimum supported version.
	s.get(base)
	p = s.post(base+"/min-supported", url.Values{"channel": {"stable"}, "version": {"1.1.0"}}).must(t)
	ms := s.MustAdmin("GET", "/api/admin/updates.php?app_id="+app.ID, nil).Obj("min_supported")
	if !p.Has("Minimum supported version saved") || ms["stable"] != "1.1.0" {
		t.Fatalf("min supported: %v / %s", ms, p.flash())
	}
	p = s.post(base+"/min-supported", url.Values{"channel": {"nightly"}, "version": {"1.2.0"}}).must(t)
	if !strings.Contains(p.flash(), "use stable, beta or alpha") || len(s.MustAdmin("GET", "/api/admin/updates.php?app_id="+app.ID, nil).Obj("min_supported")) != 1 {
		t.Fatalf("bad channel: %q", p.flash())
	}
}

// updatesCheckMarkup fails unless every visible input, select and textarea
// of the page has a <label for> (or sits inside a label), and the page has
// no inline style or script and no event handler attributes.
func updatesCheckMarkup(t *testing.T, p *webPage) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(p.Body))
	labels := map[string]bool{}
	var ids []string
	inLabel := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Key] = a.Val
				if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
					t.Fatalf("%s: <%s %s=…>", p.URL, tok.Data, a.Key)
				}
			}
			switch tok.Data {
			case "script":
				if attrs["src"] == "" {
					t.Fatalf("%s: inline script", p.URL)
				}
			case "label":
				labels[attrs["for"]] = true
				inLabel++
			case "input", "select", "textarea":
				if attrs["type"] == "hidden" || inLabel > 0 {
					continue
				}
				if attrs["id"] == "" {
					t.Fatalf("%s: <%s name=%q> without an id for its label", p.URL, tok.Data, attrs["name"])
				}
				ids = append(ids, attrs["id"])
			}
		case html.EndTagToken:
			if tok.Data == "label" && inLabel > 0 {
				inLabel--
			}
		}
	}
	for _, id := range ids {
		if !labels[id] {
			t.Fatalf("%s: #%s has no <label for>", p.URL, id)
		}
	}
}

func TestUpdatesPagesMarkup(t *testing.T) {
	s := newSite(t)
	s.signIn()
	app := s.CreateApp("Markup")
	id := app.Release("1.0.1", []byte("bytes"), map[string]any{"rollout_percent": 40})
	base := "/dashboard/apps/" + app.ID + "/updates"
	for _, path := range []string{base, fmt.Sprintf("%s/%d", base, id), base + "/explain?v=1.0.0&hwid=X"} {
		updatesCheckMarkup(t, s.get(path).must(t))
	}
	p := s.get(fmt.Sprintf("%s/%d", base, id))
	for _, want := range []string{`type="range" id="rollout" name="rollout_percent" min="0" max="100" step="1" value="40" data-output="rollout-out" data-unit=" %"`,
		`<output id="rollout-out" for="rollout">40 %</output>`,
		fmt.Sprintf(`enctype="multipart/form-data" action="%s/%d/upload?csrf=%s" data-upload="%s/%d/upload"`, base, id, s.csrf, base, id),
		`<input type="file" id="up-file" name="file" required>`, `<progress hidden`, `<p data-upload-status aria-live="polite">`,
		`data-confirm="Halt this rollout?`} {
		if !strings.Contains(p.Body, want) {
			t.Fatalf("release page lacks %s", want)
		}
	}
	// A published release offers halt and yank, not publish or delete.
	if !p.Has("Halt rollout") || !p.Has("Yank release") || strings.Contains(p.Body, `/publish"`) || strings.Contains(p.Body, `/delete"`) {
		t.Fatalf("published release's buttons: %s", p.Text())
	}
	app2 := s.CreateApp("Markup hooks")
	w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": app2.ID, "url": "https://example.com/h"}).Obj("webhook")
	wbase := "/dashboard/apps/" + app2.ID + "/webhooks"
	for _, path := range []string{wbase, fmt.Sprintf("%s/%v", wbase, w["id"])} {
		updatesCheckMarkup(t, s.get(path).must(t))
	}
}
