package edge

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A mounted path answers its methods; any other method, HEAD on a GET-only
// path included, gets the one JSON 405 with Allow listing its methods in
// alphabetical order; a path that registers HEAD answers it.
func TestMountRefusesOtherMethodsWithJSON405(t *testing.T) {
	e := New(Options{Log: slog.New(slog.DiscardHandler), Now: time.Now})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, 200, map[string]any{"success": true}) })
	m := e.NewMux()
	e.Mount(m, Route{Pattern: "GET /x", Handler: ok})
	e.Mount(m, Route{Pattern: "PUT /y", Handler: ok}, Route{Pattern: "DELETE /y", Handler: ok}, Route{Pattern: "GET /y", Handler: ok})
	e.Mount(m, Route{Pattern: "GET /z", Handler: ok}, Route{Pattern: "HEAD /z", Handler: ok})
	h := e.Handler(m, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/x", 200, ""},
		{"HEAD", "/x", 405, "GET"},
		{"POST", "/x", 405, "GET"},
		{"OPTIONS", "/x", 405, "GET"},
		{"DELETE", "/y", 200, ""},
		{"POST", "/y", 405, "DELETE, GET, PUT"},
		{"HEAD", "/y", 405, "DELETE, GET, PUT"},
		{"HEAD", "/z", 200, ""},
		{"POST", "/z", 405, "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: status %d, Allow %q; want %d, %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.status, tc.allow)
			continue
		}
		if tc.status != 405 || tc.method == "HEAD" {
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error_code"] != "METHOD_NOT_ALLOWED" ||
			body["message"] != "Method not allowed; use "+tc.allow+"." || body["success"] != false {
			t.Errorf("%s %s: body %s (%v), want the JSON 405", tc.method, tc.path, rec.Body, err)
		}
	}
}

// Every method of a route counts under its path in InFlight (and metrics),
// never under the method pattern.
func TestRouteLabelIsThePath(t *testing.T) {
	e := New(Options{Log: slog.New(slog.DiscardHandler), Now: time.Now})
	var seen []InFlight
	m := e.NewMux()
	e.Mount(m, Route{Pattern: "POST /p", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = e.InFlight() })})
	e.Handler(m, nil).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/p", nil))
	if len(seen) != 1 || seen[0].Route != "/p" || seen[0].Method != "POST" {
		t.Errorf("in flight %+v, want one POST on route /p", seen)
	}
}
