package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// The caller's own account: second sign-in step, sign-out, profile,
// two-factor and personal access tokens. Credential changes need a password
// sign-in (a JWT); the admin service refuses them to access tokens.

// adminTOTP: POST /api/admin/totp.php {step1_token, code} completes a
// two-factor sign-in with a TOTP code or a recovery code → {token}.
func (a *API) adminTOTP(w http.ResponseWriter, r *http.Request) {
	f, ok := a.plainBody(w, r)
	if !ok {
		return
	}
	step1, err := f.str("step1_token")
	if err == nil && step1 == "" {
		err = apperr.Missing("step1_token")
	}
	var code string
	if err == nil {
		code, err = f.str("code")
		if err == nil && code == "" {
			err = apperr.Missing("code")
		}
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	tok, err := a.admins.CompleteTOTP(r.Context(), step1, code, a.clientIP(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "token": tok})
}

// adminLogout: POST logout.php signs the presented JWT out.
func (a *API) adminLogout(ctx context.Context, c *adminCall) (map[string]any, error) {
	if err := a.admins.Logout(ctx, c.p, c.actor.IP); err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "message": "Signed out."}, nil
}

func profileView(u *admin.User, roles map[string]admin.Role) map[string]any {
	apps := map[string]string{}
	for id, r := range roles {
		apps[id] = string(r)
	}
	return map[string]any{"id": u.ID, "username": u.Username, "email": u.Email, "operator": u.Operator,
		"two_factor": u.TOTPSecret != "", "created_at": license.Timestamp(u.CreatedAt), "apps": apps}
}

// getProfile: GET profile.php → the caller's account and its role per app.
func (a *API) getProfile(ctx context.Context, c *adminCall) (map[string]any, error) {
	u, err := a.admins.Profile(ctx, c.p)
	if err != nil {
		return nil, err
	}
	roles, err := a.admins.Roles(ctx, c.p)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "profile": profileView(u, roles)}, nil
}

// putProfile: PUT profile.php {current_password, new_password} changes the
// password (→ a fresh token; other sign-ins end) or {password, email} the
// e-mail address.
func (a *API) putProfile(ctx context.Context, c *adminCall) (map[string]any, error) {
	if _, ok := c.f["new_password"]; ok {
		cur, err := c.f.str("current_password")
		if err != nil {
			return nil, err
		}
		next, err := c.f.str("new_password")
		if err != nil {
			return nil, err
		}
		tok, err := a.admins.ChangePassword(ctx, c.p, c.actor.IP, cur, next)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "message": "Password changed; other sign-ins have ended.", "token": tok}, nil
	}
	if _, ok := c.f["email"]; ok {
		pass, err := c.f.str("password")
		if err != nil {
			return nil, err
		}
		email, err := c.f.str("email")
		if err != nil {
			return nil, err
		}
		u, err := a.admins.ChangeEmail(ctx, c.p, c.actor.IP, pass, email)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "message": "E-mail changed.", "email": u.Email}, nil
	}
	return nil, apperr.Missing("new_password or email")
}

// twoFactor: POST 2fa.php {action: enrol | confirm {code} | disable
// {password, code} | recovery_codes {code}}.
func (a *API) twoFactor(ctx context.Context, c *adminCall) (map[string]any, error) {
	action, err := c.required("action")
	if err != nil {
		return nil, err
	}
	code, err := c.f.str("code")
	if err != nil {
		return nil, err
	}
	ip := c.actor.IP
	switch action {
	case "enrol", "enroll":
		e, err := a.admins.BeginTOTP(ctx, c.p, ip)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "secret": e.Secret, "otpauth_uri": e.URI,
			"qr_png":  "data:image/png;base64," + base64.StdEncoding.EncodeToString(e.QRPNG),
			"message": "Scan the code, then confirm with a code from the app."}, nil
	case "confirm":
		codes, err := a.admins.ConfirmTOTP(ctx, c.p, ip, code)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "recovery_codes": codes,
			"message": "Two-factor sign-in is on. Keep the recovery codes somewhere safe; they are shown once."}, nil
	case "recovery_codes":
		codes, err := a.admins.RegenerateRecoveryCodes(ctx, c.p, ip, code)
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "recovery_codes": codes, "message": "New recovery codes; the old ones no longer work."}, nil
	case "disable":
		pass, err := c.f.str("password")
		if err != nil {
			return nil, err
		}
		if err := a.admins.DisableTOTP(ctx, c.p, ip, pass, code); err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "message": "Two-factor sign-in is off."}, nil
	}
	return nil, apperr.InvalidField("action", "use enrol, confirm, recovery_codes or disable")
}

func tokenView(t *admin.Token) map[string]any {
	return map[string]any{"id": t.ID, "name": t.Name, "hint": t.Hint, "created_at": license.Timestamp(t.CreatedAt),
		"last_used_at": optStamp(t.LastUsedAt), "revoked_at": optStamp(t.RevokedAt)}
}

// listTokens: GET tokens.php → the caller's personal access tokens.
func (a *API) listTokens(ctx context.Context, c *adminCall) (map[string]any, error) {
	ts, err := a.admins.Tokens(ctx, c.p)
	if err != nil {
		return nil, err
	}
	list := make([]map[string]any, 0, len(ts))
	for i := range ts {
		list = append(list, tokenView(&ts[i]))
	}
	return map[string]any{"success": true, "tokens": list}, nil
}

// mintToken: POST tokens.php {name} → {token} (shown once).
func (a *API) mintToken(ctx context.Context, c *adminCall) (map[string]any, error) {
	name, err := c.f.str("name")
	if err != nil {
		return nil, err
	}
	secret, t, err := a.admins.MintToken(ctx, c.p, c.actor.IP, name)
	if err != nil {
		return nil, err
	}
	v := tokenView(t)
	v["token"] = secret
	return map[string]any{"success": true, "message": "Copy the token now; it is shown once.", "token": v}, nil
}

// revokeToken: DELETE tokens.php {id}.
func (a *API) revokeToken(ctx context.Context, c *adminCall) (map[string]any, error) {
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	if err := a.admins.RevokeToken(ctx, c.p, c.actor.IP, id); err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "message": "Token revoked."}, nil
}
