// Package update decides which release a calling app is offered, by the rules
// of ../shared/design/updates-and-webhooks.md: nested channels, platform
// artifacts, newest eligible wins, minimum-version gates and staged
// rollouts with stable HMAC buckets. Decide is a pure function — no I/O, no
// clock — so every rule is a table test, and it explains itself.
package update

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"time"
)

// Channels, from the most to the least conservative. A caller on a channel
// sees releases of that channel and of every more conservative one.
const (
	Stable = "stable"
	Beta   = "beta"
	Alpha  = "alpha"
)

var channelRank = map[string]int{Stable: 0, Beta: 1, Alpha: 2}

// FullRollout is 100 % in basis points.
const FullRollout = 10000

// Artifact is one downloadable file of a release; empty OS and Arch mean it
// runs everywhere.
type Artifact struct {
	ID        int64
	OS, Arch  string
	FileName  string
	Size      int64
	SHA256    string
	BlobKey   string // where the bytes are in the blob store
	CreatedAt time.Time
}

// Release is a version an app ships.
type Release struct {
	ID         int64
	Version    Version
	Channel    string
	Changelog  string
	Mandatory  bool
	MinVersion *Version // callers below it must take a stepping stone first
	Rollout    int      // basis points, 0–10000
	Salt       []byte   // per-release bucketing salt
	Published  bool
	Halted     bool // rollout frozen at its current value
	Yanked     bool
	Artifacts  []Artifact

	AppID       string
	PublishedAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Policy is the app-level part of a decision.
type Policy struct {
	AppID string
	// MinSupported, per channel: callers below it get their update as
	// mandatory whatever the release says.
	MinSupported map[string]Version
}

// Request is what the calling app says about itself.
type Request struct {
	Version    Version
	Channel    string // "" means stable
	OS, Arch   string
	HWID       string
	LicenseKey string
}

// Outcome says what became of one release in a decision.
type Outcome string

// Outcomes, in the order the rules apply.
const (
	Offered     Outcome = "offered"
	Unpublished Outcome = "unpublished"
	Yanked      Outcome = "yanked"
	NotNewer    Outcome = "not_newer"
	OtherChan   Outcome = "channel"
	PreRelease  Outcome = "pre_release"
	NoPlatform  Outcome = "platform"
	MinVersion  Outcome = "min_version"
	OutsideRoll Outcome = "rollout"
	Superseded  Outcome = "superseded" // eligible, but a newer one was offered
)

// Reason is the verdict on one release, newest first in a Decision.
type Reason struct {
	Version string
	Outcome Outcome
	Detail  string
}

// Decision is the engine's answer. Release is nil when no update applies.
type Decision struct {
	Release   *Release
	Artifact  *Artifact
	Mandatory bool
	Reasons   []Reason
}

// ValidChannel reports whether c names a channel ("" is stable).
func ValidChannel(c string) bool {
	_, ok := channelRank[c]
	return ok || c == ""
}

// Bucket places a caller in [0, 10000) for a release: the first eight bytes
// of HMAC-SHA256(salt, appID|callerID), big-endian, mod 10000. The same
// caller always gets the same bucket for a release; another release (salt)
// shuffles callers anew.
func Bucket(salt []byte, appID, callerID string) int {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(appID + "|" + callerID))
	return int(binary.BigEndian.Uint64(m.Sum(nil)[:8]) % FullRollout)
}

// InRollout reports whether the caller is inside the release's rollout. A
// caller with neither hwid nor license key is inside only at 100 %.
func InRollout(p Policy, r *Release, req Request) (bool, int) {
	if r.Rollout >= FullRollout {
		return true, -1
	}
	id := req.HWID
	if id == "" {
		id = req.LicenseKey
	}
	if id == "" {
		return false, -1
	}
	b := Bucket(r.Salt, p.AppID, id)
	return b < r.Rollout, b
}

// artifactFor picks the caller's artifact: an exact os/arch match, else one
// for the os on any arch, else a universal one. A caller that does not say
// its arch (or its os: the SDKs send neither) also gets the one artifact of
// its os (or of the release) when there is exactly one, as it could not run
// anything else the release offers either.
func artifactFor(r *Release, os, arch string) *Artifact {
	var osOnly, universal, onlyOfOS *Artifact
	ofOS := 0
	for i := range r.Artifacts {
		a := &r.Artifacts[i]
		switch {
		case a.OS == os && a.Arch == arch && a.OS != "":
			return a
		case a.OS == os && a.OS != "" && a.Arch == "" && osOnly == nil:
			osOnly = a
		case a.OS == "" && a.Arch == "" && universal == nil:
			universal = a
		}
		if a.OS == os && a.OS != "" {
			ofOS++
			onlyOfOS = a
		}
	}
	switch {
	case osOnly != nil:
		return osOnly
	case universal != nil:
		return universal
	case os == "" && arch == "" && len(r.Artifacts) == 1:
		return &r.Artifacts[0]
	case os != "" && arch == "" && ofOS == 1:
		return onlyOfOS
	}
	return nil
}

// Decide picks the newest release the caller may install now. The caller
// must have a valid channel (see ValidChannel). Releases held back by a
// rollout or a min_version gate fall through to the best older eligible
// release, not to "no update".
func Decide(p Policy, releases []Release, req Request) Decision {
	ch := req.Channel
	if ch == "" {
		ch = Stable
	}
	order := make([]*Release, len(releases))
	for i := range releases {
		order[i] = &releases[i]
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Version.Compare(order[j].Version) > 0 })

	var d Decision
	for _, r := range order {
		why := Reason{Version: r.Version.String()}
		switch {
		case !r.Published:
			why.Outcome = Unpublished
		case r.Yanked:
			why.Outcome, why.Detail = Yanked, "withdrawn by the owner"
		case r.Version.Compare(req.Version) <= 0:
			why.Outcome, why.Detail = NotNewer, "not newer than "+req.Version.String()
		case channelRank[r.Channel] > channelRank[ch]:
			why.Outcome, why.Detail = OtherChan, fmt.Sprintf("%s release; the caller is on %s", r.Channel, ch)
		case r.Version.IsPre() && ch == Stable:
			why.Outcome, why.Detail = PreRelease, "pre-releases are not offered on stable"
		case d.Release != nil:
			why.Outcome, why.Detail = Superseded, "a newer release was offered"
		default:
			art := artifactFor(r, req.OS, req.Arch)
			if art == nil {
				why.Outcome, why.Detail = NoPlatform, fmt.Sprintf("no artifact for os %q arch %q", req.OS, req.Arch)
				break
			}
			if r.MinVersion != nil && req.Version.Compare(*r.MinVersion) < 0 {
				why.Outcome, why.Detail = MinVersion, "needs "+r.MinVersion.String()+" or later first"
				break
			}
			if in, bucket := InRollout(p, r, req); !in {
				why.Outcome = OutsideRoll
				if bucket < 0 {
					why.Detail = fmt.Sprintf("staged at %d bp; callers without hwid or license key wait for 100 %%", r.Rollout)
				} else {
					why.Detail = fmt.Sprintf("bucket %d not below rollout %d bp", bucket, r.Rollout)
				}
				break
			}
			why.Outcome = Offered
			d.Release, d.Artifact = r, art
			d.Mandatory = r.Mandatory
			if floor, ok := p.MinSupported[ch]; ok && req.Version.Compare(floor) < 0 {
				d.Mandatory = true
				why.Detail = "mandatory: the caller is below the minimum supported " + floor.String()
			}
		}
		d.Reasons = append(d.Reasons, why)
	}
	if d.Release != nil && !d.Mandatory {
		// A mandatory release the caller jumps over makes the jump mandatory:
		// 1.9 offered 2.1 must still take 2.0's required fix.
		for _, r := range order {
			if r.Mandatory && r.Published && !r.Yanked && channelRank[r.Channel] <= channelRank[ch] && !(r.Version.IsPre() && ch == Stable) &&
				r.Version.Compare(req.Version) > 0 && r.Version.Compare(d.Release.Version) < 0 {
				d.Mandatory = true
				d.Reasons[indexOf(order, d.Release)].Detail = "mandatory: it includes the mandatory " + r.Version.String()
				break
			}
		}
	}
	return d
}

func indexOf(order []*Release, r *Release) int {
	for i := range order {
		if order[i] == r {
			return i
		}
	}
	return 0
}
