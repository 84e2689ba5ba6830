package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/license"
)

// App user account endpoints (plain JSON, sdk-compat §1.8–§1.11).

// optStamp is a wire timestamp, or JSON null for nil.
func optStamp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return license.Timestamp(*t)
}

// accountUser is the user block of register and account-login replies.
func accountUser(a *license.Account, now time.Time) map[string]any {
	u := map[string]any{
		"id":             a.ID,
		"username":       a.Username,
		"email":          a.Email,
		"status":         a.StatusAt(now),
		"expires_at":     optStamp(a.ExpiresAt),
		"days_remaining": a.DaysRemaining(now),
		"max_devices":    a.MaxDevices,
		"key_type":       "days",
		"lifetime":       a.Lifetime(),
	}
	if a.Lifetime() {
		u["key_type"] = "lifetime"
	}
	if a.LicenseKey != "" {
		u["license_key"] = a.LicenseKey
	}
	return u
}

// register: auth/account-register.php {username, password, email?, license_key?}.
func (a *API) register(ctx context.Context, c *call) (map[string]any, error) {
	var req account.RegisterRequest
	var err error
	if req.Username, err = c.f.str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.f.str("password"); err != nil {
		return nil, err
	}
	if req.Email, err = c.f.key("email"); err != nil {
		return nil, err
	}
	if req.LicenseKey, err = c.f.key("license_key"); err != nil {
		return nil, err
	}
	acct, g, err := a.accounts.Register(ctx, c.app, req)
	if err != nil {
		return nil, err
	}
	msg := "Account created."
	switch {
	case g.Lifetime:
		msg = "Account created: lifetime access from your key."
	case g.DaysAdded > 0:
		msg = fmt.Sprintf("Account created: +%d days from your key.", g.DaysAdded)
	}
	return map[string]any{
		"success": true,
		"message": msg,
		"user":    accountUser(acct, a.lic.Now()),
		"key":     map[string]any{"days_added": g.DaysAdded, "lifetime": g.Lifetime},
	}, nil
}

// accountLogin: auth/account-login.php {username, password, hwid}; the reply
// has the login session shape plus a top-level license_key when the account
// has redeemed one.
func (a *API) accountLogin(ctx context.Context, c *call) (map[string]any, error) {
	var req account.AccountLoginRequest
	var err error
	if req.Username, err = c.f.str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.f.str("password"); err != nil {
		return nil, err
	}
	if req.HWID, err = c.f.str("hwid"); err != nil {
		return nil, err
	}
	req.IP = c.ip
	res, err := a.accounts.AccountLogin(ctx, c.app, req)
	a.countLogin(c.app, err)
	if err != nil {
		return nil, err
	}
	acct := &res.Account
	user := accountUser(acct, a.lic.Now())
	user["hwid"] = req.HWID
	out := map[string]any{
		"success":            true,
		"message":            "Login successful",
		"session_id":         res.SessionToken,
		"heartbeat_interval": c.app.Settings.HeartbeatInterval,
		"user":               user,
		"features":           c.app.Features(acct.Features),
		"app":                appBlock(c.app),
	}
	if acct.LicenseKey != "" {
		out["license_key"] = acct.LicenseKey
	}
	return out, nil
}

// changePassword: auth/change-password.php {username, current_password
// (alias old_password), new_password}.
func (a *API) changePassword(ctx context.Context, c *call) (map[string]any, error) {
	var req account.ChangePasswordRequest
	var err error
	if req.Username, err = c.f.str("username"); err != nil {
		return nil, err
	}
	if req.CurrentPassword, err = c.f.str("current_password", "old_password"); err != nil {
		return nil, err
	}
	if req.NewPassword, err = c.f.str("new_password"); err != nil {
		return nil, err
	}
	req.IP = c.ip
	if err := a.accounts.ChangePassword(ctx, c.app, req); err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "message": "Password changed. Please sign in again."}, nil
}

// redeem: auth/account-redeem.php {username, password, license_key} or
// {session_id, license_key}.
func (a *API) redeem(ctx context.Context, c *call) (map[string]any, error) {
	var req account.RedeemRequest
	var err error
	if req.Username, err = c.f.str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.f.str("password"); err != nil {
		return nil, err
	}
	if req.SessionToken, err = c.f.str("session_id"); err != nil {
		return nil, err
	}
	if req.LicenseKey, err = c.f.key("license_key"); err != nil {
		return nil, err
	}
	req.IP = c.ip
	acct, g, err := a.accounts.RedeemKey(ctx, c.app, req)
	if err != nil {
		return nil, err
	}
	now := a.lic.Now()
	msg := fmt.Sprintf("Key added: +%d days.", g.DaysAdded)
	if g.Lifetime {
		msg = "Key added: lifetime access."
	} else if acct.ExpiresAt != nil {
		msg += " Your account now runs until " + license.Timestamp(*acct.ExpiresAt) + "."
	}
	return map[string]any{
		"success":        true,
		"message":        msg,
		"days_added":     g.DaysAdded,
		"lifetime":       g.Lifetime,
		"expires_at":     optStamp(acct.ExpiresAt),
		"days_remaining": acct.DaysRemaining(now),
		"max_devices":    acct.MaxDevices,
		"mode":           g.Mode,
		"license_key":    acct.LicenseKey,
	}, nil
}
