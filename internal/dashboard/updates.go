package dashboard

import (
	"encoding/json"
	"errors"
	"github.com/keyward/keyward/wire"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// routesUpdates: releases (list, create, edit, rollout, publish, halt,
// resume, yank, delete), artifact uploads (streamed), the minimum supported
// version per channel and the "explain this device" tool.
func (d *Dashboard) routesUpdates(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/updates", d.updatesList)
	d.page(m, "POST /dashboard/apps/{app}/updates", d.releaseCreate)
	d.page(m, "POST /dashboard/apps/{app}/updates/min-supported", d.updatesMinSupported)
	d.page(m, "GET /dashboard/apps/{app}/updates/explain", d.updatesExplain)
	d.page(m, "GET /dashboard/apps/{app}/updates/{id}", d.releaseShow)
	d.page(m, "POST /dashboard/apps/{app}/updates/{id}/edit", d.releaseEdit)
	d.page(m, "POST /dashboard/apps/{app}/updates/{id}/rollout", d.releaseRollout)
	d.page(m, "POST /dashboard/apps/{app}/updates/{id}/upload", d.releaseUpload)
	d.page(m, "POST /dashboard/apps/{app}/updates/{id}/delete", d.releaseDelete)
	d.page(m, "POST /dashboard/apps/{app}/updates/{id}/{action}", d.releaseAction)
}

// Choices the release forms offer (the API validates them).
var (
	updateChannels = []string{"stable", "beta", "alpha"}
	updateOSes     = []string{"windows", "macos", "linux"}
	updateArches   = []string{"x64", "x86", "arm64"}
)

const updatesAPI = "/api/admin/updates.php"

func (d *Dashboard) updatesList(c *Ctx) {
	var out wire.ReleaseListReply
	if err := c.Call("GET", updatesAPI, c.AppQuery(), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("updates", Page{Title: "Updates", Nav: "updates", Data: map[string]any{
		"Releases": out.Releases, "MinSupported": out.MinSupported, "Channels": updateChannels}})
}

// rolloutPercent reads a percentage field (0–100, decimals allowed).
func rolloutPercent(r *http.Request, name string) (float64, error) {
	v := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(r.PostFormValue(name)), "%"))
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, &APIError{Status: 400, Code: wire.CodeMissingFields, Message: "Rollout: enter a percentage from 0 to 100."}
	}
	return f, nil
}

func (d *Dashboard) releaseCreate(c *Ctx) {
	body := wire.ReleaseRequest{Version: strings.TrimSpace(c.R.PostFormValue("version")), Channel: c.R.PostFormValue("channel"),
		Changelog: c.R.PostFormValue("changelog"), MinVersion: strings.TrimSpace(c.R.PostFormValue("min_version")),
		IsMandatory: formBool(c, "is_mandatory")}
	if strings.TrimSpace(c.R.PostFormValue("rollout_percent")) != "" {
		pct, err := rolloutPercent(c.R, "rollout_percent")
		if err != nil {
			c.Done(c.AppPath("updates"), "", err)
			return
		}
		body.RolloutPercent = &pct
	}
	var out wire.ReleaseReply
	if err := c.Call("POST", updatesAPI, c.AppQuery(), body, &out); err != nil {
		c.Done(c.AppPath("updates"), "", err)
		return
	}
	c.Redirect(releasePath(c, out.Release.ID), out.Message)
}

// releaseID reads the {id} of a release page; a non-number is no release.
func releaseID(c *Ctx) (int64, bool) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		c.Fail(&APIError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Message: "There is no such release."})
		return 0, false
	}
	return id, true
}

func releasePath(c *Ctx, id int64) string {
	return c.AppPath("updates/" + strconv.FormatInt(id, 10))
}

func (d *Dashboard) releaseShow(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	var out wire.ReleaseReply
	if err := c.Call("GET", updatesAPI, c.AppQuery("id", strconv.FormatInt(id, 10)), nil, &out); err != nil {
		c.Fail(err)
		return
	}
	c.Render("release", Page{Title: "Release " + out.Release.Version, Nav: "updates", Data: map[string]any{
		"Release": out.Release, "Channels": updateChannels, "OSes": updateOSes, "Arches": updateArches,
		"Rollout": out.Release.RolloutPercent}})
}

func (d *Dashboard) releaseEdit(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	body := wire.ReleaseRequest{ID: id, Channel: c.R.PostFormValue("channel"), Changelog: c.R.PostFormValue("changelog"),
		MinVersion: strings.TrimSpace(c.R.PostFormValue("min_version")), IsMandatory: formBool(c, "is_mandatory")}
	c.Done(releasePath(c, id), "Release saved.", c.Call("PUT", updatesAPI, c.AppQuery(), body, nil))
}

func (d *Dashboard) releaseRollout(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	pct, err := rolloutPercent(c.R, "rollout_percent")
	if err == nil {
		err = c.Call("POST", updatesAPI, c.AppQuery(), wire.ReleaseActionRequest{Action: "rollout", ID: id, RolloutPercent: &pct}, nil)
	}
	c.Done(releasePath(c, id), "Rollout saved.", err)
}

// releaseAction: publish, halt, resume, yank and unyank (halt and yank
// confirm first).
func (d *Dashboard) releaseAction(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	action := c.R.PathValue("action")
	msgs := map[string]string{"publish": "Release published.", "halt": "Rollout halted.", "resume": "Rollout resumed.",
		"yank": "Release yanked.", "unyank": "Release restored."}
	msg, known := msgs[action]
	if !known {
		c.Fail(&APIError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Message: "There is no such page."})
		return
	}
	switch action {
	case "halt":
		if !c.Confirm("Halt this rollout?", "Nobody new is offered this release until you resume it; those who have it keep it.") {
			return
		}
	case "yank":
		if !c.Confirm("Yank this release?", "It is no longer offered or downloadable; callers fall back to the best older release.") {
			return
		}
	}
	c.Done(releasePath(c, id), msg, c.Call("POST", updatesAPI, c.AppQuery(), wire.ReleaseActionRequest{Action: action, ID: id}, nil))
}

func (d *Dashboard) releaseDelete(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	if !c.Confirm("Delete this draft?", "The draft release and its uploaded artifacts are removed.") {
		return
	}
	if err := c.Call("DELETE", updatesAPI, c.AppQuery("id", strconv.FormatInt(id, 10)), nil, nil); err != nil {
		c.Done(releasePath(c, id), "", err)
		return
	}
	c.Redirect(c.AppPath("updates"), "Draft deleted.")
}

func (d *Dashboard) updatesMinSupported(c *Ctx) {
	body := wire.MinSupportedRequest{Action: "min_supported", Channel: c.R.PostFormValue("channel"),
		Version: strings.TrimSpace(c.R.PostFormValue("version"))}
	c.Done(c.AppPath("updates"), "Minimum supported version saved.", c.Call("POST", updatesAPI, c.AppQuery(), body, nil))
}

// updatesExplain shows what a device would be offered and why, for what it
// would send to update/check.php (nothing is recorded).
func (d *Dashboard) updatesExplain(c *Ctx) {
	q := c.R.URL.Query()
	form := map[string]string{}
	for _, k := range []string{"v", "channel", "os", "arch", "hwid", "license_key"} {
		form[k] = strings.TrimSpace(q.Get(k))
	}
	data := map[string]any{"Form": form, "Channels": updateChannels, "OSes": updateOSes, "Arches": updateArches}
	if q.Has("v") {
		var out wire.UpdateExplainReply
		err := c.Call("GET", updatesAPI, c.AppQuery("action", "explain", "v", form["v"], "channel", form["channel"], "os", form["os"],
			"arch", form["arch"], "hwid", form["hwid"], "license_key", form["license_key"]), nil, &out)
		if err != nil {
			var ae *APIError
			if !asAPIError(err, &ae) || ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound {
				c.Fail(err)
				return
			}
			data["Error"] = ae.Message + " (" + ae.Code + ")"
		} else {
			data["Result"] = out
		}
	}
	c.Render("updates_explain", Page{Title: "Explain an update check", Nav: "updates", Data: data})
}

// releaseUpload stores an artifact. With JavaScript (app.js) the file is
// the raw body (application/octet-stream, the other fields in the query)
// and the answer is JSON; without, the browser posts multipart/form-data
// and gets a redirect. Either way the file streams into the admin API's
// upload, never whole in memory.
func (d *Dashboard) releaseUpload(c *Ctx) {
	id, ok := releaseID(c)
	if !ok {
		return
	}
	target := releasePath(c, id)
	wantJSON := strings.Contains(c.R.Header.Get("Accept"), "application/json")
	finish := func(msg string, err error) {
		if !wantJSON {
			c.Done(target, msg, err)
			return
		}
		if err == nil {
			c.d.flash(c.W, c.R, msg, false)
			writeUploadJSON(c.W, http.StatusOK, map[string]any{"redirect": target, "message": msg})
			return
		}
		status, message := http.StatusInternalServerError, "The upload failed."
		var ae *APIError
		if asAPIError(err, &ae) {
			status, message = ae.Status, ae.Message+" ("+ae.Code+")"
		} else {
			c.d.log.ErrorContext(c.R.Context(), "dashboard upload", "err", err)
		}
		writeUploadJSON(c.W, status, map[string]any{"message": message})
	}
	missing := func(msg string) error { return &APIError{Status: 400, Code: wire.CodeMissingFields, Message: msg} }

	q := c.AppQuery("action", "upload", "id", strconv.FormatInt(id, 10))
	fields := map[string]string{}
	var body io.Reader
	ct, _, _ := mime.ParseMediaType(c.R.Header.Get("Content-Type"))
	switch {
	case ct == "application/octet-stream":
		for _, k := range []string{"os", "arch", "sha256", "file_name"} {
			fields[k] = c.R.URL.Query().Get(k)
		}
		body = c.R.Body
	case c.R.MultipartForm != nil:
		// Parsed by the CSRF check (no X-CSRF-Token header): only forms up
		// to maxForm get this far.
		mf := c.R.MultipartForm
		for _, k := range []string{"os", "arch", "sha256", "file_name"} {
			if vs := mf.Value[k]; len(vs) > 0 {
				fields[k] = vs[0]
			}
		}
		fhs := mf.File["file"]
		if len(fhs) == 0 || fhs[0].Size == 0 {
			finish("", missing("Choose a file to upload."))
			return
		}
		f, err := fhs[0].Open()
		if err != nil {
			finish("", err)
			return
		}
		defer f.Close()
		if fields["file_name"] == "" {
			fields["file_name"] = fhs[0].Filename
		}
		body = f
	case ct == "multipart/form-data":
		// The CSRF token came as a header: the body is untouched, so the
		// file part streams from the connection.
		mr, err := c.R.MultipartReader()
		if err != nil {
			finish("", missing("The upload could not be read."))
			return
		}
		var part *multipart.Part
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if p.FormName() == "file" {
				part = p
				break
			}
			b, _ := io.ReadAll(io.LimitReader(p, 4096))
			fields[p.FormName()] = string(b)
		}
		if part == nil || part.FileName() == "" {
			finish("", missing("Choose a file to upload."))
			return
		}
		if fields["file_name"] == "" {
			fields["file_name"] = part.FileName()
		}
		body = part
	default:
		finish("", missing("Send the artifact as a file upload."))
		return
	}
	for k, v := range fields {
		if v = strings.TrimSpace(v); v != "" && (k == "os" || k == "arch" || k == "sha256" || k == "file_name") {
			q.Set(k, v)
		}
	}
	// A large upload outlasts the server's read timeout.
	http.NewResponseController(c.W).SetReadDeadline(time.Now().Add(6 * time.Hour))
	rec := c.d.do(c.R, c.Token, "PUT", updatesAPI, q, body, "application/octet-stream")
	var out wire.ArtifactReply
	if err := decodeAnswer(rec, &out); err != nil {
		finish("", err)
		return
	}
	a := out.Artifact
	finish("Artifact stored: "+a.FileName+" ("+strconv.FormatInt(a.Size, 10)+" bytes, sha256 "+a.SHA256+").", nil)
}

func writeUploadJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// asAPIError is errors.As for *APIError.
func asAPIError(err error, ae **APIError) bool { return errors.As(err, ae) }
