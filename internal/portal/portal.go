// Package portal is keyward's customer and reseller surface: the
// self-service routes vendors' portals call with a customer token
// (/api/customer/*, but reset-hwid.php, which shipped clients call) and the
// reseller API (/api/reseller/*) with a reseller's kwr_ token.
package portal

import (
	"net/http"
	"time"

	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
)

// API serves the portal routes.
type API struct {
	*edge.Edge
	customer *customer.Service
	sellers  *reseller.Service
	lic      *license.Service
	now      func() time.Time
}

// New returns the portal routes over e; lic issues the license files of
// air-gapped activation.
func New(e *edge.Edge, customers *customer.Service, sellers *reseller.Service, lic *license.Service, now func() time.Time) *API {
	return &API{Edge: e, customer: customers, sellers: sellers, lic: lic, now: now}
}

// Routes is the portal's route table.
func (a *API) Routes() []edge.Route {
	var rs []edge.Route
	// Customer self-service: a customer token from login.php.
	rs = append(rs, edge.Route{Pattern: "POST /api/customer/login.php", Auth: edge.Public, Handler: http.HandlerFunc(a.customerLogin)})
	rs = append(rs, customerRoute(a, "/api/customer/key.php", customerMethods{"GET": a.customerKey})...)
	rs = append(rs, customerRoute(a, "/api/customer/sessions.php", customerMethods{"DELETE": a.customerEndSession, "POST": a.customerEndSession})...)
	rs = append(rs, customerRoute(a, "/api/customer/orders.php", customerMethods{"GET": a.customerOrders})...)
	rs = append(rs, customerRoute(a, "/api/customer/subscriptions.php", customerMethods{"GET": a.customerSubscriptions, "POST": a.customerCancel})...)
	rs = append(rs, customerRoute(a, "/api/customer/offline-activate.php", customerMethods{"POST": a.customerOfflineActivate})...)
	rs = append(rs, customerRoute(a, "/api/customer/license-files.php", customerMethods{"POST": a.customerReturnFile})...)

	// Reseller API: the reseller's own bearer token (kwr_…).
	rs = append(rs, resellerRoute(a, "/api/reseller/me.php", resellerMethods{"GET": a.resellerMe})...)
	rs = append(rs, resellerRoute(a, "/api/reseller/keys.php", resellerMethods{"GET": a.resellerKeys, "POST": a.resellerPostKeys})...)
	rs = append(rs, resellerRoute(a, "/api/reseller/ledger.php", resellerMethods{"GET": a.resellerLedger})...)
	return rs
}
