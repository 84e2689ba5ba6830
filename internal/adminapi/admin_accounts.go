package adminapi

import (
	"context"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// accountView is an account as the admin API shows it.
func accountView(acct *license.Account, now time.Time) wire.AdminAccount {
	u := acct.WireUser(now)
	return wire.AdminAccount{ID: u.ID, Username: u.Username, Email: u.Email, Status: string(acct.StatusAt(now)),
		ExpiresAt: license.OptTimestamp(acct.ExpiresAt), DaysRemaining: u.DaysRemaining, MaxDevices: u.MaxDevices,
		KeyType: u.KeyType, Lifetime: u.Lifetime, LicenseKey: acct.LicenseKey, Features: acct.FeaturesJSON(),
		PasswordResetRequired: acct.PasswordResetRequired, LastLoginAt: license.OptTimestamp(acct.LastLoginAt),
		CreatedAt: license.Timestamp(acct.CreatedAt)}
}

// pageCursor is the next_cursor of a page: null (nil) at the end.
func pageCursor(next int64) *string {
	if next <= 0 {
		return nil
	}
	return cursorString(next)
}

// getAccounts: GET accounts.php?app_id=[&q=&cursor=&limit=] lists accounts;
// with username= returns one with devices, sessions and redeemed keys.
func (a *API) getAccounts(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	now := a.lic.Now()
	if u := strings.TrimSpace(c.q.Get("username")); u != "" {
		if _, err := a.lic.App(ctx, appID); err != nil {
			return nil, err
		}
		d, err := a.accounts.GetAccount(ctx, appID, u)
		if err != nil {
			return nil, err
		}
		keys := make([]wire.RedeemedKey, len(d.Redemptions))
		for i, r := range d.Redemptions {
			keys[i] = wire.RedeemedKey{LicenseKey: r.LicenseKey, DaysAdded: r.DaysAdded, Lifetime: r.Lifetime,
				RedeemedAt: license.Timestamp(r.CreatedAt)}
		}
		return wire.AccountDetailReply{Success: true, Account: wire.AdminAccountDetail{AdminAccount: accountView(&d.Account, now),
			Devices: deviceViews(d.Devices), Sessions: sessionViews(d.Sessions), RedeemedKeys: keys}}, nil
	}
	after, err := queryInt(c, "cursor")
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	q := c.q.Get("q")
	if len(q) > 200 {
		return nil, apperr.InvalidField("q", "must be at most 200 characters")
	}
	as, next, err := a.accounts.ListAccounts(ctx, account.Filter{AppID: appID, Query: q, After: after, Limit: int(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]wire.AdminAccount, len(as))
	for i := range as {
		out[i] = accountView(&as[i], now)
	}
	return wire.AccountListReply{Success: true, Accounts: out, NextCursor: pageCursor(next)}, nil
}

// accountAction: POST accounts.php?app_id=&action= {username, reason?,
// expires_at? | lifetime?}.
func (a *API) accountAction(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	action, err := c.required("action")
	if err != nil {
		return nil, err
	}
	username, err := c.required("username")
	if err != nil {
		return nil, err
	}
	var in account.AccountActionInput
	if in.Reason, err = c.f.Str("reason"); err != nil {
		return nil, err
	}
	if in.Lifetime, _, err = c.f.Bool("lifetime"); err != nil {
		return nil, err
	}
	exp, err := c.f.Str("expires_at")
	if err != nil {
		return nil, err
	}
	if exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return nil, apperr.InvalidField("expires_at", "must be an ISO 8601 time such as 2027-01-01T00:00:00Z")
		}
		t = t.UTC()
		in.ExpiresAt = &t
	}
	acct, temp, err := a.accounts.AccountAction(ctx, c.actor, appID, username, action, in)
	if err != nil {
		return nil, err
	}
	return wire.AccountReply{Success: true, Account: accountView(acct, a.lic.Now()), TemporaryPassword: temp}, nil
}

// deleteAccount: DELETE accounts.php {app_id, username}.
func (a *API) deleteAccount(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	username, err := c.required("username")
	if err != nil {
		return nil, err
	}
	if err := a.accounts.DeleteAccount(ctx, c.actor, appID, username); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Account deleted."}, nil
}

// optStamp is a wire timestamp, or JSON null for nil.
func optStamp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return license.Timestamp(*t)
}
