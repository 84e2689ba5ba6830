package adminapi

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

// accountView is an account as the admin API shows it.
func accountView(acct *license.Account, now time.Time) map[string]any {
	u := acct.WireUser(now)
	v := map[string]any{"id": u.ID, "username": u.Username, "email": u.Email, "status": acct.StatusAt(now),
		"expires_at": optStamp(acct.ExpiresAt), "days_remaining": u.DaysRemaining, "max_devices": u.MaxDevices,
		"key_type": u.KeyType, "lifetime": u.Lifetime}
	v["license_key"] = acct.LicenseKey
	v["features"] = acct.FeaturesJSON()
	v["password_reset_required"] = acct.PasswordResetRequired
	v["last_login_at"] = optStamp(acct.LastLoginAt)
	v["created_at"] = license.Timestamp(acct.CreatedAt)
	return v
}

// getAccounts: GET accounts.php?app_id=[&q=&cursor=&limit=] lists accounts;
// with username= returns one with devices, sessions and redeemed keys.
func (a *API) getAccounts(ctx context.Context, c *adminCall) (map[string]any, error) {
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
		v := accountView(&d.Account, now)
		devices := make([]map[string]any, len(d.Devices))
		for i, dv := range d.Devices {
			devices[i] = map[string]any{"hwid": dv.HWID, "first_seen_at": license.Timestamp(dv.CreatedAt),
				"last_seen_at": license.Timestamp(dv.LastSeenAt)}
		}
		keys := make([]map[string]any, len(d.Redemptions))
		for i, r := range d.Redemptions {
			keys[i] = map[string]any{"license_key": r.LicenseKey, "days_added": r.DaysAdded, "lifetime": r.Lifetime,
				"redeemed_at": license.Timestamp(r.CreatedAt)}
		}
		v["devices"], v["sessions"], v["redeemed_keys"] = devices, sessionViews(d.Sessions), keys
		return map[string]any{"success": true, "account": v}, nil
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
	out := make([]map[string]any, len(as))
	for i := range as {
		out[i] = accountView(&as[i], now)
	}
	res := map[string]any{"success": true, "accounts": out, "next_cursor": nil}
	if next > 0 {
		res["next_cursor"] = strconv.FormatInt(next, 10)
	}
	return res, nil
}

// accountAction: POST accounts.php?app_id=&action= {username, reason?,
// expires_at? | lifetime?}.
func (a *API) accountAction(ctx context.Context, c *adminCall) (map[string]any, error) {
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
	res := map[string]any{"success": true, "account": accountView(acct, a.lic.Now())}
	if temp != "" {
		res["temporary_password"] = temp
	}
	return res, nil
}

// deleteAccount: DELETE accounts.php {app_id, username}.
func (a *API) deleteAccount(ctx context.Context, c *adminCall) (map[string]any, error) {
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
	return map[string]any{"success": true, "message": "Account deleted."}, nil
}

// optStamp is a wire timestamp, or JSON null for nil.
func optStamp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return license.Timestamp(*t)
}
