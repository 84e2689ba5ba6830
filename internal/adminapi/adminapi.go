// Package adminapi is keyward's admin API (/api/admin/*): bearer
// authentication (JWTs and personal access tokens), the role each route
// method needs on the app it names, the credential rules that refuse some
// requests to access tokens, and every admin handler. The dashboard calls it
// in process.
package adminapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/internal/webhook"
)

// Services are the domain services the admin API calls.
type Services struct {
	License   *license.Service
	Accounts  *account.Service
	Trials    *trial.Service
	Admins    *admin.Service
	Content   *content.Service
	Commerce  *commerce.Service
	Orders    *commerce.Orders
	Updates   *update.Service
	Webhooks  *webhook.Service
	Abuse     *abuse.Detector
	Analytics *analytics.Service
	// Usage is flushed before a report so it includes the latest counts
	// (nil: nothing to flush).
	Usage   *analytics.Recorder
	Sellers *reseller.Service
}

// Config holds the admin API's options.
type Config struct {
	// MaxArtifact is the largest update artifact upload in bytes.
	MaxArtifact int64
}

// API serves the admin routes.
type API struct {
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
	reports  *analytics.Service
	usage    *analytics.Recorder
	sellers  *reseller.Service
	db       *store.DB
	log      *slog.Logger
	now      func() time.Time
	cfg      Config
}

// New returns the admin API over e.
func New(e *edge.Edge, sv Services, db *store.DB, log *slog.Logger, now func() time.Time, cfg Config) *API {
	return &API{Edge: e, lic: sv.License, accounts: sv.Accounts, trials: sv.Trials, admins: sv.Admins, content: sv.Content,
		commerce: sv.Commerce, orders: sv.Orders, updates: sv.Updates, webhooks: sv.Webhooks, abuse: sv.Abuse, reports: sv.Analytics,
		usage: sv.Usage, sellers: sv.Sellers, db: db, log: log, now: now, cfg: cfg}
}

// Signed reports whether r carries a current admin token (signature and
// expiry only; the routes still verify the admin exists): the limiter's
// test for the admin bucket.
func (a *API) Signed(r *http.Request) bool {
	tok := edge.BearerToken(r)
	return tok != "" && a.admins.Signed(tok)
}

// Routes is the admin API's route table.
func (a *API) Routes() []edge.Route {
	var rs []edge.Route
	// Admin API: bearer token.
	rs = append(rs, edge.Route{Pattern: "POST /api/admin/login.php", Auth: edge.Public, Limit: edge.LimitAdmin, Handler: http.HandlerFunc(a.adminLogin)})
	// Each method names the least role it needs on the app given by app_id
	// (read: viewer and up, support, manage: admin and up, owner); self
	// routes are about the caller. Handlers ask for more with c.need.
	rs = append(rs, edge.Route{Pattern: "POST /api/admin/totp.php", Auth: edge.Public, Limit: edge.LimitAdmin, Handler: http.HandlerFunc(a.adminTOTP)})
	rs = append(rs, a.bearerRoute("/api/admin/logout.php", methods{"POST": self(a.adminLogout)})...)
	rs = append(rs, a.bearerRoute("/api/admin/profile.php", methods{"GET": self(a.getProfile), "PUT": credential(self(a.putProfile))})...)
	rs = append(rs, a.bearerRoute("/api/admin/signing.php", methods{"GET": self(a.signingKeys)})...)
	rs = append(rs, a.bearerRoute("/api/admin/2fa.php", methods{"POST": credential(self(a.twoFactor))})...)
	rs = append(rs, a.bearerRoute("/api/admin/tokens.php", methods{"GET": self(a.listTokens), "POST": credential(self(a.mintToken)), "DELETE": self(a.revokeToken)})...)
	rs = append(rs, a.bearerRoute("/api/admin/members.php", methods{"GET": read(a.listMembers), "POST": credentialWith("password", owner(a.putMember)),
		"PUT": credentialWith("password", owner(a.putMember)), "DELETE": owner(a.deleteMember)})...)
	rs = append(rs, a.bearerRoute("/api/admin/apps.php", methods{"GET": optionalApp(read(a.listApps)), "POST": credentialOn(optionalApp(manage(a.postApps)), "regenerate-secret", "set-secret"),
		"PUT": credentialWith("upstream_token", manage(a.updateApp)), "DELETE": owner(a.deleteApp)})...)
	rs = append(rs, a.bearerRoute("/api/admin/keys.php", methods{"GET": read(a.getKeys), "POST": support(a.postKeys),
		"PUT": manage(a.updateKey), "DELETE": manage(a.deleteKey)})...)
	rs = append(rs, a.bearerRoute("/api/admin/keys-bulk.php", methods{"POST": manage(a.bulkKeys)})...)
	rs = append(rs, a.bearerRoute("/api/admin/keys-import.php", methods{"POST": fileBody(manage(a.importKeys))})...)
	rs = append(rs, a.bearerRoute("/api/admin/sessions.php", methods{"GET": read(a.listSessions), "DELETE": optionalApp(support(a.revokeSession))})...)
	rs = append(rs, a.bearerRoute("/api/admin/hwid-resets.php", methods{"GET": read(a.listResetRequests), "POST": support(a.decideResetRequest)})...)
	rs = append(rs, a.bearerRoute("/api/admin/audit.php", methods{"GET": self(a.listAudit)})...)
	rs = append(rs, a.bearerRoute("/api/admin/trials.php", methods{"GET": read(a.listTrials)})...)
	rs = append(rs, a.bearerRoute("/api/admin/subscriptions.php", methods{"GET": read(a.listSubscriptions), "POST": manage(a.cancelSubscription)})...)
	rs = append(rs, a.bearerRoute("/api/admin/orders.php", methods{"GET": read(a.listOrders), "POST": credentialOn(manage(a.orderAction), "fulfillment-secret")})...)
	rs = append(rs, a.bearerRoute("/api/admin/pricing.php", methods{"GET": read(a.listPlans), "POST": manage(a.createPlan), "PUT": manage(a.updatePlan),
		"DELETE": manage(a.deleter(a.commerce.DeletePlan, "Plan"))})...)
	rs = append(rs, a.bearerRoute("/api/admin/feature-flags.php", methods{"GET": read(a.listFlags), "PUT": manage(a.putFlag), "DELETE": manage(a.deleteFlag)})...)
	rs = append(rs, a.bearerRoute("/api/admin/texts.php", methods{"GET": read(a.getTexts), "PUT": manage(a.putText), "DELETE": manage(a.deleteText)})...)
	rs = append(rs, a.bearerRoute("/api/admin/slides.php", methods{"GET": read(a.listSlides), "POST": manage(a.createSlide), "PUT": manage(a.updateSlide),
		"DELETE": manage(a.deleter(a.content.DeleteSlide, "Slide"))})...)
	rs = append(rs, a.bearerRoute("/api/admin/social-links.php", methods{"GET": read(a.listLinks), "POST": manage(a.createLink), "PUT": manage(a.updateLink),
		"DELETE": manage(a.deleter(a.content.DeleteLink, "Link"))})...)
	rs = append(rs, a.bearerRoute("/api/admin/changelog.php", methods{"GET": read(a.listEntries), "POST": manage(a.createEntry), "PUT": manage(a.updateEntry),
		"DELETE": manage(a.deleter(a.content.DeleteEntry, "Entry"))})...)
	rs = append(rs, a.bearerRoute("/api/admin/updates.php", methods{"GET": read(a.getUpdates), "POST": manage(a.postUpdates), "PUT": manage(a.putUpdates),
		"DELETE": manage(a.deleter(a.updates.DeleteDraft, "Draft release"))})...)
	rs = append(rs, a.bearerRoute("/api/admin/webhooks.php", methods{"GET": optionalApp(read(a.getWebhooks)), "POST": credentialOn(optionalApp(manage(a.postWebhooks)), "rotate_secret"),
		"PUT": optionalApp(manage(a.putWebhook)), "DELETE": optionalApp(manage(a.deleteWebhook))})...)
	rs = append(rs, a.bearerRoute("/api/admin/analytics.php", methods{"GET": read(a.getAnalytics)})...)
	rs = append(rs, a.bearerRoute("/api/admin/detections.php", methods{"GET": read(a.listDetections)})...)
	rs = append(rs, a.bearerRoute("/api/admin/accounts.php", methods{"GET": read(a.getAccounts), "POST": credentialOn(support(a.accountAction), "reset-password"), "DELETE": manage(a.deleteAccount)})...)
	rs = append(rs, a.bearerRoute("/api/admin/resellers.php", methods{"GET": manage(a.getResellers), "POST": credentialOn(owner(a.postResellers), "", "create", "rotate_token"),
		"PUT": owner(a.putReseller), "DELETE": owner(a.deleteReseller)})...)
	return rs
}
