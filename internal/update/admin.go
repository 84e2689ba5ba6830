package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/wire"
)

// Owner edits of releases. Each writes its audit entry in the same
// transaction; publishing also writes the update.published event there.

// NewRelease is what an owner sets when creating a release.
type NewRelease struct {
	Version    string
	Channel    string
	Changelog  string
	Mandatory  bool
	MinVersion string
	Rollout    int
	Published  bool
}

var (
	errNeedsArtifact = apperr.New(apperr.Conflict, wire.CodeNoArtifact, "Upload at least one artifact before publishing; create the release as a draft first.")
	errNotDraft      = apperr.New(apperr.Conflict, wire.CodeNotDraft, "Only a draft can be deleted; yank a published release instead.")
	errYanked        = apperr.New(apperr.Conflict, wire.CodeReleaseYanked, "The release is yanked; unyank it first.")
	errDraft         = apperr.New(apperr.Conflict, wire.CodeNotPublished, "The release is a draft; publish it first (or delete it).")
	errHalted        = apperr.New(apperr.Conflict, wire.CodeRolloutHalted, "The rollout is halted; resume it before changing it.")
	errImmutable     = apperr.New(apperr.Conflict, wire.CodeArtifactPublished, "A published release's artifacts cannot be replaced; publish a new version (a new os/arch may still be added).")
)

func checkRollout(bp int) error {
	if bp < 0 || bp > FullRollout {
		return apperr.InvalidField("rollout", "must be 0 to 10000 basis points (10000 = 100 %)")
	}
	return nil
}

func parseMinVersion(s string, v Version) (*Version, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	mv, err := ParseVersion(strings.TrimSpace(s))
	if err != nil {
		return nil, apperr.InvalidField("min_version", err.Error())
	}
	if mv.Compare(v) >= 0 {
		return nil, apperr.InvalidField("min_version", "must be below the release's own version")
	}
	return &mv, nil
}

// CreateRelease validates and stores a release. It is a draft unless
// Published is set, which needs an artifact and so fails for a new release:
// create, upload, then publish.
func (s *Service) CreateRelease(ctx context.Context, actor audit.Actor, appID string, in NewRelease) (*Release, error) {
	v, err := ParseVersion(strings.TrimSpace(in.Version))
	if err != nil {
		if strings.TrimSpace(in.Version) == "" {
			return nil, apperr.Missing("version")
		}
		return nil, apperr.InvalidField("version", err.Error())
	}
	ch := strings.ToLower(strings.TrimSpace(in.Channel))
	if ch == "" {
		ch = Stable
	}
	if _, ok := channelRank[ch]; !ok {
		return nil, apperr.InvalidField("channel", "use stable, beta or alpha")
	}
	if v.IsPre() && ch == Stable {
		return nil, apperr.InvalidField("channel", "a pre-release ("+v.String()+") cannot go to stable; use beta or alpha")
	}
	if err := checkChangelog(in.Changelog); err != nil {
		return nil, err
	}
	if err := checkRollout(in.Rollout); err != nil {
		return nil, err
	}
	mv, err := parseMinVersion(in.MinVersion, v)
	if err != nil {
		return nil, err
	}
	if in.Published {
		return nil, errNeedsArtifact
	}
	salt := make([]byte, 16)
	if _, err := io.ReadFull(s.rand, salt); err != nil {
		return nil, err
	}
	now := s.clock()
	r := &Release{AppID: appID, Version: v, Channel: ch, Changelog: in.Changelog, Mandatory: in.Mandatory, MinVersion: mv,
		Rollout: in.Rollout, Salt: salt, CreatedAt: now, UpdatedAt: now}
	existing, err := s.store.Releases(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, e := range existing {
		if e.Version.Compare(v) == 0 {
			return nil, apperr.New(apperr.Conflict, wire.CodeVersionExists, "Release "+e.Version.String()+" already exists.")
		}
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertRelease(ctx, r); err != nil {
			if errors.Is(err, apperr.ErrConflict) {
				return apperr.New(apperr.Conflict, wire.CodeVersionExists, "Release "+v.String()+" already exists.")
			}
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "release.create", appID, v.String(), map[string]any{"id": r.ID, "channel": ch}))
	})
	return r, err
}

// Edit is a change to a release's descriptive fields; nil leaves a field.
type Edit struct {
	Channel    *string
	Changelog  *string
	Mandatory  *bool
	MinVersion *string
}

// EditRelease changes a release's channel (promoting beta to stable, say),
// changelog, mandatory flag or min_version, published or not.
func (s *Service) EditRelease(ctx context.Context, actor audit.Actor, appID string, id int64, e Edit) (*Release, error) {
	if e == (Edit{}) {
		return nil, apperr.Missing("channel, changelog, is_mandatory or min_version")
	}
	return s.change(ctx, actor, appID, id, "release.edit", func(r *Release) error {
		if e.Channel != nil {
			ch := strings.ToLower(strings.TrimSpace(*e.Channel))
			if _, ok := channelRank[ch]; !ok {
				return apperr.InvalidField("channel", "use stable, beta or alpha")
			}
			if r.Version.IsPre() && ch == Stable {
				return apperr.InvalidField("channel", "a pre-release cannot go to stable; use beta or alpha")
			}
			r.Channel = ch
		}
		if e.Changelog != nil {
			if err := checkChangelog(*e.Changelog); err != nil {
				return err
			}
			r.Changelog = *e.Changelog
		}
		if e.Mandatory != nil {
			r.Mandatory = *e.Mandatory
		}
		if e.MinVersion != nil {
			mv, err := parseMinVersion(*e.MinVersion, r.Version)
			if err != nil {
				return err
			}
			r.MinVersion = mv
		}
		return nil
	}, nil)
}

// change applies fn to the stored release under a row lock, then saves it
// with its audit entry and, when ev is set, an event built from the result.
func (s *Service) change(ctx context.Context, actor audit.Actor, appID string, id int64, action string, fn func(*Release) error,
	ev func(*Release) *event.Event) (*Release, error) {
	now := s.clock()
	var out *Release
	err := s.store.InTx(ctx, func(tx Tx) error {
		r, err := tx.ReleaseForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Release")
		}
		if err := fn(r); err != nil {
			return err
		}
		r.UpdatedAt = now
		if err := tx.UpdateRelease(ctx, r); err != nil {
			return err
		}
		if ev != nil {
			if e := ev(r); e != nil {
				e.CreatedAt = now
				if err := tx.AddEvent(ctx, *e); err != nil {
					return err
				}
			}
		}
		out = r
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, action, appID, r.Version.String(), map[string]any{"id": id, "rollout": r.Rollout}))
	})
	return out, err
}

// Publish makes a draft release available; it fires update.published.
func (s *Service) Publish(ctx context.Context, actor audit.Actor, appID string, id int64) (*Release, error) {
	now := s.clock()
	return s.change(ctx, actor, appID, id, "release.publish", func(r *Release) error {
		if r.Published {
			return apperr.New(apperr.Conflict, wire.CodeAlreadyPublished, "The release is already published.")
		}
		if r.Yanked {
			return errYanked
		}
		if len(r.Artifacts) == 0 {
			return errNeedsArtifact
		}
		r.Published, r.PublishedAt = true, &now
		return nil
	}, func(r *Release) *event.Event {
		return &event.Event{AppID: appID, Type: event.UpdatePublished, Subject: event.ReleaseSubject(r.ID), Data: map[string]any{"app_id": appID, "id": r.ID, "version": r.Version.String(),
			"channel": r.Channel, "is_mandatory": r.Mandatory, "rollout": r.Rollout, "changelog": r.Changelog}}
	})
}

// SetRollout sets the staged rollout in basis points; raising it only adds
// callers. A halted rollout must be resumed first.
func (s *Service) SetRollout(ctx context.Context, actor audit.Actor, appID string, id int64, bp int) (*Release, error) {
	if err := checkRollout(bp); err != nil {
		return nil, err
	}
	return s.change(ctx, actor, appID, id, "release.rollout", func(r *Release) error {
		if r.Halted {
			return errHalted
		}
		if r.Yanked {
			return errYanked
		}
		r.Rollout = bp
		return nil
	}, nil)
}

// SetHalted halts (freezes) or resumes a release's rollout.
func (s *Service) SetHalted(ctx context.Context, actor audit.Actor, appID string, id int64, halted bool) (*Release, error) {
	action := map[bool]string{true: "release.halt", false: "release.resume"}[halted]
	return s.change(ctx, actor, appID, id, action, func(r *Release) error {
		if !r.Published {
			return errDraft
		}
		r.Halted = halted
		return nil
	}, nil)
}

// SetYanked withdraws a release (it is neither offered nor downloadable) or
// brings it back.
func (s *Service) SetYanked(ctx context.Context, actor audit.Actor, appID string, id int64, yanked bool) (*Release, error) {
	action := map[bool]string{true: "release.yank", false: "release.unyank"}[yanked]
	return s.change(ctx, actor, appID, id, action, func(r *Release) error {
		if !r.Published {
			return errDraft
		}
		r.Yanked = yanked
		return nil
	}, nil)
}

// DeleteDraft removes a draft release and its artifacts' bytes.
func (s *Service) DeleteDraft(ctx context.Context, actor audit.Actor, appID string, id int64) error {
	now := s.clock()
	var arts []Artifact
	err := s.store.InTx(ctx, func(tx Tx) error {
		r, err := tx.ReleaseForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Release")
		}
		if r.Published {
			return errNotDraft
		}
		arts = r.Artifacts
		if err := tx.DeleteRelease(ctx, appID, id); err != nil {
			return apperr.NotFoundAs(err, "Release")
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "release.delete", appID, r.Version.String(), map[string]any{"id": id}))
	})
	if err == nil {
		for _, a := range arts {
			s.dropBlob(ctx, a.BlobKey)
		}
	}
	return err
}

// SetFloor sets (or, with an empty version, clears) the app's
// min_supported_version of a channel.
func (s *Service) SetFloor(ctx context.Context, actor audit.Actor, appID, channel, version string) error {
	ch := strings.ToLower(strings.TrimSpace(channel))
	if _, ok := channelRank[ch]; !ok {
		return apperr.InvalidField("channel", "use stable, beta or alpha")
	}
	version = strings.TrimSpace(version)
	if version != "" {
		v, err := ParseVersion(version)
		if err != nil {
			return apperr.InvalidField("version", err.Error())
		}
		version = v.String()
	}
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.SetFloor(ctx, appID, ch, version, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "update.min_supported", appID, ch, map[string]any{"version": version}))
	})
}

// Upload is an artifact being uploaded.
type Upload struct {
	OS, Arch string
	FileName string
	SHA256   string // optional; when given, the upload must match it
}

// UploadArtifact streams body to the blob store while hashing it, then
// records the artifact. A mismatch with the claimed sha256, an empty body or
// any failure keeps nothing. On a draft an artifact replaces the one of the
// same os/arch; a published release only gains new platforms.
func (s *Service) UploadArtifact(ctx context.Context, actor audit.Actor, appID string, id int64, up Upload, body io.Reader) (*Artifact, error) {
	var err error
	if up.OS, err = NormalizeOS(up.OS); err != nil {
		return nil, err
	}
	if up.Arch, err = NormalizeArch(up.Arch); err != nil {
		return nil, err
	}
	if up.Arch != "" && up.OS == "" {
		return nil, apperr.InvalidField("arch", "an arch-specific artifact needs its os too")
	}
	claimed := strings.ToLower(strings.TrimSpace(up.SHA256))
	if claimed != "" {
		if b, err := hex.DecodeString(claimed); err != nil || len(b) != sha256.Size {
			return nil, apperr.InvalidField("sha256", "must be 64 hex digits")
		}
	}
	r, err := s.store.Release(ctx, appID, id)
	if err != nil {
		return nil, apperr.NotFoundAs(err, "Release")
	}
	if up.FileName == "" {
		up.FileName = defaultFileName(r.Version, up.OS, up.Arch)
	}
	if err := CheckFileName(up.FileName); err != nil {
		return nil, err
	}
	if err := uploadable(r, up); err != nil {
		return nil, err
	}

	rnd := make([]byte, 12)
	if _, err := io.ReadFull(s.rand, rnd); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("releases/%d/%s", id, hex.EncodeToString(rnd))
	h := sha256.New()
	n, err := s.blobs.Put(ctx, key, io.TeeReader(body, h))
	if err != nil {
		return nil, fmt.Errorf("store artifact: %w", err) // the HTTP layer tells a body over its limit apart
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if n == 0 || (claimed != "" && claimed != sum) {
		s.dropBlob(ctx, key)
		if n == 0 {
			return nil, apperr.InvalidField("body", "the artifact is empty")
		}
		return nil, apperr.New(apperr.Invalid, wire.CodeChecksumMismatch, "The uploaded bytes have sha256 "+sum+", not "+claimed+"; nothing was kept.")
	}
	now := s.clock()
	a := &Artifact{OS: up.OS, Arch: up.Arch, FileName: up.FileName, Size: n, SHA256: sum, BlobKey: key, CreatedAt: now}
	var replaced *Artifact
	err = s.store.InTx(ctx, func(tx Tx) error {
		r, err := tx.ReleaseForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Release")
		}
		if err := uploadable(r, up); err != nil {
			return err
		}
		if replaced, err = tx.PutArtifact(ctx, id, a); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "release.upload", appID, r.Version.String(),
			map[string]any{"id": id, "os": a.OS, "arch": a.Arch, "size": n, "sha256": sum}))
	})
	if err != nil {
		s.dropBlob(ctx, key)
		return nil, err
	}
	if replaced != nil {
		s.dropBlob(ctx, replaced.BlobKey)
	}
	return a, nil
}

// uploadable refuses an upload the release's state forbids.
func uploadable(r *Release, up Upload) error {
	if r.Yanked {
		return errYanked
	}
	if r.Published {
		for _, a := range r.Artifacts {
			if a.OS == up.OS && a.Arch == up.Arch {
				return errImmutable
			}
		}
	}
	return nil
}

func defaultFileName(v Version, os, arch string) string {
	name := "update-" + strings.NewReplacer("+", "_").Replace(v.String())
	for _, p := range []string{os, arch} {
		if p != "" {
			name += "-" + p
		}
	}
	return name + ".bin"
}

// dropBlob deletes bytes nothing refers to any more; a failure leaves an
// orphan, logged, never an error for the caller.
func (s *Service) dropBlob(ctx context.Context, key string) {
	if err := s.blobs.Delete(context.WithoutCancel(ctx), key); err != nil {
		s.log.WarnContext(ctx, "delete artifact bytes", "key", key, "err", err)
	}
}

// OpenArtifact opens a release artifact's bytes.
func (s *Service) OpenArtifact(ctx context.Context, a *Artifact) (io.ReadSeekCloser, error) {
	return s.blobs.Open(ctx, a.BlobKey)
}

// ArtifactFor picks the artifact a download with os/arch gets: the same
// choice the check made.
func ArtifactFor(r *Release, os, arch string) (*Artifact, error) {
	os, err := NormalizeOS(os)
	if err != nil {
		return nil, err
	}
	arch, err = NormalizeArch(arch)
	if err != nil {
		return nil, err
	}
	if a := artifactFor(r, os, arch); a != nil {
		return a, nil
	}
	return nil, apperr.NotFoundOf("Artifact")
}

// Descriptor is the update object of a check reply (API reference,
// "Update descriptor"; SDKs read version, sha256, size and download_url).
func Descriptor(d Decision) *wire.UpdateDescriptor {
	r, art := d.Release, d.Artifact
	return &wire.UpdateDescriptor{Version: r.Version.String(), Channel: r.Channel, IsMandatory: d.Mandatory,
		FileSize: art.Size, Size: art.Size, SHA256: art.SHA256, Changelog: r.Changelog,
		DownloadURL: DownloadURL(r, art)}
}

// DownloadURL is the path, relative to the base URL, that downloads art; it
// names the platform only when the release has several artifacts.
func DownloadURL(r *Release, art *Artifact) string {
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
