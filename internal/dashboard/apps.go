package dashboard

import (
	"encoding/json"
	"github.com/keyward/keyward/wire"
	"net/http"
	"strconv"
	"strings"
)

// routesApps: the app list (the dashboard's home), creating apps (with a
// fresh secret or one adopted from another service), an app's settings, its
// secret (regenerated or adopted) and revocation.
func (d *Dashboard) routesApps(m *http.ServeMux) {
	d.page(m, "GET /dashboard/{$}", d.appsList)
	d.page(m, "POST /dashboard/apps", d.appCreate)
	d.page(m, "GET /dashboard/apps/{app}", d.appSettings)
	d.page(m, "POST /dashboard/apps/{app}/settings", d.appSave)
	d.page(m, "POST /dashboard/apps/{app}/secret", d.appSecret)
	d.page(m, "POST /dashboard/apps/{app}/adopt-secret", d.appAdoptSecret)
	d.page(m, "POST /dashboard/apps/{app}/revoke", d.appRevoke)
	d.page(m, "POST /dashboard/apps/{app}/upstream", d.appUpstream)
	d.page(m, "GET /dashboard/apps/{app}/upstream", d.appUpstreamStatus)
}

func (d *Dashboard) appsList(c *Ctx) {
	var out wire.AppListReply
	if err := c.Call("GET", "/api/admin/apps.php", nil, nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("apps", Page{Title: "Apps", Nav: "apps", Data: out.Apps})
}

func (d *Dashboard) appCreate(c *Ctx) {
	var out wire.AppReply
	body := map[string]any{"name": strings.TrimSpace(c.R.PostFormValue("name")), "version": strings.TrimSpace(c.R.PostFormValue("version"))}
	if secret := adoptedSecret(c); secret != "" {
		body["secret"] = secret
	}
	if err := c.Call("POST", "/api/admin/apps.php", nil, body, &out); err != nil {
		c.Done("/dashboard/", "", err)
		return
	}
	c.AppID = out.App.AppID
	c.App = &out.App
	c.Render("secret", Page{Title: "App created", Nav: "settings", Data: map[string]any{"Secret": out.App.Secret, "New": true}})
}

// setting is one field of the app settings form.
type setting struct {
	Name, Label, Kind, Help string   // Kind: bool, int, text, choice
	Choices                 []string // for choice
	Value                   any
}

// settingGroups lays out the app settings form (license.AppSettings).
var settingGroups = []struct {
	Title  string
	Fields []setting
}{
	{"Sessions", []setting{
		{Name: "heartbeat_interval", Label: "Heartbeat interval (seconds)", Kind: "int", Help: "How often clients check in; a banned key stops at its next heartbeat."},
		{Name: "maintenance", Label: "Maintenance mode", Kind: "bool", Help: "Refuse sign-ins with the message below."},
		{Name: "maintenance_message", Label: "Maintenance message", Kind: "text"},
		{Name: "login_message", Label: "Message shown at sign-in", Kind: "text"},
		{Name: "download_url", Label: "Download URL", Kind: "text"},
		{Name: "key_prefix", Label: "Key prefix", Kind: "text"},
	}},
	{"Self-service HWID reset", []setting{
		{Name: "self_reset_enabled", Label: "Customers may reset their device binding", Kind: "bool"},
		{Name: "self_reset_cooldown_hours", Label: "Hours between self-service resets", Kind: "int"},
		{Name: "reset_auto_approve_days", Label: "Approve reset requests automatically after (days, 0: never)", Kind: "int"},
	}},
	{"Trials", []setting{
		{Name: "trial_enabled", Label: "Trials enabled", Kind: "bool"},
		{Name: "trial_duration", Label: "Trial length", Kind: "int"},
		{Name: "trial_duration_unit", Label: "Trial length unit", Kind: "choice", Choices: []string{"hours", "days"}},
		{Name: "trial_max_devices", Label: "Devices per trial", Kind: "int"},
		{Name: "trial_ip_limit", Label: "Trials per IP address (0: no limit)", Kind: "int"},
		{Name: "trial_ip_window_hours", Label: "Per-IP window (hours)", Kind: "int"},
	}},
	{"Accounts", []setting{
		{Name: "accounts_enabled", Label: "App user accounts enabled", Kind: "bool"},
		{Name: "account_key_required", Label: "A key is needed to register", Kind: "bool"},
		{Name: "account_signup_days", Label: "Days granted at sign-up", Kind: "int"},
		{Name: "account_max_devices", Label: "Devices per account", Kind: "int"},
		{Name: "account_redeem_mode", Label: "Redeeming a key", Kind: "choice", Choices: []string{"stack", "restart"}},
		{Name: "account_takes_key_devices", Label: "Accounts take over the key's device limit", Kind: "bool"},
		{Name: "account_password_min_length", Label: "Shortest password", Kind: "int"},
	}},
	{"Abuse limits", []setting{
		{Name: "leak_max_hwids", Label: "Devices per key before it counts as leaked", Kind: "int"},
		{Name: "leak_max_ips", Label: "IP addresses per key before it counts as leaked", Kind: "int"},
		{Name: "leak_window_hours", Label: "Leak window (hours)", Kind: "int"},
		{Name: "leak_action", Label: "On a leak", Kind: "choice", Choices: []string{"none", "pause", "rotate"}},
		{Name: "suspicious_invalid_keys", Label: "Invalid keys per IP before flagging", Kind: "int"},
		{Name: "suspicious_envelope_failures", Label: "Envelope failures per IP before flagging", Kind: "int"},
		{Name: "suspicious_trials", Label: "Trials per IP before flagging", Kind: "int"},
		{Name: "suspicious_window_minutes", Label: "Flagging window (minutes)", Kind: "int"},
	}},
	{"Offline", []setting{
		{Name: "offline_enabled", Label: "Offline trust enabled", Kind: "bool", Help: "Signed replies carry trust_until: apps on the Go SDK keep running through a server outage until then."},
		{Name: "offline_ttl_hours", Label: "Offline trust (hours)", Kind: "int", Help: "How long past the last signed reply an app may run without reaching the server (1 to 8760)."},
	}},
}

func (d *Dashboard) appSettings(c *Ctx) {
	settings := settingsMap(c.App.Settings)
	type group struct {
		Title  string
		Fields []setting
	}
	var groups []group
	for _, g := range settingGroups {
		out := group{Title: g.Title}
		for _, f := range g.Fields {
			f.Value = settings[f.Name]
			out.Fields = append(out.Fields, f)
		}
		groups = append(groups, out)
	}
	c.Render("app", Page{Title: c.App.Name, Nav: "settings", Data: groups})
}

// settingsMap is the app's settings by their JSON names (numbers as
// float64), as the settings form and the branding fields, laid out by name,
// read them.
func settingsMap(s wire.AppSettings) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(mustJSON(s), &m); err != nil {
		return map[string]any{}
	}
	return m
}

// appSave turns the settings form into typed JSON and PUTs it; the API
// refuses what is out of range.
func (d *Dashboard) appSave(c *Ctx) {
	patch := map[string]any{}
	for _, g := range settingGroups {
		for _, f := range g.Fields {
			v := strings.TrimSpace(c.R.PostFormValue(f.Name))
			switch f.Kind {
			case "bool":
				patch[f.Name] = v == "on" || v == "true"
			case "int":
				n, err := strconv.Atoi(v)
				if err != nil {
					c.Done(c.AppPath(""), "", &APIError{Status: 400, Code: wire.CodeMissingFields, Message: f.Label + ": enter a whole number."})
					return
				}
				patch[f.Name] = n
			default:
				patch[f.Name] = v
			}
		}
	}
	body := map[string]any{"name": strings.TrimSpace(c.R.PostFormValue("name")), "version": strings.TrimSpace(c.R.PostFormValue("version")),
		"settings": json.RawMessage(mustJSON(patch))}
	c.Done(c.AppPath(""), "Settings saved.", c.Call("PUT", "/api/admin/apps.php", c.AppQuery(), body, nil))
}

func (d *Dashboard) appSecret(c *Ctx) {
	if !c.Confirm("Regenerate the app secret?", "Every copy of "+c.App.Name+" built with the current secret stops working until it is rebuilt with the new one.") {
		return
	}
	var out wire.AppReply
	if err := c.Call("POST", "/api/admin/apps.php", c.AppQuery("action", "regenerate-secret"), map[string]any{}, &out); err != nil {
		c.Done(c.AppPath(""), "", err)
		return
	}
	c.Render("secret", Page{Title: "New app secret", Nav: "settings", Data: map[string]any{"Secret": out.App.Secret}})
}

// adoptedSecret is the form's "secret" field: an existing app secret
// pasted by the owner. Spaces around it are a paste's, never the secret's
// (a secret is 64 hex characters); inside, it is sent as typed, and the API
// refuses what is not a secret.
func adoptedSecret(c *Ctx) string { return strings.TrimSpace(c.R.PostFormValue("secret")) }

// appAdoptSecret gives the app an existing secret (owners; the API refuses
// others), after a confirmation: the copies built with the current secret
// stop working, those built with the one entered are served.
func (d *Dashboard) appAdoptSecret(c *Ctx) {
	if !c.Confirm("Adopt this app secret?", "Copies of "+c.App.Name+" built with the secret you entered are served from now on; those built with the current secret stop working.") {
		return
	}
	secret := adoptedSecret(c)
	if secret == "" {
		c.Done(c.AppPath(""), "", &APIError{Status: 400, Code: wire.CodeMissingFields, Message: "Enter the app secret to adopt (64 hexadecimal characters)."})
		return
	}
	err := c.Call("POST", "/api/admin/apps.php", c.AppQuery("action", "set-secret"), map[string]any{"secret": secret}, nil)
	c.Done(c.AppPath(""), "Secret adopted: copies of the app built with it are served; the previous secret no longer works.", err)
}

func (d *Dashboard) appRevoke(c *Ctx) {
	action := "revoke"
	msg := "Every client of " + c.App.Name + " is refused from now on, and each live session ends at its next heartbeat."
	if c.App.Revoked {
		action, msg = "restore", "Clients of "+c.App.Name+" may sign in again."
	}
	if !c.Confirm(strings.ToUpper(action[:1])+action[1:]+" this app?", msg) {
		return
	}
	c.Done(c.AppPath(""), "App "+action+"d.", c.Call("POST", "/api/admin/apps.php", c.AppQuery("action", action), map[string]any{}, nil))
}

// appUpstream saves the lazy-migration settings (owners; the API refuses
// others). The token field is write-only: left empty it keeps the stored
// token, "remove" clears it.
func (d *Dashboard) appUpstream(c *Ctx) {
	f := c.R.PostFormValue
	body := map[string]any{"upstream_url": strings.TrimSpace(f("upstream_url")), "upstream_app_id": strings.TrimSpace(f("upstream_app_id")),
		"upstream_enabled": f("upstream_enabled") == "on"}
	if tok := strings.TrimSpace(f("upstream_token")); tok != "" {
		body["upstream_token"] = tok
	} else if f("upstream_token_remove") == "on" {
		body["upstream_token"] = nil
	}
	c.Done(c.AppPath(""), "Migration settings saved.", c.Call("PUT", "/api/admin/apps.php", c.AppQuery(), body, nil))
}

// appUpstreamStatus counts, on demand, the upstream's keys not here yet
// (the API reads the upstream's key list page by page).
func (d *Dashboard) appUpstreamStatus(c *Ctx) {
	var out wire.UpstreamStatusReply
	if err := c.Call("GET", "/api/admin/apps.php", c.AppQuery("action", "upstream-status"), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("upstream", Page{Title: "Migration progress", Nav: "settings", Data: out})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
