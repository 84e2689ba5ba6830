package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// badQueries are query strings the edge refuses, each with the parameter
// the refusal must name.
var badQueries = []struct{ raw, param string }{
	{"app_id=%00", "app_id"},                  // NUL: PostgreSQL cannot store it
	{"app_id=ok&username=a%00b", "username"},  // NUL inside a value, after a clean one
	{"license_key=%ff%fe", "license_key"},     // invalid UTF-8
	{"action=check&app_id=%C3%28", "app_id"},  // invalid UTF-8 sequence
	{"limit=1%0d%0aX-Injected:%201", "limit"}, // CR LF
	{"id=%01", "id"},                          // another C0 control
	{"cursor=%7f", "cursor"},                  // DEL
	{"a%00b=1", `"a\x00b"`},                   // the name itself, shown escaped
	{"app_id=x&app_id=%00", "app_id"},         // a repeated parameter's second value
	{"type=levels&key=%e2%82", "key"},         // a truncated UTF-8 sequence
	{"app_id=" + url.QueryEscape("ok\x00"), "app_id"},
}

// Every route in the route table (public, client, admin, customer, reseller,
// operations) refuses a query string that is not clean text with 400
// MISSING_FIELDS naming the parameter, as plain JSON, before any handler
// runs, on both engines and without an ERROR log line; a new route is
// covered by being in the table.
func TestQueryStringCheckedAtEdge(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var logs kwtest.LogBuffer
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		app := s.CreateApp("Edge")
		token := s.AdminToken()
		routes := s.API().Routes()
		if len(routes) < 50 {
			t.Fatalf("route table has %d routes; expected the full table", len(routes))
		}
		header := http.Header{"X-App-Secret": {app.Secret}, "Authorization": {"Bearer " + token}}
		for _, rt := range routes {
			for _, m := range rt.Methods {
				for _, q := range badQueries {
					if m == "HEAD" { // no body to read
						req, _ := http.NewRequest(m, s.URL+rt.Path+"?"+q.raw, nil)
						resp, err := kwtest.HTTP.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusBadRequest {
							t.Errorf("HEAD %s?%s: %d, want 400", rt.Path, q.raw, resp.StatusCode)
						}
						continue
					}
					r := s.Do(m, rt.Path+"?"+q.raw, header, []byte(`{}`))
					if r.Status != http.StatusBadRequest {
						t.Errorf("%s %s?%s: %s, want 400", m, rt.Path, q.raw, r)
						continue
					}
					if r.Sealed || r.Str("error_code") != "MISSING_FIELDS" || r.Body["success"] != false {
						t.Errorf("%s %s?%s: %s, want plain MISSING_FIELDS", m, rt.Path, q.raw, r)
					}
					if msg := r.Str("message"); !strings.Contains(msg, "query parameter "+q.param+":") {
						t.Errorf("%s %s?%s: message %q does not name %s", m, rt.Path, q.raw, msg, q.param)
					}
				}
			}
		}
		// A dangerous path is refused the same way.
		r := s.Do("GET", "/api/app/changelog.php%00", nil, nil)
		kwtest.ExpectCode(t, r, http.StatusBadRequest, "MISSING_FIELDS")
		// Clean text, tab and non-ASCII included, reaches the handler.
		r = s.Do("GET", "/api/app/changelog.php?app_id="+url.QueryEscape("nö\tapp"), nil, nil)
		if strings.Contains(r.Str("message"), "query parameter") {
			t.Errorf("clean query refused at the edge: %s", r)
		}
		r = s.Do("GET", "/api/app/changelog.php?app_id="+app.ID, nil, nil)
		if r.Status != http.StatusOK {
			t.Errorf("changelog with a clean app_id: %s", r)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("bad query strings logged errors:\n%s", logs.String())
		}
	})
}
