package clientapi

import (
	"context"
	"mime"
	"net/http"
	"strings"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/wire"
)

// updateCheck: POST update/check.php (envelope) {v|version, channel, os,
// arch, hwid, license_key} → {update_available, update{…}}.
func (a *API) updateCheck(ctx context.Context, c *edge.Call) (any, error) {
	var raw update.RawRequest
	var err error
	for _, p := range []struct {
		dst   *string
		names []string
	}{{&raw.Version, []string{"v", "version"}}, {&raw.Channel, []string{"channel"}}, {&raw.OS, []string{"os"}},
		{&raw.Arch, []string{"arch"}}, {&raw.HWID, []string{"hwid"}}, {&raw.LicenseKey, []string{"license_key"}}} {
		if *p.dst, err = c.F.Str(p.names...); err != nil {
			return nil, err
		}
	}
	req, err := update.ParseRequest(raw)
	if err != nil {
		return nil, err
	}
	d, err := a.updates.Check(ctx, c.App.ID, req)
	if err != nil {
		return nil, err
	}
	if d.Release == nil {
		return &wire.UpdateCheckReply{Success: true, UpdateAvailable: false,
			Message: "No update available: " + req.Version.String() + " is the latest version for this caller."}, nil
	}
	return &wire.UpdateCheckReply{Success: true, UpdateAvailable: true, Message: "Update available.",
		Update: update.Descriptor(d)}, nil
}

// updateDownload: GET update/download.php?v=[&os=&arch=] (app secret)
// streams an artifact of a published release. http.ServeContent answers
// Range (206/416), If-Range, If-None-Match (304) and HEAD from the strong
// ETag, the artifact's sha256.
func (a *API) updateDownload(w http.ResponseWriter, r *http.Request) {
	app, ok := a.App(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	v := strings.TrimSpace(q.Get("v"))
	if v == "" {
		v = strings.TrimSpace(q.Get("version"))
	}
	if v == "" {
		a.Error(w, r, apperr.Missing("v"))
		return
	}
	rel, err := a.updates.ReleaseByVersion(r.Context(), app.ID, v)
	var art *update.Artifact
	if err == nil {
		art, err = update.ArtifactFor(rel, q.Get("os"), q.Get("arch"))
	}
	if err != nil {
		a.Error(w, r, err)
		return
	}
	obj, err := a.updates.OpenArtifact(r.Context(), art)
	if err != nil {
		a.Error(w, r, err)
		return
	}
	defer obj.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("ETag", `"`+art.SHA256+`"`)
	h.Set("X-Checksum-Sha256", art.SHA256)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": art.FileName}))
	http.ServeContent(w, r, "", art.CreatedAt, obj)
}
