package dashboard

import (
	"encoding/json"
	"errors"
	"github.com/keyward/keyward/wire"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// routesAudit: the audit log and resellers.
func (d *Dashboard) routesAudit(m *http.ServeMux) {
	d.page(m, "GET /dashboard/audit", d.auditList)
	d.page(m, "GET /dashboard/apps/{app}/audit", d.auditList)
	d.page(m, "GET /dashboard/apps/{app}/resellers", d.resellersList)
	d.page(m, "POST /dashboard/apps/{app}/resellers", d.resellerCreate)
	d.page(m, "GET /dashboard/apps/{app}/resellers/{id}", d.resellerShow)
	d.page(m, "POST /dashboard/apps/{app}/resellers/{id}/balance", d.resellerBalance)
	d.page(m, "POST /dashboard/apps/{app}/resellers/{id}/edit", d.resellerEdit)
	d.page(m, "POST /dashboard/apps/{app}/resellers/{id}/status", d.resellerStatus)
	d.page(m, "POST /dashboard/apps/{app}/resellers/{id}/rotate", d.resellerRotate)
	d.page(m, "POST /dashboard/apps/{app}/resellers/{id}/delete", d.resellerDelete)
}

// auditList shows the audit log: of the app on /dashboard/apps/{app}/audit,
// else everything the signed-in admin may read (an operator: every entry;
// others: their own actions). Dates are whole UTC days; until is inclusive.
func (d *Dashboard) auditList(c *Ctx) {
	f := map[string]string{}
	for _, k := range []string{"action", "actor_id", "target", "since", "until", "limit"} {
		f[k] = strings.TrimSpace(c.R.FormValue(k))
	}
	cursor := c.R.FormValue("cursor")
	p := &listPage{Filter: f}
	q := url.Values{}
	if c.AppID != "" {
		q.Set("app_id", c.AppID)
	}
	for _, k := range []string{"action", "actor_id", "target", "limit"} {
		if f[k] != "" {
			q.Set(k, f[k])
		}
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	for _, k := range []string{"since", "until"} {
		if f[k] == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, f[k])
		if err != nil {
			p.Error = k + ": enter a date (YYYY-MM-DD)."
			continue
		}
		if k == "until" {
			t = t.AddDate(0, 0, 1)
		}
		q.Set(k, t.UTC().Format(time.RFC3339))
	}
	nav, title, path := "audit-all", "Audit log", "/dashboard/audit"
	if c.AppID != "" {
		nav, title, path = "audit", "Audit log of "+c.App.Name, c.AppPath("audit")
	}
	if p.Error == "" {
		var out wire.AuditListReply
		if err := c.Call("GET", "/api/admin/audit.php", q, nil, &out); err != nil {
			if !refusedFilter(err, p) {
				c.Fail(err)
				return
			}
		}
		rows := make([]auditRow, len(out.Entries))
		for i, e := range out.Entries {
			rows[i].AuditEntry = e
			if e.Details != nil {
				b, _ := json.Marshal(e.Details)
				if s := string(b); s != "{}" && s != "null" {
					rows[i].DetailsJSON = s
				}
			}
		}
		p.Rows = rows
		p.pageQueries(out.NextCursor, cursor)
	}
	p.Extra = map[string]any{"Path": path, "Operator": c.User.Operator}
	c.Render("audit", Page{Title: title, Nav: nav, Data: p})
}

// auditRow is an audit entry as the log shows it: with its details as JSON
// ("" when there are none).
type auditRow struct {
	wire.AuditEntry
	DetailsJSON string
}

// resellersList shows the app's resellers and, below them, the activity of
// every reseller's ledger (newest first, paged by cursor; limit as the API
// takes it), each entry named by its reseller from the list.
func (d *Dashboard) resellersList(c *Ctx) {
	var out wire.ResellerListReply
	if err := c.Call("GET", "/api/admin/resellers.php", c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	cursor := c.R.FormValue("cursor")
	limit := strings.TrimSpace(c.R.FormValue("limit"))
	p := &listPage{Filter: map[string]string{"limit": limit}}
	var act wire.ResellerActivityReply
	if err := c.Call("GET", "/api/admin/resellers.php", c.AppQuery("action", "activity", "cursor", cursor, "limit", limit), nil, &act); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	names := map[string]string{}
	for _, r := range out.Resellers {
		names[r.ID] = r.Name
	}
	rows := make([]ledgerRow, len(act.Activity))
	for i, e := range act.Activity {
		rows[i].LedgerEntry = e
		if n, ok := names[e.ResellerID]; ok {
			rows[i].Name, rows[i].Listed = n, true
		} else if e.ResellerName != "" {
			rows[i].Name = e.ResellerName
		} else {
			rows[i].Name = e.ResellerID
		}
		rows[i].What = ledgerReasons[e.Reason]
		if rows[i].What == "" {
			rows[i].What = e.Reason
		}
	}
	p.Rows = rows
	p.pageQueries(act.NextCursor, cursor)
	p.Extra = map[string]any{"Resellers": out.Resellers}
	c.Render("resellers", Page{Title: "Resellers", Nav: "resellers", Data: p})
}

// ledgerRow is a ledger entry in the activity of every reseller: named by
// its reseller (Listed: one still in the list, linked) and its reason said
// in words.
type ledgerRow struct {
	wire.LedgerEntry
	Name   string
	Listed bool
	What   string
}

// ledgerReasons say what a ledger entry's reason means.
var ledgerReasons = map[string]string{"topup": "Top-up", "adjust": "Adjustment", "generate": "Keys generated"}

// parseProductsField reads the products textarea: empty is no change
// (nil), else a JSON list the API validates.
func parseProductsField(v string) (json.RawMessage, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if !json.Valid([]byte(v)) {
		return nil, badInput("Products: enter a JSON list such as [{\"id\":\"month\",\"name\":\"30 days\",\"key_type\":\"days\",\"duration_value\":30,\"price\":5}].")
	}
	return json.RawMessage(v), nil
}

func (d *Dashboard) resellerCreate(c *Ctx) {
	body := wire.ResellerRequest{AppID: c.AppID, Name: strings.TrimSpace(c.R.PostFormValue("name")), Email: strings.TrimSpace(c.R.PostFormValue("email"))}
	ps, err := parseProductsField(c.R.PostFormValue("products"))
	if err != nil {
		c.Done(c.AppPath("resellers"), "", err)
		return
	}
	body.Products = ps
	var out wire.ResellerReply
	if err := c.Call("POST", "/api/admin/resellers.php", c.AppQuery(), body, &out); err != nil {
		c.Done(c.AppPath("resellers"), "", err)
		return
	}
	c.Render("resellers_token", Page{Title: "Reseller created", Nav: "resellers", Data: map[string]any{"Reseller": out.Reseller, "Token": out.Token, "New": true}})
}

func (d *Dashboard) resellerShow(c *Ctx) {
	cursor := c.R.FormValue("cursor")
	var out wire.ResellerActivityReply
	if err := c.Call("GET", "/api/admin/resellers.php", c.AppQuery("id", c.R.PathValue("id"), "cursor", cursor), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	if out.Reseller == nil {
		c.Fail(errors.New("resellers.php: no reseller in the answer"))
		return
	}
	p := &listPage{Filter: map[string]string{}, Rows: out.Activity}
	p.pageQueries(out.NextCursor, cursor)
	products := "[]"
	if ps := out.Reseller.Products; ps != nil {
		b, _ := json.MarshalIndent(ps, "", "  ")
		products = string(b)
	}
	p.Extra = map[string]any{"Reseller": out.Reseller, "ProductsJSON": products}
	c.Render("resellers_one", Page{Title: "Reseller " + out.Reseller.Name, Nav: "resellers", Data: p})
}

// resellerPath is the page of the reseller of the request.
func resellerPath(c *Ctx) string {
	return c.AppPath("resellers/" + url.PathEscape(c.R.PathValue("id")))
}

func (d *Dashboard) resellerBalance(c *Ctx) {
	back := resellerPath(c)
	kind := c.R.PostFormValue("kind")
	if kind != "topup" && kind != "adjust" {
		c.Done(back, "", badInput("Choose top-up or adjustment."))
		return
	}
	amount, err := strconv.ParseInt(strings.TrimSpace(c.R.PostFormValue("amount")), 10, 64)
	if err != nil {
		c.Done(back, "", badInput("Amount: enter a whole number of credits."))
		return
	}
	body := wire.ResellerActionRequest{AppID: c.AppID, ID: c.R.PathValue("id"), Amount: &amount, Reason: strings.TrimSpace(c.R.PostFormValue("note"))}
	msg := "Balance topped up."
	if kind == "adjust" {
		msg = "Balance adjusted."
	}
	c.Done(back, msg, c.Call("POST", "/api/admin/resellers.php", c.AppQuery("action", kind), body, nil))
}

func (d *Dashboard) resellerEdit(c *Ctx) {
	back := resellerPath(c)
	body := wire.ResellerRequest{AppID: c.AppID, ID: c.R.PathValue("id"), Name: strings.TrimSpace(c.R.PostFormValue("name")),
		Email: strings.TrimSpace(c.R.PostFormValue("email"))}
	ps, err := parseProductsField(c.R.PostFormValue("products"))
	if err != nil {
		c.Done(back, "", err)
		return
	}
	body.Products = ps
	c.Done(back, "Reseller saved.", c.Call("PUT", "/api/admin/resellers.php", c.AppQuery(), body, nil))
}

func (d *Dashboard) resellerStatus(c *Ctx) {
	back := resellerPath(c)
	action := c.R.PostFormValue("action")
	switch action {
	case "disable":
		if !c.Confirm("Disable this reseller?", "Its token is refused (RESELLER_DISABLED) until you enable it again; its balance stays.") {
			return
		}
	case "enable":
	default:
		c.Done(back, "", badInput("Choose enable or disable."))
		return
	}
	c.Done(back, "Reseller "+action+"d.", c.Call("POST", "/api/admin/resellers.php", c.AppQuery("action", action),
		wire.ResellerActionRequest{AppID: c.AppID, ID: c.R.PathValue("id")}, nil))
}

func (d *Dashboard) resellerRotate(c *Ctx) {
	if !c.Confirm("Issue a new reseller token?", "The current token stops working at once; the new one is shown only once.") {
		return
	}
	var out wire.ResellerReply
	if err := c.Call("POST", "/api/admin/resellers.php", c.AppQuery("action", "rotate_token"),
		wire.ResellerActionRequest{AppID: c.AppID, ID: c.R.PathValue("id")}, &out); err != nil {
		c.Done(resellerPath(c), "", err)
		return
	}
	c.Render("resellers_token", Page{Title: "New reseller token", Nav: "resellers", Data: map[string]any{"Reseller": out.Reseller, "Token": out.Token}})
}

func (d *Dashboard) resellerDelete(c *Ctx) {
	if !c.Confirm("Delete this reseller?", "The reseller, its token, balance and ledger are removed; the keys it sold stay (yours now) and the audit log keeps its history.") {
		return
	}
	err := c.Call("DELETE", "/api/admin/resellers.php", c.AppQuery(), wire.ResellerActionRequest{AppID: c.AppID, ID: c.R.PathValue("id")}, nil)
	back := c.AppPath("resellers")
	if err != nil {
		back = resellerPath(c)
	}
	c.Done(back, "Reseller deleted.", err)
}
