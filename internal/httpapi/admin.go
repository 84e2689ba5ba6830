package httpapi

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
)

// adminCall is one authenticated admin request.
type adminCall struct {
	actor audit.Actor
	f     fields
	q     url.Values
	w     http.ResponseWriter
	r     *http.Request
}

// adminHandler answers an admin request. A handler that streams its own reply
// returns (nil, nil).
type adminHandler func(ctx context.Context, c *adminCall) (map[string]any, error)

// methods routes one admin path by HTTP method.
type methods map[string]adminHandler

func (m methods) allow() string {
	var ms []string
	for k := range m {
		ms = append(ms, k)
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

var errUnauthorized = apperr.New(apperr.Unauthenticated, "UNAUTHORIZED", "Missing or invalid bearer token.")

// bearer authenticates the admin, reads the body and dispatches by method.
func (a *API) bearer(m methods) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := m[r.Method]
		if !ok {
			methodNotAllowed(w, m.allow())
			return
		}
		actor, ok := a.adminActor(w, r)
		if !ok {
			return
		}
		c := &adminCall{actor: actor, f: fields{}, q: r.URL.Query(), w: w, r: r}
		if !streamsBody(r) {
			body, err := readBody(w, r, adminBodyLimit)
			if err == nil {
				c.f, err = parseFields(body)
			}
			if err != nil {
				a.writeError(w, r, err)
				return
			}
		}
		res, err := h(r.Context(), c)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if res != nil {
			writeJSON(w, http.StatusOK, res)
		}
	})
}

// adminActor authenticates the bearer token, answering 401 itself when it
// fails.
func (a *API) adminActor(w http.ResponseWriter, r *http.Request) (audit.Actor, bool) {
	tok := bearerToken(r)
	if tok == "" {
		a.writeError(w, r, errUnauthorized)
		return audit.Actor{}, false
	}
	claims, err := a.admins.Verify(r.Context(), tok)
	if err != nil {
		a.writeError(w, r, err)
		return audit.Actor{}, false
	}
	return audit.Actor{Kind: "admin", ID: claims.UserID, Name: claims.Username, IP: a.clientIP(r)}, true
}

// streamsBody reports whether the request carries raw bytes its handler
// streams (an artifact upload) rather than a JSON object to read up front.
func streamsBody(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/octet-stream"
}

// param reads a string from the query string or, failing that, the body.
func (c *adminCall) param(name string) (string, error) {
	if v := c.q.Get(name); v != "" {
		return v, nil
	}
	return c.f.str(name)
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
	body, err := readBody(w, r, clientBodyLimit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	f, err := parseFields(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	user, err := f.str("username")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	pass, err := f.str("password")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if user == "" || pass == "" {
		a.writeError(w, r, apperr.New(apperr.Invalid, "MISSING_FIELDS", "Missing required field: username and password."))
		return
	}
	tok, err := a.admins.Login(r.Context(), user, pass, a.clientIP(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "token": tok})
}
