package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/signing"
)

// An oversized request body gets the same answer on every surface — plain
// 400 BODY_TOO_LARGE with a message, never sealed — whether the server
// learns the size from Content-Length or only by reading a chunked body,
// and whether the refusal comes from a route's own limit or from the reply
// signer, which reads a signed request whole before any route sees it.
func TestOversizedBodiesGetOneAnswerOnEverySurface(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "signing")
	if _, err := signing.Init(dir); err != nil {
		t.Fatal(err)
	}
	s := kwtest.Boot(t, "sqlite", func(c *config.Config) {
		c.SigningDir = dir
		c.MaxArtifactSize = 1 // MiB
	})
	a := s.CreateApp("Limits")
	_, resellerToken := a.CreateReseller(t, "Bigbody")
	release := a.CreateRelease("1.0.0", nil)

	// pad is a JSON object of n bytes or more.
	pad := func(n int) []byte { return []byte(`{"pad":"` + strings.Repeat("a", n) + `"}`) }
	overClient, overAdmin := pad(kwtest.ClientBodyLimit), pad(1<<20) // clientBodyLimit, adminBodyLimit of fields.go
	clientHdr := kwtest.AppHeader(a.Secret)
	admin := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {"application/json"}}
	reseller := http.Header{"Authorization": {"Bearer " + resellerToken}, "Content-Type": {"application/json"}}
	upload := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {"application/octet-stream"}}
	signed := func(h http.Header) http.Header {
		c := h.Clone()
		c.Set(signing.NonceHeader, strings.Repeat("ab", 32))
		return c
	}
	uploadPath := kwtest.PathAdminUpdates + "?" + url.Values{"action": {"upload"}, "app_id": {a.ID}, "id": {fmt.Sprint(release)},
		"os": {"windows"}, "arch": {"x64"}}.Encode()

	importPath := "/api/admin/keys-import.php?app_id=" + url.QueryEscape(a.ID)
	csvHdr := http.Header{"Authorization": {"Bearer " + s.AdminToken()}, "Content-Type": {"text/csv"}}
	// A key CSV just over 50 MiB (license.MaxImportBytes) of rows the parser
	// reads one by one (too few fields each, and fewer than its 100 000-row
	// limit), so it meets the size limit before anything else.
	bigCSV := []byte(strings.Join(license.KeyCSVHeader, ",") + "\n" + strings.Repeat(strings.Repeat("a", 699)+"\n", (50<<20)/700+1))

	for _, sc := range []struct {
		name, method, path string
		header             http.Header
		body               []byte
		signed             bool
	}{
		{"client plain", "POST", kwtest.PathValidate, clientHdr, overClient, false},
		{"client mirrored", "POST", kwtest.PathCheckKey, clientHdr, overClient, false},
		{"client envelope", "POST", "/api/auth/login.php", clientHdr, overClient, false},
		{"customer", "POST", "/api/customer/login.php", http.Header{"Content-Type": {"application/json"}}, overClient, false},
		{"admin JSON", "PUT", "/api/admin/apps.php?app_id=" + a.ID, admin, overAdmin, false},
		{"admin upload", "PUT", uploadPath, upload, bytes.Repeat([]byte{0xA5}, 1<<20+1), false},
		{"reseller", "POST", "/api/reseller/keys.php", reseller, overAdmin, false},
		{"admin key import", "POST", importPath, csvHdr, bigCSV, false},
		// A signed request within the signer's 1 MiB but over the route's
		// 64 KiB, and one over the signer's 1 MiB.
		{"signed client envelope", "POST", "/api/auth/login.php", signed(clientHdr), overClient, true},
		{"signed over the signer's limit", "POST", "/api/auth/login.php", signed(clientHdr), pad(1 << 20) /* signedRequestLimit of signing.go */, true},
		{"signed admin JSON", "PUT", "/api/admin/apps.php?app_id=" + a.ID, signed(admin), overAdmin, true},
	} {
		t.Run(sc.name, func(t *testing.T) {
			for _, chunked := range []bool{false, true} {
				var body io.Reader = bytes.NewReader(sc.body)
				if chunked {
					body = io.MultiReader(body) // no length: the server learns the size by reading
				}
				req, err := http.NewRequest(sc.method, s.URL+sc.path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = sc.header.Clone()
				if !chunked {
					// Refusals on a declared length come before the body is
					// read; the client then does not send it.
					req.Header.Set("Expect", "100-continue")
				}
				r := s.Send(req)
				what := sc.name
				if chunked {
					what += " (chunked)"
				}
				r.Refused(t, what, http.StatusBadRequest, "BODY_TOO_LARGE")
				if r.Sealed {
					t.Errorf("%s: the refusal is sealed: %s", what, r)
				}
				if m, _ := r.Body["message"].(string); m == "" {
					t.Errorf("%s: no message: %s", what, r)
				}
				if got := r.Header.Get(signing.SignatureHeader) != ""; got != sc.signed {
					t.Errorf("%s: signed reply %v, want %v", what, got, sc.signed)
				}
			}
		})
	}
}
