package dashboard

import (
	"bytes"
	"encoding/base64"
	"errors"
	"github.com/keyward/keyward/wire"
	"html/template"
	"net/http"
	"strings"
)

// routesProfile: password, e-mail, two-factor sign-in, recovery codes and personal access tokens.
func (d *Dashboard) routesProfile(m *http.ServeMux) {
	d.page(m, "GET /dashboard/profile", d.profilePage)
	d.page(m, "POST /dashboard/profile/password", d.profilePassword)
	d.page(m, "POST /dashboard/profile/email", d.profileEmail)
	d.page(m, "POST /dashboard/profile/2fa/enrol", d.profile2FAEnrol)
	d.page(m, "POST /dashboard/profile/2fa/confirm", d.profile2FAConfirm)
	d.page(m, "POST /dashboard/profile/2fa/recovery", d.profile2FARecovery)
	d.page(m, "POST /dashboard/profile/2fa/disable", d.profile2FADisable)
	d.page(m, "POST /dashboard/profile/tokens", d.profileTokenMint)
	d.page(m, "POST /dashboard/profile/tokens/revoke", d.profileTokenRevoke)
}

const profilePath = "/dashboard/profile"

func (d *Dashboard) profilePage(c *Ctx) {
	var out wire.AccessTokenListReply
	if err := c.Call("GET", "/api/admin/tokens.php", nil, nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("profile", Page{Title: "Your account", Nav: "profile", Data: map[string]any{"Tokens": out.Tokens}})
}

// missing refuses a form with an empty field, as the API would.
func profileMissing(what string) error {
	return &APIError{Status: http.StatusBadRequest, Code: wire.CodeMissingFields, Message: what}
}

// profilePassword changes the password; the API answers with a fresh token
// (every other sign-in ends), which becomes this browser's session.
func (d *Dashboard) profilePassword(c *Ctx) {
	cur, next := c.R.PostFormValue("current_password"), c.R.PostFormValue("new_password")
	if next != c.R.PostFormValue("repeat_password") {
		c.Done(profilePath, "", profileMissing("The new password and its repetition differ."))
		return
	}
	var out wire.PasswordChangedReply
	err := c.Call("PUT", "/api/admin/profile.php", nil, wire.PasswordChangeRequest{CurrentPassword: cur, NewPassword: next}, &out)
	if err == nil && out.Token == "" {
		err = errors.New("profile.php: no token in the answer")
	}
	if err == nil {
		d.setCookie(c.W, c.R, sessionCookie, out.Token, 0)
	}
	c.Done(profilePath, "Password changed; every other sign-in has ended.", err)
}

func (d *Dashboard) profileEmail(c *Ctx) {
	body := wire.EmailChangeRequest{Password: c.R.PostFormValue("password"), Email: strings.TrimSpace(c.R.PostFormValue("email"))}
	c.Done(profilePath, "E-mail changed.", c.Call("PUT", "/api/admin/profile.php", nil, body, nil))
}

// profilePNGDataURL turns the API's QR code into a data: URL for an <img>, but
// only when it is a PNG made by the server (never anything a user typed).
func profilePNGDataURL(v string) (template.URL, bool) {
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(v, prefix) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(v[len(prefix):])
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		return "", false
	}
	return template.URL(prefix + base64.StdEncoding.EncodeToString(b)), true
}

// profile2FAEnrol starts enrolment: the QR code and the secret for manual
// entry, and the form confirming it with a first code.
func (d *Dashboard) profile2FAEnrol(c *Ctx) {
	var out wire.TOTPEnrolReply
	if err := c.Call("POST", "/api/admin/2fa.php", nil, wire.TwoFactorRequest{Action: "enrol"}, &out); err != nil {
		c.Done(profilePath, "", err)
		return
	}
	qr, ok := profilePNGDataURL(out.QRPNG)
	c.Render("profile_2fa", Page{Title: "Turn on two-factor sign-in", Nav: "profile", Data: map[string]any{
		"Secret": out.Secret, "QR": qr, "HasQR": ok}})
}

// profileShowCodes shows recovery codes, once.
func (c *Ctx) profileShowCodes(title, message string, codes []string) {
	c.Render("profile_codes", Page{Title: title, Nav: "profile", Data: map[string]any{"Message": message, "Codes": codes}})
}

func (d *Dashboard) profile2FAConfirm(c *Ctx) {
	var out wire.RecoveryCodesReply
	code := strings.TrimSpace(c.R.PostFormValue("code"))
	if code == "" {
		c.Done(profilePath, "", profileMissing("Enter the code your authenticator app shows; then start again."))
		return
	}
	if err := c.Call("POST", "/api/admin/2fa.php", nil, wire.TwoFactorRequest{Action: "confirm", Code: code}, &out); err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			ae.Message += " Start the enrolment again and scan the new code."
		}
		c.Done(profilePath, "", err)
		return
	}
	c.profileShowCodes("Two-factor sign-in is on", "From now on, signing in asks for a code from your authenticator app.", out.RecoveryCodes)
}

// profile2FARecovery and profile2FADisable ask for no confirmation page:
// typing the authenticator code (and the password) is the deliberate step,
// and a confirmation page would have to carry them back in hidden fields.
// With JavaScript the dialog still asks first.
func (d *Dashboard) profile2FARecovery(c *Ctx) {
	var out wire.RecoveryCodesReply
	body := wire.TwoFactorRequest{Action: "recovery_codes", Code: strings.TrimSpace(c.R.PostFormValue("code"))}
	if err := c.Call("POST", "/api/admin/2fa.php", nil, body, &out); err != nil {
		c.Done(profilePath, "", err)
		return
	}
	c.profileShowCodes("New recovery codes", "The old recovery codes no longer work.", out.RecoveryCodes)
}

func (d *Dashboard) profile2FADisable(c *Ctx) {
	body := wire.TwoFactorRequest{Action: "disable", Password: c.R.PostFormValue("password"), Code: strings.TrimSpace(c.R.PostFormValue("code"))}
	c.Done(profilePath, "Two-factor sign-in is off.", c.Call("POST", "/api/admin/2fa.php", nil, body, nil))
}

// profileTokenMint mints a personal access token and shows it, once.
func (d *Dashboard) profileTokenMint(c *Ctx) {
	var out wire.NewAccessTokenReply
	if err := c.Call("POST", "/api/admin/tokens.php", nil, wire.NewAccessTokenRequest{Name: strings.TrimSpace(c.R.PostFormValue("name"))}, &out); err != nil {
		c.Done(profilePath, "", err)
		return
	}
	c.Render("profile_token", Page{Title: "New access token", Nav: "profile", Data: out.Token})
}

func (d *Dashboard) profileTokenRevoke(c *Ctx) {
	name := c.R.PostFormValue("name")
	if !c.Confirm("Revoke this token?", "Programs using the token "+name+" are refused from now on.") {
		return
	}
	c.Done(profilePath, "Token revoked.", c.Call("DELETE", "/api/admin/tokens.php", nil, wire.RevokeAccessTokenRequest{ID: c.R.PostFormValue("id")}, nil))
}
