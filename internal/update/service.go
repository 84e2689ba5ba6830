package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/blob"
	"github.com/keyward/keyward/internal/journal"
)

// Store is the persistence updates need. Lookups return apperr.ErrNotFound
// for missing rows; releases come with their artifacts.
type Store interface {
	Releases(ctx context.Context, appID string) ([]Release, error)
	Release(ctx context.Context, appID string, id int64) (*Release, error)
	// Floors returns the app's min_supported_version per channel.
	Floors(ctx context.Context, appID string) (map[string]string, error)
	// RecordChecks keeps the latest check of each device of an app, in one
	// transaction; a record older than the stored one changes nothing.
	RecordChecks(ctx context.Context, cs []CheckRecord) error
	// CheckStats counts the devices whose latest check is at or after since.
	CheckStats(ctx context.Context, appID string, since time.Time) (devices int64, byVersion []VersionCount, err error)
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of updates.
type Tx interface {
	InsertRelease(ctx context.Context, r *Release) error
	ReleaseForUpdate(ctx context.Context, appID string, id int64) (*Release, error)
	UpdateRelease(ctx context.Context, r *Release) error
	DeleteRelease(ctx context.Context, appID string, id int64) error
	// PutArtifact stores a release's artifact for its os/arch, replacing the
	// one there and returning it (nil when there was none).
	PutArtifact(ctx context.Context, releaseID int64, a *Artifact) (*Artifact, error)
	SetFloor(ctx context.Context, appID, channel, version string, now time.Time) error
	journal.Journal
}

// CheckRecord is one device's latest update check. Device is a hash of the
// caller's hwid (or license key), never the value itself.
type CheckRecord struct {
	AppID, Device, Current, Channel, OS, Arch, Offered string
	At                                                 time.Time
}

// VersionCount says, for one version, how many devices were last offered it
// and how many last reported running it.
type VersionCount struct {
	Version          string
	Offered, Running int64
}

// Service manages releases and answers update checks.
type Service struct {
	store Store
	blobs blob.Store
	now   func() time.Time
	rand  io.Reader
	log   *slog.Logger

	// pending holds the latest check of each device since the last flush
	// (FlushChecks, every second from a sweep job and at shutdown), so a
	// check costs no write transaction of its own. Bounded by maxPending.
	mu      sync.Mutex
	pending map[string]CheckRecord
}

// maxPending bounds the buffered checks; past it a check is written at once.
const maxPending = 100_000

// NewService returns a Service over store and blobs.
func NewService(store Store, blobs blob.Store, now func() time.Time, rand io.Reader, log *slog.Logger) *Service {
	return &Service{store: store, blobs: blobs, now: now, rand: rand, log: log, pending: map[string]CheckRecord{}}
}

// remember buffers a device's check, or writes it at once when the buffer
// is full.
func (s *Service) remember(ctx context.Context, rec CheckRecord) {
	k := rec.AppID + "|" + rec.Device
	s.mu.Lock()
	_, seen := s.pending[k]
	if seen || len(s.pending) < maxPending {
		s.pending[k] = rec
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if err := s.store.RecordChecks(ctx, []CheckRecord{rec}); err != nil {
		s.log.WarnContext(ctx, "record update check", "app_id", rec.AppID, "err", err)
	}
}

// FlushChecks writes the buffered checks in one transaction. On failure
// they are put back, unless newer checks of the same devices came meanwhile.
func (s *Service) FlushChecks(ctx context.Context) error {
	s.mu.Lock()
	batch := s.pending
	if len(batch) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.pending = make(map[string]CheckRecord, len(batch))
	s.mu.Unlock()
	list := make([]CheckRecord, 0, len(batch))
	for _, rec := range batch {
		list = append(list, rec)
	}
	err := s.store.RecordChecks(ctx, list)
	if err != nil {
		s.mu.Lock()
		for k, rec := range batch {
			if _, newer := s.pending[k]; !newer && len(s.pending) < maxPending {
				s.pending[k] = rec
			}
		}
		s.mu.Unlock()
	}
	return err
}

func (s *Service) clock() time.Time { return s.now().UTC() }

func (s *Service) policy(ctx context.Context, appID string) (Policy, error) {
	floors, err := s.store.Floors(ctx, appID)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{AppID: appID, MinSupported: map[string]Version{}}
	for ch, v := range floors {
		if pv, err := ParseVersion(v); err == nil {
			p.MinSupported[ch] = pv
		}
	}
	return p, nil
}

// Check decides what the caller is offered and remembers the device's check
// for the stats (callers without hwid or license key are not counted). The
// record is buffered: stats lag by up to a second, and a crash loses at most
// that second of them.
func (s *Service) Check(ctx context.Context, appID string, req Request) (Decision, error) {
	d, err := s.Explain(ctx, appID, req)
	if err != nil {
		return d, err
	}
	if id := callerID(req); id != "" {
		rec := CheckRecord{AppID: appID, Device: deviceHash(appID, id), Current: req.Version.String(), Channel: req.Channel,
			OS: req.OS, Arch: req.Arch, At: s.clock()}
		if d.Release != nil {
			rec.Offered = d.Release.Version.String()
		}
		s.remember(ctx, rec)
	}
	return d, nil
}

// Explain decides without recording anything; the reasons say why each
// release was or was not offered.
func (s *Service) Explain(ctx context.Context, appID string, req Request) (Decision, error) {
	p, err := s.policy(ctx, appID)
	if err != nil {
		return Decision{}, err
	}
	rels, err := s.store.Releases(ctx, appID)
	if err != nil {
		return Decision{}, err
	}
	return Decide(p, rels, req), nil
}

func callerID(req Request) string {
	if req.HWID != "" {
		return req.HWID
	}
	return req.LicenseKey
}

func deviceHash(appID, id string) string {
	h := sha256.Sum256([]byte(appID + "|" + id))
	return hex.EncodeToString(h[:16])
}

// Releases lists an app's releases, newest version first.
func (s *Service) Releases(ctx context.Context, appID string) ([]Release, error) {
	rels, err := s.store.Releases(ctx, appID)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rels, func(i, j int) bool { return rels[i].Version.Compare(rels[j].Version) > 0 })
	return rels, nil
}

// Release returns one release.
func (s *Service) Release(ctx context.Context, appID string, id int64) (*Release, error) {
	r, err := s.store.Release(ctx, appID, id)
	return r, apperr.NotFoundAs(err, "Release")
}

// ReleaseByVersion returns the published, non-yanked release of an app with
// exactly this version, as downloads see it.
func (s *Service) ReleaseByVersion(ctx context.Context, appID, version string) (*Release, error) {
	v, err := ParseVersion(strings.TrimSpace(version))
	if err != nil {
		return nil, apperr.InvalidField("v", err.Error())
	}
	rels, err := s.store.Releases(ctx, appID)
	if err != nil {
		return nil, err
	}
	for i := range rels {
		if r := &rels[i]; r.Version.Compare(v) == 0 && r.Published && !r.Yanked {
			return r, nil
		}
	}
	return nil, apperr.NotFoundOf("Release")
}

// Floors returns the app's min_supported_version per channel.
func (s *Service) Floors(ctx context.Context, appID string) (map[string]string, error) {
	return s.store.Floors(ctx, appID)
}

// Stats is the check statistics of an app.
type Stats struct {
	Since   time.Time
	Devices int64
	ByVer   []VersionCount
}

// Stats counts the distinct devices that checked in the last `days` days and
// what they were offered and run, per version.
func (s *Service) Stats(ctx context.Context, appID string, days int) (Stats, error) {
	if days <= 0 || days > 3650 {
		return Stats{}, apperr.InvalidField("days", "must be 1 to 3650")
	}
	since := s.clock().Add(-time.Duration(days) * 24 * time.Hour)
	if err := s.FlushChecks(ctx); err != nil { // this process's checks count at once
		return Stats{}, err
	}
	n, by, err := s.store.CheckStats(ctx, appID, since)
	sort.SliceStable(by, func(i, j int) bool { return byVersion(by[i].Version, by[j].Version) })
	return Stats{Since: since, Devices: n, ByVer: by}, err
}

// byVersion orders version strings newest first; unparsable ones (callers
// only send valid versions, but stored text is not trusted) go last.
func byVersion(a, b string) bool {
	va, ea := ParseVersion(a)
	vb, eb := ParseVersion(b)
	switch {
	case ea != nil || eb != nil:
		return ea == nil && eb != nil || (ea != nil && eb != nil && a < b)
	}
	return va.Compare(vb) > 0
}

var fileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._()+-]{0,199}$`)

// CheckFileName validates the name an artifact is downloaded as.
func CheckFileName(name string) error {
	if !fileNameRE.MatchString(name) || strings.Contains(name, "..") {
		return apperr.InvalidField("file_name", "use 1 to 200 letters, digits, spaces or . _ ( ) + -, starting with a letter or digit")
	}
	return nil
}

func checkChangelog(c string) error {
	if len(c) > 100_000 || !utf8.ValidString(c) {
		return apperr.InvalidField("changelog", "must be UTF-8 text of at most 100000 bytes")
	}
	return nil
}
