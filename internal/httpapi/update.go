package httpapi

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
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
		Update: updateDescriptor(d)}, nil
}

// updateDescriptor is the update object of a check reply (API reference,
// "Update descriptor"; SDKs read version, sha256, size and download_url).
func updateDescriptor(d update.Decision) *wire.UpdateDescriptor {
	r, art := d.Release, d.Artifact
	return &wire.UpdateDescriptor{Version: r.Version.String(), Channel: r.Channel, IsMandatory: d.Mandatory,
		FileSize: art.Size, Size: art.Size, SHA256: art.SHA256, Changelog: r.Changelog,
		DownloadURL: downloadURL(r, art)}
}

// downloadURL is the path, relative to the base URL, that downloads art; it
// names the platform only when the release has several artifacts.
func downloadURL(r *update.Release, art *update.Artifact) string {
	q := "v=" + url.QueryEscape(r.Version.String())
	if len(r.Artifacts) > 1 {
		if art.OS != "" {
			q += "&os=" + url.QueryEscape(art.OS)
		}
		if art.Arch != "" {
			q += "&arch=" + url.QueryEscape(art.Arch)
		}
	}
	return "api/update/download.php?" + q
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

// isBodyLimit reports whether err comes from a body over its MaxBytesReader.
func isBodyLimit(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
