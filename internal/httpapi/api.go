// Package httpapi is keyward's HTTP surface: the route table, middleware, the
// envelope transport and the only mapping from apperr kinds to HTTP statuses.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

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
	"github.com/keyward/keyward/internal/reqid"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/internal/webhook"
)

// ReplayStore is the shared record of answered envelopes, so that a replay
// reaching another keyward process still gets the first reply.
type ReplayStore interface {
	ClaimReplay(ctx context.Context, appID, mac string, expires time.Time) (bool, []byte, error)
	CompleteReplay(ctx context.Context, appID, mac string, reply []byte) error
	ReleaseReplay(ctx context.Context, appID, mac string) error
	ReplayReply(ctx context.Context, appID, mac string) ([]byte, error)
}

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
	// flights are the requests being served (inflight.go).
	flights  flights
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
	customer *customer.Service
	reports  *analytics.Service
	usage    *analytics.Recorder
	sellers  *reseller.Service
	db       *store.DB
	replays  ReplayStore
	cache    *replayCache
	limits   limiters
	// buckets are the per-IP buckets routes chose at registration (limit.go);
	// built by Handler, read only afterwards.
	buckets map[string]bucket
	log     *slog.Logger
	now     func() time.Time
	cfg     Config
	routes  []Route
	checks  []Check
	metrics *metrics.Metrics
	ui      UI
	// signer holds the reply-signing keys (nil: replies are not signed).
	signer atomic.Pointer[signing.Set]
}

// SetSigning sets the keys replies are signed with (nil turns signing off).
func (a *API) SetSigning(set *signing.Set) { a.signer.Store(set) }

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
	return &API{lic: sv.License, accounts: sv.Accounts, trials: sv.Trials, admins: sv.Admins, content: sv.Content, commerce: sv.Commerce, orders: sv.Orders, updates: sv.Updates, webhooks: sv.Webhooks, abuse: sv.Abuse,
		customer: sv.Customers, sellers: sv.Sellers, reports: sv.Analytics, usage: sv.Usage, checks: sv.Checks, metrics: sv.Metrics, ui: sv.UI, db: db, replays: db, cache: newReplayCache(cfg.ReplayMemory), limits: newLimiters(cfg, now), log: log, now: now, cfg: cfg}
}

// Handler returns the route table wrapped in the common middleware.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	a.routes = a.routes[:0]
	only := a.only
	a.buckets = map[string]bucket{}

	// The API's own OpenAPI description (docs/openapi.yaml): public.
	a.handle(mux, "/api/openapi.yaml", []string{"GET"}, only("GET", http.HandlerFunc(openAPI)))

	// Operations: liveness and readiness probes, public and cheap (ops.go).
	a.handle(mux, "/healthz", []string{"GET"}, only("GET", http.HandlerFunc(a.healthz)))
	a.handle(mux, "/readyz", []string{"GET"}, only("GET", http.HandlerFunc(a.readyz)))
	a.handle(mux, "/metrics", []string{"GET"}, only("GET", http.HandlerFunc(a.serveMetrics)))

	// Client API: app secret. "env" routes take and give envelopes; "db"
	// marks side effects whose replay is also checked across processes.
	a.handle(mux, "/api/auth/login.php", []string{"POST"}, only("POST", a.envelope(a.login, replayShared)))
	// The heartbeat: its own per-IP bucket; a revoked app's heartbeats are
	// served, to end their sessions with SESSION_REVOKED.
	a.handle(mux, "/api/auth/heartbeat.php", []string{"POST"}, only("POST", a.envelopeRoute(envelopeOptions{raw: a.heartbeat,
		scope: replayLocal, servesRevoked: true})), limitedBy(heartbeatBucket))
	a.handle(mux, "/api/auth/logout.php", []string{"POST"}, only("POST", a.envelope(a.logout, replayShared)))
	a.handle(mux, "/api/auth/check-key.php", []string{"POST"}, only("POST", a.mirrored(a.checkKey)))
	a.handle(mux, "/api/update/validate.php", []string{"POST"}, only("POST", a.plain(a.validate)))
	a.handle(mux, "/api/update/check.php", []string{"POST"}, only("POST", a.envelope(a.updateCheck, replayLocal)))
	a.handle(mux, "/api/update/download.php", []string{"GET", "HEAD"}, http.HandlerFunc(a.updateDownload))
	a.handle(mux, "/api/auth/request-hwid-reset.php", []string{"POST"}, only("POST", a.plain(a.requestHWIDReset)))
	a.handle(mux, "/api/customer/reset-hwid.php", []string{"POST"}, only("POST", a.plain(a.selfReset)))
	a.handle(mux, "/api/auth/trial.php", []string{"POST"}, only("POST", a.plain(a.trial)))
	a.handle(mux, "/api/auth/account-register.php", []string{"POST"}, only("POST", a.plain(a.register)))
	a.handle(mux, "/api/auth/account-login.php", []string{"POST"}, only("POST", a.plain(a.accountLogin)))
	a.handle(mux, "/api/auth/change-password.php", []string{"POST"}, only("POST", a.plain(a.changePassword)))
	a.handle(mux, "/api/auth/account-redeem.php", []string{"POST"}, only("POST", a.plain(a.redeem)))
	a.handle(mux, "/api/app/info.php", []string{"GET"}, only("GET", a.sealedGet(a.info)))
	a.handle(mux, "/api/app/text.php", []string{"GET"}, only("GET", a.sealedGet(a.text)))
	a.handle(mux, "/api/app/slides.php", []string{"POST"}, only("POST", a.envelope(a.slides, replayLocal)))
	a.handle(mux, "/api/app/social-click.php", []string{"POST"}, only("POST", a.envelope(a.socialClick, replayShared)))
	a.handle(mux, "/api/app/changelog.php", []string{"GET"}, only("GET", http.HandlerFunc(a.changelog)))
	a.handle(mux, "/api/app/pricing.php", []string{"GET", "POST"}, http.HandlerFunc(a.pricingRoute))
	a.handle(mux, "/api/app/fulfill.php", []string{"POST"}, only("POST", http.HandlerFunc(a.fulfill)))

	// Customer self-service: a customer token from login.php (customer.go).
	a.handle(mux, "/api/customer/login.php", []string{"POST"}, only("POST", http.HandlerFunc(a.customerLogin)))
	a.customerRoute(mux, "/api/customer/key.php", customerMethods{"GET": a.customerKey})
	a.customerRoute(mux, "/api/customer/sessions.php", customerMethods{"DELETE": a.customerEndSession, "POST": a.customerEndSession})
	a.customerRoute(mux, "/api/customer/orders.php", customerMethods{"GET": a.customerOrders})
	a.customerRoute(mux, "/api/customer/subscriptions.php", customerMethods{"GET": a.customerSubscriptions, "POST": a.customerCancel})

	// Admin API: bearer token.
	a.handle(mux, "/api/admin/login.php", []string{"POST"}, only("POST", http.HandlerFunc(a.adminLogin)))
	// Each method names the least role it needs on the app given by app_id
	// (read: viewer and up, support, manage: admin and up, owner); self
	// routes are about the caller. Handlers ask for more with c.need.
	a.handle(mux, "/api/admin/totp.php", []string{"POST"}, only("POST", http.HandlerFunc(a.adminTOTP)))
	a.bearerRoute(mux, "/api/admin/logout.php", methods{"POST": self(a.adminLogout)})
	a.bearerRoute(mux, "/api/admin/profile.php", methods{"GET": self(a.getProfile), "PUT": credential(self(a.putProfile))})
	a.bearerRoute(mux, "/api/admin/signing.php", methods{"GET": self(a.signingKeys)})
	a.bearerRoute(mux, "/api/admin/2fa.php", methods{"POST": credential(self(a.twoFactor))})
	a.bearerRoute(mux, "/api/admin/tokens.php", methods{"GET": self(a.listTokens), "POST": credential(self(a.mintToken)), "DELETE": self(a.revokeToken)})
	a.bearerRoute(mux, "/api/admin/members.php", methods{"GET": read(a.listMembers), "POST": credentialWith("password", owner(a.putMember)),
		"PUT": credentialWith("password", owner(a.putMember)), "DELETE": owner(a.deleteMember)})
	a.bearerRoute(mux, "/api/admin/apps.php", methods{"GET": optionalApp(read(a.listApps)), "POST": credentialOn(optionalApp(manage(a.postApps)), "regenerate-secret"),
		"PUT": manage(a.updateApp), "DELETE": owner(a.deleteApp)})
	a.bearerRoute(mux, "/api/admin/keys.php", methods{"GET": read(a.getKeys), "POST": support(a.postKeys),
		"PUT": manage(a.updateKey), "DELETE": manage(a.deleteKey)})
	a.bearerRoute(mux, "/api/admin/keys-bulk.php", methods{"POST": manage(a.bulkKeys)})
	a.bearerRoute(mux, "/api/admin/keys-import.php", methods{"POST": csvBody(manage(a.importKeys))})
	a.bearerRoute(mux, "/api/admin/sessions.php", methods{"GET": read(a.listSessions), "DELETE": optionalApp(support(a.revokeSession))})
	a.bearerRoute(mux, "/api/admin/hwid-resets.php", methods{"GET": read(a.listResetRequests), "POST": support(a.decideResetRequest)})
	a.bearerRoute(mux, "/api/admin/audit.php", methods{"GET": self(a.listAudit)})
	a.bearerRoute(mux, "/api/admin/trials.php", methods{"GET": read(a.listTrials)})
	a.bearerRoute(mux, "/api/admin/subscriptions.php", methods{"GET": read(a.listSubscriptions), "POST": manage(a.cancelSubscription)})
	a.bearerRoute(mux, "/api/admin/orders.php", methods{"GET": read(a.listOrders), "POST": credentialOn(manage(a.orderAction), "fulfillment-secret")})
	a.bearerRoute(mux, "/api/admin/pricing.php", methods{"GET": read(a.listPlans), "POST": manage(a.createPlan), "PUT": manage(a.updatePlan),
		"DELETE": manage(a.deleter(a.commerce.DeletePlan, "Plan"))})
	a.bearerRoute(mux, "/api/admin/feature-flags.php", methods{"GET": read(a.listFlags), "PUT": manage(a.putFlag), "DELETE": manage(a.deleteFlag)})
	a.bearerRoute(mux, "/api/admin/texts.php", methods{"GET": read(a.getTexts), "PUT": manage(a.putText), "DELETE": manage(a.deleteText)})
	a.bearerRoute(mux, "/api/admin/slides.php", methods{"GET": read(a.listSlides), "POST": manage(a.createSlide), "PUT": manage(a.updateSlide),
		"DELETE": manage(a.deleter(a.content.DeleteSlide, "Slide"))})
	a.bearerRoute(mux, "/api/admin/social-links.php", methods{"GET": read(a.listLinks), "POST": manage(a.createLink), "PUT": manage(a.updateLink),
		"DELETE": manage(a.deleter(a.content.DeleteLink, "Link"))})
	a.bearerRoute(mux, "/api/admin/changelog.php", methods{"GET": read(a.listEntries), "POST": manage(a.createEntry), "PUT": manage(a.updateEntry),
		"DELETE": manage(a.deleter(a.content.DeleteEntry, "Entry"))})
	a.bearerRoute(mux, "/api/admin/updates.php", methods{"GET": read(a.getUpdates), "POST": manage(a.postUpdates), "PUT": manage(a.putUpdates),
		"DELETE": manage(a.deleter(a.updates.DeleteDraft, "Draft release"))})
	a.bearerRoute(mux, "/api/admin/webhooks.php", methods{"GET": optionalApp(read(a.getWebhooks)), "POST": credentialOn(optionalApp(manage(a.postWebhooks)), "rotate_secret"),
		"PUT": optionalApp(manage(a.putWebhook)), "DELETE": optionalApp(manage(a.deleteWebhook))})
	a.bearerRoute(mux, "/api/admin/analytics.php", methods{"GET": read(a.getAnalytics)})
	a.bearerRoute(mux, "/api/admin/detections.php", methods{"GET": read(a.listDetections)})
	a.bearerRoute(mux, "/api/admin/accounts.php", methods{"GET": read(a.getAccounts), "POST": credentialOn(support(a.accountAction), "reset-password"), "DELETE": manage(a.deleteAccount)})
	a.bearerRoute(mux, "/api/admin/resellers.php", methods{"GET": manage(a.getResellers), "POST": credentialOn(owner(a.postResellers), "", "create", "rotate_token"),
		"PUT": owner(a.putReseller), "DELETE": owner(a.deleteReseller)})

	// Reseller API: the reseller's own bearer token (kwr_…).
	a.resellerRoute(mux, "/api/reseller/me.php", resellerMethods{"GET": a.resellerMe})
	a.resellerRoute(mux, "/api/reseller/keys.php", resellerMethods{"GET": a.resellerKeys, "POST": a.resellerPostKeys})
	a.resellerRoute(mux, "/api/reseller/ledger.php", resellerMethods{"GET": a.resellerLedger})

	// The dashboard: pages that call the admin API above in process, so they
	// obey exactly its validation, authorization and audit.
	// The dashboard's own calls pass the same query check as requests from
	// outside (a page may put what it was given into an API query string).
	var ui http.Handler
	if a.ui != nil {
		ui = a.ui(a.recoverer(a.checkQuery(mux, nil)), a.isHTTPS)
		mux.Handle("/dashboard/", routed(ui))
		mux.Handle("GET /{$}", http.RedirectHandler("/dashboard/", http.StatusSeeOther))
	}

	mux.Handle("/", routed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, errNoEndpoint)
	})))
	return a.requestID(a.signReplies(a.instrument(a.recoverer(a.securityHeaders(a.limit(a.checkQuery(mux, ui)))))))
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

// handle registers h at path, answering methods, with the route's options
// (its rate limit bucket: limitedBy).
func (a *API) handle(mux *http.ServeMux, path string, methods []string, h http.Handler, opts ...routeOption) {
	a.routes = append(a.routes, Route{Path: path, Methods: methods})
	for _, o := range opts {
		o(a, path)
	}
	mux.Handle(path, routed(h))
}

// routeOption states a per-route fact at registration.
type routeOption func(a *API, path string)

// bearerRoute registers an admin path dispatched by method.
func (a *API) bearerRoute(mux *http.ServeMux, path string, m methods) {
	a.handle(mux, path, strings.Split(m.allow(), ", "), a.bearer(m))
	a.routes[len(a.routes)-1].TokenRefused = m.tokenRefused()
}

// only refuses every method but m with a JSON 405.
func (a *API) only(m string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			a.methodNotAllowed(w, r, m)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// requestID gives every request an id, on its context (so every log line
// written with it carries request_id) and in the X-Request-Id reply header:
// the caller's own X-Request-Id when it is well-formed (reqid.Valid), else a
// fresh one.
func (a *API) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !reqid.Valid(id) {
			id = reqid.New()
		}
		w.Header().Set("X-Request-Id", id)
		// The request is registered as in flight (for shutdown) with the
		// same context change, so the hot path clones the request once.
		ctx := reqid.With(r.Context(), id)
		f, sh := a.track(r.Method, id)
		defer sh.remove(f)
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, flightKey{}, f)))
	})
}

// recoverer turns a panic into a generic JSON 500 and logs it.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.writeError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the headers every reply carries, and HSTS on replies
// to HTTPS requests so browsers (the dashboard) keep to HTTPS.
func (a *API) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = headerNosniff
		h["X-Frame-Options"] = headerDeny
		h["Referrer-Policy"] = headerNoRef
		if a.isHTTPS(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// isHTTPS reports whether the caller reached keyward over HTTPS: directly, or
// with TrustProxy through a proxy whose X-Forwarded-Proto (its last entry, the
// one the trusted proxy set) says https. keyward does not redirect on a
// forwarded "http": behind a plain-HTTP proxy that would lock the owner out,
// and a TLS-terminating proxy redirects on its own.
func (a *API) isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !a.cfg.TrustProxy {
		return false
	}
	protos := strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(protos[len(protos)-1]), "https")
}

// clientIP is the caller's address: the connection's peer, or with TrustProxy
// the last X-Forwarded-For entry (the one the trusted proxy appended).
func (a *API) clientIP(r *http.Request) string {
	if f, ok := r.Context().Value(flightKey{}).(*flight); ok && f.ip != "" {
		return f.ip // found once by the limiter
	}
	if a.cfg.TrustProxy {
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			parts := strings.Split(xff, ",")
			if ip := strings.TrimSpace(parts[len(parts)-1]); net.ParseIP(ip) != nil {
				return ip
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
