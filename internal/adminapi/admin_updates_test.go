package adminapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
)

// Admin API of OTA updates: updates.php (releases, artifact uploads,
// publishing, rollouts, min_supported, explain and stats). Helpers start with
// adu so they do not collide with other test files.

const (
	aduCheck    = "/api/update/check.php"
	aduDownload = "/api/update/download.php"
)

// aduSum is the hex sha256 of b.
func aduSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// aduPut streams body to updates.php?action=upload with the admin token. q
// adds query parameters (app_id, id, os, arch, sha256, …); header adds or
// overrides headers (Content-Type defaults to application/octet-stream). A
// bytes.Reader body goes with a Content-Length; any other reader is sent
// chunked, its length unknown to the server.
func aduPut(t testing.TB, s *kwtest.Server, q url.Values, header http.Header, body io.Reader) *kwtest.Reply {
	t.Helper()
	qq := url.Values{"action": {"upload"}}
	for k, v := range q {
		qq[k] = v
	}
	req, err := http.NewRequest("PUT", s.URL+kwtest.PathAdminUpdates+"?"+qq.Encode(), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	req.Header.Set("Content-Type", "application/octet-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	return s.Send(req)
}

// aduUpload uploads body as an artifact of release id of a (os, arch and
// sha256 may be empty), with a Content-Length.
func aduUpload(t testing.TB, a *kwtest.App, id int64, osName, arch string, body []byte, sum string) *kwtest.Reply {
	t.Helper()
	q := url.Values{"app_id": {a.ID}, "id": {fmt.Sprint(id)}}
	for k, v := range map[string]string{"os": osName, "arch": arch, "sha256": sum} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return aduPut(t, a.S, q, nil, bytes.NewReader(body))
}

// aduUploadOK is aduUpload that fails the test unless it succeeds.
func aduUploadOK(t testing.TB, a *kwtest.App, id int64, osName, arch string, body []byte) map[string]any {
	t.Helper()
	r := aduUpload(t, a, id, osName, arch, body, "")
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("upload %s/%s to release %d: %s", osName, arch, id, r)
	}
	return r.Obj("artifact")
}

// aduBlobs lists the files (not directories) under the server's blob
// directory, as sorted paths relative to it.
func aduBlobs(t testing.TB, s *kwtest.Server) []string {
	t.Helper()
	root := filepath.Join(s.DataDir, "blobs")
	out := []string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == root {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// aduNoBlobs fails unless the blob directory holds no file at all.
func aduNoBlobs(t testing.TB, s *kwtest.Server, after string) {
	t.Helper()
	if files := aduBlobs(t, s); len(files) != 0 {
		t.Fatalf("after %s the blob directory holds %v; want no file at all", after, files)
	}
}

// aduPost POSTs body (app_id added) to updates.php.
func aduPost(a *kwtest.App, body map[string]any) *kwtest.Reply {
	a.S.T.Helper()
	return a.S.Admin("POST", kwtest.PathAdminUpdates, adcBody(a.ID, body))
}

// aduAct applies a release action (publish, rollout, halt, …) to id.
func aduAct(a *kwtest.App, action string, id int64, extra map[string]any) *kwtest.Reply {
	a.S.T.Helper()
	body := map[string]any{"action": action, "id": id}
	for k, v := range extra {
		body[k] = v
	}
	return aduPost(a, body)
}

// aduActOK is aduAct that fails unless it succeeds, returning the release.
func aduActOK(t testing.TB, a *kwtest.App, action string, id int64, extra map[string]any) map[string]any {
	t.Helper()
	r := aduAct(a, action, id, extra)
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("%s release %d: %s", action, id, r)
	}
	rel := r.Obj("release")
	if rel == nil {
		t.Fatalf("%s release %d: no release in %s", action, id, r)
	}
	return rel
}

// aduGet returns one release as GET updates.php?app_id=&id= shows it.
func aduGet(t testing.TB, a *kwtest.App, id int64) map[string]any {
	t.Helper()
	return a.S.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+url.QueryEscape(a.ID)+"&id="+fmt.Sprint(id), nil).Obj("release")
}

// aduArts returns a release's artifacts.
func aduArts(t testing.TB, rel map[string]any) []map[string]any {
	t.Helper()
	raw, ok := rel["artifacts"].([]any)
	if !ok {
		t.Fatalf("release has no artifacts array: %v", rel)
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i] = x.(map[string]any)
	}
	return out
}

// aduCheckReply sends a sealed update check and returns the opened reply.
func aduCheckReply(t testing.TB, a *kwtest.App, body map[string]any) *kwtest.Reply {
	t.Helper()
	r := a.Env(aduCheck, body)
	if !r.Sealed || r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("update check %v: %s (sealed=%v, body %v)", body, r, r.Sealed, r.Body)
	}
	return r
}

// aduOffered returns the version a client check is offered ("" for none).
func aduOffered(t testing.TB, a *kwtest.App, body map[string]any) string {
	t.Helper()
	r := aduCheckReply(t, a, body)
	if r.Body["update_available"] != true {
		if r.Body["update"] != nil {
			t.Fatalf("no update available but an update object: %v", r.Body)
		}
		return ""
	}
	v, _ := r.Obj("update")["version"].(string)
	return v
}

// aduDownloadReply downloads version v[?os&arch] with the app secret.
func aduDownloadReply(t testing.TB, a *kwtest.App, query string) *kwtest.Reply {
	t.Helper()
	return a.S.Do("GET", aduDownload+"?"+query, http.Header{"X-App-Secret": {a.Secret}}, nil)
}

// aduAudit returns the app's audit entries whose action starts with
// "release." or "update.", oldest first.
func aduAudit(t testing.TB, a *kwtest.App) []map[string]any {
	t.Helper()
	all := a.S.Audit(t, "app_id="+url.QueryEscape(a.ID)+"&limit=1000")
	var out []map[string]any
	for i := len(all) - 1; i >= 0; i-- {
		if act, _ := all[i]["action"].(string); strings.HasPrefix(act, "release.") || strings.HasPrefix(act, "update.") {
			out = append(out, all[i])
		}
	}
	return out
}

// aduPublished returns the data of the app's update.published events.
func aduPublished(t testing.TB, s *kwtest.Server, appID string) []map[string]any {
	t.Helper()
	return s.EventsOf(appID, event.UpdatePublished)
}

// aduStats returns GET updates.php?action=stats&days=… (days "" omits it).
func aduStats(t testing.TB, a *kwtest.App, days string) *kwtest.Reply {
	t.Helper()
	p := kwtest.PathAdminUpdates + "?action=stats&app_id=" + url.QueryEscape(a.ID)
	if days != "" {
		p += "&days=" + days
	}
	return a.S.MustAdmin("GET", p, nil)
}

// aduVersions turns a stats reply's versions[] into version → [offered, running].
func aduVersions(t testing.TB, r *kwtest.Reply) map[string][2]int {
	t.Helper()
	out := map[string][2]int{}
	for _, v := range r.List(t, "versions") {
		name, _ := v["version"].(string)
		if _, dup := out[name]; dup {
			t.Fatalf("version %s twice in stats: %s", name, r)
		}
		out[name] = [2]int{kwtest.Num(t, "offered", v["offered"]), kwtest.Num(t, "running", v["running"])}
	}
	return out
}

// aduFloors returns the min_supported map of GET updates.php?app_id=.
func aduFloors(t testing.TB, a *kwtest.App) map[string]any {
	t.Helper()
	r := a.S.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+url.QueryEscape(a.ID), nil)
	m, ok := r.Body["min_supported"].(map[string]any)
	if !ok {
		t.Fatalf("list has no min_supported object: %s", r)
	}
	return m
}

// ---- create

func TestAdminUpdatesCreate(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Updates")

		r := s.MustAdmin("POST", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID, "version": "1.0.0"})
		rel := r.Obj("release")
		if m, _ := r.Body["message"].(string); m == "" {
			t.Errorf("create reply has no message: %s", r)
		}
		id := adcID(t, rel["id"])
		now := license.Timestamp(s.Clock.Now())
		adcSame(t, "new release", rel, map[string]any{"id": float64(id), "version": "1.0.0", "channel": "stable", "changelog": "",
			"is_mandatory": false, "min_version": "", "rollout": float64(10000), "rollout_percent": float64(100), "status": "draft",
			"published": false, "halted": false, "yanked": false, "artifacts": []any{}, "published_at": nil,
			"created_at": now, "updated_at": now})
		adcSame(t, "GET of the new release", aduGet(t, a, id), rel)

		// rollout_percent 12.5 is 1250 basis points; every other field set.
		rel = aduPost(a, map[string]any{"version": "v1.1.0", "channel": "Beta", "changelog": "Fixes.", "is_mandatory": true,
			"min_version": "1.0.0", "rollout_percent": 12.5}).Obj("release")
		for k, want := range map[string]any{"version": "1.1.0", "channel": "beta", "changelog": "Fixes.", "is_mandatory": true,
			"min_version": "1.0.0", "rollout": float64(1250), "rollout_percent": 12.5, "status": "draft", "published": false} {
			if !reflect.DeepEqual(rel[k], want) {
				t.Errorf("created %s = %#v, want %#v (release %v)", k, rel[k], want, rel)
			}
		}
		if got := aduGet(t, a, adcID(t, rel["id"]))["rollout"]; got != float64(1250) {
			t.Errorf("stored rollout %v, want 1250", got)
		}
		// rollout in basis points, and a pre-release on beta.
		if rel := aduPost(a, map[string]any{"version": "2.0.0-beta.1", "channel": "beta", "rollout": 0}).Obj("release"); rel["rollout"] != float64(0) ||
			rel["version"] != "2.0.0-beta.1" || rel["channel"] != "beta" {
			t.Errorf("pre-release on beta with rollout 0: %v", rel)
		}
		created := len(aduAudit(t, a))
		if created != 3 {
			t.Fatalf("%d release audit entries after three creates, want 3", created)
		}

		bad := []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"no version", map[string]any{}, 400, "MISSING_FIELDS"},
			{"invalid version", map[string]any{"version": "1.0"}, 400, "MISSING_FIELDS"},
			{"leading zero", map[string]any{"version": "01.2.3"}, 400, "MISSING_FIELDS"},
			{"number version", map[string]any{"version": 2}, 400, "MISSING_FIELDS"},
			{"duplicate", map[string]any{"version": "1.0.0"}, 409, "VERSION_EXISTS"},
			{"duplicate with v", map[string]any{"version": "v1.0.0", "channel": "beta"}, 409, "VERSION_EXISTS"},
			{"duplicate but build metadata", map[string]any{"version": "1.0.0+build.7"}, 409, "VERSION_EXISTS"},
			{"pre-release on stable", map[string]any{"version": "3.0.0-rc.1"}, 400, "MISSING_FIELDS"},
			{"pre-release on explicit stable", map[string]any{"version": "3.0.0-rc.1", "channel": "stable"}, 400, "MISSING_FIELDS"},
			{"unknown channel", map[string]any{"version": "3.0.0", "channel": "nightly"}, 400, "MISSING_FIELDS"},
			{"min_version equal", map[string]any{"version": "3.0.0", "min_version": "3.0.0"}, 400, "MISSING_FIELDS"},
			{"min_version above", map[string]any{"version": "3.0.0", "min_version": "3.0.1"}, 400, "MISSING_FIELDS"},
			{"min_version invalid", map[string]any{"version": "3.0.0", "min_version": "2"}, 400, "MISSING_FIELDS"},
			{"rollout 10001", map[string]any{"version": "3.0.0", "rollout": 10001}, 400, "MISSING_FIELDS"},
			{"rollout -1", map[string]any{"version": "3.0.0", "rollout": -1}, 400, "MISSING_FIELDS"},
			{"rollout fraction", map[string]any{"version": "3.0.0", "rollout": 12.5}, 400, "MISSING_FIELDS"},
			{"rollout_percent 100.5", map[string]any{"version": "3.0.0", "rollout_percent": 100.5}, 400, "MISSING_FIELDS"},
			{"rollout_percent text", map[string]any{"version": "3.0.0", "rollout_percent": "50"}, 400, "MISSING_FIELDS"},
			{"is_mandatory text", map[string]any{"version": "3.0.0", "is_mandatory": "yes"}, 400, "MISSING_FIELDS"},
			{"published at create", map[string]any{"version": "3.0.0", "published": true}, 409, "NO_ARTIFACT"},
			{"unknown action", map[string]any{"version": "3.0.0", "action": "launch"}, 400, "MISSING_FIELDS"},
		}
		for _, c := range bad {
			r := aduPost(a, c.body)
			if r.Status != c.status || r.Body["error_code"] != c.code {
				t.Errorf("%s: got %s, want %d %s", c.name, r, c.status, c.code)
				continue
			}
			r.JSONFail(t, c.status, c.code)
		}
		// Explicit JSON null for rollout keeps the default.
		if rel := aduPost(a, map[string]any{"version": "3.0.0", "rollout": nil}).Obj("release"); rel["rollout"] != float64(10000) {
			t.Errorf("rollout null: %v, want the default 10000", rel)
		}

		s.Admin("POST", kwtest.PathAdminUpdates, map[string]any{"app_id": "nope-app", "version": "9.0.0"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("POST", kwtest.PathAdminUpdates, map[string]any{"version": "9.0.0"}).JSONFail(t, 400, "MISSING_FIELDS")
		noBearer := s.Do("POST", kwtest.PathAdminUpdates, http.Header{"Content-Type": {"application/json"}}, kwtest.JSON(t, map[string]any{"app_id": a.ID, "version": "9.0.0"}))
		noBearer.JSONFail(t, 401, "UNAUTHORIZED")
		if r := s.Do("POST", kwtest.PathAdminUpdates, kwtest.Bearer("not-a-token"), kwtest.JSON(t, map[string]any{"app_id": a.ID, "version": "9.0.0"})); r.Status != 401 {
			t.Errorf("bad bearer: %s, want 401", r)
		}
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			if r := s.Do(m, kwtest.PathAdminUpdates+"?app_id="+a.ID, nil, nil); r.Status != 401 {
				t.Errorf("%s without bearer: %s, want 401", m, r)
			}
		}
		if r := s.Admin("PATCH", kwtest.PathAdminUpdates, nil); r.Status != 405 {
			t.Errorf("PATCH: %s, want 405", r)
		}

		// Nothing refused was stored or audited.
		rels := s.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID, nil).List(t, "releases")
		var versions []string
		for _, rel := range rels {
			versions = append(versions, rel["version"].(string))
		}
		if want := []string{"3.0.0", "2.0.0-beta.1", "1.1.0", "1.0.0"}; !reflect.DeepEqual(versions, want) {
			t.Errorf("releases %v, want %v", versions, want)
		}
		if n := len(aduAudit(t, a)); n != created+1 {
			t.Errorf("%d release audit entries, want %d: refusals must not be audited", n, created+1)
		}
	})
}

// ---- upload

func TestAdminUpdatesUpload(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Uploads")
		other := s.CreateApp("Other")
		id := a.CreateRelease("1.0.0", nil)
		payload := []byte("first build of 1.0.0")
		q := func(kv ...string) url.Values {
			v := url.Values{"app_id": {a.ID}, "id": {fmt.Sprint(id)}}
			for i := 0; i < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
		none := func(what string) {
			t.Helper()
			if arts := aduArts(t, aduGet(t, a, id)); len(arts) != 0 {
				t.Fatalf("after %s the release has artifacts %v; want none", what, arts)
			}
			aduNoBlobs(t, s, what)
		}

		// Refusals first, while the blob directory must stay empty.
		wrong := aduSum([]byte("something else"))
		aduUpload(t, a, id, "", "", payload, wrong).JSONFail(t, 400, "CHECKSUM_MISMATCH")
		none("a checksum mismatch (query)")
		aduPut(t, s, q(), http.Header{"X-Checksum-Sha256": {wrong}}, bytes.NewReader(payload)).JSONFail(t, 400, "CHECKSUM_MISMATCH")
		none("a checksum mismatch (header)")
		aduPut(t, s, q(), http.Header{"X-Checksum-Sha256": {wrong}}, io.MultiReader(bytes.NewReader(payload))).JSONFail(t, 400, "CHECKSUM_MISMATCH")
		none("a chunked checksum mismatch")
		for _, sum := range []string{"xyz", aduSum(payload)[:62], aduSum(payload) + "00", strings.Repeat("g", 64)} {
			aduUpload(t, a, id, "", "", payload, sum).JSONFail(t, 400, "MISSING_FIELDS")
			none("a malformed sha256 " + sum)
		}
		aduUpload(t, a, id, "", "", nil, "").JSONFail(t, 400, "MISSING_FIELDS")
		none("an empty body")
		aduPut(t, s, q(), nil, io.MultiReader(strings.NewReader(""))).JSONFail(t, 400, "MISSING_FIELDS")
		none("an empty chunked body")
		r := aduPut(t, s, q(), http.Header{"Content-Type": {"application/json"}}, strings.NewReader(`{}`))
		r.JSONFail(t, 400, "MISSING_FIELDS")
		if !strings.Contains(r.Str("message"), "application/octet-stream") {
			t.Errorf("JSON upload refusal does not name octet-stream: %s", r)
		}
		none("a JSON upload")
		if r := aduPut(t, s, q(), http.Header{"Content-Type": {"application/json"}}, bytes.NewReader(payload)); r.Status != 400 {
			t.Errorf("raw bytes sent as JSON: %s, want 400", r)
		}
		if r := aduPut(t, s, q(), http.Header{"Content-Type": {"text/plain"}}, bytes.NewReader(payload)); r.Status != 400 {
			t.Errorf("text/plain upload: %s, want 400", r)
		}
		none("uploads of the wrong content type")
		aduUpload(t, a, id, "plan9", "", payload, "").JSONFail(t, 400, "MISSING_FIELDS")
		aduUpload(t, a, id, "windows", "mips", payload, "").JSONFail(t, 400, "MISSING_FIELDS")
		aduUpload(t, a, id, "", "x64", payload, "").JSONFail(t, 400, "MISSING_FIELDS")
		aduPut(t, s, q("file_name", "../etc/passwd"), nil, bytes.NewReader(payload)).JSONFail(t, 400, "MISSING_FIELDS")
		aduPut(t, s, url.Values{"app_id": {a.ID}}, nil, bytes.NewReader(payload)).JSONFail(t, 400, "MISSING_FIELDS")
		aduPut(t, s, q("id", "abc"), nil, bytes.NewReader(payload)).JSONFail(t, 400, "MISSING_FIELDS")
		aduPut(t, s, q("id", "999999"), nil, bytes.NewReader(payload)).JSONFail(t, 404, "NOT_FOUND")
		aduPut(t, s, q("app_id", other.ID), nil, bytes.NewReader(payload)).JSONFail(t, 404, "NOT_FOUND")
		aduPut(t, s, q("app_id", "nope-app"), nil, bytes.NewReader(payload)).JSONFail(t, 404, "NOT_FOUND")
		noBearer, _ := http.NewRequest("PUT", s.URL+kwtest.PathAdminUpdates+"?"+q("action", "upload").Encode(), bytes.NewReader(payload))
		noBearer.Header.Set("Content-Type", "application/octet-stream")
		if resp, err := kwtest.HTTP.Do(noBearer); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("upload without bearer: %d, want 401", resp.StatusCode)
			}
		}
		none("refused uploads")
		if n := len(aduAudit(t, a)); n != 1 {
			t.Errorf("%d release audit entries after refused uploads, want only the create", n)
		}

		// The server computes size and sha256; a matching claim is accepted,
		// whether in the query or the header, and any case.
		r = aduUpload(t, a, id, "", "", payload, "")
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("upload: %s", r)
		}
		adcSame(t, "uploaded artifact", r.Obj("artifact"), map[string]any{"os": "", "arch": "", "file_name": "update-1.0.0.bin",
			"size": float64(len(payload)), "sha256": aduSum(payload)})
		arts := aduArts(t, r.Obj("release"))
		if len(arts) != 1 || arts[0]["sha256"] != aduSum(payload) || arts[0]["download_url"] != "api/update/download.php?v=1.0.0" {
			t.Fatalf("release after upload: %v", arts)
		}
		if files := aduBlobs(t, s); len(files) != 1 || !strings.HasPrefix(files[0], fmt.Sprintf("releases/%d/", id)) {
			t.Fatalf("blob files after one upload: %v", files)
		}

		win := []byte("windows x64 build")
		r = aduUpload(t, a, id, "Win64", "AMD64", win, strings.ToUpper(aduSum(win)))
		if r.Status != 200 || r.Obj("artifact")["os"] != "windows" || r.Obj("artifact")["arch"] != "x64" ||
			r.Obj("artifact")["file_name"] != "update-1.0.0-windows-x64.bin" {
			t.Fatalf("upload with a matching query sha256 and aliases: %s", r)
		}
		mac := []byte("macos arm64 build")
		r = aduPut(t, s, q("os", "darwin", "arch", "aarch64", "file_name", "MyApp 1.0 (mac).zip"),
			http.Header{"X-Checksum-Sha256": {aduSum(mac)}}, io.MultiReader(bytes.NewReader(mac)))
		if r.Status != 200 || r.Obj("artifact")["os"] != "macos" || r.Obj("artifact")["arch"] != "arm64" ||
			r.Obj("artifact")["file_name"] != "MyApp 1.0 (mac).zip" || r.Obj("artifact")["size"] != float64(len(mac)) {
			t.Fatalf("chunked upload with a matching header sha256: %s", r)
		}
		linux := []byte("linux, any arch")
		aduUploadOK(t, a, id, "linux", "", linux)
		if files := aduBlobs(t, s); len(files) != 4 {
			t.Fatalf("blob files after four artifacts: %v", files)
		}
		arts = aduArts(t, aduGet(t, a, id))
		if len(arts) != 4 {
			t.Fatalf("artifacts %v, want four", arts)
		}
		for _, art := range arts {
			if art["os"] == "windows" && art["download_url"] != "api/update/download.php?v=1.0.0&os=windows&arch=x64" {
				t.Errorf("windows download_url %v", art["download_url"])
			}
		}

		// Re-uploading os/arch on a draft replaces that artifact and deletes
		// the old bytes.
		before := aduBlobs(t, s)
		win2 := []byte("windows x64 build, take two")
		aduUploadOK(t, a, id, "windows", "x64", win2)
		after := aduBlobs(t, s)
		if len(after) != 4 {
			t.Fatalf("blob files after a replacement: %v, want still four", after)
		}
		var gone, added []string
		for _, f := range before {
			if !slices.Contains(after, f) {
				gone = append(gone, f)
			}
		}
		for _, f := range after {
			if !slices.Contains(before, f) {
				added = append(added, f)
			}
		}
		if len(gone) != 1 || len(added) != 1 {
			t.Fatalf("replacement: removed %v, added %v; want exactly one of each", gone, added)
		}
		if _, err := os.Stat(filepath.Join(s.DataDir, "blobs", filepath.FromSlash(gone[0]))); !os.IsNotExist(err) {
			t.Fatalf("replaced blob %s still on disk: %v", gone[0], err)
		}
		arts = aduArts(t, aduGet(t, a, id))
		var wins []map[string]any
		for _, art := range arts {
			if art["os"] == "windows" {
				wins = append(wins, art)
			}
		}
		if len(arts) != 4 || len(wins) != 1 || wins[0]["sha256"] != aduSum(win2) || wins[0]["size"] != float64(len(win2)) {
			t.Fatalf("after replacement: %v", arts)
		}

		// A refused replacement keeps the artifact it would have replaced.
		before = aduBlobs(t, s)
		aduUpload(t, a, id, "windows", "x64", []byte("bad take"), aduSum(win)).JSONFail(t, 400, "CHECKSUM_MISMATCH")
		if got := aduBlobs(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("a refused replacement changed the blobs: %v → %v", before, got)
		}
		for _, art := range aduArts(t, aduGet(t, a, id)) {
			if art["os"] == "windows" && art["sha256"] != aduSum(win2) {
				t.Fatalf("a refused replacement changed the artifact: %v", art)
			}
		}

		// A published release keeps its artifacts: same os/arch refused
		// (nothing written), a new platform accepted.
		aduActOK(t, a, "publish", id, nil)
		before = aduBlobs(t, s)
		aduUpload(t, a, id, "windows", "x64", []byte("sneaky"), "").JSONFail(t, 409, "ARTIFACT_PUBLISHED")
		aduUpload(t, a, id, "", "", []byte("sneaky"), "").JSONFail(t, 409, "ARTIFACT_PUBLISHED")
		aduUpload(t, a, id, "linux", "", []byte("sneaky"), "").JSONFail(t, 409, "ARTIFACT_PUBLISHED")
		if got := aduBlobs(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("refused uploads to a published release changed the blobs: %v → %v", before, got)
		}
		x86 := []byte("windows x86 build")
		aduUploadOK(t, a, id, "windows", "x86", x86)
		arts = aduArts(t, aduGet(t, a, id))
		if len(arts) != 5 || len(aduBlobs(t, s)) != 5 {
			t.Fatalf("after adding a platform to a published release: %v, blobs %v", arts, aduBlobs(t, s))
		}
		for _, art := range arts {
			if art["os"] == "windows" && art["arch"] == "x64" && art["sha256"] != aduSum(win2) {
				t.Fatalf("published artifact changed: %v", art)
			}
		}
		// Downloads serve the stored bytes.
		for query, want := range map[string][]byte{"v=1.0.0&os=windows&arch=x86": x86, "v=1.0.0&os=windows&arch=x64": win2, "v=1.0.0": payload} {
			r := aduDownloadReply(t, a, query)
			if r.Status != 200 || !bytes.Equal(r.Raw, want) {
				t.Errorf("download %s: %d %q, want %q", query, r.Status, r.Raw, want)
			}
		}

		// Yanked releases take no uploads.
		aduActOK(t, a, "yank", id, nil)
		aduUpload(t, a, id, "macos", "x64", []byte("late"), "").JSONFail(t, 409, "RELEASE_YANKED")
		if n := len(aduBlobs(t, s)); n != 5 {
			t.Fatalf("%d blobs after a refused upload to a yanked release, want 5", n)
		}
	})
}

// An artifact over --max-artifact-mb is refused with BODY_TOO_LARGE and leaves
// nothing, whether the server learns its size from Content-Length or only by
// reading a chunked body; exactly the limit is accepted.
func TestAdminUpdatesUploadLimit(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, func(c *config.Config) { c.MaxArtifactSize = 1 })
		a := s.CreateApp("Limit")
		id := a.CreateRelease("1.0.0", nil)
		q := url.Values{"app_id": {a.ID}, "id": {fmt.Sprint(id)}}
		big := bytes.Repeat([]byte{0xA5}, 1<<20+1)
		none := func(what string) {
			t.Helper()
			if arts := aduArts(t, aduGet(t, a, id)); len(arts) != 0 {
				t.Fatalf("after %s the release has artifacts %v", what, arts)
			}
			aduNoBlobs(t, s, what)
		}

		// Content-Length over the limit: refused before the body is read
		// (Expect: 100-continue keeps the client from sending it).
		aduPut(t, s, q, http.Header{"Expect": {"100-continue"}}, bytes.NewReader(big)).JSONFail(t, 400, "BODY_TOO_LARGE")
		none("an upload with a Content-Length over the limit")
		// Chunked: refused once the stream passes the limit.
		aduPut(t, s, q, nil, io.MultiReader(bytes.NewReader(big))).JSONFail(t, 400, "BODY_TOO_LARGE")
		none("a chunked upload over the limit")
		if n := len(aduAudit(t, a)); n != 1 {
			t.Errorf("%d release audit entries, want only the create", n)
		}

		exact := big[:1<<20]
		r := aduPut(t, s, q, nil, io.MultiReader(bytes.NewReader(exact)))
		if r.Status != 200 || r.Obj("artifact")["size"] != float64(1<<20) || r.Obj("artifact")["sha256"] != aduSum(exact) {
			t.Fatalf("chunked upload of exactly the limit: %s", r)
		}
		r = aduUpload(t, a, id, "", "", exact, aduSum(exact))
		if r.Status != 200 || r.Obj("artifact")["size"] != float64(1<<20) {
			t.Fatalf("upload of exactly the limit with Content-Length: %s", r)
		}
		if files := aduBlobs(t, s); len(files) != 1 {
			t.Fatalf("blob files %v, want the one artifact", files)
		}
	})
}

// ---- publish

func TestAdminUpdatesPublish(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Publish")
		id := a.CreateRelease("1.2.0", map[string]any{"channel": "beta", "changelog": "New things.", "rollout": 2500})

		aduAct(a, "publish", id, nil).JSONFail(t, 409, "NO_ARTIFACT")
		if rel := aduGet(t, a, id); rel["status"] != "draft" || rel["published"] != false || rel["published_at"] != nil {
			t.Fatalf("refused publish changed the release: %v", rel)
		}
		if evs := aduPublished(t, s, a.ID); len(evs) != 0 {
			t.Fatalf("refused publish fired events: %v", evs)
		}
		aduAct(a, "publish", 999999, nil).JSONFail(t, 404, "NOT_FOUND")
		aduPost(a, map[string]any{"action": "publish"}).JSONFail(t, 400, "MISSING_FIELDS")

		aduUploadOK(t, a, id, "", "", []byte("bytes"))
		s.Clock.Advance(90 * time.Minute)
		at := license.Timestamp(s.Clock.Now())
		r := aduAct(a, "publish", id, nil)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("publish: %s", r)
		}
		rel := r.Obj("release")
		if rel["status"] != "published" || rel["published"] != true || rel["published_at"] != at || rel["updated_at"] != at {
			t.Fatalf("published release: %v, want published at %s", rel, at)
		}
		kwtest.WireTime(t, "published_at", rel["published_at"])
		adcSame(t, "GET after publish", aduGet(t, a, id), rel)

		evs := aduPublished(t, s, a.ID)
		if len(evs) != 1 {
			t.Fatalf("%d update.published events, want 1: %v", len(evs), evs)
		}
		e := evs[0]
		if e["version"] != "1.2.0" || e["channel"] != "beta" || e["id"] != float64(id) || e["rollout"] != float64(2500) ||
			e["changelog"] != "New things." || e["is_mandatory"] != false {
			t.Fatalf("update.published data %v", e)
		}

		s.Clock.Advance(time.Hour)
		aduAct(a, "publish", id, nil).JSONFail(t, 409, "ALREADY_PUBLISHED")
		if rel := aduGet(t, a, id); rel["published_at"] != at {
			t.Fatalf("second publish moved published_at: %v", rel)
		}
		if evs := aduPublished(t, s, a.ID); len(evs) != 1 {
			t.Fatalf("second publish fired an event: %v", evs)
		}
	})
}

// ---- rollout, halt, resume, yank, unyank

func TestAdminUpdatesRollout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Rollout")
		payload := []byte("2.0.0 payload")
		id := a.Release("2.0.0", payload, nil)
		check := map[string]any{"v": "1.0.0", "hwid": "device-1"}
		if v := aduOffered(t, a, check); v != "2.0.0" {
			t.Fatalf("published at 100%%: offered %q", v)
		}

		if rel := aduActOK(t, a, "rollout", id, map[string]any{"rollout": 0}); rel["rollout"] != float64(0) || rel["rollout_percent"] != float64(0) {
			t.Fatalf("rollout 0: %v", rel)
		}
		if v := aduOffered(t, a, check); v != "" {
			t.Fatalf("rollout 0: offered %q", v)
		}
		if rel := aduActOK(t, a, "rollout", id, map[string]any{"rollout": 2500}); rel["rollout"] != float64(2500) {
			t.Fatalf("rollout 2500: %v", rel)
		}
		if rel := aduActOK(t, a, "rollout", id, map[string]any{"rollout_percent": 33.33}); rel["rollout"] != float64(3333) {
			t.Fatalf("rollout_percent 33.33: %v", rel)
		}
		if rel := aduGet(t, a, id); rel["rollout"] != float64(3333) || rel["status"] != "published" {
			t.Fatalf("GET after rollout: %v", rel)
		}
		aduAct(a, "rollout", id, nil).JSONFail(t, 400, "MISSING_FIELDS")
		aduAct(a, "rollout", id, map[string]any{"rollout": nil}).JSONFail(t, 400, "MISSING_FIELDS")
		aduAct(a, "rollout", id, map[string]any{"rollout": 10001}).JSONFail(t, 400, "MISSING_FIELDS")
		aduAct(a, "rollout", id, map[string]any{"rollout": "half"}).JSONFail(t, 400, "MISSING_FIELDS")
		aduAct(a, "rollout", id, map[string]any{"rollout_percent": -1}).JSONFail(t, 400, "MISSING_FIELDS")
		aduAct(a, "rollout", 999999, map[string]any{"rollout": 10}).JSONFail(t, 404, "NOT_FOUND")
		if rel := aduGet(t, a, id); rel["rollout"] != float64(3333) {
			t.Fatalf("refused rollouts changed it: %v", rel)
		}

		// Halt freezes the rollout; resume unfreezes it.
		rel := aduActOK(t, a, "halt", id, nil)
		if rel["status"] != "halted" || rel["halted"] != true || rel["published"] != true || rel["rollout"] != float64(3333) {
			t.Fatalf("halted: %v", rel)
		}
		aduAct(a, "rollout", id, map[string]any{"rollout": 10000}).JSONFail(t, 409, "ROLLOUT_HALTED")
		if rel := aduGet(t, a, id); rel["rollout"] != float64(3333) || rel["status"] != "halted" {
			t.Fatalf("refused rollout of a halted release changed it: %v", rel)
		}
		rel = aduActOK(t, a, "resume", id, nil)
		if rel["status"] != "published" || rel["halted"] != false {
			t.Fatalf("resumed: %v", rel)
		}
		if rel := aduActOK(t, a, "rollout", id, map[string]any{"rollout": 10000}); rel["rollout"] != float64(10000) {
			t.Fatalf("rollout after resume: %v", rel)
		}
		if v := aduOffered(t, a, check); v != "2.0.0" {
			t.Fatalf("back at 100%%: offered %q", v)
		}
		if r := aduDownloadReply(t, a, "v=2.0.0"); r.Status != 200 || !bytes.Equal(r.Raw, payload) {
			t.Fatalf("download before yank: %s", r)
		}

		// Yank withdraws: not offered, not downloadable, no rollout changes.
		rel = aduActOK(t, a, "yank", id, nil)
		if rel["status"] != "yanked" || rel["yanked"] != true {
			t.Fatalf("yanked: %v", rel)
		}
		if v := aduOffered(t, a, check); v != "" {
			t.Fatalf("yanked release offered: %q", v)
		}
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0"}); v != "" {
			t.Fatalf("yanked release offered to an anonymous caller: %q", v)
		}
		aduDownloadReply(t, a, "v=2.0.0").JSONFail(t, 404, "NOT_FOUND")
		aduAct(a, "rollout", id, map[string]any{"rollout": 5000}).JSONFail(t, 409, "RELEASE_YANKED")
		if rel := aduGet(t, a, id); rel["status"] != "yanked" {
			t.Fatalf("GET after yank: %v", rel)
		}

		rel = aduActOK(t, a, "unyank", id, nil)
		if rel["status"] != "published" || rel["yanked"] != false || rel["rollout"] != float64(10000) {
			t.Fatalf("unyanked: %v", rel)
		}
		if v := aduOffered(t, a, check); v != "2.0.0" {
			t.Fatalf("unyanked release not offered: %q", v)
		}
		if r := aduDownloadReply(t, a, "v=2.0.0"); r.Status != 200 || !bytes.Equal(r.Raw, payload) {
			t.Fatalf("download after unyank: %s", r)
		}
		aduAct(a, "explode", id, nil).JSONFail(t, 400, "MISSING_FIELDS")

		// A halted, yanked release shows as yanked; unyank brings back halted.
		aduActOK(t, a, "halt", id, nil)
		if rel := aduActOK(t, a, "yank", id, nil); rel["status"] != "yanked" {
			t.Fatalf("halted and yanked: %v", rel)
		}
		if rel := aduActOK(t, a, "unyank", id, nil); rel["status"] != "halted" {
			t.Fatalf("unyanked halted release: %v", rel)
		}
	})
}

// ---- edit

func TestAdminUpdatesEdit(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Edit")
		id := a.Release("2.0.0", []byte("two"), map[string]any{"channel": "beta", "changelog": "Beta notes."})
		pre := a.Release("2.1.0-beta.1", []byte("pre"), map[string]any{"channel": "beta"})
		put := func(body map[string]any) *kwtest.Reply {
			return s.Admin("PUT", kwtest.PathAdminUpdates, adcBody(a.ID, body))
		}
		stable := map[string]any{"v": "1.0.0", "hwid": "h"}

		if v := aduOffered(t, a, stable); v != "" {
			t.Fatalf("beta release offered on stable: %q", v)
		}
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0", "hwid": "h", "channel": "beta"}); v != "2.1.0-beta.1" {
			t.Fatalf("beta caller offered %q", v)
		}

		// Promote the beta to stable.
		s.Clock.Advance(time.Minute)
		r := put(map[string]any{"id": id, "channel": "stable"})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("promote: %s", r)
		}
		rel := r.Obj("release")
		if rel["channel"] != "stable" || rel["status"] != "published" || rel["changelog"] != "Beta notes." ||
			rel["updated_at"] != license.Timestamp(s.Clock.Now()) {
			t.Fatalf("promoted: %v", rel)
		}
		adcSame(t, "GET after promote", aduGet(t, a, id), rel)
		if v := aduOffered(t, a, stable); v != "2.0.0" {
			t.Fatalf("promoted release offered %q on stable", v)
		}

		// A pre-release cannot be promoted to stable.
		put(map[string]any{"id": pre, "channel": "stable"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": id, "channel": "edge"}).JSONFail(t, 400, "MISSING_FIELDS")
		if rel := aduGet(t, a, pre); rel["channel"] != "beta" {
			t.Fatalf("refused promotion changed the channel: %v", rel)
		}

		// changelog, is_mandatory, min_version.
		r = put(map[string]any{"id": id, "changelog": "Stable notes.", "is_mandatory": true, "min_version": "1.5.0"})
		if r.Status != 200 {
			t.Fatalf("edit: %s", r)
		}
		got := aduGet(t, a, id)
		for k, want := range map[string]any{"changelog": "Stable notes.", "is_mandatory": true, "min_version": "1.5.0", "channel": "stable",
			"rollout": float64(10000), "status": "published"} {
			if got[k] != want {
				t.Errorf("after edit %s = %#v, want %#v", k, got[k], want)
			}
		}
		// The gate and the flag reach clients.
		if v := aduOffered(t, a, stable); v != "" {
			t.Fatalf("caller below min_version offered %q", v)
		}
		c := aduCheckReply(t, a, map[string]any{"v": "1.5.0", "hwid": "h"})
		if u := c.Obj("update"); u["version"] != "2.0.0" || u["is_mandatory"] != true || u["changelog"] != "Stable notes." {
			t.Fatalf("check after edit: %v", c.Body)
		}

		// Fields left out stay; min_version "" clears; bad values change nothing.
		if r := put(map[string]any{"id": id, "min_version": ""}); r.Status != 200 {
			t.Fatalf("clear min_version: %s", r)
		}
		got = aduGet(t, a, id)
		if got["min_version"] != "" || got["changelog"] != "Stable notes." || got["is_mandatory"] != true {
			t.Fatalf("after clearing min_version: %v", got)
		}
		if r := put(map[string]any{"id": id, "is_mandatory": false}); r.Status != 200 || r.Obj("release")["is_mandatory"] != false {
			t.Fatalf("is_mandatory false: %s", r)
		}
		put(map[string]any{"id": id, "min_version": "2.0.0"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": id, "min_version": "banana"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": id, "is_mandatory": "yes"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": id, "changelog": 5}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": id, "changelog": strings.Repeat("x", 100_001)}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"changelog": "no id"}).JSONFail(t, 400, "MISSING_FIELDS")
		put(map[string]any{"id": 999999, "changelog": "x"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("PUT", kwtest.PathAdminUpdates, map[string]any{"app_id": "nope-app", "id": id}).JSONFail(t, 404, "NOT_FOUND")
		if after := aduGet(t, a, id); after["min_version"] != "" || after["changelog"] != "Stable notes." || after["is_mandatory"] != false {
			t.Fatalf("refused edits changed the release: %v", after)
		}
		// Drafts are editable too.
		draft := a.CreateRelease("3.0.0", nil)
		if r := put(map[string]any{"id": draft, "channel": "alpha", "min_version": "2.0.0"}); r.Status != 200 ||
			r.Obj("release")["channel"] != "alpha" || r.Obj("release")["min_version"] != "2.0.0" || r.Obj("release")["status"] != "draft" {
			t.Fatalf("edit a draft: %s", r)
		}
	})
}

// ---- delete

func TestAdminUpdatesDelete(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Delete")
		other := s.CreateApp("Other")
		del := func(app *kwtest.App, id any) *kwtest.Reply {
			return s.Admin("DELETE", kwtest.PathAdminUpdates, map[string]any{"app_id": app.ID, "id": id})
		}

		pub := a.Release("1.0.0", []byte("published bytes"), nil)
		pubBlobs := aduBlobs(t, s)
		draft := a.CreateRelease("2.0.0", nil)
		aduUploadOK(t, a, draft, "windows", "x64", []byte("draft win"))
		aduUploadOK(t, a, draft, "linux", "", []byte("draft linux"))
		if files := aduBlobs(t, s); len(files) != 3 {
			t.Fatalf("blob files %v, want three", files)
		}

		del(a, pub).JSONFail(t, 409, "NOT_DRAFT")
		del(a, 999999).JSONFail(t, 404, "NOT_FOUND")
		del(other, draft).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID}).JSONFail(t, 400, "MISSING_FIELDS")
		if files := aduBlobs(t, s); len(files) != 3 {
			t.Fatalf("refused deletes removed blobs: %v", files)
		}

		r := del(a, draft)
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("delete draft: %s", r)
		}
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&id="+fmt.Sprint(draft), nil).JSONFail(t, 404, "NOT_FOUND")
		if files := aduBlobs(t, s); !reflect.DeepEqual(files, pubBlobs) {
			t.Fatalf("blob files after deleting the draft: %v, want only the published release's %v", files, pubBlobs)
		}
		del(a, draft).JSONFail(t, 404, "NOT_FOUND")
		rels := s.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID, nil).List(t, "releases")
		if len(rels) != 1 || adcID(t, rels[0]["id"]) != pub {
			t.Fatalf("releases after delete: %v", rels)
		}
		// The version is free again; an id in the query works too.
		again := a.CreateRelease("2.0.0", nil)
		if r := s.Admin("DELETE", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&id="+fmt.Sprint(again), nil); r.Status != 200 {
			t.Fatalf("delete by query id: %s", r)
		}
		// A published release stays, and its download keeps working.
		if r := aduDownloadReply(t, a, "v=1.0.0"); r.Status != 200 || string(r.Raw) != "published bytes" {
			t.Fatalf("download of the published release: %s", r)
		}
	})
}

// ---- list

func TestAdminUpdatesList(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("List")
		other := s.CreateApp("Other")
		list := func(app *kwtest.App) *kwtest.Reply {
			return s.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+app.ID, nil)
		}

		r := list(a)
		if rels := r.List(t, "releases"); len(rels) != 0 {
			t.Fatalf("new app has releases: %v", rels)
		}
		if m, ok := r.Body["min_supported"].(map[string]any); !ok || len(m) != 0 {
			t.Fatalf("new app min_supported = %#v, want {}", r.Body["min_supported"])
		}

		// Created out of order; listed by semver precedence, newest first
		// (1.10.0 above 1.9.0, a pre-release below its release).
		ids := map[string]int64{}
		for _, v := range []string{"1.9.0", "2.0.0", "1.0.0", "2.0.0-beta.1", "1.10.0"} {
			var fields map[string]any
			if strings.Contains(v, "-") {
				fields = map[string]any{"channel": "beta"}
			}
			ids[v] = a.CreateRelease(v, fields)
		}
		aduUploadOK(t, a, ids["2.0.0"], "windows", "x64", []byte("w"))
		aduUploadOK(t, a, ids["2.0.0"], "", "", []byte("u"))
		aduActOK(t, a, "publish", ids["2.0.0"], nil)
		other.CreateRelease("5.0.0", nil)
		aduPost(a, map[string]any{"action": "min_supported", "channel": "stable", "version": "1.9.0"})

		r = list(a)
		rels := r.List(t, "releases")
		var versions []string
		for _, rel := range rels {
			versions = append(versions, rel["version"].(string))
		}
		if want := []string{"2.0.0", "2.0.0-beta.1", "1.10.0", "1.9.0", "1.0.0"}; !reflect.DeepEqual(versions, want) {
			t.Fatalf("release order %v, want %v", versions, want)
		}
		if m := r.Body["min_supported"]; !reflect.DeepEqual(m, map[string]any{"stable": "1.9.0"}) {
			t.Fatalf("min_supported %v", m)
		}
		top := rels[0]
		if top["status"] != "published" || len(aduArts(t, top)) != 2 {
			t.Fatalf("listed 2.0.0: %v", top)
		}
		for _, art := range aduArts(t, top) {
			adcID(t, art["id"])
			kwtest.WireTime(t, "artifact created_at", art["created_at"])
			if art["sha256"] == "" || art["size"] != float64(1) || art["file_name"] == "" || art["download_url"] == "" {
				t.Fatalf("listed artifact %v", art)
			}
		}
		for _, rel := range rels[1:] {
			if rel["status"] != "draft" || len(aduArts(t, rel)) != 0 {
				t.Fatalf("listed draft %v", rel)
			}
		}
		// One release by id is the list's entry.
		for _, rel := range rels {
			adcSame(t, "GET id="+rel["version"].(string), aduGet(t, a, adcID(t, rel["id"])), rel)
		}
		// The other app's list is its own.
		if rels := list(other).List(t, "releases"); len(rels) != 1 || rels[0]["version"] != "5.0.0" {
			t.Fatalf("other app's releases %v", rels)
		}
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id="+other.ID+"&id="+fmt.Sprint(ids["2.0.0"]), nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&id=999999", nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&id=x", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&action=everything", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", kwtest.PathAdminUpdates+"?app_id=nope-app", nil).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("GET", kwtest.PathAdminUpdates, nil).JSONFail(t, 400, "MISSING_FIELDS")
	})
}

// ---- min_supported

func TestAdminUpdatesMinSupported(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Floors")
		set := func(channel, version any) *kwtest.Reply {
			return aduPost(a, map[string]any{"action": "min_supported", "channel": channel, "version": version})
		}
		a.Release("2.0.0", []byte("two"), nil)

		r := set("stable", "1.5.0")
		if r.Status != 200 || r.Body["success"] != true || !reflect.DeepEqual(r.Body["min_supported"], map[string]any{"stable": "1.5.0"}) {
			t.Fatalf("set stable floor: %s", r)
		}
		if r := set("Beta", "v1.6.0"); !reflect.DeepEqual(r.Body["min_supported"], map[string]any{"stable": "1.5.0", "beta": "1.6.0"}) {
			t.Fatalf("set beta floor: %s", r)
		}
		if got := aduFloors(t, a); !reflect.DeepEqual(got, map[string]any{"stable": "1.5.0", "beta": "1.6.0"}) {
			t.Fatalf("GET min_supported %v", got)
		}
		// Overwrite.
		set("stable", "1.7.0")
		if got := aduFloors(t, a); got["stable"] != "1.7.0" {
			t.Fatalf("overwritten floor %v", got)
		}

		// A caller below the floor gets its update as mandatory.
		c := aduCheckReply(t, a, map[string]any{"v": "1.0.0", "hwid": "h"})
		if u := c.Obj("update"); u["version"] != "2.0.0" || u["is_mandatory"] != true {
			t.Fatalf("check below the floor: %v", c.Body)
		}
		c = aduCheckReply(t, a, map[string]any{"v": "1.8.0", "hwid": "h"})
		if u := c.Obj("update"); u["version"] != "2.0.0" || u["is_mandatory"] != false {
			t.Fatalf("check above the floor: %v", c.Body)
		}

		// Refusals change nothing.
		for _, bad := range [][2]any{{"nightly", "1.0.0"}, {"", "1.0.0"}, {"stable", "1.0"}, {"stable", "latest"}, {"stable", 1}, {5, "1.0.0"}} {
			set(bad[0], bad[1]).JSONFail(t, 400, "MISSING_FIELDS")
		}
		aduPost(a, map[string]any{"action": "min_supported", "version": "1.0.0"}).JSONFail(t, 400, "MISSING_FIELDS")
		if got := aduFloors(t, a); !reflect.DeepEqual(got, map[string]any{"stable": "1.7.0", "beta": "1.6.0"}) {
			t.Fatalf("refusals changed the floors: %v", got)
		}

		// An empty version clears the channel's floor (whitespace too).
		if r := set("stable", ""); r.Status != 200 || !reflect.DeepEqual(r.Body["min_supported"], map[string]any{"beta": "1.6.0"}) {
			t.Fatalf("clear stable floor: %s", r)
		}
		if r := set("beta", "  "); r.Status != 200 {
			t.Fatalf("clear beta floor: %s", r)
		}
		if got := aduFloors(t, a); len(got) != 0 {
			t.Fatalf("floors after clearing: %v", got)
		}
		if r := set("alpha", ""); r.Status != 200 {
			t.Fatalf("clearing an unset floor: %s", r)
		}
		c = aduCheckReply(t, a, map[string]any{"v": "1.0.0", "hwid": "h"})
		if u := c.Obj("update"); u["is_mandatory"] != false {
			t.Fatalf("check after clearing the floor: %v", c.Body)
		}
	})
}

// ---- explain

func TestAdminUpdatesExplain(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Explain")
		a.Release("1.0.0", []byte("1.0.0"), nil)
		a.Release("2.0.0", []byte("2.0.0"), nil)
		offered := []byte("2.1.0 bytes")
		a.Release("2.1.0", offered, nil)
		a.Release("2.2.0", []byte("2.2.0"), map[string]any{"rollout": 0})
		a.Release("2.3.0", []byte("2.3.0"), map[string]any{"min_version": "1.5.0"})
		a.Release("2.4.0", []byte("2.4.0"), map[string]any{"channel": "beta"})
		yanked := a.Release("2.5.0", []byte("2.5.0"), nil)
		aduActOK(t, a, "yank", yanked, nil)
		a.CreateRelease("3.0.0", nil)

		want := []map[string]any{
			{"version": "3.0.0", "outcome": "unpublished"},
			{"version": "2.5.0", "outcome": "yanked"},
			{"version": "2.4.0", "outcome": "channel"},
			{"version": "2.3.0", "outcome": "min_version"},
			{"version": "2.2.0", "outcome": "rollout"},
			{"version": "2.1.0", "outcome": "offered"},
			{"version": "2.0.0", "outcome": "superseded"},
			{"version": "1.0.0", "outcome": "not_newer"},
		}
		verify := func(what string, r *kwtest.Reply) {
			t.Helper()
			if r.Status != 200 || r.Body["success"] != true || r.Body["update_available"] != true {
				t.Fatalf("%s: %s", what, r)
			}
			u := r.Obj("update")
			if u["version"] != "2.1.0" || u["channel"] != "stable" || u["sha256"] != aduSum(offered) || u["size"] != float64(len(offered)) ||
				u["file_size"] != float64(len(offered)) || u["is_mandatory"] != false || u["download_url"] != "api/update/download.php?v=2.1.0" {
				t.Fatalf("%s: update %v", what, u)
			}
			reasons := r.List(t, "reasons")
			if len(reasons) != len(want) {
				t.Fatalf("%s: %d reasons, want one per release (%d): %v", what, len(reasons), len(want), reasons)
			}
			for i, w := range want {
				if reasons[i]["version"] != w["version"] || reasons[i]["outcome"] != w["outcome"] {
					t.Fatalf("%s: reason %d = %v, want %v (all %v)", what, i, reasons[i], w, reasons)
				}
				if _, ok := reasons[i]["detail"].(string); !ok {
					t.Fatalf("%s: reason %d has no detail string: %v", what, i, reasons[i])
				}
			}
			if d := reasons[3]["detail"].(string); !strings.Contains(d, "1.5.0") {
				t.Errorf("%s: min_version detail %q does not name 1.5.0", what, d)
			}
			if d := reasons[4]["detail"].(string); !strings.Contains(d, "bucket") {
				t.Errorf("%s: rollout detail %q does not give the bucket", what, d)
			}
		}

		base := kwtest.PathAdminUpdates + "?action=explain&app_id=" + url.QueryEscape(a.ID)
		verify("GET explain", s.Admin("GET", base+"&v=1.0.0&hwid=device-7", nil))
		verify("GET explain with version=", s.Admin("GET", base+"&version=1.0.0&hwid=device-7", nil))
		verify("POST explain", aduPost(a, map[string]any{"action": "explain", "v": "1.0.0", "hwid": "device-7"}))
		verify("POST explain, action in the query", s.Admin("POST", kwtest.PathAdminUpdates+"?action=explain",
			map[string]any{"app_id": a.ID, "v": "1.0.0", "hwid": "device-7"}))

		// Other callers get other answers.
		r := s.MustAdmin("GET", base+"&v=1.0.0&hwid=device-7&channel=beta", nil)
		if r.Obj("update")["version"] != "2.4.0" {
			t.Fatalf("beta explain: %s", r)
		}
		r = s.MustAdmin("GET", base+"&v=1.6.0&hwid=device-7", nil)
		if r.Obj("update")["version"] != "2.3.0" {
			t.Fatalf("explain past min_version: %s", r)
		}
		r = s.MustAdmin("GET", base+"&v=1.0.0", nil)
		if reasons := r.List(t, "reasons"); reasons[4]["outcome"] != "rollout" || !strings.Contains(reasons[4]["detail"].(string), "without hwid") {
			t.Fatalf("anonymous explain: %v", reasons)
		}
		r = s.MustAdmin("GET", base+"&v=3.0.0&hwid=device-7", nil)
		if r.Body["update_available"] != false || r.Body["update"] != nil {
			t.Fatalf("explain for the newest version: %s", r)
		}
		if reasons := r.List(t, "reasons"); len(reasons) != len(want) {
			t.Fatalf("explain for the newest version: %d reasons", len(reasons))
		}

		// The client check agrees with explain.
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0", "hwid": "device-7"}); v != "2.1.0" {
			t.Fatalf("client check offered %q, explain said 2.1.0", v)
		}

		s.Admin("GET", base+"&hwid=device-7", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", base+"&v=1.0", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", base+"&v=1.0.0&channel=nightly", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", base+"&v=1.0.0&os=beos", nil).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("GET", kwtest.PathAdminUpdates+"?action=explain&app_id=nope-app&v=1.0.0", nil).JSONFail(t, 404, "NOT_FOUND")

		// Explains are not recorded: only the one client check is counted.
		st := aduStats(t, a, "")
		if st.Body["devices"] != float64(1) {
			t.Fatalf("stats after explains and one check: %s, want 1 device", st)
		}
		if got := aduVersions(t, st); !reflect.DeepEqual(got, map[string][2]int{"2.1.0": {1, 0}, "1.0.0": {0, 1}}) {
			t.Fatalf("stats versions %v", got)
		}
	})
}

// ---- stats

func TestAdminUpdatesStats(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Stats")
		other := s.CreateApp("Other")
		a.Release("2.0.0", []byte("two"), nil)
		other.Release("2.0.0", []byte("two"), nil)

		st := aduStats(t, a, "")
		if st.Body["devices"] != float64(0) || len(st.List(t, "versions")) != 0 {
			t.Fatalf("stats before any check: %s", st)
		}

		// device-a checks on 1.0.0 (offered 2.0.0), later again on 2.0.0
		// (nothing offered): only its latest check counts. device-b checks
		// on 1.5.0 (offered 2.0.0). An anonymous caller is not counted, nor
		// are explains or other apps' checks.
		t0 := s.Clock.Now()
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0", "hwid": "device-a"}); v != "2.0.0" {
			t.Fatalf("device-a offered %q", v)
		}
		if v := aduOffered(t, a, map[string]any{"v": "1.5.0", "hwid": "device-b", "os": "windows", "arch": "x64"}); v != "2.0.0" {
			t.Fatalf("device-b offered %q", v)
		}
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0"}); v != "2.0.0" {
			t.Fatalf("anonymous caller offered %q", v)
		}
		aduOffered(t, other, map[string]any{"v": "1.0.0", "hwid": "device-x"})
		s.MustAdmin("GET", kwtest.PathAdminUpdates+"?action=explain&app_id="+a.ID+"&v=1.0.0&hwid=device-c", nil)
		s.Clock.Advance(time.Hour)
		if v := aduOffered(t, a, map[string]any{"v": "2.0.0", "hwid": "device-a"}); v != "" {
			t.Fatalf("device-a on 2.0.0 offered %q", v)
		}

		st = aduStats(t, a, "")
		if st.Body["devices"] != float64(2) {
			t.Fatalf("devices = %v, want 2: %s", st.Body["devices"], st)
		}
		want := map[string][2]int{"2.0.0": {1, 1}, "1.5.0": {0, 1}}
		if got := aduVersions(t, st); !reflect.DeepEqual(got, want) {
			t.Fatalf("versions %v, want %v (version → [offered, running])", got, want)
		}
		if since := st.Body["since"]; since != license.Timestamp(s.Clock.Now().Add(-30*24*time.Hour)) {
			t.Fatalf("since = %v, want 30 days back", since)
		}
		// days=0 is the 30-day default.
		st0 := aduStats(t, a, "0")
		if st0.Body["devices"] != float64(2) || st0.Body["since"] != st.Body["since"] || !reflect.DeepEqual(aduVersions(t, st0), want) {
			t.Fatalf("days=0: %s, want the default: %s", st0, st)
		}
		if st := aduStats(t, other, ""); st.Body["devices"] != float64(1) {
			t.Fatalf("other app's stats: %s", st)
		}

		// A license key without hwid counts as a device of its own.
		if v := aduOffered(t, a, map[string]any{"v": "1.0.0", "license_key": "KEY-ONLY-1"}); v != "2.0.0" {
			t.Fatalf("license-key caller offered %q", v)
		}
		st = aduStats(t, a, "7")
		if st.Body["devices"] != float64(3) {
			t.Fatalf("devices after a license-key check = %v, want 3: %s", st.Body["devices"], st)
		}
		want = map[string][2]int{"2.0.0": {2, 1}, "1.5.0": {0, 1}, "1.0.0": {0, 1}}
		if got := aduVersions(t, st); !reflect.DeepEqual(got, want) {
			t.Fatalf("versions %v, want %v", got, want)
		}
		if since := st.Body["since"]; since != license.Timestamp(s.Clock.Now().Add(-7*24*time.Hour)) {
			t.Fatalf("days=7 since = %v", since)
		}

		// The window: 29 days on, everything is within 30 days but not
		// within the last day; 31 days on, nothing is within 30.
		s.Clock.Set(t0.Add(time.Hour + 29*24*time.Hour))
		if st := aduStats(t, a, ""); st.Body["devices"] != float64(3) {
			t.Fatalf("29 days on, default window: %s", st)
		}
		if st := aduStats(t, a, "1"); st.Body["devices"] != float64(0) || len(st.List(t, "versions")) != 0 {
			t.Fatalf("29 days on, days=1: %s", st)
		}
		s.Clock.Set(t0.Add(time.Hour + 31*24*time.Hour))
		if st := aduStats(t, a, ""); st.Body["devices"] != float64(0) {
			t.Fatalf("31 days on, default window: %s", st)
		}
		if st := aduStats(t, a, "60"); st.Body["devices"] != float64(3) || !reflect.DeepEqual(aduVersions(t, st), want) {
			t.Fatalf("31 days on, days=60: %s", st)
		}

		for _, d := range []string{"-1", "3651", "abc", "1.5"} {
			s.Admin("GET", kwtest.PathAdminUpdates+"?action=stats&app_id="+a.ID+"&days="+d, nil).JSONFail(t, 400, "MISSING_FIELDS")
		}
		if st := aduStats(t, a, "3650"); st.Body["devices"] != float64(3) {
			t.Fatalf("days=3650: %s", st)
		}
		s.Admin("GET", kwtest.PathAdminUpdates+"?action=stats&app_id=nope-app", nil).JSONFail(t, 404, "NOT_FOUND")
	})
}

// ---- audit

func TestAdminUpdatesAudit(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Audit")

		id := a.CreateRelease("1.0.0", map[string]any{"channel": "beta"})
		body := []byte("bytes of 1.0.0")
		aduUploadOK(t, a, id, "windows", "x64", body)
		if r := s.Admin("PUT", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID, "id": id, "channel": "stable"}); r.Status != 200 {
			t.Fatalf("edit: %s", r)
		}
		aduActOK(t, a, "publish", id, nil)
		aduActOK(t, a, "rollout", id, map[string]any{"rollout": 5000})
		aduActOK(t, a, "halt", id, nil)
		aduActOK(t, a, "resume", id, nil)
		aduActOK(t, a, "yank", id, nil)
		aduActOK(t, a, "unyank", id, nil)
		s.MustAdmin("POST", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID, "action": "min_supported", "channel": "stable", "version": "1.0.0"})
		draft := a.CreateRelease("0.9.0", nil)
		s.MustAdmin("DELETE", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID, "id": draft})

		// Reads and refusals write nothing.
		s.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID, nil)
		s.MustAdmin("GET", kwtest.PathAdminUpdates+"?app_id="+a.ID+"&id="+fmt.Sprint(id), nil)
		s.MustAdmin("GET", kwtest.PathAdminUpdates+"?action=explain&app_id="+a.ID+"&v=0.1.0&hwid=h", nil)
		aduPost(a, map[string]any{"action": "explain", "v": "0.1.0"})
		aduStats(t, a, "")
		aduAct(a, "publish", id, nil)
		aduPost(a, map[string]any{"version": "1.0.0"})
		aduUpload(t, a, id, "windows", "x64", []byte("x"), "")
		aduUpload(t, a, id, "linux", "", []byte("x"), aduSum([]byte("y")))
		s.Admin("DELETE", kwtest.PathAdminUpdates, map[string]any{"app_id": a.ID, "id": id})

		wants := []struct {
			action, target string
			id             int64
		}{
			{"release.create", "1.0.0", id},
			{"release.upload", "1.0.0", id},
			{"release.edit", "1.0.0", id},
			{"release.publish", "1.0.0", id},
			{"release.rollout", "1.0.0", id},
			{"release.halt", "1.0.0", id},
			{"release.resume", "1.0.0", id},
			{"release.yank", "1.0.0", id},
			{"release.unyank", "1.0.0", id},
			{"update.min_supported", "stable", 0},
			{"release.create", "0.9.0", draft},
			{"release.delete", "0.9.0", draft},
		}
		got := aduAudit(t, a)
		if len(got) != len(wants) {
			var acts []string
			for _, e := range got {
				acts = append(acts, fmt.Sprint(e["action"]))
			}
			t.Fatalf("%d audit entries %v, want %d", len(got), acts, len(wants))
		}
		for i, w := range wants {
			e := got[i]
			if e["action"] != w.action || e["target"] != w.target || e["app_id"] != a.ID {
				t.Fatalf("audit entry %d = %v, want %s on %s", i, e, w.action, w.target)
			}
			actor, _ := e["actor"].(map[string]any)
			if actor["kind"] != "admin" || actor["name"] != "admin" {
				t.Fatalf("audit entry %d actor %v, want the admin", i, actor)
			}
			d, _ := e["details"].(map[string]any)
			if w.id != 0 && d["id"] != float64(w.id) {
				t.Fatalf("audit entry %d details %v, want id %d", i, d, w.id)
			}
		}
		if d := got[1]["details"].(map[string]any); d["sha256"] != aduSum(body) || d["size"] != float64(len(body)) || d["os"] != "windows" || d["arch"] != "x64" {
			t.Errorf("upload audit details %v", d)
		}
		if d := got[4]["details"].(map[string]any); d["rollout"] != float64(5000) {
			t.Errorf("rollout audit details %v", d)
		}
		if d := got[9]["details"].(map[string]any); d["version"] != "1.0.0" {
			t.Errorf("min_supported audit details %v", d)
		}
		// The audit API filters by action.
		if es := adcAudit(t, a, "release.create"); len(es) != 2 || es[0]["target"] != "0.9.0" || es[1]["target"] != "1.0.0" {
			t.Errorf("release.create entries newest first: %v", es)
		}
	})
}

// Drafts cannot be halted, resumed, yanked or unyanked (so a yanked draft
// can never be published and announced), a PUT must change something, and
// raw bytes need action=upload. Stats list versions newest first.
func TestAdminUpdatesStateRules(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Rules")
		id := a.CreateRelease("1.1.0", nil)
		for _, action := range []string{"halt", "resume", "yank", "unyank"} {
			kwtest.ExpectCode(t, aduAct(a, action, id, nil), 409, "NOT_PUBLISHED")
		}
		kwtest.ExpectCode(t, s.Admin("PUT", kwtest.PathAdminUpdates, adcBody(a.ID, map[string]any{"id": id})), 400, "MISSING_FIELDS")
		r := aduPut(t, s, url.Values{"action": {""}, "app_id": {a.ID}, "id": {fmt.Sprint(id)}}, nil, bytes.NewReader([]byte("bytes")))
		kwtest.ExpectCode(t, r, 400, "MISSING_FIELDS")
		if rel := aduGet(t, a, id); rel["status"] != "draft" || len(aduArts(t, rel)) != 0 {
			t.Fatalf("refused calls changed the draft: %v", rel)
		}
		if n := len(aduAudit(t, a)); n != 1 {
			t.Fatalf("audit has %d entries after refusals; want only the create", n)
		}

		a.Release("1.10.0", []byte("ten"), nil)
		a.Release("1.9.0", []byte("nine"), nil)
		for i, v := range []string{"1.2.0", "1.9.0", "1.10.0", "1.0.0"} {
			aduCheckReply(t, a, map[string]any{"v": v, "hwid": fmt.Sprint("dev-", i)})
		}
		var order []string
		for _, v := range aduStats(t, a, "").List(t, "versions") {
			order = append(order, v["version"].(string))
		}
		if got, want := strings.Join(order, " "), "1.10.0 1.9.0 1.2.0 1.0.0"; got != want {
			t.Fatalf("stats versions in order %q, want %q", got, want)
		}
	})
}
