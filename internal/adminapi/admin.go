package adminapi

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/wire"
)

// adminCall is one authenticated admin request.
type adminCall struct {
	p     *admin.Principal
	actor audit.Actor
	// appID is the app the request is about, authorized for the route's
	// permission, with the caller's role on it; "" on routes not about one
	// app (and on optional-app routes called without app_id).
	appID string
	role  admin.Role
	perm  admin.Perm // what the route's method needs
	f     edge.Fields
	q     url.Values
	w     http.ResponseWriter
	r     *http.Request
}

// adminHandler answers an admin request with its reply (a wire type). A
// handler that streams its own reply returns (nil, nil).
type adminHandler func(ctx context.Context, c *adminCall) (any, error)

// handler adapts a handler returning a reply of type R (a wire type, or a
// map for the replies not yet typed) to an adminHandler; a nil map means the
// handler streamed its own reply.
func handler[R any](h func(context.Context, *adminCall) (R, error)) adminHandler {
	return func(ctx context.Context, c *adminCall) (any, error) {
		res, err := h(ctx, c)
		if err != nil {
			return nil, err
		}
		if m, ok := any(res).(map[string]any); ok && m == nil {
			return nil, nil
		}
		return res, nil
	}
}

// op is one method of an admin route: its handler and the least role it
// needs on the app named by app_id. perm 0 is a route about the caller
// itself (profile, tokens), not an app.
type op struct {
	perm admin.Perm
	// optional routes may be called without app_id (the handler then
	// decides what the caller may see); with one, perm applies.
	optional bool
	// file routes take a key file (text/csv, application/json or
	// text/plain) body, which their handler streams.
	file bool
	// cred, when set, says which requests of this method create or change a
	// credential (a password, token, secret or two-factor state of anyone);
	// those are refused to personal access tokens (credential.go).
	cred *credRule
	h    adminHandler
}

// The permission an admin route method needs on its app.
func read[R any](h func(context.Context, *adminCall) (R, error)) op {
	return op{perm: admin.PermRead, h: handler(h)}
}
func support[R any](h func(context.Context, *adminCall) (R, error)) op {
	return op{perm: admin.PermSupport, h: handler(h)}
}
func manage[R any](h func(context.Context, *adminCall) (R, error)) op {
	return op{perm: admin.PermManage, h: handler(h)}
}
func owner[R any](h func(context.Context, *adminCall) (R, error)) op {
	return op{perm: admin.PermOwner, h: handler(h)}
}
func self[R any](h func(context.Context, *adminCall) (R, error)) op { return op{h: handler(h)} }

// fileBody is o taking a file body (text/csv, application/json or
// text/plain, streamed by its handler, which limits it) instead of a JSON
// object of fields.
func fileBody(o op) op { o.file = true; return o }

// optionalApp is o callable without app_id.
func optionalApp(o op) op { o.optional = true; return o }

// methods routes one admin path by HTTP method.
type methods map[string]op

func (m methods) allow() string {
	var ms []string
	for k := range m {
		ms = append(ms, k)
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

var errUnauthorized = apperr.New(apperr.Unauthenticated, wire.CodeUnauthorized, "Missing or invalid bearer token.")

// bearerRoute is the routes of an admin path, one method pattern per method of m
// in alphabetical order (a method it does not list gets the edge's 405),
// each stating which of its requests are refused to access tokens.
func (a *API) bearerRoute(path string, m methods) []edge.Route {
	var rs []edge.Route
	for _, method := range strings.Split(m.allow(), ", ") {
		o := m[method]
		rs = append(rs, edge.Route{Pattern: method + " " + path, Auth: edge.AdminBearer, Limit: edge.LimitAdmin, Handler: a.bearer(o),
			TokenRefused: o.cred.describe(method)})
	}
	return rs
}

// bearer authenticates the admin, reads the body, checks the caller's role
// on the app the request names and runs o.
func (a *API) bearer(o op) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := a.adminPrincipal(w, r)
		if !ok {
			return
		}
		c := &adminCall{p: p, actor: p.Actor(a.ClientIP(r)), f: edge.Fields{}, q: r.URL.Query(), w: w, r: r}
		if !streamsBody(r, o) {
			body, err := edge.ReadBody(w, r, edge.AdminBodyLimit)
			if err == nil {
				c.f, err = edge.ParseFields(body)
			}
			if err != nil {
				a.Error(w, r, err)
				return
			}
		}
		if p.ViaToken() && o.cred.matches(c) {
			a.Error(w, r, admin.ErrNeedsSignIn)
			return
		}
		if err := a.authorize(r.Context(), c, o); err != nil {
			a.Error(w, r, err)
			return
		}
		res, err := o.h(r.Context(), c)
		if err != nil {
			a.Error(w, r, err)
			return
		}
		if res != nil {
			edge.WriteJSON(w, http.StatusOK, res)
		}
	})
}

// authorize resolves the app the request names and checks the caller's role
// on it against o.
func (a *API) authorize(ctx context.Context, c *adminCall, o op) error {
	c.perm = o.perm
	if o.perm == 0 {
		return nil
	}
	appID, err := c.param("app_id")
	if err != nil {
		return err
	}
	if appID = strings.TrimSpace(appID); appID == "" {
		if o.optional {
			return nil
		}
		return apperr.Missing("app_id")
	}
	c.appID = appID
	c.role, err = a.admins.Authorize(ctx, c.p, appID, o.perm)
	return err
}

// within checks that the caller may act, with the route's permission, on
// records of appID (found through another record, such as a webhook
// destination): an app the caller holds that role on, or "" — records for
// every app, which only operators manage.
func (a *API) within(ctx context.Context, c *adminCall, appID string) error {
	switch {
	case appID == "":
		if !c.p.Operator {
			return apperr.New(apperr.Forbidden, wire.CodeForbidden, "Only operators manage what covers every app; give app_id.")
		}
		return nil
	case appID == c.appID:
		return nil
	case c.appID != "":
		return admin.ErrForbidden // the record is another app's than the one named
	}
	role, err := a.admins.Authorize(ctx, c.p, appID, c.perm)
	if err == nil {
		c.appID, c.role = appID, role
	}
	return err
}

// need refuses (403) a caller whose role on the app is below p: the stricter
// actions of a route whose other actions need less.
func (c *adminCall) need(p admin.Perm) error {
	if !c.role.Allows(p) {
		return admin.ErrForbidden
	}
	return nil
}

// adminPrincipal authenticates the bearer token, answering 401 (403 for a
// revoked access token) itself when it fails.
func (a *API) adminPrincipal(w http.ResponseWriter, r *http.Request) (*admin.Principal, bool) {
	tok := edge.BearerToken(r)
	if tok == "" {
		a.Error(w, r, errUnauthorized)
		return nil, false
	}
	p, err := a.admins.Verify(r.Context(), tok)
	if err != nil {
		a.Error(w, r, err)
		return nil, false
	}
	return p, true
}

// streamsBody reports whether the request carries raw bytes its handler
// streams (an artifact upload; any body of a route that takes a file, whose
// handler judges the content type itself, so that a file sent with the
// wrong one — curl -d's form type, or none — is told which to use rather
// than that it is not JSON) instead of a JSON object to read up front. A
// CSV sent elsewhere is read up front within adminBodyLimit, and refused
// as not JSON.
func streamsBody(r *http.Request, o op) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return o.file || ct == "application/octet-stream"
}

// param reads a string from the query string or, failing that, the body.
func (c *adminCall) param(name string) (string, error) {
	if v := c.q.Get(name); v != "" {
		return v, nil
	}
	return c.f.Str(name)
}

// required is param that refuses an empty value.
func (c *adminCall) required(name string) (string, error) {
	v, err := c.param(name)
	if err == nil && strings.TrimSpace(v) == "" {
		err = apperr.Missing(name)
	}
	return strings.TrimSpace(v), err
}

// adminLogin: POST /api/admin/login.php {username, password} → {token}.
func (a *API) adminLogin(w http.ResponseWriter, r *http.Request) {
	f, ok := a.PlainBody(w, r)
	if !ok {
		return
	}
	user, err := f.Str("username")
	if err != nil {
		a.Error(w, r, err)
		return
	}
	pass, err := f.Str("password")
	if err != nil {
		a.Error(w, r, err)
		return
	}
	if user == "" || pass == "" {
		a.Error(w, r, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Missing required field: username and password."))
		return
	}
	res, err := a.admins.Login(r.Context(), user, pass, a.ClientIP(r))
	if err != nil {
		a.Error(w, r, err)
		return
	}
	if res.Requires2FA {
		edge.WriteJSON(w, http.StatusOK, wire.AdminLoginReply{Success: true, Requires2FA: true, Step1Token: res.Step1Token})
		return
	}
	edge.WriteJSON(w, http.StatusOK, wire.AdminLoginReply{Success: true, Token: res.Token})
}
