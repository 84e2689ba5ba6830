package adminapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/wire"
)

// getKeys: GET keys.php?app_id= lists (filters status, q; cursor, limit);
// with license_key returns one with devices and sessions; with action=export
// streams CSV.
func (a *API) getKeys(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	if _, err := a.lic.App(ctx, appID); err != nil {
		return nil, err
	}
	switch c.q.Get("action") {
	case "":
	case "export":
		return nil, a.exportKeys(ctx, c, appID)
	default:
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Unknown action for GET; use export.")
	}
	now := a.lic.Now()
	if lk := strings.TrimSpace(c.q.Get("license_key")); lk != "" {
		d, err := a.lic.GetKey(ctx, appID, lk)
		if err != nil {
			return nil, err
		}
		files, err := a.lic.LicenseFiles(ctx, appID, d.Key.ID)
		if err != nil {
			return nil, err
		}
		v := wire.KeyDetail{Key: d.Key.AdminView(now), Devices: deviceViews(d.Devices), Sessions: sessionViews(d.Sessions),
			Seats: sessionViews(d.Seats), LicenseFiles: make([]wire.LicenseFile, 0, len(files))}
		for i := range files {
			v.LicenseFiles = append(v.LicenseFiles, files[i].View())
		}
		// A machine holding a borrowed license file and no live seat holds
		// a seat too (license.Seats counts both).
		holders := d.SeatHolders(files, now)
		v.SeatsInUse = len(holders)
		for _, h := range holders {
			if h.Session == nil {
				v.BorrowedSeats++
			}
		}
		return wire.KeyDetailReply{Success: true, Key: v}, nil
	}
	f := license.KeyFilter{AppID: appID, Status: license.Status(c.q.Get("status")), Type: license.KeyType(c.q.Get("key_type")),
		Query: c.q.Get("q"), HWID: strings.TrimSpace(c.q.Get("hwid"))}
	if f.After, err = queryInt(c, "cursor"); err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	f.Limit = int(limit)
	keys, next, err := a.lic.ListKeys(ctx, f)
	if err != nil {
		return nil, err
	}
	res := wire.KeyListReply{Success: true, Keys: license.AdminViews(keys, now)}
	if next != 0 {
		res.NextCursor = cursorString(next)
	}
	return res, nil
}

func queryInt(c *adminCall, name string) (int64, error) {
	v := c.q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid query parameter "+name+": must be a non-negative integer.")
	}
	return n, nil
}

// exportKeys streams every key of the app as CSV, one page at a time.
func (a *API) exportKeys(ctx context.Context, c *adminCall, appID string) error {
	w := c.w
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="keys-`+appID+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	cw.Write(license.KeyCSVHeader)
	now := a.lic.Now()
	var after int64
	for {
		keys, next, err := a.lic.ListKeys(ctx, license.KeyFilter{AppID: appID, After: after, Limit: 1000})
		if err != nil {
			a.log.ErrorContext(ctx, "export keys", "err", err) // headers are gone; cut the stream
			panic(http.ErrAbortHandler)
		}
		for i := range keys {
			k := &keys[i]
			d, err := a.lic.GetKey(ctx, appID, k.LicenseKey)
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			hwids := make([]string, len(d.Devices))
			for j, dv := range d.Devices {
				hwids[j] = dv.HWID
			}
			cw.Write(license.KeyCSVRecord(k, now, hwids))
		}
		cw.Flush()
		if next == 0 {
			return cw.Error()
		}
		after = next
	}
}

// importKeys: POST keys-import.php?app_id=[&format=csv|json][&merge=true]
// [&dry_run=false] with the file as the body (text/csv, application/json,
// or text/plain / application/octet-stream, whose format is detected). A
// dry run (the default) answers the report; dry_run=false imports every key
// or, when any key has a problem, nothing (400 IMPORT_REJECTED with the
// report). merge=true updates the keys the app has instead of refusing
// them (license.Service.ImportKeys).
func (a *API) importKeys(ctx context.Context, c *adminCall) (*wire.ImportReply, error) {
	var o license.ImportOptions
	switch ct, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type")); ct {
	case "text/csv":
		o.Format = license.FormatCSV
	case "application/json":
		o.Format = license.FormatJSON
	case "text/plain", "application/octet-stream":
	default:
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields,
			"Send the keys as the body: a CSV with Content-Type: text/csv, or JSON with Content-Type: application/json.")
	}
	switch f := c.q.Get("format"); f {
	case "":
	case license.FormatCSV, license.FormatJSON:
		o.Format = f
	default:
		return nil, apperr.InvalidField("format", "use csv or json")
	}
	var err error
	if o.Merge, err = queryBool(c, "merge", false); err != nil {
		return nil, err
	}
	dry, err := queryBool(c, "dry_run", true)
	if err != nil {
		return nil, err
	}
	o.Apply = !dry
	if c.r.ContentLength > license.MaxImportBytes {
		return nil, edge.ErrTooLarge
	}
	http.NewResponseController(c.w).SetReadDeadline(time.Now().Add(30 * time.Minute)) // 50 MiB may outlast ReadTimeout
	body := &edge.LimitedBody{R: http.MaxBytesReader(c.w, c.r.Body, license.MaxImportBytes)}
	rep, err := a.lic.ImportKeys(ctx, c.actor, c.appID, body, o)
	if body.Over { // a chunked body past the limit: the same refusal as a declared one
		return nil, edge.ErrTooLarge
	}
	if err != nil {
		return nil, err
	}
	return &wire.ImportReply{Success: true, Report: *rep}, nil
}

// queryBool reads a true/false (1/0) query parameter, def when absent.
func queryBool(c *adminCall, name string, def bool) (bool, error) {
	switch c.q.Get(name) {
	case "":
		return def, nil
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, apperr.InvalidField(name, "use true or false")
}

// postKeys: POST keys.php generates keys (admins and owners); with ?action=
// applies a transition (support and up; converting a trial, which sells a
// key, admins and up).
func (a *API) postKeys(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	switch c.q.Get("action") {
	case "offline-activate", "revoke-license-file":
		if err := c.need(admin.PermManage); err != nil {
			return nil, err
		}
		return a.licenseFileAction(ctx, c, appID, c.q.Get("action"))
	}
	if action := c.q.Get("action"); action != "" {
		lk, err := c.required("license_key")
		if err != nil {
			return nil, err
		}
		if action == "convert" {
			if err := c.need(admin.PermManage); err != nil {
				return nil, err
			}
			return a.convertTrial(ctx, c, appID, lk)
		}
		days, _, err := c.f.Int("days")
		if err != nil {
			return nil, err
		}
		reason, err := c.f.Str("reason")
		if err != nil {
			return nil, err
		}
		k, err := a.lic.KeyAction(ctx, c.actor, appID, lk, action, int(days), reason)
		if err != nil {
			return nil, err
		}
		return wire.KeyReply{Success: true, Key: k.AdminView(a.lic.Now())}, nil
	}
	if err := c.need(admin.PermManage); err != nil {
		return nil, err
	}
	in := license.GenerateInput{AppID: appID, Features: c.f["features"]}
	count, ok, err := c.f.Int("count")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, apperr.Missing("count")
	}
	if in.Type, in.Duration, in.MaxDevices, err = keyTerms(c); err != nil {
		return nil, err
	}
	if in.Note, err = c.f.Str("note"); err != nil {
		return nil, err
	}
	if in.Floating, _, err = c.f.Bool("floating"); err != nil {
		return nil, err
	}
	in.Count = int(count)
	keys, err := a.lic.GenerateKeys(ctx, c.actor, in)
	if err != nil {
		return nil, err
	}
	return wire.KeysReply{Success: true, Keys: license.AdminViews(keys, a.lic.Now())}, nil
}

// licenseFileAction: POST keys.php?action=offline-activate {request} turns
// an air-gapped machine's activation request into a license file (as the
// customer portal does, but for any key of the app, and lifting a revoked
// device's block); ?action=revoke-license-file {id} revokes an issued file
// (docs/offline.md). Owners and admins.
func (a *API) licenseFileAction(ctx context.Context, c *adminCall, appID, action string) (any, error) {
	if action == "offline-activate" {
		text, err := c.f.Str("request")
		if err != nil {
			return nil, err
		}
		f, err := a.lic.OfflineActivate(ctx, license.OfflineRequest{AppID: appID, Text: text, Source: license.FileAdmin, Actor: c.actor},
			a.FileSigner())
		if err != nil {
			return nil, err
		}
		return f.Reply(), nil
	}
	id, err := c.required("id")
	if err != nil {
		return nil, err
	}
	f, err := a.lic.RevokeFile(ctx, appID, id, c.actor)
	if err != nil {
		return nil, err
	}
	return wire.LicenseFileStateReply{Success: true, File: f.View()}, nil
}

// keyTerms reads key_type, duration_value and max_devices (absent: 0, the
// default; an explicit value below 1 is a mistake).
func keyTerms(c *adminCall) (license.KeyType, int, int, error) {
	typ, err := c.f.Str("key_type")
	if err != nil {
		return "", 0, 0, err
	}
	dur, _, err := c.f.Int("duration_value")
	if err != nil {
		return "", 0, 0, err
	}
	maxDev, given, err := c.f.Int("max_devices")
	if err != nil {
		return "", 0, 0, err
	}
	if given && maxDev < 1 {
		return "", 0, 0, apperr.InvalidField("max_devices", "must be 1 to 10000")
	}
	return license.KeyType(typ), int(dur), int(maxDev), nil
}

// convertTrial: POST keys.php?action=convert {license_key, key_type,
// duration_value?, max_devices?} turns a trial key into a full key.
func (a *API) convertTrial(ctx context.Context, c *adminCall, appID, lk string) (any, error) {
	var in trial.ConvertInput
	var err error
	if in.Type, in.Duration, in.MaxDevices, err = keyTerms(c); err != nil {
		return nil, err
	}
	k, err := a.trials.Convert(ctx, c.actor, appID, lk, in)
	if err != nil {
		return nil, err
	}
	return wire.KeyReply{Success: true, Key: k.AdminView(a.lic.Now())}, nil
}

// updateKey: PUT keys.php {app_id, license_key, max_devices?, note?, features?, floating?}.
func (a *API) updateKey(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	lk, err := c.required("license_key")
	if err != nil {
		return nil, err
	}
	var u license.KeyUpdate
	if n, ok, err := c.f.Int("max_devices"); err != nil {
		return nil, err
	} else if ok {
		v := int(n)
		u.MaxDevices = &v
	}
	if _, ok := c.f["note"]; ok {
		note, err := c.f.Str("note")
		if err != nil {
			return nil, err
		}
		u.Note = &note
	}
	if raw, ok := c.f["features"]; ok {
		u.Features = json.RawMessage(raw)
	}
	if v, ok, err := c.f.Bool("floating"); err != nil {
		return nil, err
	} else if ok {
		u.Floating = &v
	}
	k, err := a.lic.UpdateKey(ctx, c.actor, appID, lk, u)
	if err != nil {
		return nil, err
	}
	return wire.KeyReply{Success: true, Key: k.AdminView(a.lic.Now())}, nil
}

// deleteKey: DELETE keys.php {app_id, license_key}.
func (a *API) deleteKey(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	lk, err := c.required("license_key")
	if err != nil {
		return nil, err
	}
	if err := a.lic.DeleteKey(ctx, c.actor, appID, lk); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Key deleted."}, nil
}

// deviceViews are a key's devices as the admin API shows them.
func deviceViews(ds []license.Device) []wire.Device {
	out := make([]wire.Device, len(ds))
	for i, dv := range ds {
		out[i] = wire.Device{HWID: dv.HWID, FirstSeenAt: license.Timestamp(dv.CreatedAt), LastSeenAt: license.Timestamp(dv.LastSeenAt)}
	}
	return out
}

// cursorString is a page cursor as the wire's next_cursor string.
func cursorString(next int64) *string {
	s := strconv.FormatInt(next, 10)
	return &s
}

func sessionViews(ss []license.Session) []wire.Session {
	out := make([]wire.Session, len(ss))
	for i, s := range ss {
		out[i] = wire.Session{ID: s.ID, LicenseKey: s.LicenseKey, Username: s.Username, HWID: s.HWID, IP: s.IP,
			AppVersion: s.AppVersion, CreatedAt: license.Timestamp(s.CreatedAt), LastSeenAt: license.Timestamp(s.LastSeenAt)}
	}
	return out
}

// listSessions: GET sessions.php?app_id=[&license_key=][&cursor=] lists live sessions.
func (a *API) listSessions(ctx context.Context, c *adminCall) (any, error) {
	appID, err := c.required("app_id")
	if err != nil {
		return nil, err
	}
	if _, err := a.lic.App(ctx, appID); err != nil {
		return nil, err
	}
	f := license.SessionFilter{AppID: appID, After: c.q.Get("cursor")}
	if lk := strings.TrimSpace(c.q.Get("license_key")); lk != "" {
		d, err := a.lic.GetKey(ctx, appID, lk)
		if err != nil {
			return nil, err
		}
		f.KeyID = d.Key.ID
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	f.Limit = int(limit)
	if f.Limit <= 0 || f.Limit > 1000 { // the page size Sessions uses
		f.Limit = 100
	}
	ss, err := a.lic.Sessions(ctx, f)
	if err != nil {
		return nil, err
	}
	res := wire.SessionListReply{Success: true, Sessions: sessionViews(ss)}
	if len(ss) > 0 && len(ss) == f.Limit {
		res.NextCursor = &ss[len(ss)-1].ID
	}
	return res, nil
}

// revokeSession: DELETE sessions.php {session_id[, app_id]} or {app_id,
// license_key} (every session of the key); the sessions' next heartbeat
// answers SESSION_REVOKED. Without app_id the session's app is authorized.
func (a *API) revokeSession(ctx context.Context, c *adminCall) (any, error) {
	if lk, err := c.param("license_key"); err != nil {
		return nil, err
	} else if lk != "" {
		if c.appID == "" {
			return nil, apperr.Missing("app_id")
		}
		n, err := a.lic.RevokeKeySessions(ctx, c.actor, c.appID, lk)
		if err != nil {
			return nil, err
		}
		return wire.CountReply{Success: true, Message: "Sessions revoked.", Count: n}, nil
	}
	id, err := c.required("session_id")
	if err != nil {
		return nil, err
	}
	if c.appID == "" {
		app, err := a.lic.SessionApp(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := a.within(ctx, c, app); err != nil {
			return nil, err
		}
	}
	if err := a.lic.RevokeSession(ctx, c.actor, c.appID, id); err != nil {
		return nil, err
	}
	return wire.MessageReply{Success: true, Message: "Session revoked."}, nil
}

// listAudit: GET audit.php[?app_id=&action=&actor_id=&target=&since=&until=
// &cursor=&limit=], newest first. Operators read every entry (a deleted
// app's too); other admins an app's they are a member of, and without
// app_id the entries of their own actions.
func (a *API) listAudit(ctx context.Context, c *adminCall) (any, error) {
	f := store.AuditFilter{AppID: strings.TrimSpace(c.q.Get("app_id")), Action: c.q.Get("action"), ActorID: c.q.Get("actor_id"),
		Target: c.q.Get("target")}
	var err error
	switch {
	case c.p.Operator:
	case f.AppID != "":
		if _, err := a.admins.Authorize(ctx, c.p, f.AppID, admin.PermRead); err != nil {
			return nil, err
		}
	default:
		f.ActorID = c.p.UserID
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.q.Get(t.name); v != "" {
			if *t.dst, err = time.Parse(time.RFC3339, v); err != nil {
				return nil, apperr.InvalidField(t.name, "must be an ISO 8601 time such as 2026-11-20T00:00:00Z")
			}
		}
	}
	if f.Before, err = queryInt(c, "cursor"); err != nil {
		return nil, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 { // the page size Audit uses
		limit = 100
	}
	f.Limit = int(limit)
	entries, err := a.db.Audit(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]wire.AuditEntry, len(entries))
	for i, e := range entries {
		actor := wire.AuditActor{Kind: e.Actor.Kind, ID: e.Actor.ID, Name: e.Actor.Name, IP: e.Actor.IP, Token: e.Actor.Token}
		out[i] = wire.AuditEntry{ID: e.ID, At: license.Timestamp(e.At), Action: e.Action, AppID: e.AppID, Target: e.Target,
			Details: e.Details, Actor: actor}
	}
	res := wire.AuditListReply{Success: true, Entries: out}
	if len(entries) > 0 && len(entries) == int(limit) {
		res.NextCursor = cursorString(entries[len(entries)-1].ID)
	}
	return res, nil
}
