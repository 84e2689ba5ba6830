package clientapi

import (
	"context"
	"fmt"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// App user account endpoints (plain JSON, sdk-compat §1.8–§1.11).

// register: auth/account-register.php {username, password, email?, license_key?}.
func (a *API) register(ctx context.Context, c *edge.Call) (any, error) {
	var req account.RegisterRequest
	var err error
	if req.Username, err = c.F.Str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.F.Str("password"); err != nil {
		return nil, err
	}
	if req.Email, err = c.F.Key("email"); err != nil {
		return nil, err
	}
	if req.LicenseKey, err = c.F.Key("license_key"); err != nil {
		return nil, err
	}
	acct, g, err := a.accounts.Register(ctx, c.App, req)
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
	return &wire.RegisterReply{
		Success: true,
		Message: msg,
		User:    acct.WireUser(a.lic.Now()),
		Key:     wire.Grant{DaysAdded: g.DaysAdded, Lifetime: g.Lifetime},
	}, nil
}

// accountLogin: auth/account-login.php {username, password, hwid}; the reply
// has the login session shape plus a top-level license_key when the account
// has redeemed one.
func (a *API) accountLogin(ctx context.Context, c *edge.Call) (any, error) {
	var req account.AccountLoginRequest
	var err error
	if req.Username, err = c.F.Str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.F.Str("password"); err != nil {
		return nil, err
	}
	if req.HWID, err = c.F.Str("hwid"); err != nil {
		return nil, err
	}
	req.IP = c.IP
	res, err := a.accounts.AccountLogin(ctx, c.App, req)
	a.countLogin(c.App, err)
	if err != nil {
		return nil, err
	}
	acct := &res.Account
	return &wire.AccountLoginReply{
		Success:           true,
		Message:           "Login successful",
		SessionID:         res.SessionToken,
		HeartbeatInterval: c.App.Settings.HeartbeatInterval,
		User:              wire.AccountLoginUser{AccountUser: acct.WireUser(a.lic.Now()), HWID: req.HWID},
		Features:          c.App.Features(acct.Features),
		App:               appBlock(c.App),
		LicenseKey:        acct.LicenseKey, // absent when the account has none
	}, nil
}

// changePassword: auth/change-password.php {username, current_password
// (alias old_password), new_password}.
func (a *API) changePassword(ctx context.Context, c *edge.Call) (any, error) {
	var req account.ChangePasswordRequest
	var err error
	if req.Username, err = c.F.Str("username"); err != nil {
		return nil, err
	}
	if req.CurrentPassword, err = c.F.Str("current_password", "old_password"); err != nil {
		return nil, err
	}
	if req.NewPassword, err = c.F.Str("new_password"); err != nil {
		return nil, err
	}
	req.IP = c.IP
	if err := a.accounts.ChangePassword(ctx, c.App, req); err != nil {
		return nil, err
	}
	return &wire.Reply{Success: true, Message: "Password changed. Please sign in again."}, nil
}

// redeem: auth/account-redeem.php {username, password, license_key} or
// {session_id, license_key}.
func (a *API) redeem(ctx context.Context, c *edge.Call) (any, error) {
	var req account.RedeemRequest
	var err error
	if req.Username, err = c.F.Str("username"); err != nil {
		return nil, err
	}
	if req.Password, err = c.F.Str("password"); err != nil {
		return nil, err
	}
	if req.SessionToken, err = c.F.Str("session_id"); err != nil {
		return nil, err
	}
	if req.LicenseKey, err = c.F.Key("license_key"); err != nil {
		return nil, err
	}
	req.IP = c.IP
	acct, g, err := a.accounts.RedeemKey(ctx, c.App, req)
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
	return &wire.RedeemReply{
		Success:       true,
		Message:       msg,
		DaysAdded:     g.DaysAdded,
		Lifetime:      g.Lifetime,
		ExpiresAt:     wire.AtPtr(acct.ExpiresAt),
		DaysRemaining: acct.DaysRemaining(now),
		MaxDevices:    acct.MaxDevices,
		Mode:          g.Mode,
		LicenseKey:    acct.LicenseKey,
	}, nil
}
