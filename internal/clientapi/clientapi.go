// Package clientapi is the client API shipped apps call (sdk-compat):
// sign-in, heartbeat, logout, key checks, HWID resets, trials, app user
// accounts, remote content, updates, the public price list, orders and
// fulfilment, and the operator's public keys. Its route table states each
// route's transport (envelope, plain, mirrored, sealed GET), replay scope
// and limiter; the transports themselves are the edge's.
package clientapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/internal/update"
)

// Services are the domain services the client API calls.
type Services struct {
	License  *license.Service
	Accounts *account.Service
	Trials   *trial.Service
	Content  *content.Service
	Commerce *commerce.Service
	Orders   *commerce.Orders
	Updates  *update.Service
	Abuse    *abuse.Detector
	// Usage counts client events for analytics (nil: nothing counted).
	Usage *analytics.Recorder
	// Metrics records logins and kill codes (nil: nothing).
	Metrics *metrics.Metrics
}

// API serves the client routes.
type API struct {
	*edge.Edge
	lic      *license.Service
	accounts *account.Service
	trials   *trial.Service
	content  *content.Service
	commerce *commerce.Service
	orders   *commerce.Orders
	updates  *update.Service
	abuse    *abuse.Detector
	usage    *analytics.Recorder
	metrics  *metrics.Metrics
	now      func() time.Time
	// beats caches the heartbeat replies with trust_until, by TTL
	// (client.go, trustedBeatReply).
	beats [16]atomic.Pointer[trustedBeat]
}

// New returns the client API over e.
func New(e *edge.Edge, sv Services, now func() time.Time) *API {
	return &API{Edge: e, lic: sv.License, accounts: sv.Accounts, trials: sv.Trials, content: sv.Content, commerce: sv.Commerce,
		orders: sv.Orders, updates: sv.Updates, abuse: sv.Abuse, usage: sv.Usage, metrics: sv.Metrics, now: now}
}

// Routes is the client API's route table.
func (a *API) Routes() []edge.Route {
	var rs []edge.Route
	const (
		get, post = "GET ", "POST "
	)
	plain := func(pattern string, h edge.ClientHandler) edge.Route {
		return edge.Route{Pattern: pattern, Auth: edge.AppSecret, Transport: edge.Plain, Client: h}
	}
	env := func(pattern string, scope edge.ReplayScope, h edge.ClientHandler) edge.Route {
		return edge.Route{Pattern: pattern, Auth: edge.AppSecret, Transport: edge.Envelope, Replay: scope, Client: h}
	}
	direct := func(pattern string, auth edge.Auth, h http.HandlerFunc) edge.Route {
		return edge.Route{Pattern: pattern, Auth: auth, Handler: h}
	}

	// Client API: app secret. Envelope routes take and give envelopes;
	// ReplayShared marks side effects whose replay is also checked across
	// processes.
	rs = append(rs, env(post+"/api/auth/login.php", edge.ReplayShared, a.login))
	// The heartbeat: its own per-IP bucket; a revoked app's heartbeats are
	// served, to end their sessions with SESSION_REVOKED.
	rs = append(rs, edge.Route{Pattern: post + "/api/auth/heartbeat.php", Auth: edge.AppSecret, Limit: edge.LimitHeartbeat, Transport: edge.Envelope,
		Replay: edge.ReplayLocal, ServesRevoked: true, Raw: a.heartbeat})
	rs = append(rs, env(post+"/api/auth/logout.php", edge.ReplayShared, a.logout))
	// License files (docs/offline.md): login's transport, replay scope and
	// limiter; it binds the device as login does.
	rs = append(rs, env(post+"/api/auth/license-file.php", edge.ReplayShared, a.licenseFile))
	rs = append(rs, edge.Route{Pattern: post + "/api/auth/check-key.php", Auth: edge.AppSecret, Transport: edge.Mirrored, Replay: edge.ReplayLocal, Client: a.checkKey})
	rs = append(rs, plain(post+"/api/update/validate.php", a.validate))
	rs = append(rs, env(post+"/api/update/check.php", edge.ReplayLocal, a.updateCheck))
	rs = append(rs, direct(get+"/api/update/download.php", edge.AppSecret, a.updateDownload), direct("HEAD /api/update/download.php", edge.AppSecret, a.updateDownload))
	rs = append(rs, plain(post+"/api/auth/request-hwid-reset.php", a.requestHWIDReset))
	rs = append(rs, plain(post+"/api/customer/reset-hwid.php", a.selfReset))
	rs = append(rs, plain(post+"/api/auth/trial.php", a.trial))
	rs = append(rs, plain(post+"/api/auth/account-register.php", a.register))
	rs = append(rs, plain(post+"/api/auth/account-login.php", a.accountLogin))
	rs = append(rs, plain(post+"/api/auth/change-password.php", a.changePassword))
	rs = append(rs, plain(post+"/api/auth/account-redeem.php", a.redeem))
	rs = append(rs, edge.Route{Pattern: get + "/api/app/info.php", Auth: edge.AppSecret, Transport: edge.SealedGet, Client: a.info})
	rs = append(rs, edge.Route{Pattern: get + "/api/app/text.php", Auth: edge.AppSecret, Transport: edge.SealedGet, Client: a.text})
	rs = append(rs, env(post+"/api/app/slides.php", edge.ReplayLocal, a.slides))
	rs = append(rs, env(post+"/api/app/social-click.php", edge.ReplayShared, a.socialClick))
	rs = append(rs, direct(get+"/api/app/changelog.php", edge.Public, a.changelog))
	rs = append(rs, direct(get+"/api/app/pricing.php", edge.Public, a.pricingRoute), direct(post+"/api/app/pricing.php", edge.Public, a.createOrder))
	rs = append(rs, direct(post+"/api/app/fulfill.php", edge.Public, a.fulfill))
	// The operator's public keys (license files, replies): public, the
	// general per-IP bucket.
	rs = append(rs, edge.Route{Pattern: get + "/api/app/public-keys.php", Auth: edge.Public, Limit: edge.LimitGeneral, Handler: http.HandlerFunc(a.publicKeys)})
	return rs
}

// liveApp resolves an app named by id on a public route (price list,
// orders, changelog): NOT_FOUND, or APP_REVOKED while its owner has revoked it.
func (a *API) liveApp(ctx context.Context, id string) (*license.App, error) {
	app, err := a.lic.App(ctx, id)
	if err == nil && app.RevokedAt != nil {
		return nil, license.ErrAppRevoked
	}
	return app, err
}
