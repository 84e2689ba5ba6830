package clientapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Client update routes over real HTTP: the enveloped update/check.php and
// the streamed update/download.php (api-reference "Updates", sdk-compat
// §1.15; design in updates-and-webhooks.md). Helpers start with upd so they
// do not collide with other test files.

const (
	updCheckPath    = "/api/update/check.php"
	updDownloadPath = "/api/update/download.php"
	updAdminPath    = "/api/admin/updates.php"
)

// updBytes returns n deterministic pseudo-random bytes for seed.
func updBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x6b657977617264))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// updSum is the hex sha256 of b.
func updSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// updArt is one artifact of a release made by updRelease.
type updArt struct {
	os, arch string
	body     []byte
}

// updRelease creates a release with fields, uploads arts (one universal
// artifact of body when arts is empty) and publishes it unless draft.
func updRelease(t testing.TB, a *kwtest.App, version string, fields map[string]any, draft bool, arts ...updArt) int64 {
	t.Helper()
	id := a.CreateRelease(version, fields)
	for _, art := range arts {
		if r := a.Upload(id, art.os, art.arch, bytes.NewReader(art.body), ""); r.Status != 200 {
			t.Fatalf("upload %s %s/%s: %s", version, art.os, art.arch, r)
		}
	}
	if !draft {
		updAdmin(t, a, "publish", id, nil)
	}
	return id
}

// updAdmin applies an admin release action and fails unless it succeeds.
func updAdmin(t testing.TB, a *kwtest.App, action string, id int64, extra map[string]any) {
	t.Helper()
	body := map[string]any{"app_id": a.ID, "action": action, "id": id}
	for k, v := range extra {
		body[k] = v
	}
	a.S.MustAdmin("POST", updAdminPath, body)
}

// updOffer fails unless the check offers an update and returns it.
func updOffer(t testing.TB, a *kwtest.App, inner map[string]any) map[string]any {
	t.Helper()
	r := a.UpdateCheck(t, inner)
	r.OK(t)
	u := r.Obj("update")
	if r.Body["update_available"] != true || u == nil {
		t.Fatalf("check %v: want an update, got %v", inner, r.Body)
	}
	return u
}

// updNone fails unless the check says no update is available, without an
// update object and with a message.
func updNone(t testing.TB, a *kwtest.App, inner map[string]any) {
	t.Helper()
	r := a.UpdateCheck(t, inner)
	r.OK(t)
	if r.Body["update_available"] != false {
		t.Fatalf("check %v: want update_available false, got %v", inner, r.Body)
	}
	if _, ok := r.Body["update"]; ok {
		t.Fatalf("check %v: no update, but an update key: %v", inner, r.Body)
	}
	if r.Str("message") == "" {
		t.Fatalf("check %v: no message: %v", inner, r.Body)
	}
}

// updOffered returns the version the check offers, "" when none.
func updOffered(t testing.TB, a *kwtest.App, inner map[string]any) string {
	t.Helper()
	r := a.UpdateCheck(t, inner)
	r.OK(t)
	if r.Body["update_available"] != true {
		if _, ok := r.Body["update"]; ok || r.Body["update_available"] != false {
			t.Fatalf("check %v: inconsistent reply %v", inner, r.Body)
		}
		return ""
	}
	v, _ := r.Obj("update")["version"].(string)
	if v == "" {
		t.Fatalf("check %v: update without a version: %v", inner, r.Body)
	}
	return v
}

// updExpectOffered fails unless the check offers want ("" for none).
func updExpectOffered(t testing.TB, a *kwtest.App, inner map[string]any, want string) {
	t.Helper()
	if got := updOffered(t, a, inner); got != want {
		t.Fatalf("check %v: offered %q, want %q", inner, got, want)
	}
}

// updReq builds a check body from key/value pairs.
func updReq(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// updGet sends a download request with the app secret (none when secret is
// "") and extra headers, returning the response and its whole body.
func updGet(t testing.TB, s *kwtest.Server, method, secret, pathAndQuery string, hdr http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("X-App-Secret", secret)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := kwtest.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, pathAndQuery, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// updDownload fails unless a GET of pathAndQuery answers 200 with want.
func updDownload(t testing.TB, a *kwtest.App, pathAndQuery string, want []byte) *http.Response {
	t.Helper()
	resp, body := updGet(t, a.S, "GET", a.Secret, pathAndQuery, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d: %s", pathAndQuery, resp.StatusCode, body)
	}
	if !bytes.Equal(body, want) {
		t.Fatalf("GET %s: %d bytes sha256 %s, want %d bytes sha256 %s", pathAndQuery, len(body), updSum(body), len(want), updSum(want))
	}
	return resp
}

// updDownloadFail fails unless a download answers a plain JSON failure with
// status and code.
func updDownloadFail(t testing.TB, s *kwtest.Server, secret, pathAndQuery string, status int, code string) {
	t.Helper()
	r := s.Do("GET", pathAndQuery, http.Header{"X-App-Secret": {secret}}, nil)
	if secret == "" {
		r = s.Do("GET", pathAndQuery, nil, nil)
	}
	r.Refused(t, "GET "+pathAndQuery, status, code)
}

// updVMessage matches a message naming the field v.
var updVMessage = regexp.MustCompile(`field:? v\b`)

func TestUpdateCheckOffersNewerRelease(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		bin := updBytes(1, 3000)
		updRelease(t, a, "1.1.0", map[string]any{"changelog": "Fixes the frobnicator.\nFaster start."}, false, updArt{body: bin})

		for _, v := range []string{"1.0.0", "v1.0.0", "1.1.0-rc.1", "0.9.12"} {
			r := a.UpdateCheck(t, updReq("v", v, "channel", "stable", "hwid", "pc-1", "license_key", ""))
			r.OK(t)
			if r.Body["update_available"] != true || r.Str("message") == "" {
				t.Fatalf("v=%s: %v", v, r.Body)
			}
			// The inner reply with numbers kept as written: sizes are integers.
			inner := kwtest.Numbers(t, clInner(t, a, r))
			u, _ := inner["update"].(map[string]any)
			cntExactKeys(t, "update", u, "version", "channel", "is_mandatory", "file_size", "size", "sha256", "changelog", "download_url")
			if n := kwtest.Int(t, "file_size", u["file_size"]); n != int64(len(bin)) {
				t.Fatalf("file_size %d, want %d", n, len(bin))
			}
			if n := kwtest.Int(t, "size", u["size"]); n != int64(len(bin)) {
				t.Fatalf("size %d, want %d", n, len(bin))
			}
			want := map[string]any{"version": "1.1.0", "channel": "stable", "is_mandatory": false, "sha256": updSum(bin),
				"changelog": "Fixes the frobnicator.\nFaster start.", "download_url": "api/update/download.php?v=1.1.0"}
			for k, w := range want {
				if u[k] != w {
					t.Fatalf("v=%s: update[%s] = %#v, want %#v (%v)", v, k, u[k], w, u)
				}
			}
		}

		// The descriptor's URL, relative to the base URL, downloads exactly the
		// bytes whose sha256 the check announced.
		u := updOffer(t, a, updReq("v", "1.0.0"))
		updDownload(t, a, "/"+u["download_url"].(string), bin)

		// A mandatory release says so.
		updRelease(t, a, "1.2.0", map[string]any{"is_mandatory": true}, false, updArt{body: updBytes(2, 2500)})
		u = updOffer(t, a, updReq("v", "1.1.0"))
		if u["version"] != "1.2.0" || u["is_mandatory"] != true || u["sha256"] != updSum(updBytes(2, 2500)) {
			t.Fatalf("mandatory release: %v", u)
		}
		// Newest eligible wins: 1.0.0 is offered 1.2.0, not 1.1.0, and jumping
		// over nothing mandatory below it, is_mandatory is 1.2.0's own.
		if u = updOffer(t, a, updReq("v", "1.0.0")); u["version"] != "1.2.0" || u["is_mandatory"] != true {
			t.Fatalf("newest eligible: %v", u)
		}
	})
}

func TestUpdateCheckVersionAliasAndLicenseKey(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		bin := updBytes(3, 2048)
		updRelease(t, a, "1.1.0", nil, false, updArt{body: bin})

		// PY1.0 sends `version` instead of `v`.
		u := updOffer(t, a, updReq("version", "1.0.0"))
		if u["version"] != "1.1.0" || u["sha256"] != updSum(bin) {
			t.Fatalf("version alias: %v", u)
		}
		updNone(t, a, updReq("version", "1.1.0"))

		// license_key: GEN sends null when signed out, PY/NET send "", PY1.0
		// leaves it out; all are accepted.
		for _, body := range []map[string]any{
			updReq("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", nil),
			updReq("v", "1.0.0", "channel", "stable", "hwid", "pc", "license_key", ""),
			updReq("v", "1.0.0", "channel", "stable", "hwid", "pc"),
			updReq("v", "1.0.0", "license_key", nil),
			updReq("v", "1.0.0", "license_key", "", "hwid", ""),
			updReq("version", "1.0.0", "license_key", nil, "hwid", nil, "channel", nil, "os", nil, "arch", nil),
			updReq("v", "1.0.0", "license_key", "KW-ABCD-EFGH"),
		} {
			if u := updOffer(t, a, body); u["version"] != "1.1.0" {
				t.Fatalf("%v: %v", body, u)
			}
		}
	})
}

func TestUpdateCheckNothingNewer(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")

		// No release at all.
		updNone(t, a, updReq("v", "1.0.0"))

		updRelease(t, a, "1.1.0", nil, false, updArt{body: updBytes(4, 1500)})
		for _, v := range []string{"1.1.0", "v1.1.0", "1.1.1", "2.0.0", "1.1.0+build.7"} {
			updNone(t, a, updReq("v", v, "hwid", "pc"))
		}
		updExpectOffered(t, a, updReq("v", "1.0.9"), "1.1.0")
	})
}

func TestUpdateCheckBadInput(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		updRelease(t, a, "1.1.0", nil, false, updArt{body: updBytes(5, 1024)})

		// Once the envelope is verified every refusal travels inside an
		// envelope with HTTP 200 (sdk-compat §2.3): MISSING_FIELDS, a message.
		refuse := func(inner map[string]any, field string) {
			t.Helper()
			r := a.UpdateCheck(t, inner)
			r.SealedFail(t, "MISSING_FIELDS")
			r.NoInternals(t, fmt.Sprint(inner))
			if _, ok := r.Body["update"]; ok {
				t.Fatalf("%v: refusal carries an update: %v", inner, r.Body)
			}
			if field == "v" {
				if !updVMessage.MatchString(r.Str("message")) {
					t.Fatalf("%v: message %q does not name v", inner, r.Str("message"))
				}
			} else if !strings.Contains(r.Str("message"), field) {
				t.Fatalf("%v: message %q does not name %s", inner, r.Str("message"), field)
			}
		}
		for _, v := range []string{"1.2", "abc", "01.2.3", "1.02.3", "1.2.3.4", "1.2.3-", "1.2.3-01", "-1.2.3", "1.2.x", " ", "v"} {
			refuse(updReq("v", v), "v")
			refuse(updReq("version", v), "v")
		}
		refuse(updReq(), "v")
		refuse(updReq("v", ""), "v")
		refuse(updReq("v", nil), "v")
		refuse(updReq("channel", "stable", "hwid", "pc"), "v")
		refuse(updReq("v", 1), "v")
		refuse(updReq("v", []any{"1.0.0"}), "v")
		for _, ch := range []string{"nightly", "release", "x", "stable-ish"} {
			refuse(updReq("v", "1.0.0", "channel", ch), "channel")
		}
		refuse(updReq("v", "1.0.0", "channel", 1), "channel")
		refuse(updReq("v", "1.0.0", "os", "beos"), "os")
		refuse(updReq("v", "1.0.0", "os", "windows", "arch", "sparc"), "arch")
		refuse(updReq("v", "1.0.0", "hwid", strings.Repeat("h", 257)), "hwid")

		// Channel names are case-insensitive and trimmed; "" is stable.
		for _, ch := range []string{"STABLE", " stable ", "", "Beta"} {
			updExpectOffered(t, a, updReq("v", "1.0.0", "channel", ch), "1.1.0")
		}

		// Refusals before the envelope is verified are plain JSON.
		a.Plain(updCheckPath, updReq("v", "1.0.0")).PlainFail(t, 400, "CRYPTO_ERROR")
		s.Do("POST", updCheckPath, http.Header{"Content-Type": {"application/json"}}, a.Seal(updReq("v", "1.0.0")).Marshal()).PlainFail(t,
			401, "INVALID_APP")

		r := s.Do("GET", updCheckPath, kwtest.AppHeader(a.Secret), nil)
		r.PlainFail(t, 405, "METHOD_NOT_ALLOWED")
		if r.Header.Get("Allow") != "POST" {
			t.Fatalf("Allow = %q", r.Header.Get("Allow"))
		}
	})
}

func TestUpdateCheckChannels(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")

		updRelease(t, a, "1.1.0", map[string]any{"channel": "beta"}, false, updArt{body: updBytes(6, 1200)})
		updNone(t, a, updReq("v", "1.0.0"))
		updNone(t, a, updReq("v", "1.0.0", "channel", "stable"))
		for _, ch := range []string{"beta", "alpha"} {
			u := updOffer(t, a, updReq("v", "1.0.0", "channel", ch))
			if u["version"] != "1.1.0" || u["channel"] != "beta" {
				t.Fatalf("%s caller: %v", ch, u)
			}
		}

		// An alpha release reaches alpha callers only; beta callers keep the
		// beta release.
		updRelease(t, a, "1.2.0", map[string]any{"channel": "alpha"}, false, updArt{body: updBytes(7, 1200)})
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "alpha"), "1.2.0")
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "beta"), "1.1.0")
		updNone(t, a, updReq("v", "1.0.0", "channel", "stable"))

		// A stable release reaches every channel.
		updRelease(t, a, "1.0.5", nil, false, updArt{body: updBytes(8, 1200)})
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.0.5")
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "beta"), "1.1.0")

		// Pre-releases: offered on beta (and alpha), never on stable.
		updRelease(t, a, "2.0.0-beta.1", map[string]any{"channel": "beta"}, false, updArt{body: updBytes(9, 1200)})
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "beta"), "2.0.0-beta.1")
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "alpha"), "2.0.0-beta.1")
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "stable"), "1.0.5")
		// A stable caller already running a pre-release is not offered a newer one.
		updNone(t, a, updReq("v", "2.0.0-alpha.1", "channel", "stable"))
		updExpectOffered(t, a, updReq("v", "2.0.0-alpha.1", "channel", "beta"), "2.0.0-beta.1")
		updNone(t, a, updReq("v", "2.0.0-beta.1", "channel", "beta"))

		u := updOffer(t, a, updReq("v", "1.0.0", "channel", "beta"))
		if u["download_url"] != "api/update/download.php?v=2.0.0-beta.1" || u["channel"] != "beta" {
			t.Fatalf("pre-release descriptor: %v", u)
		}

		// The final 2.0.0 supersedes its pre-release on every channel.
		updRelease(t, a, "2.0.0", nil, false, updArt{body: updBytes(10, 1200)})
		for _, ch := range []string{"stable", "beta", "alpha"} {
			updExpectOffered(t, a, updReq("v", "2.0.0-beta.1", "channel", ch), "2.0.0")
			updExpectOffered(t, a, updReq("v", "1.0.0", "channel", ch), "2.0.0")
		}
	})
}

func TestUpdateCheckDraftsYankedHalted(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		updRelease(t, a, "1.1.0", nil, false, updArt{body: updBytes(11, 1000)})

		// A draft, even with its artifact, is never offered.
		draft := updRelease(t, a, "1.5.0", nil, true, updArt{body: updBytes(12, 1000)})
		updExpectOffered(t, a, updReq("v", "1.0.0", "hwid", "pc"), "1.1.0")
		updExpectOffered(t, a, updReq("v", "1.0.0", "channel", "alpha"), "1.1.0")
		updNone(t, a, updReq("v", "1.1.0"))

		// A yanked release is withdrawn: older callers fall back to the best
		// older release, and it comes back when unyanked.
		y := updRelease(t, a, "1.2.0", nil, false, updArt{body: updBytes(13, 1000)})
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.2.0")
		updAdmin(t, a, "yank", y, nil)
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.1.0")
		updNone(t, a, updReq("v", "1.1.0", "channel", "alpha"))
		updAdmin(t, a, "unyank", y, nil)
		updExpectOffered(t, a, updReq("v", "1.1.0"), "1.2.0")
		updAdmin(t, a, "yank", y, nil)

		// Publishing the draft makes it the offer.
		updAdmin(t, a, "publish", draft, nil)
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.5.0")

		// A halted rollout is frozen at its value: at 0 nobody gets it, and
		// it cannot be raised until resumed.
		h := updRelease(t, a, "1.6.0", map[string]any{"rollout": 0}, false, updArt{body: updBytes(14, 1000)})
		updAdmin(t, a, "halt", h, nil)
		r := s.Admin("POST", updAdminPath, map[string]any{"app_id": a.ID, "action": "rollout", "id": h, "rollout": 10000})
		r.JSONFail(t, 409, "ROLLOUT_HALTED")
		for i := range 10 {
			updExpectOffered(t, a, updReq("v", "1.0.0", "hwid", fmt.Sprintf("pc-%d", i)), "1.5.0")
		}
		updAdmin(t, a, "resume", h, nil)
		updAdmin(t, a, "rollout", h, map[string]any{"rollout": 10000})
		updExpectOffered(t, a, updReq("v", "1.0.0", "hwid", "pc-0"), "1.6.0")

		// Halting at 100 % keeps offering it to everyone.
		updAdmin(t, a, "halt", h, nil)
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.6.0")
		updExpectOffered(t, a, updReq("v", "1.0.0", "hwid", "pc-9"), "1.6.0")
	})
}

func TestUpdateCheckPlatforms(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		win, mac := updBytes(20, 3000), updBytes(21, 3100)
		updRelease(t, a, "1.1.0", nil, false, updArt{"windows", "x64", win}, updArt{"macos", "arm64", mac})

		for _, p := range [][2]string{{"windows", "x64"}, {"Windows", "X64"}, {"win64", "amd64"}, {"win32", "x86_64"}} {
			u := updOffer(t, a, updReq("v", "1.0.0", "os", p[0], "arch", p[1]))
			if u["version"] != "1.1.0" || u["sha256"] != updSum(win) || u["size"] != float64(len(win)) ||
				u["file_size"] != float64(len(win)) || u["download_url"] != "api/update/download.php?v=1.1.0&os=windows&arch=x64" {
				t.Fatalf("%v: %v", p, u)
			}
		}
		for _, p := range [][2]string{{"macos", "arm64"}, {"darwin", "aarch64"}, {"osx", "arm64"}, {"mac", "AARCH64"}} {
			u := updOffer(t, a, updReq("v", "1.0.0", "os", p[0], "arch", p[1]))
			if u["sha256"] != updSum(mac) || u["size"] != float64(len(mac)) ||
				u["download_url"] != "api/update/download.php?v=1.1.0&os=macos&arch=arm64" {
				t.Fatalf("%v: %v", p, u)
			}
		}
		// No artifact for the platform: no update.
		for _, p := range [][2]string{{"linux", "x64"}, {"linux", ""}, {"windows", "arm64"}, {"macos", "x64"}, {"", ""}} {
			updNone(t, a, updReq("v", "1.0.0", "os", p[0], "arch", p[1]))
		}

		// A later release with a universal artifact reaches everyone else;
		// the exact artifact still wins for its platform, and an os-only
		// artifact beats the universal one.
		uni, lin, win2 := updBytes(22, 2900), updBytes(23, 2800), updBytes(24, 2700)
		updRelease(t, a, "1.2.0", nil, false, updArt{"", "", uni}, updArt{"windows", "x64", win2}, updArt{"linux", "", lin})
		cases := []struct {
			os, arch string
			body     []byte
			url      string
		}{
			{"windows", "x64", win2, "api/update/download.php?v=1.2.0&os=windows&arch=x64"},
			{"linux", "x64", lin, "api/update/download.php?v=1.2.0&os=linux"},
			{"linux", "arm64", lin, "api/update/download.php?v=1.2.0&os=linux"},
			{"macos", "arm64", uni, "api/update/download.php?v=1.2.0"},
			{"windows", "x86", uni, "api/update/download.php?v=1.2.0"},
			{"", "", uni, "api/update/download.php?v=1.2.0"},
		}
		for _, c := range cases {
			u := updOffer(t, a, updReq("v", "1.1.0", "os", c.os, "arch", c.arch))
			if u["version"] != "1.2.0" || u["sha256"] != updSum(c.body) || u["size"] != float64(len(c.body)) || u["download_url"] != c.url {
				t.Fatalf("%s/%s: %v, want sha256 %s url %s", c.os, c.arch, u, updSum(c.body), c.url)
			}
			// The URL downloads exactly what the check described.
			updDownload(t, a, "/"+c.url, c.body)
		}
		// A linux caller on 1.0.0, which had no linux build of 1.1.0, gets 1.2.0.
		updExpectOffered(t, a, updReq("v", "1.0.0", "os", "linux", "arch", "x64"), "1.2.0")
	})
}

func TestUpdateCheckMinVersion(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		stone := updBytes(30, 1800)
		updRelease(t, a, "1.5.0", nil, false, updArt{body: stone})
		updRelease(t, a, "2.0.0", map[string]any{"min_version": "1.5.0"}, false, updArt{body: updBytes(31, 1800)})

		u := updOffer(t, a, updReq("v", "1.0.0", "hwid", "pc"))
		if u["version"] != "1.5.0" || u["sha256"] != updSum(stone) {
			t.Fatalf("1.0.0 caller: %v, want the 1.5.0 stepping stone", u)
		}
		updExpectOffered(t, a, updReq("v", "1.4.9"), "1.5.0")
		updExpectOffered(t, a, updReq("v", "1.5.0-rc.1", "channel", "beta"), "1.5.0")
		updExpectOffered(t, a, updReq("v", "1.5.0"), "2.0.0")
		updExpectOffered(t, a, updReq("v", "1.6.0", "hwid", "pc"), "2.0.0")
		updNone(t, a, updReq("v", "2.0.0"))

		// With no stepping stone left, the gated caller gets nothing.
		b := s.CreateApp("Gated")
		updRelease(t, b, "2.0.0", map[string]any{"min_version": "1.5.0"}, false, updArt{body: updBytes(32, 1800)})
		updNone(t, b, updReq("v", "1.0.0"))
		updExpectOffered(t, b, updReq("v", "1.7.3"), "2.0.0")
	})
}

func TestUpdateCheckMinSupported(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		updRelease(t, a, "2.0.0", nil, false, updArt{body: updBytes(40, 1600)})
		mandatory := func(inner map[string]any, want bool) {
			t.Helper()
			u := updOffer(t, a, inner)
			if u["version"] != "2.0.0" || u["is_mandatory"] != want {
				t.Fatalf("%v: %v, want is_mandatory %v", inner, u, want)
			}
		}
		mandatory(updReq("v", "1.0.0"), false)

		floor := func(ch, v string) {
			t.Helper()
			r := s.MustAdmin("POST", updAdminPath, map[string]any{"app_id": a.ID, "action": "min_supported", "channel": ch, "version": v})
			if got, _ := r.Obj("min_supported")[ch].(string); v != "" && got != v {
				t.Fatalf("min_supported %s = %q, want %q: %v", ch, got, v, r.Body)
			}
		}
		floor("stable", "1.5.0")
		mandatory(updReq("v", "1.0.0"), true)
		mandatory(updReq("v", "1.4.99", "channel", "stable", "hwid", "pc"), true)
		mandatory(updReq("v", "1.5.0-rc.1", "channel", "stable"), true)
		mandatory(updReq("v", "1.5.0"), false)
		mandatory(updReq("v", "1.9.0"), false)
		// The floor is per channel: the stable floor does not bind beta callers.
		mandatory(updReq("v", "1.0.0", "channel", "beta"), false)
		floor("beta", "1.2.0")
		mandatory(updReq("v", "1.0.0", "channel", "beta"), true)
		mandatory(updReq("v", "1.3.0", "channel", "beta"), false)

		// Clearing the floor ends it.
		floor("stable", "")
		mandatory(updReq("v", "1.0.0"), false)
	})
}

func TestUpdateCheckRollout(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		updRelease(t, a, "1.1.0", nil, false, updArt{body: updBytes(50, 1400)})

		// At 0 nobody gets 1.2.0; callers get the best older release.
		zero := updRelease(t, a, "1.2.0", map[string]any{"rollout": 0}, false, updArt{body: updBytes(51, 1400)})
		for i := range 20 {
			updExpectOffered(t, a, updReq("v", "1.0.0", "hwid", fmt.Sprintf("pc-%d", i)), "1.1.0")
			updExpectOffered(t, a, updReq("v", "1.0.0", "license_key", fmt.Sprintf("KEY-%d", i)), "1.1.0")
		}
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.1.0")
		updNone(t, a, updReq("v", "1.1.0", "hwid", "pc-0"))

		// At 10000 everybody, with or without an id.
		updAdmin(t, a, "rollout", zero, map[string]any{"rollout": 10000})
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.2.0")
		updExpectOffered(t, a, updReq("v", "1.1.0", "license_key", nil), "1.2.0")
		for i := range 10 {
			updExpectOffered(t, a, updReq("v", "1.1.0", "hwid", fmt.Sprintf("pc-%d", i)), "1.2.0")
		}

		// A partial rollout: callers without hwid or license key wait; the
		// others split by a stable bucket.
		part := updRelease(t, a, "1.3.0", map[string]any{"rollout": 5000}, false, updArt{body: updBytes(52, 1400)})
		updExpectOffered(t, a, updReq("v", "1.1.0"), "1.2.0")
		updExpectOffered(t, a, updReq("v", "1.1.0", "hwid", "", "license_key", ""), "1.2.0")
		updExpectOffered(t, a, updReq("v", "1.1.0", "hwid", nil, "license_key", nil), "1.2.0")

		const n = 40
		got := map[string]string{}
		in := 0
		for i := range n {
			id := fmt.Sprintf("pc-%d", i)
			v := updOffered(t, a, updReq("v", "1.1.0", "hwid", id))
			if v != "1.3.0" && v != "1.2.0" {
				t.Fatalf("hwid %s: offered %q, want 1.3.0 or the older 1.2.0", id, v)
			}
			got[id] = v
			if v == "1.3.0" {
				in++
			}
		}
		if in == 0 || in == n {
			t.Fatalf("rollout 5000: %d of %d callers inside, want a split", in, n)
		}
		// The same caller always gets the same answer, whatever else it says
		// and whenever it asks.
		for round := range 3 {
			s.Clock.Advance(time.Minute)
			for i := range n {
				id := fmt.Sprintf("pc-%d", i)
				body := updReq("v", "1.1.0", "hwid", id)
				if round == 1 {
					body = updReq("v", "1.1.0", "hwid", id, "channel", "stable", "os", "linux", "license_key", "")
				}
				if v := updOffered(t, a, body); v != got[id] {
					t.Fatalf("round %d hwid %s: offered %q, first %q", round, id, v, got[id])
				}
			}
		}
		// The license key buckets a caller without hwid, the same way the
		// hwid would.
		for i := range n {
			id := fmt.Sprintf("pc-%d", i)
			updExpectOffered(t, a, updReq("v", "1.1.0", "license_key", id), got[id])
			updExpectOffered(t, a, updReq("v", "1.1.0", "hwid", id, "license_key", "OTHER"), got[id])
		}

		// Raising the rollout only adds callers.
		updAdmin(t, a, "rollout", part, map[string]any{"rollout": 9000})
		more := 0
		for i := range n {
			id := fmt.Sprintf("pc-%d", i)
			v := updOffered(t, a, updReq("v", "1.1.0", "hwid", id))
			if got[id] == "1.3.0" && v != "1.3.0" {
				t.Fatalf("hwid %s was inside at 5000 but not at 9000", id)
			}
			if v == "1.3.0" {
				more++
			}
		}
		if more < in {
			t.Fatalf("rollout 9000: %d callers inside, fewer than %d at 5000", more, in)
		}
		updExpectOffered(t, a, updReq("v", "1.1.0"), "1.2.0")
		updAdmin(t, a, "rollout", part, map[string]any{"rollout_percent": 100})
		updExpectOffered(t, a, updReq("v", "1.1.0"), "1.3.0")
	})
}

// updHeader fails unless resp has header name = want.
func updHeader(t testing.TB, what string, resp *http.Response, name, want string) {
	t.Helper()
	if got := resp.Header.Get(name); got != want {
		t.Fatalf("%s: %s = %q, want %q", what, name, got, want)
	}
}

func TestUpdateDownloadFull(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		bin := updBytes(60, 4096+37)
		updRelease(t, a, "1.1.0", nil, false, updArt{body: bin})
		u := updOffer(t, a, updReq("v", "1.0.0"))
		sum := u["sha256"].(string)
		if sum != updSum(bin) {
			t.Fatalf("check sha256 %s, want %s", sum, updSum(bin))
		}

		for _, q := range []string{"?v=1.1.0", "?version=1.1.0", "?v=v1.1.0", "?v=%201.1.0%20"} {
			resp := updDownload(t, a, updDownloadPath+q, bin)
			what := "GET " + q
			updHeader(t, what, resp, "Content-Type", "application/octet-stream")
			updHeader(t, what, resp, "Content-Length", strconv.Itoa(len(bin)))
			updHeader(t, what, resp, "ETag", `"`+sum+`"`)
			updHeader(t, what, resp, "Accept-Ranges", "bytes")
			updHeader(t, what, resp, "X-Checksum-Sha256", sum)
			disp, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
			if err != nil || disp != "attachment" || params["filename"] != "update-1.1.0.bin" {
				t.Fatalf("%s: Content-Disposition %q (%v)", what, resp.Header.Get("Content-Disposition"), err)
			}
		}
		// What the caller verifies: the sha256 of the body is the check's.
		_, body := updGet(t, s, "GET", a.Secret, "/"+u["download_url"].(string), nil)
		if updSum(body) != sum {
			t.Fatalf("downloaded sha256 %s, check said %s", updSum(body), sum)
		}

		// A file name given at upload is the attachment's name, quoted as
		// needed.
		id := a.CreateRelease("1.2.0", nil)
		named := updBytes(61, 3333)
		req, err := http.NewRequest("PUT", s.URL+updAdminPath+"?action=upload&app_id="+a.ID+"&id="+strconv.FormatInt(id, 10)+
			"&file_name=My+App+Setup+1.2.0.exe", bytes.NewReader(named))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.AdminToken())
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := kwtest.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("upload with file_name: %d", resp.StatusCode)
		}
		updAdmin(t, a, "publish", id, nil)
		resp = updDownload(t, a, updDownloadPath+"?v=1.2.0", named)
		disp, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
		if err != nil || disp != "attachment" || params["filename"] != "My App Setup 1.2.0.exe" {
			t.Fatalf("Content-Disposition %q (%v)", resp.Header.Get("Content-Disposition"), err)
		}
	})
}

func TestUpdateDownloadRanges(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		bin := updBytes(70, 5000)
		size := len(bin)
		updRelease(t, a, "1.1.0", nil, false, updArt{body: bin})
		path := updDownloadPath + "?v=1.1.0"
		etag := `"` + updSum(bin) + `"`

		partial := func(what string, hdr http.Header, from, to int) {
			t.Helper()
			resp, body := updGet(t, s, "GET", a.Secret, path, hdr)
			if resp.StatusCode != 206 {
				t.Fatalf("%s: status %d, want 206: %.200s", what, resp.StatusCode, body)
			}
			if !bytes.Equal(body, bin[from:to+1]) {
				t.Fatalf("%s: got %d bytes, want bytes %d-%d", what, len(body), from, to)
			}
			updHeader(t, what, resp, "Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, size))
			updHeader(t, what, resp, "Content-Length", strconv.Itoa(to-from+1))
			updHeader(t, what, resp, "ETag", etag)
		}
		partial("bytes=10-19", http.Header{"Range": {"bytes=10-19"}}, 10, 19)
		partial("bytes=-5", http.Header{"Range": {"bytes=-5"}}, size-5, size-1)
		partial("bytes=4990-", http.Header{"Range": {"bytes=4990-"}}, 4990, size-1)
		partial("bytes=0-0", http.Header{"Range": {"bytes=0-0"}}, 0, 0)
		partial("end past size", http.Header{"Range": {"bytes=4000-99999"}}, 4000, size-1)

		// Unsatisfiable ranges: 416 with the size.
		for _, rg := range []string{fmt.Sprintf("bytes=%d-", size), "bytes=9000-9100", "bytes=100000-"} {
			resp, _ := updGet(t, s, "GET", a.Secret, path, http.Header{"Range": {rg}})
			if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
				t.Fatalf("%s: status %d, want 416", rg, resp.StatusCode)
			}
			updHeader(t, rg, resp, "Content-Range", fmt.Sprintf("bytes */%d", size))
		}

		// If-None-Match with the ETag: 304, no body.
		for _, inm := range []string{etag, `"other", ` + etag, "*"} {
			resp, body := updGet(t, s, "GET", a.Secret, path, http.Header{"If-None-Match": {inm}})
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Fatalf("If-None-Match %s: status %d, %d bytes", inm, resp.StatusCode, len(body))
			}
			updHeader(t, "304", resp, "ETag", etag)
		}
		// A stale ETag gets the file.
		resp, body := updGet(t, s, "GET", a.Secret, path, http.Header{"If-None-Match": {`"` + updSum(nil) + `"`}})
		if resp.StatusCode != 200 || !bytes.Equal(body, bin) {
			t.Fatalf("stale If-None-Match: status %d, %d bytes", resp.StatusCode, len(body))
		}

		// If-Range: a matching ETag resumes, another one restarts.
		partial("If-Range match", http.Header{"Range": {"bytes=100-199"}, "If-Range": {etag}}, 100, 199)
		for _, ir := range []string{`"` + updSum([]byte("old build")) + `"`, `W/` + etag} {
			resp, body = updGet(t, s, "GET", a.Secret, path, http.Header{"Range": {"bytes=100-199"}, "If-Range": {ir}})
			if resp.StatusCode != 200 || !bytes.Equal(body, bin) {
				t.Fatalf("If-Range %s: status %d, %d bytes, want 200 and the whole file", ir, resp.StatusCode, len(body))
			}
			updHeader(t, "If-Range mismatch", resp, "Content-Length", strconv.Itoa(size))
		}

		// HEAD: the headers of the GET, no body.
		resp, body = updGet(t, s, "HEAD", a.Secret, path, nil)
		if resp.StatusCode != 200 || len(body) != 0 {
			t.Fatalf("HEAD: status %d, %d bytes", resp.StatusCode, len(body))
		}
		updHeader(t, "HEAD", resp, "Content-Length", strconv.Itoa(size))
		updHeader(t, "HEAD", resp, "Content-Type", "application/octet-stream")
		updHeader(t, "HEAD", resp, "ETag", etag)
		updHeader(t, "HEAD", resp, "Accept-Ranges", "bytes")
		if !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("HEAD: Content-Disposition %q", resp.Header.Get("Content-Disposition"))
		}

		// Other methods: 405 with Allow.
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			r := s.Do(m, path, http.Header{"X-App-Secret": {a.Secret}}, nil)
			r.Refused(t, m, 405, "METHOD_NOT_ALLOWED")
			if r.Header.Get("Allow") != "GET, HEAD" {
				t.Fatalf("%s: Allow = %q", m, r.Header.Get("Allow"))
			}
		}
	})
}

func TestUpdateDownloadNotFound(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		pub := updBytes(80, 1500)
		updRelease(t, a, "1.1.0", nil, false, updArt{body: pub})
		updRelease(t, a, "1.5.0", nil, true, updArt{body: updBytes(81, 1500)})
		yb := updBytes(82, 1500)
		y := updRelease(t, a, "1.2.0", nil, false, updArt{body: yb})
		updDownload(t, a, updDownloadPath+"?v=1.2.0", yb)
		updAdmin(t, a, "yank", y, nil)

		for _, v := range []string{"9.9.9", "1.0.0", "1.1.1", "1.5.0", "1.2.0", "1.1.0-rc.1"} {
			updDownloadFail(t, s, a.Secret, updDownloadPath+"?v="+v, 404, "NOT_FOUND")
		}
		// HEAD of an absent release is a 404 too.
		if resp, _ := updGet(t, s, "HEAD", a.Secret, updDownloadPath+"?v=1.5.0", nil); resp.StatusCode != 404 {
			t.Fatalf("HEAD draft: status %d", resp.StatusCode)
		}
		// Unyanked, it downloads again.
		updAdmin(t, a, "unyank", y, nil)
		updDownload(t, a, updDownloadPath+"?v=1.2.0", yb)

		// No version, or not a version: 400 MISSING_FIELDS.
		for _, q := range []string{"", "?v=", "?v=%20", "?os=windows", "?version="} {
			updDownloadFail(t, s, a.Secret, updDownloadPath+q, 400, "MISSING_FIELDS")
		}
		for _, q := range []string{"?v=1.2", "?v=abc", "?v=01.2.3", "?v=1.1.0&os=beos", "?v=1.1.0&arch=sparc"} {
			updDownloadFail(t, s, a.Secret, updDownloadPath+q, 400, "MISSING_FIELDS")
		}
		updDownload(t, a, updDownloadPath+"?v=1.1.0", pub)
	})
}

func TestUpdateDownloadAuth(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		bin := updBytes(90, 2000)
		updRelease(t, a, "1.1.0", nil, false, updArt{body: bin})
		path := updDownloadPath + "?v=1.1.0"

		// No or a wrong secret: plain 401 INVALID_APP, never the bytes.
		updDownloadFail(t, s, "", path, 401, "INVALID_APP")
		updDownloadFail(t, s, "   ", path, 401, "INVALID_APP")
		updDownloadFail(t, s, "not-a-secret", path, 401, "INVALID_APP")
		updDownloadFail(t, s, a.Secret+"x", path, 401, "INVALID_APP")
		if resp, body := updGet(t, s, "GET", "", path, http.Header{"Range": {"bytes=0-9"}}); resp.StatusCode != 401 || bytes.Contains(body, bin[:10]) {
			t.Fatalf("no secret with Range: status %d", resp.StatusCode)
		}
		// The secret in the query string is no secret.
		updDownloadFail(t, s, "", path+"&secret="+a.Secret+"&app_secret="+a.Secret, 401, "INVALID_APP")

		// Another app's secret sees only that app's releases.
		b := s.CreateApp("Other")
		updDownloadFail(t, s, b.Secret, path, 404, "NOT_FOUND")
		other := updBytes(91, 2100)
		updRelease(t, b, "1.1.0", nil, false, updArt{body: other})
		updDownload(t, b, path, other)
		updDownload(t, a, path, bin)
		updRelease(t, b, "3.0.0", nil, false, updArt{body: updBytes(92, 900)})
		updDownloadFail(t, s, a.Secret, updDownloadPath+"?v=3.0.0", 404, "NOT_FOUND")
		// And its check never offers the other app's release.
		updExpectOffered(t, a, updReq("v", "1.0.0"), "1.1.0")
	})
}

func TestUpdateDownloadPlatforms(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Upd")
		win, mac := updBytes(100, 3000), updBytes(101, 3001)
		updRelease(t, a, "1.1.0", nil, false, updArt{"windows", "x64", win}, updArt{"macos", "arm64", mac})

		for _, c := range []struct {
			q    string
			body []byte
		}{
			{"&os=windows&arch=x64", win},
			{"&os=win64&arch=amd64", win},
			{"&os=WINDOWS&arch=x86_64", win},
			{"&os=macos&arch=arm64", mac},
			{"&os=darwin&arch=aarch64", mac},
			{"&os=windows", win}, // no arch said: the os's only artifact
		} {
			resp := updDownload(t, a, updDownloadPath+"?v=1.1.0"+c.q, c.body)
			updHeader(t, c.q, resp, "ETag", `"`+updSum(c.body)+`"`)
			updHeader(t, c.q, resp, "Content-Length", strconv.Itoa(len(c.body)))
		}
		resp := updDownload(t, a, updDownloadPath+"?v=1.1.0&os=macos&arch=arm64", mac)
		if _, p, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); p["filename"] != "update-1.1.0-macos-arm64.bin" {
			t.Fatalf("Content-Disposition %q", resp.Header.Get("Content-Disposition"))
		}
		// No artifact for the platform, or no os given when there are
		// several and none is universal: 404.
		for _, q := range []string{"", "&os=linux&arch=x64", "&os=windows&arch=arm64", "&arch=x64"} {
			updDownloadFail(t, s, a.Secret, updDownloadPath+"?v=1.1.0"+q, 404, "NOT_FOUND")
		}

		// A release's only artifact is served when no platform is given.
		only := updBytes(102, 2222)
		updRelease(t, a, "1.2.0", nil, false, updArt{"windows", "x64", only})
		updDownload(t, a, updDownloadPath+"?v=1.2.0", only)
		updDownload(t, a, updDownloadPath+"?v=1.2.0&os=windows&arch=x64", only)
		u := updOffer(t, a, updReq("v", "1.1.0", "os", "windows", "arch", "x64"))
		if u["download_url"] != "api/update/download.php?v=1.2.0" || u["sha256"] != updSum(only) {
			t.Fatalf("single-artifact descriptor: %v", u)
		}

		// With a universal artifact too, no platform means the universal one,
		// and the check's download URL for each platform gets its artifact.
		uni := updBytes(103, 2500)
		updRelease(t, a, "1.3.0", nil, false, updArt{"", "", uni}, updArt{"windows", "x64", win}, updArt{"macos", "arm64", mac})
		updDownload(t, a, updDownloadPath+"?v=1.3.0", uni)
		updDownload(t, a, updDownloadPath+"?v=1.3.0&os=linux&arch=x64", uni)
		for _, p := range []struct {
			os, arch string
			body     []byte
		}{{"windows", "x64", win}, {"darwin", "aarch64", mac}, {"linux", "arm64", uni}} {
			u := updOffer(t, a, updReq("v", "1.2.0", "os", p.os, "arch", p.arch))
			if u["sha256"] != updSum(p.body) {
				t.Fatalf("%s/%s: %v", p.os, p.arch, u)
			}
			_, body := updGet(t, s, "GET", a.Secret, "/"+u["download_url"].(string), nil)
			if updSum(body) != u["sha256"] || int(u["size"].(float64)) != len(body) {
				t.Fatalf("%s/%s: %s gave sha256 %s (%d bytes), check said %v", p.os, p.arch, u["download_url"], updSum(body), len(body), u)
			}
		}
	})
}
