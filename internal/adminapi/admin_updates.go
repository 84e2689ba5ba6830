package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/wire"
)

// Admin updates.php: releases, artifact uploads, rollouts, min_supported,
// explain and stats. See docs/updates.md.

func releaseView(r *update.Release) wire.Release {
	arts := make([]wire.Artifact, 0, len(r.Artifacts))
	for i := range r.Artifacts {
		a := &r.Artifacts[i]
		arts = append(arts, wire.Artifact{ID: a.ID, OS: a.OS, Arch: a.Arch, FileName: a.FileName, Size: a.Size,
			SHA256: a.SHA256, DownloadURL: update.DownloadURL(r, a), CreatedAt: license.Timestamp(a.CreatedAt)})
	}
	status := "draft"
	switch {
	case r.Yanked:
		status = "yanked"
	case r.Halted && r.Published:
		status = "halted"
	case r.Published:
		status = "published"
	}
	minVersion := ""
	if r.MinVersion != nil {
		minVersion = r.MinVersion.String()
	}
	return wire.Release{ID: r.ID, Version: r.Version.String(), Channel: r.Channel, Changelog: r.Changelog,
		IsMandatory: r.Mandatory, MinVersion: minVersion, Rollout: r.Rollout, RolloutPercent: float64(r.Rollout) / 100,
		Status: status, Published: r.Published, Halted: r.Halted, Yanked: r.Yanked, Artifacts: arts,
		PublishedAt: license.OptTimestamp(r.PublishedAt), CreatedAt: license.Timestamp(r.CreatedAt), UpdatedAt: license.Timestamp(r.UpdatedAt)}
}

func releaseReply(r *update.Release, msg string) wire.ReleaseReply {
	return wire.ReleaseReply{Success: true, Message: msg, Release: releaseView(r)}
}

// getUpdates: GET updates.php?app_id= → releases and min_supported;
// &id= → one release; &action=stats[&days=] or &action=explain&v=….
func (a *API) getUpdates(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	switch c.q.Get("action") {
	case "explain":
		return a.explainUpdate(ctx, c, appID)
	case "stats":
		return a.updateStats(ctx, c, appID)
	case "":
	default:
		return nil, apperr.InvalidField("action", "use stats or explain")
	}
	if c.q.Get("id") != "" {
		id, err := recordID(c)
		if err != nil {
			return nil, err
		}
		r, err := a.updates.Release(ctx, appID, id)
		if err != nil {
			return nil, err
		}
		return wire.ReleaseReply{Success: true, Release: releaseView(r)}, nil
	}
	rels, err := a.updates.Releases(ctx, appID)
	if err != nil {
		return nil, err
	}
	floors, err := a.updates.Floors(ctx, appID)
	if err != nil {
		return nil, err
	}
	list := make([]wire.Release, 0, len(rels))
	for i := range rels {
		list = append(list, releaseView(&rels[i]))
	}
	return wire.ReleaseListReply{Success: true, Releases: list, MinSupported: floors}, nil
}

// explainUpdate answers "why did (or didn't) this caller get that version?"
// for a request given in the query or body: v, channel, os, arch, hwid,
// license_key. Nothing is recorded.
func (a *API) explainUpdate(ctx context.Context, c *adminCall, appID string) (*wire.UpdateExplainReply, error) {
	var raw update.RawRequest
	for _, p := range []struct {
		dst  *string
		name string
	}{{&raw.Version, "v"}, {&raw.Channel, "channel"}, {&raw.OS, "os"}, {&raw.Arch, "arch"}, {&raw.HWID, "hwid"}, {&raw.LicenseKey, "license_key"}} {
		v, err := c.param(p.name)
		if err != nil {
			return nil, err
		}
		*p.dst = v
	}
	if raw.Version == "" {
		raw.Version, _ = c.param("version")
	}
	req, err := update.ParseRequest(raw)
	if err != nil {
		return nil, err
	}
	d, err := a.updates.Explain(ctx, appID, req)
	if err != nil {
		return nil, err
	}
	res := &wire.UpdateExplainReply{Success: true, UpdateAvailable: d.Release != nil, Reasons: make([]wire.UpdateReason, 0, len(d.Reasons))}
	for _, why := range d.Reasons {
		res.Reasons = append(res.Reasons, wire.UpdateReason{Version: why.Version, Outcome: string(why.Outcome), Detail: why.Detail})
	}
	if d.Release != nil {
		res.Update = update.Descriptor(d)
	}
	return res, nil
}

// updateStats: distinct devices that checked in the last `days` (default 30)
// and, per version, how many were last offered it and how many run it.
func (a *API) updateStats(ctx context.Context, c *adminCall, appID string) (*wire.UpdateStatsReply, error) {
	days, err := queryInt(c, "days")
	if err != nil {
		return nil, err
	}
	if days == 0 {
		days = 30
	}
	st, err := a.updates.Stats(ctx, appID, int(days))
	if err != nil {
		return nil, err
	}
	res := &wire.UpdateStatsReply{Success: true, Since: license.OptTimestamp(&st.Since), Devices: st.Devices,
		Versions: make([]wire.UpdateVersionStat, 0, len(st.ByVer))}
	for _, v := range st.ByVer {
		res.Versions = append(res.Versions, wire.UpdateVersionStat{Version: v.Version, Offered: v.Offered, Running: v.Running})
	}
	return res, nil
}

// postUpdates: POST updates.php creates a release, or with action= one of
// publish, rollout, halt, resume, yank, unyank, min_supported, explain.
func (a *API) postUpdates(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	action, err := c.param("action")
	if err != nil {
		return nil, err
	}
	switch action {
	case "", "create":
		return a.createRelease(ctx, c, appID)
	case "explain":
		return a.explainUpdate(ctx, c, appID)
	case "min_supported":
		ch, err := c.param("channel")
		if err != nil {
			return nil, err
		}
		v, err := c.param("version")
		if err == nil {
			err = a.updates.SetFloor(ctx, c.actor, appID, ch, v)
		}
		if err != nil {
			return nil, err
		}
		floors, err := a.updates.Floors(ctx, appID)
		return wire.MinSupportedReply{Success: true, Message: "Minimum supported version saved.", MinSupported: floors}, err
	}
	id, err := recordID(c)
	if err != nil {
		return nil, err
	}
	var r *update.Release
	var msg string
	switch action {
	case "publish":
		r, err = a.updates.Publish(ctx, c.actor, appID, id)
		msg = "Release published."
	case "rollout":
		bp, given, ferr := rolloutField(c.f)
		if err = ferr; err == nil && !given {
			err = apperr.Missing("rollout")
		}
		if err == nil {
			r, err = a.updates.SetRollout(ctx, c.actor, appID, id, bp)
		}
		msg = "Rollout saved."
	case "halt", "resume":
		r, err = a.updates.SetHalted(ctx, c.actor, appID, id, action == "halt")
		msg = map[bool]string{true: "Rollout halted.", false: "Rollout resumed."}[action == "halt"]
	case "yank", "unyank":
		r, err = a.updates.SetYanked(ctx, c.actor, appID, id, action == "yank")
		msg = map[bool]string{true: "Release yanked.", false: "Release restored."}[action == "yank"]
	default:
		return nil, apperr.InvalidField("action", "use create, publish, rollout, halt, resume, yank, unyank, min_supported or explain")
	}
	if err != nil {
		return nil, err
	}
	return releaseReply(r, msg), nil
}

// rolloutField reads the rollout in basis points ("rollout") or percent
// ("rollout_percent", e.g. 12.5); given is false when neither is there.
func rolloutField(f edge.Fields) (bp int, given bool, err error) {
	if v, ok, err := f.Int("rollout"); err != nil || ok {
		if v < 0 || v > update.FullRollout {
			return 0, true, apperr.InvalidField("rollout", "must be 0 to 10000 basis points (10000 = 100 %)")
		}
		return int(v), true, err
	}
	raw, ok := f["rollout_percent"]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var pct float64
	if err := json.Unmarshal(raw, &pct); err != nil || pct < 0 || pct > 100 {
		return 0, true, apperr.InvalidField("rollout_percent", "must be a number from 0 to 100")
	}
	return int(pct*100 + 0.5), true, nil
}

func (a *API) createRelease(ctx context.Context, c *adminCall, appID string) (any, error) {
	in := update.NewRelease{Rollout: update.FullRollout}
	var err error
	for _, p := range []struct {
		dst  *string
		name string
	}{{&in.Version, "version"}, {&in.Channel, "channel"}, {&in.Changelog, "changelog"}, {&in.MinVersion, "min_version"}} {
		if err = setStr(c.f, p.name, p.dst); err != nil {
			return nil, err
		}
	}
	if err = setBool(c.f, "is_mandatory", &in.Mandatory); err == nil {
		err = setBool(c.f, "published", &in.Published)
	}
	if err != nil {
		return nil, err
	}
	if bp, given, err := rolloutField(c.f); err != nil {
		return nil, err
	} else if given {
		in.Rollout = bp
	}
	r, err := a.updates.CreateRelease(ctx, c.actor, appID, in)
	if err != nil {
		return nil, err
	}
	return releaseReply(r, "Release created as a draft; upload its artifacts, then publish it."), nil
}

// putUpdates: PUT updates.php?action=upload streams an artifact
// (Content-Type application/octet-stream); without action it edits a
// release's channel, changelog, is_mandatory or min_version.
func (a *API) putUpdates(ctx context.Context, c *adminCall) (any, error) {
	if c.q.Get("action") == "upload" {
		return a.uploadArtifact(ctx, c)
	}
	if streamsBody(c.r, op{}) {
		return nil, apperr.InvalidField("action", "an artifact upload needs ?action=upload")
	}
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	var e update.Edit
	for _, p := range []struct {
		dst  **string
		name string
	}{{&e.Channel, "channel"}, {&e.Changelog, "changelog"}, {&e.MinVersion, "min_version"}} {
		if _, ok := c.f[p.name]; ok {
			v, err := c.f.Str(p.name)
			if err != nil {
				return nil, err
			}
			*p.dst = &v
		}
	}
	if v, ok, err := c.f.Bool("is_mandatory"); err != nil {
		return nil, err
	} else if ok {
		e.Mandatory = &v
	}
	r, err := a.updates.EditRelease(ctx, c.actor, appID, id, e)
	if err != nil {
		return nil, err
	}
	return releaseReply(r, "Release saved."), nil
}

// uploadArtifact streams the request body into the blob store; the body
// limit is --max-artifact-mb and the read deadline is lifted, as a large
// upload outlasts the server's ReadTimeout.
func (a *API) uploadArtifact(ctx context.Context, c *adminCall) (any, error) {
	if !streamsBody(c.r, op{}) {
		return nil, apperr.New(apperr.Invalid, wire.CodeMissingFields, "Send the artifact as the raw request body with Content-Type: application/octet-stream.")
	}
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	id, err := queryInt(c, "id")
	if err == nil && id == 0 {
		err = apperr.Missing("id")
	}
	if err != nil {
		return nil, err
	}
	up := update.Upload{OS: c.q.Get("os"), Arch: c.q.Get("arch"), FileName: strings.TrimSpace(c.q.Get("file_name")), SHA256: c.q.Get("sha256")}
	if up.SHA256 == "" {
		up.SHA256 = c.r.Header.Get("X-Checksum-Sha256")
	}
	if c.r.ContentLength > a.cfg.MaxArtifact {
		return nil, errArtifactTooLarge
	}
	http.NewResponseController(c.w).SetReadDeadline(time.Now().Add(6 * time.Hour))
	body := http.MaxBytesReader(c.w, c.r.Body, a.cfg.MaxArtifact)
	art, err := a.updates.UploadArtifact(ctx, c.actor, appID, id, up, body)
	if isBodyLimit(err) {
		return nil, errArtifactTooLarge
	} else if err != nil {
		return nil, err
	}
	r, err := a.updates.Release(ctx, appID, id)
	if err != nil {
		return nil, err
	}
	return wire.ArtifactReply{Success: true, Message: "Artifact stored.", Artifact: wire.StoredArtifact{OS: art.OS, Arch: art.Arch,
		FileName: art.FileName, Size: art.Size, SHA256: art.SHA256}, Release: releaseView(r)}, nil
}

var errArtifactTooLarge = apperr.New(apperr.Invalid, wire.CodeBodyTooLarge, "The artifact is larger than the configured --max-artifact-mb.")

// isBodyLimit reports whether err comes from a body over its MaxBytesReader.
func isBodyLimit(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
