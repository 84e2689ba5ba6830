package clientapi

import (
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// count records one client event of app for analytics, now.
func (a *API) count(app *license.App, metric, code string) {
	if a.usage != nil {
		a.usage.Add(app.ID, metric, code, a.now())
	}
}

// countLogin records a sign-in (key or account) as a login or, with the
// refusal's code, a failed one. Malformed requests are not sign-ins.
func (a *API) countLogin(app *license.App, err error) {
	switch e := apperr.From(err); {
	case err == nil:
		a.metrics.Login("ok")
		a.count(app, analytics.Login, "")
	case e.Kind != apperr.Invalid && e.Kind != apperr.Internal && e.Kind != apperr.RateLimited:
		a.metrics.Login(e.Code)
		a.count(app, analytics.LoginFailed, e.Code)
	default:
		a.metrics.Login(e.Code)
	}
}
