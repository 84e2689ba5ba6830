package adminapi

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// The caller's own account: second sign-in step, sign-out, profile,
// two-factor and personal access tokens. Credential changes need a password
// sign-in (a JWT); the admin service refuses them to access tokens.

// adminTOTP: POST /api/admin/totp.php {step1_token, code} completes a
// two-factor sign-in with a TOTP code or a recovery code → {token}.
func (a *API) adminTOTP(w http.ResponseWriter, r *http.Request) {
	f, ok := a.PlainBody(w, r)
	if !ok {
		return
	}
	step1, err := f.Str("step1_token")
	if err == nil && step1 == "" {
		err = apperr.Missing("step1_token")
	}
	var code string
	if err == nil {
		code, err = f.Str("code")
		if err == nil && code == "" {
			err = apperr.Missing("code")
		}
	}
	if err != nil {
		a.Error(w, r, err)
		return
	}
	tok, err := a.admins.CompleteTOTP(r.Context(), step1, code, a.ClientIP(r))
	if err != nil {
		a.Error(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, wire.AdminLoginReply{Success: true, Token: tok})
}

// adminLogout: POST logout.php signs the presented JWT out.
func (a *API) adminLogout(ctx context.Context, c *adminCall) (any, error) {
	if err := a.admins.Logout(ctx, c.p, c.actor.IP); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Signed out."}, nil
}

func profileView(u *admin.User, roles map[string]admin.Role) wire.Profile {
	apps := map[string]string{}
	for id, r := range roles {
		apps[id] = string(r)
	}
	return wire.Profile{ID: u.ID, Username: u.Username, Email: u.Email, Operator: u.Operator,
		TwoFactor: u.TOTPSecret != "", CreatedAt: license.Timestamp(u.CreatedAt), Apps: apps}
}

// getProfile: GET profile.php → the caller's account and its role per app.
func (a *API) getProfile(ctx context.Context, c *adminCall) (any, error) {
	u, err := a.admins.Profile(ctx, c.p)
	if err != nil {
		return nil, err
	}
	roles, err := a.admins.Roles(ctx, c.p)
	if err != nil {
		return nil, err
	}
	return wire.ProfileReply{Success: true, Profile: profileView(u, roles)}, nil
}

// putProfile: PUT profile.php {current_password, new_password} changes the
// password (→ a fresh token; other sign-ins end) or {password, email} the
// e-mail address.
func (a *API) putProfile(ctx context.Context, c *adminCall) (any, error) {
	if _, ok := c.f["new_password"]; ok {
		cur, err := c.f.Str("current_password")
		if err != nil {
			return nil, err
		}
		next, err := c.f.Str("new_password")
		if err != nil {
			return nil, err
		}
		tok, err := a.admins.ChangePassword(ctx, c.p, c.actor.IP, cur, next)
		if err != nil {
			return nil, err
		}
		return wire.PasswordChangedReply{Success: true, Message: "Password changed; other sign-ins have ended.", Token: tok}, nil
	}
	if _, ok := c.f["email"]; ok {
		pass, err := c.f.Str("password")
		if err != nil {
			return nil, err
		}
		email, err := c.f.Str("email")
		if err != nil {
			return nil, err
		}
		u, err := a.admins.ChangeEmail(ctx, c.p, c.actor.IP, pass, email)
		if err != nil {
			return nil, err
		}
		return wire.EmailChangedReply{Success: true, Message: "E-mail changed.", Email: u.Email}, nil
	}
	return nil, apperr.Missing("new_password or email")
}

// twoFactor: POST 2fa.php {action: enrol | confirm {code} | disable
// {password, code} | recovery_codes {code}}.
func (a *API) twoFactor(ctx context.Context, c *adminCall) (any, error) {
	action, err := c.required("action")
	if err != nil {
		return nil, err
	}
	code, err := c.f.Str("code")
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
		return wire.TOTPEnrolReply{Success: true, Secret: e.Secret, OTPAuthURI: e.URI,
			QRPNG:   "data:image/png;base64," + base64.StdEncoding.EncodeToString(e.QRPNG),
			Message: "Scan the code, then confirm with a code from the app."}, nil
	case "confirm":
		codes, err := a.admins.ConfirmTOTP(ctx, c.p, ip, code)
		if err != nil {
			return nil, err
		}
		return wire.RecoveryCodesReply{Success: true, RecoveryCodes: codes,
			Message: "Two-factor sign-in is on. Keep the recovery codes somewhere safe; they are shown once."}, nil
	case "recovery_codes":
		codes, err := a.admins.RegenerateRecoveryCodes(ctx, c.p, ip, code)
		if err != nil {
			return nil, err
		}
		return wire.RecoveryCodesReply{Success: true, RecoveryCodes: codes, Message: "New recovery codes; the old ones no longer work."}, nil
	case "disable":
		pass, err := c.f.Str("password")
		if err != nil {
			return nil, err
		}
		if err := a.admins.DisableTOTP(ctx, c.p, ip, pass, code); err != nil {
			return nil, err
		}
		return wire.MessageReply{Success: true, Message: "Two-factor sign-in is off."}, nil
	}
	return nil, apperr.InvalidField("action", "use enrol, confirm, recovery_codes or disable")
}

func tokenView(t *admin.Token) wire.AccessToken {
	return wire.AccessToken{ID: t.ID, Name: t.Name, Hint: t.Hint, CreatedAt: license.Timestamp(t.CreatedAt),
		LastUsedAt: license.OptTimestamp(t.LastUsedAt), RevokedAt: license.OptTimestamp(t.RevokedAt)}
}

// listTokens: GET tokens.php → the caller's personal access tokens.
func (a *API) listTokens(ctx context.Context, c *adminCall) (any, error) {
	ts, err := a.admins.Tokens(ctx, c.p)
	if err != nil {
		return nil, err
	}
	list := make([]wire.AccessToken, 0, len(ts))
	for i := range ts {
		list = append(list, tokenView(&ts[i]))
	}
	return wire.AccessTokenListReply{Success: true, Tokens: list}, nil
}

// mintToken: POST tokens.php {name} → {token} (shown once).
func (a *API) mintToken(ctx context.Context, c *adminCall) (any, error) {
	name, err := c.f.Str("name")
	if err != nil {
		return nil, err
	}
	secret, t, err := a.admins.MintToken(ctx, c.p, c.actor.IP, name)
	if err != nil {
		return nil, err
	}
	v := wire.NewAccessToken{AccessToken: tokenView(t), Token: secret}
	return wire.NewAccessTokenReply{Success: true, Message: "Copy the token now; it is shown once.", Token: v}, nil
}

// revokeToken: DELETE tokens.php {id}.
func (a *API) revokeToken(ctx context.Context, c *adminCall) (any, error) {
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	if err := a.admins.RevokeToken(ctx, c.p, c.actor.IP, id); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Token revoked."}, nil
}

// signingKeys: GET signing.php → the public keys replies are signed with:
// the active one and any announced for a rotation, each with the SPKI
// SHA-256 a client pins.
func (a *API) signingKeys(ctx context.Context, c *adminCall) (*wire.SigningKeysReply, error) {
	set := a.Signing()
	res := &wire.SigningKeysReply{Success: true, Signing: set != nil, Keys: []wire.SigningKey{}}
	if set != nil {
		for _, k := range set.Keys {
			res.Keys = append(res.Keys, wire.SigningKey{ID: k.ID, SPKISHA256: k.SPKISHA256, PublicKey: string(k.PublicPEM), Active: k == set.Active})
		}
	}
	return res, nil
}
