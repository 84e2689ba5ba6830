// Package httpapi is keyward's HTTP surface: the route table, middleware, the
// envelope transport and the only mapping from apperr kinds to HTTP statuses.
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/ratelimit"
	"github.com/keyward/keyward/internal/store"
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
}

// API serves every HTTP route.
type API struct {
	lic      *license.Service
	admins   *admin.Service
	content  *content.Service
	commerce *commerce.Service
	orders   *commerce.Orders
	updates  *update.Service
	webhooks *webhook.Service
	abuse    *abuse.Detector
	db       *store.DB
	replays  ReplayStore
	cache    *replayCache
	limits   limiters
	log      *slog.Logger
	now      func() time.Time
	cfg      Config
}

// Services are the domain services the API serves.
type Services struct {
	License  *license.Service
	Admins   *admin.Service
	Content  *content.Service
	Commerce *commerce.Service
	Orders   *commerce.Orders
	Updates  *update.Service
	Webhooks *webhook.Service
	Abuse    *abuse.Detector
}

// New returns the API over the given services.
func New(sv Services, db *store.DB, log *slog.Logger, now func() time.Time, cfg Config) *API {
	if cfg.ReplayMemory <= 0 {
		cfg.ReplayMemory = 2_000_000
	}
	if cfg.MaxArtifact <= 0 {
		cfg.MaxArtifact = 4096 << 20
	}
	return &API{lic: sv.License, admins: sv.Admins, content: sv.Content, commerce: sv.Commerce, orders: sv.Orders, updates: sv.Updates, webhooks: sv.Webhooks, abuse: sv.Abuse,
		db: db, replays: db, cache: newReplayCache(cfg.ReplayMemory), limits: newLimiters(cfg, now), log: log, now: now, cfg: cfg}
}

// Handler returns the route table wrapped in the common middleware.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()

	// Client API: app secret. "env" routes take and give envelopes; "db"
	// marks side effects whose replay is also checked across processes.
	mux.Handle("/api/auth/login.php", only("POST", a.envelope(a.login, replayShared)))
	mux.Handle(heartbeatPath, only("POST", a.envelope(a.heartbeat, replayLocal)))
	mux.Handle("/api/auth/logout.php", only("POST", a.envelope(a.logout, replayShared)))
	mux.Handle("/api/auth/check-key.php", only("POST", a.mirrored(a.checkKey)))
	mux.Handle("/api/update/validate.php", only("POST", a.plain(a.validate)))
	mux.Handle("/api/update/check.php", only("POST", a.envelope(a.updateCheck, replayLocal)))
	mux.Handle("/api/update/download.php", http.HandlerFunc(a.updateDownload))
	mux.Handle("/api/auth/request-hwid-reset.php", only("POST", a.plain(a.requestHWIDReset)))
	mux.Handle("/api/customer/reset-hwid.php", only("POST", a.plain(a.selfReset)))
	mux.Handle("/api/auth/trial.php", only("POST", a.plain(a.trial)))
	mux.Handle("/api/auth/account-register.php", only("POST", a.plain(a.register)))
	mux.Handle("/api/auth/account-login.php", only("POST", a.plain(a.accountLogin)))
	mux.Handle("/api/auth/change-password.php", only("POST", a.plain(a.changePassword)))
	mux.Handle("/api/auth/account-redeem.php", only("POST", a.plain(a.redeem)))
	mux.Handle("/api/app/info.php", only("GET", a.sealedGet(a.info)))
	mux.Handle("/api/app/text.php", only("GET", a.sealedGet(a.text)))
	mux.Handle("/api/app/slides.php", only("POST", a.envelope(a.slides, replayLocal)))
	mux.Handle("/api/app/social-click.php", only("POST", a.envelope(a.socialClick, replayShared)))
	mux.Handle("/api/app/changelog.php", only("GET", http.HandlerFunc(a.changelog)))
	mux.Handle("/api/app/pricing.php", http.HandlerFunc(a.pricingRoute))
	mux.Handle("/api/app/fulfill.php", only("POST", http.HandlerFunc(a.fulfill)))

	// Admin API: bearer token.
	mux.Handle("/api/admin/login.php", only("POST", http.HandlerFunc(a.adminLogin)))
	mux.Handle("/api/admin/apps.php", a.bearer(methods{
		"GET": a.listApps, "POST": a.postApps, "PUT": a.updateApp, "DELETE": a.deleteApp}))
	mux.Handle("/api/admin/keys.php", a.bearer(methods{
		"GET": a.getKeys, "POST": a.postKeys, "PUT": a.updateKey, "DELETE": a.deleteKey}))
	mux.Handle("/api/admin/sessions.php", a.bearer(methods{"GET": a.listSessions, "DELETE": a.revokeSession}))
	mux.Handle("/api/admin/audit.php", a.bearer(methods{"GET": a.listAudit}))
	mux.Handle("/api/admin/trials.php", a.bearer(methods{"GET": a.listTrials}))
	mux.Handle("/api/admin/subscriptions.php", a.bearer(methods{"GET": a.listSubscriptions, "POST": a.cancelSubscription}))
	mux.Handle("/api/admin/orders.php", a.bearer(methods{"GET": a.listOrders, "POST": a.orderAction}))
	mux.Handle("/api/admin/pricing.php", a.bearer(methods{"GET": a.listPlans, "POST": a.createPlan, "PUT": a.updatePlan, "DELETE": a.deleter(a.commerce.DeletePlan, "Plan")}))
	mux.Handle("/api/admin/feature-flags.php", a.bearer(methods{"GET": a.listFlags, "PUT": a.putFlag, "DELETE": a.deleteFlag}))
	mux.Handle("/api/admin/texts.php", a.bearer(methods{"GET": a.getTexts, "PUT": a.putText, "DELETE": a.deleteText}))
	mux.Handle("/api/admin/slides.php", a.bearer(methods{"GET": a.listSlides, "POST": a.createSlide, "PUT": a.updateSlide, "DELETE": a.deleter(a.content.DeleteSlide, "Slide")}))
	mux.Handle("/api/admin/social-links.php", a.bearer(methods{"GET": a.listLinks, "POST": a.createLink, "PUT": a.updateLink, "DELETE": a.deleter(a.content.DeleteLink, "Link")}))
	mux.Handle("/api/admin/changelog.php", a.bearer(methods{"GET": a.listEntries, "POST": a.createEntry, "PUT": a.updateEntry, "DELETE": a.deleter(a.content.DeleteEntry, "Entry")}))
	mux.Handle("/api/admin/updates.php", a.bearer(methods{"GET": a.getUpdates, "POST": a.postUpdates, "PUT": a.putUpdates,
		"DELETE": a.deleter(a.updates.DeleteDraft, "Draft release")}))
	mux.Handle("/api/admin/webhooks.php", a.bearer(methods{"GET": a.getWebhooks, "POST": a.postWebhooks, "PUT": a.putWebhook,
		"DELETE": a.deleteWebhook}))
	mux.Handle("/api/admin/detections.php", a.bearer(methods{"GET": a.listDetections}))
	mux.Handle("/api/admin/accounts.php", a.bearer(methods{"GET": a.getAccounts, "POST": a.accountAction, "DELETE": a.deleteAccount}))

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"success": false, "error_code": "NOT_FOUND", "message": "No such endpoint."})
	})
	return a.recoverer(a.securityHeaders(a.limit(mux)))
}

// only refuses every method but m with a JSON 405.
func only(m string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			methodNotAllowed(w, m)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"success": false, "error_code": "METHOD_NOT_ALLOWED",
		"message": "Method not allowed; use " + allow + "."})
}

// recoverer turns a panic into a generic JSON 500 and logs it.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.ErrorContext(r.Context(), "panic", "method", r.Method, "path", r.URL.Path, "panic", p)
				writeJSON(w, http.StatusInternalServerError, map[string]any{"success": false, "error_code": "INTERNAL", "message": "Internal server error."})
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
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
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
