package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

func appView(app *license.App, withSecret bool) wire.App {
	v := wire.App{AppID: app.ID, Name: app.Name, Version: app.Version, Settings: app.Settings,
		CreatedAt: license.Timestamp(app.CreatedAt), UpdatedAt: license.Timestamp(app.UpdatedAt),
		Revoked: app.RevokedAt != nil, RevokedAt: license.OptTimestamp(app.RevokedAt)}
	if withSecret {
		v.Secret = app.Secret
	}
	return v
}

// listApps: GET apps.php lists the apps the caller is a member of, each
// with its role; with ?app_id= returns one. Secrets are shown only on
// creation and regeneration.
func (a *API) listApps(ctx context.Context, c *adminCall) (any, error) {
	switch c.q.Get("action") {
	case "":
	case "upstream-status":
		return a.upstreamStatus(ctx, c)
	default:
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Unknown action for GET; use upstream-status.")
	}
	if c.appID != "" {
		app, err := a.lic.App(ctx, c.appID)
		if err != nil {
			return nil, err
		}
		v := appView(app, false)
		v.Role = string(c.role)
		return wire.AppReply{Success: true, App: v}, nil
	}
	roles, err := a.admins.Roles(ctx, c.p)
	if err != nil {
		return nil, err
	}
	apps, err := a.lic.Apps(ctx)
	if err != nil {
		return nil, err
	}
	out := []wire.App{}
	for i := range apps {
		if role, ok := roles[apps[i].ID]; ok {
			v := appView(&apps[i], false)
			v.Role = string(role)
			out = append(out, v)
		}
	}
	return wire.AppListReply{Success: true, Apps: out}, nil
}

// postApps: POST apps.php creates an app, whose owner the caller becomes,
// with a fresh secret or the "secret" given (adopting the secret its shipped
// copies have); with ?action=regenerate-secret it gives app_id a new secret,
// with action=set-secret (owners) the "secret" given, with action=revoke or
// restore (owners) it refuses its clients or lets them back. A secret is
// shown only in these replies.
func (a *API) postApps(ctx context.Context, c *adminCall) (any, error) {
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	if action != "" && c.appID == "" {
		return nil, apperr.Missing("app_id")
	}
	switch action {
	case "":
	case "regenerate-secret":
		app, err := a.lic.RegenerateSecret(ctx, c.actor, c.appID)
		if err != nil {
			return nil, err
		}
		return wire.AppReply{Success: true, App: appView(app, true)}, nil
	case "set-secret":
		if err := c.need(admin.PermOwner); err != nil {
			return nil, err
		}
		secret, err := c.f.Str("secret")
		if err != nil {
			return nil, err
		}
		app, err := a.lic.SetSecret(ctx, c.actor, c.appID, secret)
		if err != nil {
			return nil, err
		}
		return wire.AppReply{Success: true, App: appView(app, true)}, nil
	case "revoke", "restore":
		if err := c.need(admin.PermOwner); err != nil {
			return nil, err
		}
		app, err := a.lic.SetRevoked(ctx, c.actor, c.appID, action == "revoke")
		if err != nil {
			return nil, err
		}
		return wire.AppReply{Success: true, App: appView(app, false)}, nil
	default:
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Unknown action; use regenerate-secret, set-secret, revoke or restore.")
	}
	if c.appID != "" {
		return nil, apperr.InvalidField("app_id", "a new app gets its id; leave app_id out")
	}
	name, err := c.f.Str("name")
	if err != nil {
		return nil, err
	}
	version, err := c.f.Str("version")
	if err != nil {
		return nil, err
	}
	secret, err := c.f.Str("secret") // absent or "": a fresh secret
	if err != nil {
		return nil, err
	}
	app, err := a.lic.CreateApp(ctx, c.actor, name, version, secret)
	if err != nil {
		return nil, err
	}
	return wire.AppReply{Success: true, App: appView(app, true)}, nil
}

// updateApp: PUT apps.php?app_id= edits name, version and settings. Settings
// may be sent in a "settings" object or as top-level fields; unknown names and
// wrong types are refused.
func (a *API) updateApp(ctx context.Context, c *adminCall) (any, error) {
	id, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	app, err := a.lic.App(ctx, id)
	if err != nil {
		return nil, err
	}
	if v, err := c.f.Str("name"); err != nil {
		return nil, err
	} else if _, ok := c.f["name"]; ok {
		app.Name = v
	}
	if v, err := c.f.Str("version"); err != nil {
		return nil, err
	} else if _, ok := c.f["version"]; ok {
		app.Version = v
	}
	patch := map[string]json.RawMessage{}
	if raw, ok := c.f["settings"]; ok {
		if err := json.Unmarshal(raw, &patch); err != nil {
			return nil, apperr.InvalidField("settings", "must be an object")
		}
		if patch == nil { // "settings": null is no settings object, not a nil map to fill
			patch = map[string]json.RawMessage{}
		}
	}
	for k, v := range c.f {
		switch k {
		case "name", "version", "settings", "app_id":
		default:
			patch[k] = v
		}
	}
	before := app.Settings
	token, tokenSent, err := takeUpstreamToken(c.f, patch)
	if err != nil {
		return nil, err
	}
	if err := applySettings(&app.Settings, patch); err != nil {
		return nil, err
	}
	if tokenSent {
		app.UpstreamToken = token
	}
	// The upstream's address and token decide where keyward sends an admin
	// token and whose keys it imports: owners only.
	if tokenSent || upstreamChanged(before, app.Settings) {
		if err := c.need(admin.PermOwner); err != nil {
			return nil, err
		}
	}
	app, err = a.lic.UpdateApp(ctx, c.actor, app)
	if err != nil {
		return nil, err
	}
	return wire.AppReply{Success: true, App: appView(app, false)}, nil
}

// applySettings overlays patch on s, refusing unknown fields and wrong types.
func applySettings(s *license.AppSettings, patch map[string]json.RawMessage) error {
	if len(patch) == 0 {
		return nil
	}
	cur, _ := json.Marshal(s)
	merged := map[string]json.RawMessage{}
	json.Unmarshal(cur, &merged)
	for k, v := range patch {
		if _, known := merged[k]; !known {
			return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Unknown setting: "+k+".")
		}
		merged[k] = v
	}
	b, _ := json.Marshal(merged)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var next license.AppSettings
	if err := dec.Decode(&next); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if allowed := license.SettingAllowed(te.Field); allowed != "" {
				return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid setting "+te.Field+": must be a whole number, "+allowed+".")
			}
			return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid setting "+te.Field+": wrong type.")
		}
		return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid settings.")
	}
	*s = next
	return nil
}

// deleteApp: DELETE apps.php?app_id=.
func (a *API) deleteApp(ctx context.Context, c *adminCall) (any, error) {
	id, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	if err := a.lic.DeleteApp(ctx, c.actor, id); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "App deleted."}, nil
}

// takeUpstreamToken removes upstream_token (write-only, stored sealed, not
// a setting) and upstream_token_set (read-only, ignored, so a settings
// object read with GET can be sent back) from a PUT's fields and settings
// patch, and returns the token: a string, or null / "" to remove it.
func takeUpstreamToken(f map[string]json.RawMessage, patch map[string]json.RawMessage) (string, bool, error) {
	delete(patch, "upstream_token_set")
	raw, ok := patch["upstream_token"]
	if !ok {
		raw, ok = f["upstream_token"]
	}
	delete(patch, "upstream_token")
	if !ok || string(raw) == "null" {
		return "", ok, nil
	}
	var token string
	if err := json.Unmarshal(raw, &token); err != nil {
		return "", false, apperr.InvalidField("upstream_token", "must be a string (or null to remove it)")
	}
	return strings.TrimSpace(token), true, nil
}

// upstreamChanged reports whether the upstream settings differ.
func upstreamChanged(a, b license.AppSettings) bool {
	return a.UpstreamURL != b.UpstreamURL || a.UpstreamAppID != b.UpstreamAppID || a.UpstreamEnabled != b.UpstreamEnabled
}

// upstreamStatus: GET apps.php?app_id=&action=upstream-status (manage) reads
// the upstream's key list, page by page (bounded), and counts the keys the
// app does not have yet, with the keys imported on first use so far.
func (a *API) upstreamStatus(ctx context.Context, c *adminCall) (any, error) {
	if c.appID == "" {
		return nil, apperr.Missing("app_id")
	}
	if err := c.need(admin.PermManage); err != nil {
		return nil, err
	}
	st, err := a.lic.UpstreamStatus(ctx, c.appID)
	if err != nil {
		return nil, err
	}
	r := wire.UpstreamStatusReply{Success: true, Enabled: st.Enabled, Imported: st.Imported, UpstreamKeys: st.UpstreamKeys,
		Remaining: st.Remaining, Complete: st.Complete}
	if st.Err != nil {
		r.Error = st.Err.Error()
	}
	return r, nil
}
