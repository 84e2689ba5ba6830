package dashboard

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"github.com/keyward/keyward/wire"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// routesKeys: keys: search and filter, bulk generation and download, the per-key page, key actions and bulk actions.
func (d *Dashboard) routesKeys(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/keys", d.keysList)
	d.page(m, "POST /dashboard/apps/{app}/keys/generate", d.keysGenerate)
	d.page(m, "POST /dashboard/apps/{app}/keys/download", d.keysDownload)
	d.page(m, "POST /dashboard/apps/{app}/keys/bulk", d.keysBulk)
	d.page(m, "GET /dashboard/apps/{app}/keys/{key}", d.keyPage)
	d.page(m, "POST /dashboard/apps/{app}/keys/{key}/action", d.keyAction)
}

// keyStatuses are the statuses the key list and bulk filter offer.
var keyStatuses = []string{"unused", "active", "paused", "banned", "expired", "redeemed"}

// keyStringRE is what a key string may look like (the import's rule: 1–128
// letters, digits, '-', '_' or '.', starting with a letter or digit). The
// download route accepts nothing else, so it cannot reflect arbitrary text.
var keyStringRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// maxDownload is the most keys one download carries (one generation's batch).
const maxDownload = 10000

func (d *Dashboard) keysList(c *Ctx) {
	q := c.R.URL.Query()
	status := strings.TrimSpace(q.Get("status"))
	search := strings.TrimSpace(q.Get("q"))
	keyType := strings.TrimSpace(q.Get("key_type"))
	hwid := strings.TrimSpace(q.Get("hwid"))
	cursor := strings.TrimSpace(q.Get("cursor"))
	limit := strings.TrimSpace(q.Get("limit"))
	if limit == "" {
		limit = "50"
	}
	var out wire.KeyListReply
	if err := c.Call("GET", "/api/admin/keys.php", c.AppQuery("status", status, "q", search, "key_type", keyType, "hwid", hwid, "cursor", cursor, "limit", limit), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	next := ""
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	c.Render("keys", Page{Title: "Keys", Nav: "keys", Data: map[string]any{
		"Keys": out.Keys, "Status": status, "Q": search, "Type": keyType, "HWID": hwid, "Limit": limit, "Cursor": cursor, "Next": next,
		"Statuses": keyStatuses,
	}})
}

// formFeatures reads a features field: empty, or a JSON object.
func formFeatures(c *Ctx) (json.RawMessage, error) {
	v := strings.TrimSpace(c.R.PostFormValue("features"))
	if v == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return nil, badInput(`Features: enter a JSON object such as {"pro": true, "seats": 5}.`)
	}
	return json.RawMessage(v), nil
}

func (d *Dashboard) keysGenerate(c *Ctx) {
	back := c.AppPath("keys")
	count, err := formIntOr(c, "count", "Number of keys", 0)
	if err != nil {
		c.Done(back, "", err)
		return
	}
	if strings.TrimSpace(c.R.PostFormValue("count")) == "" {
		c.Done(back, "", badInput("Number of keys: enter how many keys to generate."))
		return
	}
	typ := strings.TrimSpace(c.R.PostFormValue("key_type"))
	body := wire.GenerateKeysRequest{AppID: c.AppID, Count: count, KeyType: typ, Note: c.R.PostFormValue("note")}
	if typ != "lifetime" {
		days, err := formIntOr(c, "duration_value", "Duration (days)", 0)
		if err != nil {
			c.Done(back, "", err)
			return
		}
		body.DurationValue = &days
	}
	if strings.TrimSpace(c.R.PostFormValue("max_devices")) != "" {
		n, err := formIntOr(c, "max_devices", "Devices per key", 1)
		if err != nil {
			c.Done(back, "", err)
			return
		}
		body.MaxDevices = &n
	}
	features, err := formFeatures(c)
	if err != nil {
		c.Done(back, "", err)
		return
	}
	body.Features = features
	body.Floating = formBool(c, "floating")
	var out wire.KeysReply
	if err := c.Call("POST", "/api/admin/keys.php", c.AppQuery(), body, &out); err != nil {
		c.Done(back, "", err)
		return
	}
	strs := make([]string, len(out.Keys))
	for i, k := range out.Keys {
		strs[i] = k.LicenseKey
	}
	c.Render("keys_generated", Page{Title: "Keys generated", Nav: "keys", Data: map[string]any{
		"Keys": out.Keys, "Joined": strings.Join(strs, "\n"), "Count": len(strs)}})
}

// keysDownload answers the posted keys as a CSV or text attachment. Every
// key must look like a key string, so nothing else can be reflected.
func (d *Dashboard) keysDownload(c *Ctx) {
	format := c.R.PostFormValue("format")
	if format != "csv" && format != "txt" {
		c.RenderStatus(http.StatusBadRequest, "error", Page{Title: "Not possible", Nav: "keys", Data: map[string]any{"Message": "Choose CSV or TXT.", "Code": wire.CodeMissingFields}})
		return
	}
	var keys []string
	for _, v := range c.R.PostForm["keys"] {
		keys = append(keys, strings.Fields(v)...)
	}
	msg := ""
	switch {
	case len(keys) == 0:
		msg = "There are no keys to download."
	case len(keys) > maxDownload:
		msg = "A download carries at most " + strconv.Itoa(maxDownload) + " keys."
	default:
		for _, k := range keys {
			if !keyStringRE.MatchString(k) {
				msg = "Only key strings can be downloaded (letters, digits, '-', '_' and '.')."
				break
			}
		}
	}
	if msg != "" {
		c.RenderStatus(http.StatusBadRequest, "error", Page{Title: "Not possible", Nav: "keys", Data: map[string]any{"Message": msg, "Code": wire.CodeMissingFields}})
		return
	}
	name := "keys-" + safeFileName(c.AppID) + "-" + c.d.now().UTC().Format("20060102-150405")
	h := c.W.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		w := csv.NewWriter(c.W)
		w.Write([]string{"key"})
		for _, k := range keys {
			w.Write([]string{k})
		}
		w.Flush()
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`.txt"`)
	c.W.Write([]byte(strings.Join(keys, "\n") + "\n"))
}

// safeFileName keeps letters, digits and '-' of s (a file name part).
func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	if b.Len() > 40 {
		return b.String()[:40]
	}
	return b.String()
}

// bulkOps are what keys-bulk.php does, with the words the pages use.
var bulkOps = map[string][2]string{"ban": {"ban", "Banned"}, "pause": {"pause", "Paused"}, "extend": {"extend", "Extended"}, "delete": {"delete", "Deleted"}}

// bulkBody turns the bulk form into keys-bulk.php's body (without dry_run).
func bulkBody(c *Ctx) (map[string]any, error) {
	f := c.R.PostFormValue
	op := strings.TrimSpace(f("op"))
	body := map[string]any{"app_id": c.AppID, "op": op}
	for _, name := range []string{"status", "key_type", "q"} {
		if v := strings.TrimSpace(f(name)); v != "" {
			body[name] = v
		}
	}
	if op == "extend" {
		days, err := formIntOr(c, "days", "Days", 0)
		if err != nil {
			return nil, err
		}
		body["days"] = days
	}
	for _, t := range []struct{ name, label string }{{"created_after", "Created after"}, {"created_before", "Created before"}, {"expires_before", "Expires before"}} {
		v := strings.TrimSpace(f(t.name))
		if v == "" {
			continue
		}
		at, err := time.Parse(time.DateOnly, v)
		if err != nil {
			if at, err = time.Parse(time.RFC3339, v); err != nil {
				return nil, badInput(t.label + ": enter a date such as 2026-11-20.")
			}
		}
		body[t.name] = at.UTC().Format(time.RFC3339)
	}
	return body, nil
}

// keysBulk: without expect, the API's dry run and a page asking to confirm
// its count; with expect, the real run (409 COUNT_CHANGED when the count
// moved: the page is shown again with the new count).
func (d *Dashboard) keysBulk(c *Ctx) {
	back := c.AppPath("keys")
	body, err := bulkBody(c)
	if err != nil {
		c.Done(back, "", err)
		return
	}
	op := str(body["op"])
	words, ok := bulkOps[op]
	if !ok {
		c.Done(back, "", badInput("Choose what to do: ban, pause, extend or delete."))
		return
	}
	notice := ""
	if v := strings.TrimSpace(c.R.PostFormValue("expect")); v != "" {
		expect, err := strconv.Atoi(v)
		if err != nil {
			c.Done(back, "", badInput("The confirmed count is not a number; start again."))
			return
		}
		body["dry_run"], body["expect"] = false, expect
		var res wire.BulkReply
		err = c.Call("POST", "/api/admin/keys-bulk.php", c.AppQuery(), body, &res)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == wire.CodeCountChanged {
			notice = ae.Message + " (" + ae.Code + ")"
		} else {
			msg := words[1] + " " + strconv.Itoa(res.Affected) + " of " + strconv.Itoa(res.Matched) + " keys."
			if res.Skipped > 0 {
				msg += " " + strconv.Itoa(res.Skipped) + " skipped: their state does not allow it."
			}
			c.Done(back, msg, err)
			return
		}
		delete(body, "expect")
		delete(body, "dry_run")
	}
	var dry wire.BulkDryRunReply
	if err := c.Call("POST", "/api/admin/keys-bulk.php", c.AppQuery(), body, &dry); err != nil {
		c.Done(back, "", err)
		return
	}
	fields := map[string]string{}
	for _, name := range []string{"op", "status", "key_type", "q", "days", "created_after", "created_before", "expires_before"} {
		if v := strings.TrimSpace(c.R.PostFormValue(name)); v != "" {
			fields[name] = v
		}
	}
	fields["expect"] = strconv.Itoa(dry.Count)
	c.Render("keys_bulk", Page{Title: "Confirm bulk action", Nav: "keys", Data: map[string]any{
		"Op": words[0], "Count": dry.Count, "Days": body["days"], "Fields": fields, "Notice": notice, "Filter": bulkFilterText(body)}})
}

// bulkFilterText describes a bulk filter in words.
func bulkFilterText(body map[string]any) []string {
	var out []string
	for _, t := range []struct{ name, label string }{{"status", "status"}, {"key_type", "type"}, {"q", "key or note contains"},
		{"created_after", "created after"}, {"created_before", "created before"}, {"expires_before", "expires before"}} {
		if v, ok := body[t.name]; ok {
			out = append(out, t.label+" "+str(v))
		}
	}
	return out
}

// keyHistoryLimit is how many audit entries a key page shows.
const keyHistoryLimit = 100

// keyHistory is the key's audit trail, newest first. The audit log names a
// key by its string at the time, and a rotation (key.rotate, target the old
// string, details.new_license_key the new one) changes it; so the entries of
// the strings the key had before are joined in, following up to a few
// rotations among the app's latest.
func keyHistory(c *Ctx, lk string) ([]wire.AuditEntry, error) {
	var rotations wire.AuditListReply
	if err := c.Call("GET", "/api/admin/audit.php", c.AppQuery("action", "key.rotate", "limit", "500"), nil, &rotations); err != nil {
		return nil, err
	}
	previous := map[string]string{} // new string → old string
	for _, e := range rotations.Entries {
		if nk := str(e.Details["new_license_key"]); nk != "" {
			previous[nk] = e.Target
		}
	}
	var all []wire.AuditEntry
	for names, at := 0, lk; at != "" && names < 5 && len(all) < keyHistoryLimit; names++ {
		var h wire.AuditListReply
		if err := c.Call("GET", "/api/admin/audit.php", c.AppQuery("target", at, "limit", strconv.Itoa(keyHistoryLimit-len(all))), nil, &h); err != nil {
			return nil, err
		}
		all = append(all, h.Entries...)
		at = previous[at]
	}
	return all, nil
}

// keyPage shows one key: its facts, devices, sessions, features and history.
func (d *Dashboard) keyPage(c *Ctx) {
	lk := c.R.PathValue("key")
	var out wire.KeyDetailReply
	if err := c.Call("GET", "/api/admin/keys.php", c.AppQuery("license_key", lk), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	history, err := keyHistory(c, lk)
	if err != nil {
		c.Fail(err)
		return
	}
	features := "{}"
	var f map[string]any
	if json.Unmarshal(out.Key.Features, &f) == nil && len(f) > 0 {
		b, _ := json.MarshalIndent(f, "", "  ")
		features = string(b)
	}
	c.Render("key", Page{Title: "Key " + lk, Nav: "keys", Data: map[string]any{
		"Key": out.Key, "LK": lk, "History": history, "Features": features,
		"Path": c.AppPath("keys/" + url.PathEscape(lk)),
	}})
}

// keyActions: the keys.php?action= transitions, with the confirmation the
// destructive ones ask for (empty: none) and the message after.
var keyActions = map[string]struct{ Confirm, Explain, Done string }{
	"ban":        {"Ban this key?", "The key is refused from now on and its live sessions end.", "Key banned."},
	"unban":      {"", "", "Key unbanned."},
	"pause":      {"", "", "Key paused."},
	"resume":     {"", "", "Key resumed."},
	"extend":     {"", "", "Key extended."},
	"reset-hwid": {"Reset the devices of this key?", "Every bound device is released and live sessions end; the next sign-in binds again.", "Devices reset."},
	"rotate":     {"Rotate this key?", "The key gets a new string: the current one stops working and its sessions end. Give the new key to its customer.", ""},
}

// keyAction applies one action of the key page (action=…).
func (d *Dashboard) keyAction(c *Ctx) {
	lk := c.R.PathValue("key")
	page := c.AppPath("keys/" + url.PathEscape(lk))
	action := c.R.PostFormValue("action")
	if a, ok := keyActions[action]; ok {
		if a.Confirm != "" && !c.Confirm(a.Confirm, a.Explain) {
			return
		}
		body := wire.KeyActionRequest{AppID: c.AppID, LicenseKey: lk, Reason: strings.TrimSpace(c.R.PostFormValue("reason"))}
		if action == "extend" {
			days, err := formIntOr(c, "days", "Days", 0)
			if err != nil {
				c.Done(page, "", err)
				return
			}
			body.Days = &days
		}
		var out wire.KeyReply
		err := c.Call("POST", "/api/admin/keys.php", c.AppQuery("action", action), body, &out)
		if err == nil && action == "rotate" {
			nk := out.Key.LicenseKey
			c.Done(c.AppPath("keys/"+url.PathEscape(nk)), "Key rotated. The new key is "+nk+"; the old one no longer works.", nil)
			return
		}
		c.Done(page, a.Done, err)
		return
	}
	switch action {
	case "delete":
		if !c.Confirm("Delete this key?", "The key "+lk+" is deleted for good and its live sessions end.") {
			return
		}
		err := c.Call("DELETE", "/api/admin/keys.php", c.AppQuery(), wire.KeyRequest{AppID: c.AppID, LicenseKey: lk}, nil)
		if err != nil {
			c.Done(page, "", err)
			return
		}
		c.Done(c.AppPath("keys"), "Key "+lk+" deleted.", nil)
	case "update":
		body := wire.KeyUpdateRequest{AppID: c.AppID, LicenseKey: lk, Note: c.R.PostFormValue("note")}
		if v := strings.TrimSpace(c.R.PostFormValue("max_devices")); v != "" {
			n, err := formIntOr(c, "max_devices", "Devices allowed", 0)
			if err != nil {
				c.Done(page, "", err)
				return
			}
			body.MaxDevices = &n
		}
		features, err := formFeatures(c)
		if err != nil {
			c.Done(page, "", err)
			return
		}
		if features == nil {
			features = json.RawMessage("{}")
		}
		body.Features = features
		floating := formBool(c, "floating") // the edit form always shows the box: unchecked is off
		body.Floating = &floating
		c.Done(page, "Key saved.", c.Call("PUT", "/api/admin/keys.php", c.AppQuery(), body, nil))
	case "revoke-session":
		id := strings.TrimSpace(c.R.PostFormValue("session_id"))
		if id == "" {
			c.Done(page, "", badInput("Which session? The form named none."))
			return
		}
		c.Done(page, "Session revoked.", c.Call("DELETE", "/api/admin/sessions.php", c.AppQuery(), wire.RevokeSessionsRequest{AppID: c.AppID, SessionID: id}, nil))
	case "revoke-license-file":
		id := strings.TrimSpace(c.R.PostFormValue("file_id"))
		if id == "" {
			c.Done(page, "", badInput("Which license file? The form named none."))
			return
		}
		if !c.Confirm("Revoke this license file?", "It is not renewed for this device; the file itself stays valid offline until its valid-until.") {
			return
		}
		c.Done(page, "License file revoked.", c.Call("POST", "/api/admin/keys.php", c.AppQuery("action", "revoke-license-file"),
			wire.LicenseFileRevokeRequest{AppID: c.AppID, ID: id}, nil))
	case "revoke-sessions":
		if !c.Confirm("End every session of this key?", "Each live session of "+lk+" ends at its next heartbeat.") {
			return
		}
		c.Done(page, "Sessions revoked.", c.Call("DELETE", "/api/admin/sessions.php", c.AppQuery(), wire.RevokeSessionsRequest{AppID: c.AppID, LicenseKey: lk}, nil))
	default:
		c.Done(page, "", badInput("Unknown action."))
	}
}
