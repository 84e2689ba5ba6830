package dashboard

import (
	"errors"
	"github.com/keyward/keyward/wire"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// routesSessions: live sessions, HWID reset requests, app user accounts and trials.
func (d *Dashboard) routesSessions(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/sessions", d.sessionsList)
	d.page(m, "POST /dashboard/apps/{app}/sessions/revoke", d.sessionRevoke)
	d.page(m, "GET /dashboard/apps/{app}/resets", d.resetsList)
	d.page(m, "POST /dashboard/apps/{app}/resets/decide", d.resetDecide)
	d.page(m, "GET /dashboard/apps/{app}/accounts", d.accountsList)
	d.page(m, "GET /dashboard/apps/{app}/accounts/{username}", d.accountShow)
	d.page(m, "POST /dashboard/apps/{app}/accounts/action", d.accountAction)
	d.page(m, "POST /dashboard/apps/{app}/accounts/delete", d.accountDelete)
	d.page(m, "GET /dashboard/apps/{app}/trials", d.trialsList)
}

// listPage is what the list pages share: the rows, the filters shown and
// the cursor of the next (older) page.
type listPage struct {
	Rows    any // a slice of the API's rows (wire types, or maps)
	Filter  map[string]string
	Next    string // query string of the next page ("" at the end)
	First   string // query string of the first page ("" on the first page)
	Error   string // a refused filter
	Extra   map[string]any
	Options []string
}

// pageQueries builds the Next/First links of a list page from its filters.
func (p *listPage) pageQueries(next any, cursor string) {
	kv := make([]string, 0, 2*len(p.Filter)+2)
	for k, v := range p.Filter {
		kv = append(kv, k, v)
	}
	if n := str(next); n != "" {
		p.Next = queryOf(append(kv, "cursor", n)...)
		if p.Next == "" {
			p.Next = "?"
		}
	}
	if cursor != "" {
		p.First = queryOf(kv...)
		if p.First == "" {
			p.First = "?"
		}
	}
}

func (d *Dashboard) sessionsList(c *Ctx) {
	key := strings.TrimSpace(c.R.FormValue("license_key"))
	cursor := c.R.FormValue("cursor")
	var out wire.SessionListReply
	p := &listPage{Filter: map[string]string{"license_key": key}}
	if err := c.Call("GET", "/api/admin/sessions.php", c.AppQuery("license_key", key, "cursor", cursor), nil, &out); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	p.Rows = out.Sessions
	p.pageQueries(out.NextCursor, cursor)
	c.Render("sessions", Page{Title: "Live sessions", Nav: "sessions", Data: p})
}

// refusedFilter turns a 400/404 refusal of a list's filters into a message
// on the page (true), leaving other errors to the caller (false).
func refusedFilter(err error, p *listPage) bool {
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusNotFound) {
		p.Error = ae.Message + " (" + ae.Code + ")"
		return true
	}
	return false
}

func (d *Dashboard) sessionRevoke(c *Ctx) {
	id := strings.TrimSpace(c.R.PostFormValue("session_id"))
	back := c.AppPath("sessions")
	if b := safeNext(c.R.PostFormValue("back")); strings.HasPrefix(b, c.AppPath("")) {
		back = b
	}
	if id == "" {
		c.Done(back, "", badInput("Choose a session to revoke."))
		return
	}
	if !c.Confirm("Revoke this session?", "The client is signed out at its next heartbeat; it may sign in again unless the key is banned or paused.") {
		return
	}
	c.Done(back, "Session revoked.", c.Call("DELETE", "/api/admin/sessions.php", c.AppQuery(),
		wire.RevokeSessionsRequest{AppID: c.AppID, SessionID: id}, nil))
}

var resetStatuses = []string{"pending", "approved", "denied", "all"}

func (d *Dashboard) resetsList(c *Ctx) {
	status := c.R.FormValue("status")
	if status == "" {
		status = "pending"
	}
	apiStatus := status
	if status == "all" {
		apiStatus = ""
	}
	cursor := c.R.FormValue("cursor")
	var out wire.ResetRequestListReply
	p := &listPage{Filter: map[string]string{"status": status}, Options: resetStatuses}
	if err := c.Call("GET", "/api/admin/hwid-resets.php", c.AppQuery("status", apiStatus, "cursor", cursor), nil, &out); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	p.Rows = out.Requests
	p.pageQueries(out.NextCursor, cursor)
	c.Render("resets", Page{Title: "HWID reset requests", Nav: "resets", Data: p})
}

func (d *Dashboard) resetDecide(c *Ctx) {
	back := c.AppPath("resets")
	id, err := strconv.ParseInt(strings.TrimSpace(c.R.PostFormValue("id")), 10, 64)
	if err != nil || id <= 0 {
		c.Done(back, "", badInput("Choose a reset request."))
		return
	}
	action := c.R.PostFormValue("action")
	switch action {
	case "approve":
		if !c.Confirm("Approve this reset request?", "Every device bound to the key or account is unbound and its sessions end at their next heartbeat.") {
			return
		}
	case "deny":
	default:
		c.Done(back, "", badInput("Choose approve or deny."))
		return
	}
	c.Done(back, "Request "+map[string]string{"approve": "approved", "deny": "denied"}[action]+".",
		c.Call("POST", "/api/admin/hwid-resets.php", c.AppQuery(), map[string]any{"app_id": c.AppID, "id": id, "action": action}, nil))
}

func (d *Dashboard) accountsList(c *Ctx) {
	q := strings.TrimSpace(c.R.FormValue("q"))
	cursor := c.R.FormValue("cursor")
	var out wire.AccountListReply
	p := &listPage{Filter: map[string]string{"q": q}}
	if err := c.Call("GET", "/api/admin/accounts.php", c.AppQuery("q", q, "cursor", cursor), nil, &out); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	p.Rows = out.Accounts
	p.pageQueries(out.NextCursor, cursor)
	c.Render("accounts", Page{Title: "Accounts", Nav: "accounts", Data: p})
}

func (d *Dashboard) accountShow(c *Ctx) {
	var out wire.AccountDetailReply
	if err := c.Call("GET", "/api/admin/accounts.php", c.AppQuery("username", c.R.PathValue("username")), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("accounts_one", Page{Title: "Account " + out.Account.Username, Nav: "accounts", Data: out.Account})
}

// accountActions are the actions accounts.php offers, with what the
// dashboard asks before the destructive ones.
var accountActions = map[string]struct{ Done, Confirm string }{
	"ban":            {"Account banned.", "The account cannot sign in, and its sessions end at their next heartbeat."},
	"unban":          {"Account unbanned.", ""},
	"pause":          {"Account paused.", "The account cannot sign in until it is resumed; its sessions end at their next heartbeat."},
	"resume":         {"Account resumed.", ""},
	"reset-devices":  {"Devices reset.", "Every device of the account is unbound and its sessions end at their next heartbeat."},
	"reset-password": {"", "The account's password is replaced by a temporary one, which is shown once."},
	"set-expiry":     {"Expiry changed.", ""},
}

// accountBack is where an account form returns: the account's page when
// it came from there, else the list.
func accountBack(c *Ctx, username string) string {
	if c.R.PostFormValue("from") == "account" && username != "" {
		return c.AppPath("accounts/" + url.PathEscape(username))
	}
	return c.AppPath("accounts")
}

func (d *Dashboard) accountAction(c *Ctx) {
	username := strings.TrimSpace(c.R.PostFormValue("username"))
	action := c.R.PostFormValue("action")
	back := accountBack(c, username)
	a, ok := accountActions[action]
	if !ok {
		c.Done(back, "", badInput("Choose an action: ban, unban, pause, resume, reset-devices, reset-password or set-expiry."))
		return
	}
	if username == "" {
		c.Done(back, "", badInput("Choose an account."))
		return
	}
	body := map[string]any{"app_id": c.AppID, "username": username}
	if r := strings.TrimSpace(c.R.PostFormValue("reason")); r != "" {
		body["reason"] = r
	}
	if action == "set-expiry" {
		if c.R.PostFormValue("lifetime") != "" {
			body["lifetime"] = true
		} else {
			v := strings.TrimSpace(c.R.PostFormValue("expires"))
			t, err := time.Parse(time.DateOnly, v)
			if err != nil {
				c.Done(back, "", badInput("New expiry: enter a date (YYYY-MM-DD), or tick lifetime."))
				return
			}
			body["expires_at"] = t.UTC().Format(time.RFC3339)
		}
	}
	if a.Confirm != "" && !c.Confirm(strings.ToUpper(action[:1])+strings.ReplaceAll(action[1:], "-", " ")+" "+username+"?", a.Confirm) {
		return
	}
	var out wire.AccountReply
	err := c.Call("POST", "/api/admin/accounts.php", c.AppQuery("action", action), body, &out)
	if err != nil || action != "reset-password" {
		c.Done(back, a.Done, err)
		return
	}
	c.Render("accounts_password", Page{Title: "Temporary password", Nav: "accounts", Data: map[string]any{"Account": out.Account, "Password": out.TemporaryPassword}})
}

func (d *Dashboard) accountDelete(c *Ctx) {
	username := strings.TrimSpace(c.R.PostFormValue("username"))
	if username == "" {
		c.Done(c.AppPath("accounts"), "", badInput("Choose an account."))
		return
	}
	if !c.Confirm("Delete account "+username+"?", "The account, its devices and sessions are removed for good; the keys it redeemed stay used.") {
		return
	}
	err := c.Call("DELETE", "/api/admin/accounts.php", c.AppQuery(), map[string]any{"app_id": c.AppID, "username": username}, nil)
	back := c.AppPath("accounts")
	if err != nil {
		back = accountBack(c, username)
	}
	c.Done(back, "Account deleted.", err)
}

func (d *Dashboard) trialsList(c *Ctx) {
	cursor := c.R.FormValue("cursor")
	var out wire.TrialListReply
	p := &listPage{Filter: map[string]string{}}
	if err := c.Call("GET", "/api/admin/trials.php", c.AppQuery("cursor", cursor), nil, &out); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	p.Rows = out.Trials
	p.pageQueries(out.NextCursor, cursor)
	st := c.App.Settings
	p.Extra = map[string]any{"Enabled": st.TrialEnabled, "Duration": st.TrialDuration, "Unit": st.TrialDurationUnit}
	c.Render("trials", Page{Title: "Trials", Nav: "trials", Data: p})
}
