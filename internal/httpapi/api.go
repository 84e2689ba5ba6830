// Package httpapi assembles keyward's HTTP surfaces: it builds the edge
// (middleware, transports, the one error writer) and mounts the route
// tables of the client API, the admin API, the customer/reseller portal, the
// operator routes and the dashboard on one mux.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/adminapi"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/clientapi"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/internal/opsapi"
	"github.com/keyward/keyward/internal/portal"
	"github.com/keyward/keyward/internal/ratelimit"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/internal/webhook"
)

// Config holds the HTTP layer's options.
type Config struct {
	// TrustProxy takes the client address from X-Forwarded-For and the
	// scheme from X-Forwarded-Proto.
	TrustProxy bool
	// ReplayMemory caps the in-memory replay cache (entries); default 2 000 000.
	ReplayMemory int
	// Per-IP request limits (see limit.go); a zero rate is no limit.
	Rate, AdminRate, HeartbeatRate ratelimit.Rate
	// MaxArtifact is the largest update artifact upload in bytes.
	MaxArtifact int64
	// MetricsToken is the bearer token /metrics asks for; empty: the
	// route answers 404.
	MetricsToken string
}

// API serves every HTTP route.
type API struct {
	// Edge is the shared middleware, transports and error writer; its
	// SetSigning, SetLicenseKeys, InFlight and WaitIdle are the API's.
	*edge.Edge
	routes []Route
	ui     UI
	ops    *opsapi.API
	client *clientapi.API
	portal *portal.API
	admin  *adminapi.API
}

// Check is one readiness check of /readyz (opsapi.Check).
type Check = opsapi.Check

// MetricsHandler serves the metrics without a token, for a separate
// listener (--metrics-addr) that only the monitoring network reaches.
func (a *API) MetricsHandler() http.Handler { return a.ops.MetricsHandler() }

// Services are the domain services the API serves.
type Services struct {
	License  *license.Service
	Accounts *account.Service
	Trials   *trial.Service
	Admins   *admin.Service
	Content  *content.Service
	Commerce *commerce.Service
	Orders   *commerce.Orders
	Updates  *update.Service
	Webhooks *webhook.Service
	Abuse    *abuse.Detector
	// Customers serves /api/customer/* self-service (not reset-hwid.php).
	Customers *customer.Service
	// Analytics answers analytics.php; Usage counts client events for it
	// (nil: nothing counted).
	Analytics *analytics.Service
	Usage     *analytics.Recorder
	Sellers   *reseller.Service
	// Checks are what /readyz asks, in order (none: always ready).
	Checks []Check
	// Metrics records requests, logins and kill codes (nil: nothing).
	Metrics *metrics.Metrics
	// UI is the web dashboard mounted at / and /dashboard/ (nil: none).
	UI UI
}

// UI builds the web dashboard's handler. api serves the admin API in
// process, without the per-IP limiter the dashboard's own request has
// already passed; https says whether a request reached keyward over HTTPS
// (directly or, with TrustProxy, through a TLS-terminating proxy).
type UI func(api http.Handler, https func(*http.Request) bool) http.Handler

// New returns the API over the given services.
func New(sv Services, db *store.DB, log *slog.Logger, now func() time.Time, cfg Config) *API {
	if cfg.ReplayMemory <= 0 {
		cfg.ReplayMemory = 2_000_000
	}
	if cfg.MaxArtifact <= 0 {
		cfg.MaxArtifact = 4096 << 20
	}
	a := &API{ui: sv.UI}
	a.Edge = edge.New(edge.Options{Log: log, Now: now, Metrics: sv.Metrics, Replays: db, Apps: sv.License, Refusals: refusals{sv.Abuse},
		Config:      edge.Config{TrustProxy: cfg.TrustProxy, ReplayMemory: cfg.ReplayMemory, Rate: cfg.Rate, AdminRate: cfg.AdminRate, HeartbeatRate: cfg.HeartbeatRate},
		AdminSigned: func(r *http.Request) bool { return a.admin.Signed(r) }})
	a.client = clientapi.New(a.Edge, clientapi.Services{License: sv.License, Accounts: sv.Accounts, Trials: sv.Trials, Content: sv.Content,
		Commerce: sv.Commerce, Orders: sv.Orders, Updates: sv.Updates, Abuse: sv.Abuse, Usage: sv.Usage, Metrics: sv.Metrics}, now)
	a.admin = adminapi.New(a.Edge, adminapi.Services{License: sv.License, Accounts: sv.Accounts, Trials: sv.Trials, Admins: sv.Admins,
		Content: sv.Content, Commerce: sv.Commerce, Orders: sv.Orders, Updates: sv.Updates, Webhooks: sv.Webhooks, Abuse: sv.Abuse,
		Analytics: sv.Analytics, Usage: sv.Usage, Sellers: sv.Sellers}, db, log, now, adminapi.Config{MaxArtifact: cfg.MaxArtifact})
	a.portal = portal.New(a.Edge, sv.Customers, sv.Sellers, sv.License, now)
	a.ops = opsapi.New(a.Edge, log, sv.Checks, sv.Metrics, cfg.MetricsToken)
	return a
}

// PageRefuser is implemented by a UI handler (the dashboard) that shows a
// refusal made at the edge as one of its pages (edge.PageRefuser).
type PageRefuser = edge.PageRefuser

// refusals feeds client refusals to abuse detection.
type refusals struct{ d *abuse.Detector }

func (f refusals) InvalidKey(ctx context.Context, app *license.App, ip string) {
	f.d.Burst(ctx, app, abuse.InvalidKeys, ip)
}

func (f refusals) BadEnvelope(ctx context.Context, app *license.App, ip string) {
	f.d.Burst(ctx, app, abuse.EnvelopeFailures, ip)
}

// Handler returns the route table wrapped in the common middleware.
func (a *API) Handler() http.Handler {
	mux := a.NewMux()
	a.routes = a.routes[:0]
	mount := func(rs ...edge.Route) {
		a.Mount(mux, rs...)
		for _, rt := range rs {
			a.addRoute(rt)
		}
	}
	// Operator routes: probes, metrics, the OpenAPI description (opsapi).
	mount(a.ops.Routes()...)

	// The client API shipped apps call (clientapi).
	mount(a.client.Routes()...)

	// The admin API: bearer token, a role per route method (adminapi).
	mount(a.admin.Routes()...)

	// The customer and reseller portal (portal).
	mount(a.portal.Routes()...)

	// The dashboard: pages that call the admin API above in process, so they
	// obey exactly its validation, authorization and audit.
	// The dashboard's own calls pass the same query check as requests from
	// outside (a page may put what it was given into an API query string).
	var ui http.Handler
	if a.ui != nil {
		ui = a.ui(a.Recoverer(a.CheckQuery(mux, nil)), a.IsHTTPS)
		mux.Handle("/dashboard/", ui)
		mux.Handle("GET /{$}", http.RedirectHandler("/dashboard/", http.StatusSeeOther))
	}

	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Error(w, r, edge.NoEndpoint(r))
	}))
	return a.Edge.Handler(mux, ui)
}

// Route is one registered path and the methods it answers.
type Route struct {
	Path    string
	Methods []string
	// TokenRefused lists the requests of an admin route that create or
	// change a credential and are refused to personal access tokens, as
	// "METHOD", "METHOD action=x" or "METHOD with field" (credential.go).
	TokenRefused []string
}

// Routes lists every registered route (after Handler has been called), so
// tests can hold the OpenAPI description to the real route table.
func (a *API) Routes() []Route { return a.routes }

// mounter registers routes (all of a path at once).
type mounter func(rs ...edge.Route)

// addRoute lists rt in Routes: one Route per path, its methods in
// registration order.
func (a *API) addRoute(rt edge.Route) {
	path, m := rt.Path(), rt.Method()
	for i := range a.routes {
		if a.routes[i].Path == path {
			a.routes[i].Methods = append(a.routes[i].Methods, m)
			a.routes[i].TokenRefused = append(a.routes[i].TokenRefused, rt.TokenRefused...)
			sort.Strings(a.routes[i].TokenRefused)
			return
		}
	}
	a.routes = append(a.routes, Route{Path: path, Methods: []string{m}, TokenRefused: slices.Sorted(slices.Values(rt.TokenRefused))})
}
