// Package httpapi is keyward's HTTP surface: the route table, middleware, the
// envelope transport and the only mapping from apperr kinds to HTTP statuses.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/clientapi"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/opsapi"
	"github.com/keyward/keyward/internal/portal"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/metrics"
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
	// SetSigning, InFlight and WaitIdle are the API's.
	*edge.Edge
	lic      *license.Service
	accounts *account.Service
	trials   *trial.Service
	admins   *admin.Service
	content  *content.Service
	commerce *commerce.Service
	orders   *commerce.Orders
	updates  *update.Service
	webhooks *webhook.Service
	abuse    *abuse.Detector

	reports *analytics.Service
	usage   *analytics.Recorder
	sellers *reseller.Service
	db      *store.DB
	log     *slog.Logger
	now     func() time.Time
	cfg     Config
	routes  []Route
	metrics *metrics.Metrics
	ui      UI
	ops     *opsapi.API
	client  *clientapi.API
	portal  *portal.API
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
	a := &API{lic: sv.License, accounts: sv.Accounts, trials: sv.Trials, admins: sv.Admins, content: sv.Content, commerce: sv.Commerce, orders: sv.Orders, updates: sv.Updates, webhooks: sv.Webhooks, abuse: sv.Abuse,
		sellers: sv.Sellers, reports: sv.Analytics, usage: sv.Usage, metrics: sv.Metrics, ui: sv.UI, db: db, log: log, now: now, cfg: cfg}
	a.Edge = edge.New(edge.Options{Log: log, Now: now, Metrics: sv.Metrics, Replays: db, Apps: sv.License, Refusals: refusals{sv.Abuse},
		Config: edge.Config{TrustProxy: cfg.TrustProxy, ReplayMemory: cfg.ReplayMemory, Rate: cfg.Rate, AdminRate: cfg.AdminRate, HeartbeatRate: cfg.HeartbeatRate},
		AdminSigned: func(r *http.Request) bool {
			tok := edge.BearerToken(r)
			return tok != "" && sv.Admins.Signed(tok)
		}})
	a.client = clientapi.New(a.Edge, clientapi.Services{License: sv.License, Accounts: sv.Accounts, Trials: sv.Trials, Content: sv.Content,
		Commerce: sv.Commerce, Orders: sv.Orders, Updates: sv.Updates, Abuse: sv.Abuse, Usage: sv.Usage, Metrics: sv.Metrics}, now)
	a.portal = portal.New(a.Edge, sv.Customers, sv.Sellers, now)
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

	// Admin API: bearer token.
	mount(edge.Route{Pattern: "POST /api/admin/login.php", Limit: edge.LimitAdmin, Handler: http.HandlerFunc(a.adminLogin)})
	// Each method names the least role it needs on the app given by app_id
	// (read: viewer and up, support, manage: admin and up, owner); self
	// routes are about the caller. Handlers ask for more with c.need.
	mount(edge.Route{Pattern: "POST /api/admin/totp.php", Limit: edge.LimitAdmin, Handler: http.HandlerFunc(a.adminTOTP)})
	a.bearerRoute(mount, "/api/admin/logout.php", methods{"POST": self(a.adminLogout)})
	a.bearerRoute(mount, "/api/admin/profile.php", methods{"GET": self(a.getProfile), "PUT": credential(self(a.putProfile))})
	a.bearerRoute(mount, "/api/admin/signing.php", methods{"GET": self(a.signingKeys)})
	a.bearerRoute(mount, "/api/admin/2fa.php", methods{"POST": credential(self(a.twoFactor))})
	a.bearerRoute(mount, "/api/admin/tokens.php", methods{"GET": self(a.listTokens), "POST": credential(self(a.mintToken)), "DELETE": self(a.revokeToken)})
	a.bearerRoute(mount, "/api/admin/members.php", methods{"GET": read(a.listMembers), "POST": credentialWith("password", owner(a.putMember)),
		"PUT": credentialWith("password", owner(a.putMember)), "DELETE": owner(a.deleteMember)})
	a.bearerRoute(mount, "/api/admin/apps.php", methods{"GET": optionalApp(read(a.listApps)), "POST": credentialOn(optionalApp(manage(a.postApps)), "regenerate-secret"),
		"PUT": manage(a.updateApp), "DELETE": owner(a.deleteApp)})
	a.bearerRoute(mount, "/api/admin/keys.php", methods{"GET": read(a.getKeys), "POST": support(a.postKeys),
		"PUT": manage(a.updateKey), "DELETE": manage(a.deleteKey)})
	a.bearerRoute(mount, "/api/admin/keys-bulk.php", methods{"POST": manage(a.bulkKeys)})
	a.bearerRoute(mount, "/api/admin/keys-import.php", methods{"POST": csvBody(manage(a.importKeys))})
	a.bearerRoute(mount, "/api/admin/sessions.php", methods{"GET": read(a.listSessions), "DELETE": optionalApp(support(a.revokeSession))})
	a.bearerRoute(mount, "/api/admin/hwid-resets.php", methods{"GET": read(a.listResetRequests), "POST": support(a.decideResetRequest)})
	a.bearerRoute(mount, "/api/admin/audit.php", methods{"GET": self(a.listAudit)})
	a.bearerRoute(mount, "/api/admin/trials.php", methods{"GET": read(a.listTrials)})
	a.bearerRoute(mount, "/api/admin/subscriptions.php", methods{"GET": read(a.listSubscriptions), "POST": manage(a.cancelSubscription)})
	a.bearerRoute(mount, "/api/admin/orders.php", methods{"GET": read(a.listOrders), "POST": credentialOn(manage(a.orderAction), "fulfillment-secret")})
	a.bearerRoute(mount, "/api/admin/pricing.php", methods{"GET": read(a.listPlans), "POST": manage(a.createPlan), "PUT": manage(a.updatePlan),
		"DELETE": manage(a.deleter(a.commerce.DeletePlan, "Plan"))})
	a.bearerRoute(mount, "/api/admin/feature-flags.php", methods{"GET": read(a.listFlags), "PUT": manage(a.putFlag), "DELETE": manage(a.deleteFlag)})
	a.bearerRoute(mount, "/api/admin/texts.php", methods{"GET": read(a.getTexts), "PUT": manage(a.putText), "DELETE": manage(a.deleteText)})
	a.bearerRoute(mount, "/api/admin/slides.php", methods{"GET": read(a.listSlides), "POST": manage(a.createSlide), "PUT": manage(a.updateSlide),
		"DELETE": manage(a.deleter(a.content.DeleteSlide, "Slide"))})
	a.bearerRoute(mount, "/api/admin/social-links.php", methods{"GET": read(a.listLinks), "POST": manage(a.createLink), "PUT": manage(a.updateLink),
		"DELETE": manage(a.deleter(a.content.DeleteLink, "Link"))})
	a.bearerRoute(mount, "/api/admin/changelog.php", methods{"GET": read(a.listEntries), "POST": manage(a.createEntry), "PUT": manage(a.updateEntry),
		"DELETE": manage(a.deleter(a.content.DeleteEntry, "Entry"))})
	a.bearerRoute(mount, "/api/admin/updates.php", methods{"GET": read(a.getUpdates), "POST": manage(a.postUpdates), "PUT": manage(a.putUpdates),
		"DELETE": manage(a.deleter(a.updates.DeleteDraft, "Draft release"))})
	a.bearerRoute(mount, "/api/admin/webhooks.php", methods{"GET": optionalApp(read(a.getWebhooks)), "POST": credentialOn(optionalApp(manage(a.postWebhooks)), "rotate_secret"),
		"PUT": optionalApp(manage(a.putWebhook)), "DELETE": optionalApp(manage(a.deleteWebhook))})
	a.bearerRoute(mount, "/api/admin/analytics.php", methods{"GET": read(a.getAnalytics)})
	a.bearerRoute(mount, "/api/admin/detections.php", methods{"GET": read(a.listDetections)})
	a.bearerRoute(mount, "/api/admin/accounts.php", methods{"GET": read(a.getAccounts), "POST": credentialOn(support(a.accountAction), "reset-password"), "DELETE": manage(a.deleteAccount)})
	a.bearerRoute(mount, "/api/admin/resellers.php", methods{"GET": manage(a.getResellers), "POST": credentialOn(owner(a.postResellers), "", "create", "rotate_token"),
		"PUT": owner(a.putReseller), "DELETE": owner(a.deleteReseller)})

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
		a.Error(w, r, edge.ErrNoEndpoint)
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
