package edge

import (
	"net/http"
	"sort"
	"strings"
)

// Auth names what a route asks of its caller. The surface that owns the
// route checks it (in its handler wrapper); the table states it so a reader
// and the route listing see it in one place.
type Auth int

// The credentials routes ask for.
const (
	Public        Auth = iota // nothing (a handler may still ask for its own token: /metrics)
	AppSecret                 // X-App-Secret: the client API
	AdminBearer               // an admin's JWT or personal access token
	CustomerToken             // a customer token from /api/customer/login.php
	ResellerToken             // a reseller's kwr_ token
)

// Transport is how a route's request and reply travel.
type Transport int

// The transports. Direct routes are served by Route.Handler as they are;
// the others call Route.Client (or Route.Raw) with the app resolved and the
// body parsed.
const (
	Direct    Transport = iota // Handler serves the request
	Plain                      // plain JSON both ways
	Envelope                   // envelopes both ways
	Mirrored                   // envelopes answered with envelopes, plain JSON with plain JSON
	SealedGet                  // a GET without a body answered with an envelope
)

// Route is one registered method pattern and what it states: its auth, its
// per-IP limiter bucket, its transport and replay scope, and its handler.
type Route struct {
	// Pattern is a Go 1.22 method pattern: "POST /api/auth/login.php".
	// A method other than the path's registered ones gets a JSON 405 with
	// an Allow header; a GET route does not answer HEAD unless a HEAD
	// pattern is registered too.
	Pattern   string
	Auth      Auth
	Limit     Limit
	Transport Transport
	// Replay is the replay scope of an Envelope or Mirrored route.
	Replay ReplayScope
	// ServesRevoked: a revoked app's requests are still served (the
	// heartbeat, which then ends sessions with SESSION_REVOKED).
	ServesRevoked bool
	Client        ClientHandler // Plain, Envelope, Mirrored, SealedGet
	Raw           RawHandler    // Envelope fast path (instead of Client)
	Handler       http.Handler  // Direct
	// TokenRefused lists the requests of an admin route that create or
	// change a credential and are refused to personal access tokens, as
	// "METHOD", "METHOD action=x" or "METHOD with field".
	TokenRefused []string
}

// Method is the route's method ("" for a pattern without one).
func (rt Route) Method() string {
	m, _ := splitMethod(rt.Pattern)
	return m
}

// Path is the route's path.
func (rt Route) Path() string {
	_, p := splitMethod(rt.Pattern)
	return p
}

// splitMethod splits a ServeMux pattern "[METHOD ][HOST]/[PATH]" into its
// method and the rest, as the ServeMux does (net/http's parsePattern).
func splitMethod(pattern string) (method, rest string) {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		return pattern[:i], strings.TrimLeft(pattern[i+1:], " \t")
	}
	return "", pattern
}

// Mux is a ServeMux with the per-path facts the middleware outside it needs
// (the limiter bucket of each registered path), and a table of its exact
// patterns that answers most requests without walking the ServeMux's tree.
// Everything is registered before it serves: unlike the ServeMux, its
// tables take no lock.
type Mux struct {
	mux    *http.ServeMux
	limits map[string]Limit
	// exact holds each registered pattern with a method and a literal path
	// ("POST /api/auth/heartbeat.php"): no wildcard, trailing slash, escape
	// or host. A request whose method and path equal one of them is matched
	// by that pattern and by no more specific one, so the ServeMux would
	// choose the same handler. The table finds it with one map lookup, a
	// quarter of the ServeMux's time among keyward's routes
	// (BenchmarkMuxExact), without the walk through the routing tree's nodes
	// in memory. Every other request goes to the ServeMux, which redirects
	// unclean paths, matches wildcards and answers HEAD with a GET pattern.
	exact map[exactKey]exactRoute
}

type exactKey struct{ method, path string }

type exactRoute struct {
	pattern string // as registered, for Request.Pattern
	h       http.Handler
}

// NewMux returns an empty Mux.
func (e *Edge) NewMux() *Mux {
	return &Mux{mux: http.NewServeMux(), limits: map[string]Limit{}, exact: map[exactKey]exactRoute{}}
}

// ServeHTTP dispatches r without the middleware. A path with escapes
// (RawPath set) always goes to the ServeMux, which matches it segment by
// segment unescaped.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawPath == "" {
		if rt, ok := m.exact[exactKey{r.Method, r.URL.Path}]; ok {
			r.Pattern = rt.pattern
			rt.h.ServeHTTP(w, r)
			return
		}
	}
	m.mux.ServeHTTP(w, r)
}

// Handle registers h at pattern as it is (the dashboard, the unknown-path
// refusal); its metrics label is the pattern.
func (m *Mux) Handle(pattern string, h http.Handler) { m.handle(pattern, routed(pattern, h)) }

// handle registers h with the ServeMux and, when pattern is exact, in the
// exact table. A host pattern empties the table for good: it is more
// specific than a pattern without one for the same path, which the table
// does not look at.
func (m *Mux) handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, h) // panics on a malformed or conflicting pattern
	if m.exact == nil {
		return
	}
	method, p := splitMethod(pattern)
	switch {
	case !strings.HasPrefix(p, "/"): // a host before the path
		m.exact = nil
	case method != "" && !strings.HasSuffix(p, "/") && !strings.ContainsAny(p, "{}%"):
		m.exact[exactKey{method, p}] = exactRoute{pattern: pattern, h: h}
	}
}

// Mount registers routes, each at its method pattern with the handler its
// transport builds, and for each path a fallback that answers the methods
// it does not serve with the one JSON 405 (Allow: its methods in
// alphabetical order). A path registered with GET and not HEAD has HEAD
// refused too (a GET pattern would otherwise answer it). All routes of a
// path must be mounted in one call.
func (e *Edge) Mount(m *Mux, routes ...Route) {
	methods := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		path := rt.Path()
		if _, seen := methods[path]; !seen {
			paths = append(paths, path)
		}
		methods[path] = append(methods[path], rt.Method())
		m.limits[path] = rt.Limit
		m.handle(rt.Pattern, routed(path, e.serve(rt)))
	}
	for _, path := range paths {
		ms := methods[path]
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.MethodNotAllowed(w, r, allow) })
		m.handle(path, routed(path, refuse))
		if has(ms, http.MethodGet) && !has(ms, http.MethodHead) {
			m.handle(http.MethodHead+" "+path, routed(path, refuse))
		}
	}
}

func has(ms []string, m string) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// serve builds the handler of rt's transport.
func (e *Edge) serve(rt Route) http.Handler {
	switch rt.Transport {
	case Plain:
		return e.plain(rt.Client)
	case Envelope:
		return e.envelopeRoute(rt)
	case Mirrored:
		return e.mirrored(rt.Client)
	case SealedGet:
		return e.sealedGet(rt.Client)
	}
	return rt.Handler
}

// Handler wraps m in the common middleware: request id and in-flight
// record, reply signing, instrumentation, panic recovery, security headers,
// the per-IP limiter and the query check (innermost). ui, when not nil, is
// the dashboard: the query check shows its refusals as the dashboard's own
// page when it implements PageRefuser.
func (e *Edge) Handler(m *Mux, ui http.Handler) http.Handler {
	return e.requestID(e.signReplies(e.instrument(e.Recoverer(e.securityHeaders(e.limit(m.limits, e.CheckQuery(m, ui)))))))
}
