package edge

import (
	"bufio"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// muxRoutes are patterns shaped like keyward's route table: exact method
// patterns (several methods on one path, a GET-only path whose HEAD Mount
// refuses, a path registering HEAD itself), wildcards, a subtree, the root
// redirect, the unknown-path fallback, and patterns the exact table must
// leave to the ServeMux (a path with an escape, a trailing slash). (The
// ServeMux refuses to register a path that is not clean.)
var muxRoutes = [][]string{
	{"POST /api/auth/heartbeat.php"},
	{"POST /api/auth/login.php"},
	{"GET /api/auth/check-key.php", "POST /api/auth/check-key.php"},
	{"GET /api/admin/apps.php", "POST /api/admin/apps.php", "PATCH /api/admin/apps.php", "DELETE /api/admin/apps.php"},
	{"GET /api/admin/keys/{id}", "DELETE /api/admin/keys/{id}"},
	{"GET /api/admin/files/{path...}"},
	{"GET /healthz", "HEAD /healthz"},
	{"GET /api/a%20b"},
	{"GET /api/trailing/"},
}

// newTestMux mounts muxRoutes, each answering with its pattern and the
// request's Pattern, plus the subtree, root and fallback handlers
// httpapi registers with Handle.
func newTestMux(t testing.TB) *Mux {
	t.Helper()
	e := New(Options{Log: slog.New(slog.DiscardHandler), Now: time.Now})
	m := e.NewMux()
	answer := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Handler", name)
			w.Header().Set("X-Pattern", r.Pattern)
			w.WriteHeader(http.StatusTeapot)
		})
	}
	for _, path := range muxRoutes {
		var rs []Route
		for _, p := range path {
			rs = append(rs, Route{Pattern: p, Handler: answer(p)})
		}
		e.Mount(m, rs...)
	}
	m.Handle("/dashboard/", answer("dashboard"))
	m.Handle("POST /api/sub/", answer("subtree"))
	m.Handle("POST /api/sub/{$}", answer("subtree root")) // more specific for its own path
	m.Handle("GET /{$}", answer("root"))
	m.Handle("/", answer("fallback"))
	return m
}

// serveBoth answers the request read from raw twice, through the Mux and
// through its ServeMux alone, and says how each answer differs.
func serveBoth(t testing.TB, m *Mux, raw string) (mux, plain *httptest.ResponseRecorder, ok bool) {
	read := func() *http.Request {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return nil
		}
		return r
	}
	a, b := read(), read()
	if a == nil {
		return nil, nil, false
	}
	mux, plain = httptest.NewRecorder(), httptest.NewRecorder()
	m.ServeHTTP(mux, a)
	m.mux.ServeHTTP(plain, b)
	if a.Pattern != b.Pattern {
		t.Errorf("%q: Request.Pattern %q through the Mux, %q through the ServeMux", raw, a.Pattern, b.Pattern)
	}
	return mux, plain, true
}

func sameAnswer(t testing.TB, raw string, mux, plain *httptest.ResponseRecorder) {
	t.Helper()
	for _, h := range []string{"X-Handler", "X-Pattern", "Location", "Allow"} {
		if mux.Header().Get(h) != plain.Header().Get(h) {
			t.Errorf("%q: %s %q through the Mux, %q through the ServeMux", raw, h, mux.Header().Get(h), plain.Header().Get(h))
		}
	}
	if mux.Code != plain.Code || mux.Body.String() != plain.Body.String() {
		t.Errorf("%q: %d %q through the Mux, %d %q through the ServeMux", raw, mux.Code, mux.Body, plain.Code, plain.Body)
	}
}

// The exact table answers every request as the ServeMux alone would: the
// same handler, Request.Pattern, redirect and 405.
func TestMuxExactAgreesWithServeMux(t *testing.T) {
	m := newTestMux(t)
	// Exact patterns are in the table, Mount's HEAD refusals of GET-only
	// paths among them; wildcards, subtrees, escapes and Mount's
	// method-less fallbacks are not.
	var held []string
	for k, rt := range m.exact {
		if k.method+" "+k.path != rt.pattern {
			t.Errorf("exact[%q %q] holds pattern %q", k.method, k.path, rt.pattern)
		}
		held = append(held, rt.pattern)
	}
	slices.Sort(held)
	want := []string{"DELETE /api/admin/apps.php", "GET /api/admin/apps.php", "GET /api/auth/check-key.php", "GET /healthz",
		"HEAD /api/admin/apps.php", "HEAD /api/auth/check-key.php", "HEAD /healthz", "PATCH /api/admin/apps.php",
		"POST /api/admin/apps.php", "POST /api/auth/check-key.php", "POST /api/auth/heartbeat.php", "POST /api/auth/login.php"}
	if !slices.Equal(held, want) {
		t.Errorf("exact table:\n%q\nwant\n%q", held, want)
	}
	for _, target := range []string{
		"/api/auth/heartbeat.php", "/api/auth/login.php", "/api/auth/check-key.php", "/api/admin/apps.php",
		"/api/admin/keys/7", "/api/admin/files/a/b", "/healthz", "/api/a%20b", "/api/a b", "/api//double", "/api/double",
		"/api/trailing/", "/api/trailing", "/api/sub/", "/api/sub/x", "/dashboard/", "/dashboard", "/", "/nowhere", "/api/auth/../auth/heartbeat.php",
		"/api/auth//heartbeat.php", "/api/auth/heartbeat%2Ephp", "/api/auth%2Fheartbeat.php", "/api/auth/heartbeat.php/",
		"/API/auth/heartbeat.php", "/api/auth/heartbeat.php?x=1", "*",
	} {
		for _, method := range []string{"GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS", "CONNECT", "post"} {
			raw := method + " " + target + " HTTP/1.1\r\nHost: example.com\r\n\r\n"
			mux, plain, ok := serveBoth(t, m, raw)
			if ok {
				sameAnswer(t, raw, mux, plain)
			}
		}
	}
	// The heartbeat itself comes from the table, with its pattern.
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("POST", "/api/auth/heartbeat.php", nil))
	if rec.Code != http.StatusTeapot || rec.Header().Get("X-Pattern") != "POST /api/auth/heartbeat.php" {
		t.Errorf("heartbeat: %d, pattern %q", rec.Code, rec.Header().Get("X-Pattern"))
	}
}

// A host pattern turns the table off: for its host it would be more
// specific than the exact pattern of the same path.
func TestMuxHostPatternTurnsExactOff(t *testing.T) {
	m := newTestMux(t)
	m.Handle("POST example.com/api/auth/heartbeat.php", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "host")
	}))
	if m.exact != nil {
		t.Fatal("a host pattern left the exact table on")
	}
	m.Handle("GET /later", http.NotFoundHandler()) // stays off
	if m.exact != nil {
		t.Fatal("the exact table came back")
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("POST", "http://example.com/api/auth/heartbeat.php", nil))
	if rec.Header().Get("X-Handler") != "host" {
		t.Errorf("example.com's heartbeat went to %q, want the host pattern", rec.Header().Get("X-Handler"))
	}
}

func TestSplitMethod(t *testing.T) {
	for pattern, want := range map[string][2]string{
		"POST /a":           {"POST", "/a"},
		"POST \t /a":        {"POST", "/a"},
		"GET\t/a/{id}":      {"GET", "/a/{id}"},
		"/dashboard/":       {"", "/dashboard/"},
		"example.com/a":     {"", "example.com/a"},
		"GET example.com/a": {"GET", "example.com/a"},
	} {
		if m, rest := splitMethod(pattern); [2]string{m, rest} != want {
			t.Errorf("splitMethod(%q) = %q, %q; want %q", pattern, m, rest, want)
		}
		if rt := (Route{Pattern: pattern}); [2]string{rt.Method(), rt.Path()} != want {
			t.Errorf("Route{%q}: Method %q, Path %q; want %q", pattern, rt.Method(), rt.Path(), want)
		}
	}
}

// FuzzMuxExact holds the table to the ServeMux on any request line.
func FuzzMuxExact(f *testing.F) {
	for _, s := range []string{"POST /api/auth/heartbeat.php", "HEAD /healthz", "GET /api//double", "GET /api/a%20b",
		"DELETE /api/admin/keys/1", "PUT /api/admin/apps.php", "GET /api/auth/./heartbeat.php", "CONNECT example.com:443"} {
		method, target, _ := strings.Cut(s, " ")
		f.Add(method, target)
	}
	m := newTestMux(f)
	f.Fuzz(func(t *testing.T, method, target string) {
		if strings.ContainsAny(method+target, " \r\n") {
			return
		}
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: example.com\r\n\r\n", method, target)
		if mux, plain, ok := serveBoth(t, m, raw); ok {
			sameAnswer(t, raw, mux, plain)
		}
	})
}

// BenchmarkMuxExact routes a heartbeat among 115 routes (keyward's count),
// with the fallbacks Mount adds, through the exact table and through the
// ServeMux alone.
func BenchmarkMuxExact(b *testing.B) {
	e := New(Options{Log: slog.New(slog.DiscardHandler), Now: time.Now})
	m := e.NewMux()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for i := range 40 {
		e.Mount(m, Route{Pattern: fmt.Sprintf("GET /api/admin/thing%d.php", i), Handler: ok},
			Route{Pattern: fmt.Sprintf("POST /api/admin/thing%d.php", i), Handler: ok})
	}
	for i := range 34 {
		e.Mount(m, Route{Pattern: fmt.Sprintf("GET /api/admin/thing%d/{id}", i), Handler: ok})
	}
	e.Mount(m, Route{Pattern: "POST /api/auth/heartbeat.php", Handler: ok})
	m.Handle("/dashboard/", ok)
	m.Handle("/", ok)
	r := httptest.NewRequest("POST", "/api/auth/heartbeat.php", nil)
	w := httptest.NewRecorder()
	b.Run("exact", func(b *testing.B) {
		for b.Loop() {
			m.ServeHTTP(w, r)
		}
	})
	b.Run("servemux", func(b *testing.B) {
		for b.Loop() {
			m.mux.ServeHTTP(w, r)
		}
	})
}
