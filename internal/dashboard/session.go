package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"github.com/keyward/keyward/wire"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Cookies. The session cookie holds the admin API token (a JWT) itself: the
// dashboard keeps no state of its own, so several keyward processes behind a
// load balancer serve the same panel, and signing out (logout.php) or a
// password change ends the session everywhere.
const (
	sessionCookie = "kw_session"
	step1Cookie   = "kw_2fa"   // the sign-in's first step, while the code is asked
	preCookie     = "kw_pre"   // the signed-out CSRF token (sign-in forms)
	flashCookie   = "kw_flash" // a one-time message for the next page
	cookiePath    = "/dashboard/"
)

// maxForm is the largest form body a page accepts (uploads stream instead).
const maxForm = 1 << 20

// csrfFor derives the CSRF token of a session from its token: a page holds
// the hash, never the token, and no other site can compute it.
func csrfFor(token string) string {
	sum := sha256.Sum256([]byte("keyward dashboard csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sameToken compares two tokens in constant time.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// setCookie writes a dashboard cookie: HttpOnly, SameSite=Strict, Secure over
// HTTPS, scoped to /dashboard/; maxAge < 0 deletes it, 0 lasts the browser
// session.
func (d *Dashboard) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: cookiePath, HttpOnly: true, Secure: d.https(r), SameSite: http.SameSiteStrictMode}
	switch {
	case maxAge < 0:
		c.MaxAge = -1
	case maxAge > 0:
		c.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, c)
}

func cookie(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

// Ctx is what a page handler works with: the request, the signed-in owner's
// token and profile, and — on /dashboard/apps/{app}/… pages — the app.
type Ctx struct {
	d     *Dashboard
	W     http.ResponseWriter
	R     *http.Request
	Token string
	CSRF  string
	// User is profile.php's "profile".
	User *wire.Profile
	// App is apps.php's "app" for {app} pages (nil elsewhere); AppID its id.
	App   *wire.App
	AppID string
}

// Call calls the admin API as the signed-in owner (see Dashboard.call).
func (c *Ctx) Call(method, path string, q url.Values, body, out any) error {
	return c.d.call(c.R, c.Token, method, path, q, body, out)
}

// AppQuery returns url.Values holding app_id and the given pairs.
func (c *Ctx) AppQuery(kv ...string) url.Values {
	q := url.Values{"app_id": {c.AppID}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// AppPath is the path of an app page: AppPath("keys") = /dashboard/apps/{id}/keys;
// AppPath("") is the app's settings page.
func (c *Ctx) AppPath(rest string) string {
	if rest == "" {
		return "/dashboard/apps/" + url.PathEscape(c.AppID)
	}
	return "/dashboard/apps/" + url.PathEscape(c.AppID) + "/" + strings.TrimPrefix(rest, "/")
}

// page registers h at pattern for signed-in owners. Non-GET requests must
// carry the session's CSRF token (form field "csrf" or header X-CSRF-Token);
// form bodies are capped at maxForm. A pattern with {app} loads that app
// first (the API answers 403/404 for apps the owner may not see).
func (d *Dashboard) page(m *http.ServeMux, pattern string, h func(*Ctx)) {
	m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		token := cookie(r, sessionCookie)
		if token == "" {
			d.toSignIn(w, r)
			return
		}
		c := &Ctx{d: d, W: w, R: r, Token: token, CSRF: csrfFor(token)}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !d.checkCSRF(w, r, c.CSRF) {
				return
			}
		}
		var prof wire.ProfileReply
		if err := c.Call("GET", "/api/admin/profile.php", nil, nil, &prof); err != nil {
			var ae *APIError
			if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				d.setCookie(w, r, sessionCookie, "", -1)
				d.toSignIn(w, r)
				return
			}
			c.Fail(err)
			return
		}
		c.User = &prof.Profile
		if id := r.PathValue("app"); id != "" {
			var app wire.AppReply
			if err := c.Call("GET", "/api/admin/apps.php", url.Values{"app_id": {id}}, nil, &app); err != nil {
				c.Fail(err)
				return
			}
			c.App, c.AppID = &app.App, id
		}
		h(c)
	})
}

// checkCSRF parses a form body (capped) and checks its token, answering 403
// itself when it is missing or wrong.
func (d *Dashboard) checkCSRF(w http.ResponseWriter, r *http.Request, want string) bool {
	got := r.Header.Get("X-CSRF-Token")
	ct := r.Header.Get("Content-Type")
	if got == "" && strings.HasPrefix(ct, "multipart/form-data") && r.URL.Query().Has("csrf") {
		// A file upload form names its token in its action URL, so the
		// body is left unread for the handler to stream.
		got = r.URL.Query().Get("csrf")
	} else if got == "" {
		if strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data") {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if strings.HasPrefix(ct, "multipart/") {
				r.ParseMultipartForm(maxForm)
			} else {
				r.ParseForm()
			}
			got = r.PostFormValue("csrf")
		}
	}
	if !sameToken(got, want) {
		d.fail(w, r, http.StatusForbidden, "This form has expired or did not come from this page; reload the page and try again.")
		return false
	}
	return true
}

// toSignIn sends a signed-out visitor to the sign-in page, remembering
// where they were going (GET pages only).
func (d *Dashboard) toSignIn(w http.ResponseWriter, r *http.Request) {
	target := "/dashboard/login"
	if r.Method == http.MethodGet && r.URL.Path != "/dashboard/" {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext keeps a post-sign-in redirect inside the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/dashboard/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/dashboard/"
	}
	return next
}
