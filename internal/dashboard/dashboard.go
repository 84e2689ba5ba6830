// Package dashboard is the owner's web panel: server-rendered pages at
// /dashboard/… that call the admin API in process with the signed-in
// owner's token, so every page obeys exactly the API's validation,
// authorization and audit. Assets are embedded; nothing is fetched from
// elsewhere, and the only JavaScript is our own progressive enhancement.
package dashboard

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configure the dashboard.
type Options struct {
	// API serves the admin API (/api/admin/…) in process.
	API http.Handler
	// HTTPS reports whether a request reached keyward over HTTPS; the
	// session cookie is Secure then.
	HTTPS func(*http.Request) bool
	// Log receives errors the pages could not show (default: discarded).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Dashboard serves the web panel.
type Dashboard struct {
	api   http.Handler
	https func(*http.Request) bool
	log   *slog.Logger
	now   func() time.Time
	pages map[string]*template.Template
	cop   *http.CrossOriginProtection
	mux   *http.ServeMux
}

// New returns the dashboard over the admin API.
func New(o Options) *Dashboard {
	if o.HTTPS == nil {
		o.HTTPS = func(r *http.Request) bool { return r.TLS != nil }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &Dashboard{api: o.API, https: o.HTTPS, log: o.Log, now: o.Now, pages: pages(), cop: http.NewCrossOriginProtection()}
	d.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusForbidden, "This request came from another site and was refused.")
	}))
	d.mux = http.NewServeMux()
	d.routes(d.mux)
	return d
}

// Mount is the httpapi.UI hook: the dashboard over the in-process admin API.
func Mount(log *slog.Logger, now func() time.Time) func(api http.Handler, https func(*http.Request) bool) http.Handler {
	return func(api http.Handler, https func(*http.Request) bool) http.Handler {
		return New(Options{API: api, HTTPS: https, Log: log, Now: now})
	}
}

// ServeHTTP serves every /dashboard/ path with the panel's security headers;
// state-changing requests must come from this origin (CrossOriginProtection)
// and, past sign-in, carry the session's CSRF token.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.headers(w, r)
	d.cop.Handler(d.mux).ServeHTTP(w, r)
}

// RefusePage shows a refusal the server made before the dashboard's own
// routing (httpapi's check of the query string) as the dashboard's error
// page, with the refusal's status and code (httpapi.PageRefuser).
func (d *Dashboard) RefusePage(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	d.headers(w, r)
	d.render(w, r, status, "error", Page{Title: "Not possible", Data: map[string]any{"Message": message, "Code": code}})
}

// headers sets the panel's security and caching headers.
func (d *Dashboard) headers(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/dashboard/assets/") {
		h.Set("Cache-Control", "no-store")
	}
}

// routes registers every page. Each group of pages lives in its own file.
func (d *Dashboard) routes(m *http.ServeMux) {
	sub, _ := fs.Sub(assetFS, "assets")
	m.Handle("GET /dashboard/assets/", http.StripPrefix("/dashboard/assets/", assetHandler(sub)))
	d.routesAuth(m)
	d.routesApps(m)
	d.routesKeys(m)
	d.routesSessions(m)
	d.routesContent(m)
	d.routesUpdates(m)
	d.routesWebhooks(m)
	d.routesAnalytics(m)
	d.routesDetections(m)
	d.routesProfile(m)
	d.routesAudit(m)
	d.page(m, "/dashboard/", func(c *Ctx) {
		c.RenderStatus(http.StatusNotFound, "error", Page{Title: "Not found", Data: map[string]any{"Message": "There is no such page."}})
	})
}

// assetHandler serves the embedded CSS and JavaScript; pages link them with
// a ?v= of the build, so they may be cached for a day.
func assetHandler(sub fs.FS) http.Handler {
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}
