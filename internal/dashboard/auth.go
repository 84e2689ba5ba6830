package dashboard

import (
	"errors"
	"github.com/keyward/keyward/wire"
	"net/http"
	"time"
)

// routesAuth: sign-in (with the 2FA step) and sign-out.
func (d *Dashboard) routesAuth(m *http.ServeMux) {
	m.HandleFunc("GET /dashboard/login", d.loginForm)
	m.HandleFunc("POST /dashboard/login", d.login)
	m.HandleFunc("POST /dashboard/login/2fa", d.login2FA)
	d.page(m, "POST /dashboard/logout", func(c *Ctx) {
		c.Call("POST", "/api/admin/logout.php", nil, map[string]any{}, nil)
		d.setCookie(c.W, c.R, sessionCookie, "", -1)
		http.Redirect(c.W, c.R, "/dashboard/login", http.StatusSeeOther)
	})
}

// preToken returns the signed-out CSRF token, setting its cookie when new.
func (d *Dashboard) preToken(w http.ResponseWriter, r *http.Request) string {
	if t := cookie(r, preCookie); len(t) == 43 {
		return t
	}
	t := randomToken()
	d.setCookie(w, r, preCookie, t, 0)
	return t
}

type loginData struct {
	Username, Next, Error string
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	if cookie(r, sessionCookie) != "" && d.call(r, cookie(r, sessionCookie), "GET", "/api/admin/profile.php", nil, nil, nil) == nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	d.showLogin(w, r, http.StatusOK, "login", loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

func (d *Dashboard) showLogin(w http.ResponseWriter, r *http.Request, status int, tpl string, data loginData) {
	d.render(w, r, status, tpl, Page{Title: "Sign in", CSRF: d.preToken(w, r), Data: data})
}

// signedOutForm parses a sign-in form and checks its CSRF token.
func (d *Dashboard) signedOutForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	r.ParseForm()
	if !sameToken(r.PostFormValue("csrf"), cookie(r, preCookie)) {
		d.fail(w, r, http.StatusForbidden, "This form has expired; reload the sign-in page and try again.")
		return false
	}
	return true
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if !d.signedOutForm(w, r) {
		return
	}
	data := loginData{Username: r.PostFormValue("username"), Next: safeNext(r.PostFormValue("next"))}
	var out wire.AdminLoginReply
	err := d.call(r, "", "POST", "/api/admin/login.php", nil, wire.AdminLoginRequest{Username: data.Username, Password: r.PostFormValue("password")}, &out)
	if err != nil {
		data.Error = signInError(err)
		d.showLogin(w, r, statusOf(err), "login", data)
		return
	}
	if out.Requires2FA {
		d.setCookie(w, r, step1Cookie, out.Step1Token, 5*time.Minute)
		d.showLogin(w, r, http.StatusOK, "login2fa", data)
		return
	}
	d.signedIn(w, r, out.Token, data.Next)
}

func (d *Dashboard) login2FA(w http.ResponseWriter, r *http.Request) {
	if !d.signedOutForm(w, r) {
		return
	}
	data := loginData{Next: safeNext(r.PostFormValue("next"))}
	step1 := cookie(r, step1Cookie)
	if step1 == "" {
		data.Error = "The sign-in took too long; enter your password again."
		d.showLogin(w, r, http.StatusUnauthorized, "login", data)
		return
	}
	var out wire.AdminLoginReply
	err := d.call(r, "", "POST", "/api/admin/totp.php", nil, wire.TOTPRequest{Step1Token: step1, Code: r.PostFormValue("code")}, &out)
	if err != nil {
		data.Error = signInError(err)
		if stepExpired(err) {
			d.setCookie(w, r, step1Cookie, "", -1)
			d.showLogin(w, r, http.StatusUnauthorized, "login", data)
			return
		}
		d.showLogin(w, r, statusOf(err), "login2fa", data)
		return
	}
	d.setCookie(w, r, step1Cookie, "", -1)
	d.signedIn(w, r, out.Token, data.Next)
}

func (d *Dashboard) signedIn(w http.ResponseWriter, r *http.Request, token, next string) {
	d.setCookie(w, r, sessionCookie, token, 0)
	d.setCookie(w, r, preCookie, "", -1)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signInError words a refused sign-in for the form.
func signInError(err error) string {
	var ae *APIError
	if !errors.As(err, &ae) {
		return "Signing in failed; try again."
	}
	switch ae.Status {
	case http.StatusTooManyRequests:
		return "Too many failed attempts; wait a few minutes and try again."
	case http.StatusUnauthorized:
		if stepExpired(err) {
			return "The sign-in took too long; enter your password again."
		}
		return "Wrong username, password or code."
	}
	return ae.Message
}

// stepExpired reports whether totp.php refused the first step's token
// itself (expired, or made before a password change): 401 UNAUTHORIZED, where
// a wrong code is 401 INVALID_CODE.
func stepExpired(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && ae.Code == wire.CodeUnauthorized
}

func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return http.StatusInternalServerError
}
