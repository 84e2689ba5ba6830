package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/update"
)

// ---- OTA updates ----

// updTx runs fn in an update write transaction, failing the test on error.
func updTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx update.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := db.UpdateStore().InTx(ctx, func(tx update.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("update InTx: %v", err)
	}
}

// updTxErr runs fn in its own update transaction and returns its error.
func updTxErr(db *store.DB, fn func(ctx context.Context, tx update.Tx) error) error {
	ctx := context.Background()
	return db.UpdateStore().InTx(ctx, func(tx update.Tx) error { return fn(ctx, tx) })
}

// updVer parses a version literal of the tests.
func updVer(s string) update.Version {
	v, err := update.ParseVersion(s)
	if err != nil {
		panic(fmt.Sprintf("bad test version %q: %v", s, err))
	}
	return v
}

// newRelease is a draft of version on the stable channel (beta for a
// pre-release) at full rollout, with a salt of its own.
func newRelease(appID, version string, created time.Time) *update.Release {
	v := updVer(version)
	ch := update.Stable
	if v.IsPre() {
		ch = update.Beta
	}
	salt := sha256.Sum256([]byte(appID + "|" + version))
	return &update.Release{AppID: appID, Version: v, Channel: ch, Rollout: update.FullRollout, Salt: salt[:16],
		CreatedAt: created, UpdatedAt: created}
}

// newArtifact is an artifact for os/arch whose every value derives from tag.
func newArtifact(os, arch, tag string, created time.Time) *update.Artifact {
	sum := sha256.Sum256([]byte(tag))
	return &update.Artifact{OS: os, Arch: arch, FileName: "app-" + tag + ".zip", Size: 5<<30 + int64(len(tag)),
		SHA256: hex.EncodeToString(sum[:]), BlobKey: "releases/" + tag + "/" + hex.EncodeToString(sum[:6]), CreatedAt: created}
}

// addRelease inserts r and puts arts on it in one transaction; r.Artifacts
// becomes what was put.
func addRelease(t *testing.T, db *store.DB, r *update.Release, arts ...*update.Artifact) *update.Release {
	t.Helper()
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.InsertRelease(ctx, r); err != nil {
			return err
		}
		if r.ID <= 0 {
			return fmt.Errorf("InsertRelease left %s/%s with ID %d", r.AppID, r.Version, r.ID)
		}
		for _, a := range arts {
			replaced, err := tx.PutArtifact(ctx, r.ID, a)
			if err != nil {
				return err
			}
			if replaced != nil {
				return fmt.Errorf("PutArtifact of a new %s/%s on %s replaced %+v", a.OS, a.Arch, r.Version, replaced)
			}
			if a.ID <= 0 {
				return fmt.Errorf("PutArtifact left %s/%s with ID %d", a.OS, a.Arch, a.ID)
			}
		}
		return nil
	})
	r.Artifacts = nil
	for _, a := range arts {
		r.Artifacts = append(r.Artifacts, *a)
	}
	return r
}

func updReleases(t *testing.T, db *store.DB, appID string) []update.Release {
	t.Helper()
	rs, err := db.UpdateStore().Releases(context.Background(), appID)
	if err != nil {
		t.Fatalf("Releases(%s): %v", appID, err)
	}
	return rs
}

func updRelease(t *testing.T, db *store.DB, appID string, id int64) *update.Release {
	t.Helper()
	r, err := db.UpdateStore().Release(context.Background(), appID, id)
	if err != nil {
		t.Fatalf("Release(%s, %d): %v", appID, id, err)
	}
	return r
}

func updFloors(t *testing.T, db *store.DB, appID string) map[string]string {
	t.Helper()
	fs, err := db.UpdateStore().Floors(context.Background(), appID)
	if err != nil {
		t.Fatalf("Floors(%s): %v", appID, err)
	}
	return fs
}

func releaseIDs(rs []update.Release) []int64 {
	out := []int64{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sortedIDs(ids ...int64) []int64 {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func optVersion(v *update.Version) any {
	if v == nil {
		return nil
	}
	return *v
}

// checkRelease compares every field, artifacts included (in any order, but
// at most one per os/arch).
func checkRelease(t *testing.T, what string, got *update.Release, want *update.Release) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Version", got.Version.String(), want.Version.String())
	d.eq("Version (parsed)", got.Version, want.Version)
	d.eq("Channel", got.Channel, want.Channel)
	d.eq("Changelog", got.Changelog, want.Changelog)
	d.eq("Mandatory", got.Mandatory, want.Mandatory)
	d.eq("MinVersion", optVersion(got.MinVersion), optVersion(want.MinVersion))
	d.eq("Rollout", got.Rollout, want.Rollout)
	d.eq("Salt", hex.EncodeToString(got.Salt), hex.EncodeToString(want.Salt))
	d.eq("Published", got.Published, want.Published)
	d.eq("Halted", got.Halted, want.Halted)
	d.eq("Yanked", got.Yanked, want.Yanked)
	d.optTime("PublishedAt", got.PublishedAt, want.PublishedAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.artifacts(got.Artifacts, want.Artifacts)
	d.report(t, what)
}

func platform(a update.Artifact) string { return a.OS + "/" + a.Arch }

func (d *diffs) artifact(name string, got, want update.Artifact) {
	d.eq(name+".ID", got.ID, want.ID)
	d.eq(name+".OS", got.OS, want.OS)
	d.eq(name+".Arch", got.Arch, want.Arch)
	d.eq(name+".FileName", got.FileName, want.FileName)
	d.eq(name+".Size", got.Size, want.Size)
	d.eq(name+".SHA256", got.SHA256, want.SHA256)
	d.eq(name+".BlobKey", got.BlobKey, want.BlobKey)
	d.time(name+".CreatedAt", got.CreatedAt, want.CreatedAt)
}

func (d *diffs) artifacts(got, want []update.Artifact) {
	byPlatform := map[string]update.Artifact{}
	for _, a := range got {
		if _, dup := byPlatform[platform(a)]; dup {
			*d = append(*d, fmt.Sprintf("two artifacts for %q", platform(a)))
		}
		byPlatform[platform(a)] = a
	}
	names := func(as []update.Artifact) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, platform(a))
		}
		sort.Strings(out)
		return out
	}
	if g, w := names(got), names(want); !reflect.DeepEqual(g, w) {
		*d = append(*d, fmt.Sprintf("Artifacts for %q, want %q", g, w))
		return
	}
	for _, w := range want {
		d.artifact(fmt.Sprintf("Artifacts[%q]", platform(w)), byPlatform[platform(w)], w)
	}
}

// InsertRelease, Release, ReleaseForUpdate and Releases: the ID is set,
// every field round-trips (milliseconds, UTC), releases come with their own
// artifacts, and each app sees only its releases.
func testUpdateReleaseRoundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	if rs := updReleases(t, db, "a"); len(rs) != 0 {
		t.Fatalf("Releases of a new app = %v, want none", rs)
	}

	full := &update.Release{AppID: "a", Version: updVer("2.0.0-rc.1+build.5"), Channel: update.Beta,
		Changelog: "## Fixed ✓\n\n- crash on start\n" + strings.Repeat("ü", 5000), Mandatory: true,
		MinVersion: ptr(updVer("1.4.0-beta.2+old")), Rollout: 2500,
		Salt:      []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x00, 0x00, 'k', 'w', 0x10, 0x20, 0x30, 0x40, 0x50, 0x00},
		Published: true, Halted: true, Yanked: true, PublishedAt: ptr(t0.Add(time.Hour + 999*time.Microsecond)),
		CreatedAt: t0, UpdatedAt: t0.Add(2*time.Hour + 1500*time.Microsecond)}
	draft := &update.Release{AppID: "a", Version: updVer("1.0.0"), Channel: update.Stable, Rollout: 0, Salt: []byte{0xaa},
		CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
	odd := &update.Release{AppID: "a", Version: updVer("10.20.30-alpha.beta.1+exp.sha.5114f85"), Channel: update.Alpha,
		MinVersion: ptr(updVer("10.0.0")), Rollout: update.FullRollout, Salt: []byte("0123456789abcdef"), Published: true,
		PublishedAt: ptr(t0), CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0}
	// b has a release with the very same version and artifacts on the same
	// platforms: none of it may show up under a.
	other := &update.Release{AppID: "b", Version: updVer("2.0.0-rc.1+build.5"), Channel: update.Beta, Changelog: "b's",
		Rollout: update.FullRollout, Salt: []byte("b-salt"), CreatedAt: t0, UpdatedAt: t0}

	addRelease(t, db, full,
		newArtifact("", "", "full-universal", t0),
		newArtifact("windows", "amd64", "full-win", t0.Add(time.Second+234*time.Microsecond)),
		newArtifact("darwin", "arm64", "full-mac", t0.Add(2*time.Second)),
		newArtifact("linux", "", "full-linux", t0.Add(3*time.Second)))
	addRelease(t, db, draft)
	addRelease(t, db, odd, newArtifact("windows", "amd64", "odd-win", t0))
	addRelease(t, db, other, newArtifact("", "", "b-universal", t0), newArtifact("windows", "amd64", "b-win", t0))
	seen := map[int64]bool{}
	for _, r := range []*update.Release{full, draft, odd, other} {
		if r.ID <= 0 || seen[r.ID] {
			t.Fatalf("InsertRelease left %s/%s with ID %d", r.AppID, r.Version, r.ID)
		}
		seen[r.ID] = true
	}
	artSeen := map[int64]bool{}
	for _, r := range []*update.Release{full, odd, other} {
		for _, a := range r.Artifacts {
			if artSeen[a.ID] {
				t.Fatalf("artifact %s of %s/%s shares ID %d", platform(a), r.AppID, r.Version, a.ID)
			}
			artSeen[a.ID] = true
		}
	}

	want := map[int64]*update.Release{full.ID: full, draft.ID: draft, odd.ID: odd}
	rs := updReleases(t, db, "a")
	if got, w := releaseIDs(rs), sortedIDs(full.ID, draft.ID, odd.ID); !reflect.DeepEqual(got, w) {
		t.Fatalf("Releases(a) ids = %v, want %v (only a's)", got, w)
	}
	for i := range rs {
		checkRelease(t, fmt.Sprintf("release %s from Releases(a)", rs[i].Version), &rs[i], want[rs[i].ID])
	}
	for _, r := range rs {
		if r.CreatedAt.Location() != time.UTC || r.UpdatedAt.Location() != time.UTC ||
			r.PublishedAt != nil && r.PublishedAt.Location() != time.UTC {
			t.Errorf("release %s times in %v / %v, want UTC", r.Version, r.CreatedAt.Location(), r.UpdatedAt.Location())
		}
		for _, a := range r.Artifacts {
			if a.CreatedAt.Location() != time.UTC {
				t.Errorf("artifact %s of %s created in %v, want UTC", platform(a), r.Version, a.CreatedAt.Location())
			}
		}
	}
	if rs := updReleases(t, db, "b"); len(rs) != 1 {
		t.Fatalf("Releases(b) = %d releases, want only its own", len(rs))
	} else {
		checkRelease(t, "b's release from Releases(b)", &rs[0], other)
	}
	if rs := updReleases(t, db, "missing"); len(rs) != 0 {
		t.Errorf("Releases of an unknown app = %v, want none", rs)
	}

	for _, r := range []*update.Release{full, draft, odd} {
		checkRelease(t, fmt.Sprintf("Release(a, %s)", r.Version), updRelease(t, db, "a", r.ID), r)
	}
	checkRelease(t, "Release(b, b's)", updRelease(t, db, "b", other.ID), other)
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		for _, r := range []*update.Release{full, draft, odd, other} {
			got, err := tx.ReleaseForUpdate(ctx, r.AppID, r.ID)
			if err != nil {
				return fmt.Errorf("ReleaseForUpdate(%s, %d): %w", r.AppID, r.ID, err)
			}
			checkRelease(t, fmt.Sprintf("ReleaseForUpdate(%s, %s)", r.AppID, r.Version), got, r)
		}
		return nil
	})

	// Reads inside a transaction see its own writes, artifacts included.
	fresh := newRelease("a", "3.0.0", t0)
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.InsertRelease(ctx, fresh); err != nil {
			return err
		}
		a := newArtifact("linux", "arm64", "fresh", t0)
		if _, err := tx.PutArtifact(ctx, fresh.ID, a); err != nil {
			return err
		}
		got, err := tx.ReleaseForUpdate(ctx, "a", fresh.ID)
		if err != nil {
			return fmt.Errorf("ReleaseForUpdate of a release inserted in the same tx: %w", err)
		}
		fresh.Artifacts = []update.Artifact{*a}
		checkRelease(t, "ReleaseForUpdate in the inserting tx", got, fresh)
		return nil
	})
	if _, err := db.UpdateStore().Release(ctx, "a", fresh.ID); err != nil {
		t.Errorf("Release after the inserting tx committed: %v", err)
	}
}

// A version is unique per app, not across apps; a refused insert leaves
// nothing behind.
func testUpdateReleaseConflicts(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	orig := addRelease(t, db, newRelease("a", "1.2.3", t0), newArtifact("", "", "orig", t0))
	pre := addRelease(t, db, newRelease("a", "1.2.3-rc.1+build.7", t0))

	dup := newRelease("a", "1.2.3", t0.Add(time.Hour))
	dup.Channel, dup.Changelog, dup.Rollout = update.Alpha, "duplicate", 1
	wantErr(t, "InsertRelease of a taken version", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.InsertRelease(ctx, dup)
	}), apperr.ErrConflict)
	wantErr(t, "InsertRelease of a taken pre-release version with build metadata", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.InsertRelease(ctx, newRelease("a", "1.2.3-rc.1+build.7", t0))
	}), apperr.ErrConflict)
	wantErr(t, "InsertRelease of a taken version with other build metadata", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.InsertRelease(ctx, newRelease("a", "1.2.3+other", t0))
	}), apperr.ErrConflict)
	// A refused insert after a good one in the same tx takes the good one with it.
	wantErr(t, "InsertRelease of a taken version after a new one", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.InsertRelease(ctx, newRelease("a", "9.9.9", t0)); err != nil {
			return err
		}
		return tx.InsertRelease(ctx, newRelease("a", "1.2.3", t0))
	}), apperr.ErrConflict)

	inB := addRelease(t, db, newRelease("b", "1.2.3", t0))
	if inB.ID == orig.ID {
		t.Errorf("b's 1.2.3 got the ID of a's (%d)", inB.ID)
	}

	rs := updReleases(t, db, "a")
	if got, want := releaseIDs(rs), sortedIDs(orig.ID, pre.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("Releases(a) after refused inserts = %v, want %v", got, want)
	}
	checkRelease(t, "a's 1.2.3 after a refused duplicate", updRelease(t, db, "a", orig.ID), orig)
	if rs := updReleases(t, db, "b"); len(rs) != 1 {
		t.Errorf("Releases(b) = %d releases, want 1", len(rs))
	} else {
		checkRelease(t, "b's 1.2.3", &rs[0], inB)
	}
}

// Lookups and writes of an unknown release, or of another app's, are
// ErrNotFound and change nothing.
func testUpdateReleaseMissing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	r := addRelease(t, db, newRelease("a", "1.0.0", t0), newArtifact("windows", "amd64", "a-win", t0))
	rb := addRelease(t, db, newRelease("b", "1.0.0", t0), newArtifact("windows", "amd64", "b-win", t0))

	us := db.UpdateStore()
	for _, c := range []struct {
		what  string
		appID string
		id    int64
	}{
		{"unknown id", "a", 1 << 40},
		{"another app's id", "b", r.ID},
		{"unknown app", "missing", r.ID},
		{"id 0", "a", 0},
	} {
		_, err := us.Release(ctx, c.appID, c.id)
		wantErr(t, "Release("+c.what+")", err, apperr.ErrNotFound)
		wantErr(t, "ReleaseForUpdate("+c.what+")", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
			_, err := tx.ReleaseForUpdate(ctx, c.appID, c.id)
			return err
		}), apperr.ErrNotFound)
		wantErr(t, "UpdateRelease("+c.what+")", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
			up := *r
			up.AppID, up.ID, up.Changelog, up.Yanked = c.appID, c.id, "hijacked", true
			return tx.UpdateRelease(ctx, &up)
		}), apperr.ErrNotFound)
		wantErr(t, "DeleteRelease("+c.what+")", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
			return tx.DeleteRelease(ctx, c.appID, c.id)
		}), apperr.ErrNotFound)
	}
	checkRelease(t, "a's release after refused lookups and writes", updRelease(t, db, "a", r.ID), r)
	checkRelease(t, "b's release after refused lookups and writes", updRelease(t, db, "b", rb.ID), rb)
}

// UpdateRelease writes the mutable fields (and only those), both ways
// between set and unset; other releases are untouched.
func testUpdateUpdateRelease(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	r := newRelease("a", "2.0.0-beta.3+ci.42", t0)
	r.Changelog = "first"
	addRelease(t, db, r, newArtifact("", "", "r-universal", t0), newArtifact("linux", "amd64", "r-linux", t0))
	sib := addRelease(t, db, newRelease("a", "1.9.0", t0), newArtifact("", "", "sib", t0))
	rb := addRelease(t, db, newRelease("b", "2.0.0-beta.3+ci.42", t0), newArtifact("", "", "rb", t0))

	// Set everything that can be set; try to change what must not change.
	up := *r
	up.Channel, up.Changelog, up.Mandatory = update.Stable, "Second ✓\nwith lines", true
	up.MinVersion, up.Rollout = ptr(updVer("1.5.0-rc.2+meta")), 1234
	up.Published, up.Halted, up.Yanked = true, true, true
	up.PublishedAt, up.UpdatedAt = ptr(t0.Add(time.Hour+567*time.Microsecond)), t0.Add(2*time.Hour+999*time.Microsecond)
	up.Version, up.Salt, up.CreatedAt, up.Artifacts = updVer("7.7.7"), []byte("other salt"), t0.Add(99*time.Hour), nil
	updTx(t, db, func(ctx context.Context, tx update.Tx) error { return tx.UpdateRelease(ctx, &up) })
	want := up
	want.Version, want.Salt, want.CreatedAt, want.Artifacts = r.Version, r.Salt, r.CreatedAt, r.Artifacts
	checkRelease(t, "release after UpdateRelease (version, salt, created_at and artifacts kept)", updRelease(t, db, "a", r.ID), &want)
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		got, err := tx.ReleaseForUpdate(ctx, "a", r.ID)
		if err != nil {
			return err
		}
		checkRelease(t, "ReleaseForUpdate after UpdateRelease", got, &want)
		return nil
	})

	// And back: unset the optional fields, clear the flags.
	back := want
	back.Channel, back.Changelog, back.Mandatory, back.MinVersion, back.Rollout = update.Alpha, "", false, nil, 0
	back.Published, back.Halted, back.Yanked, back.PublishedAt = false, false, false, nil
	back.UpdatedAt = t0.Add(3 * time.Hour)
	updTx(t, db, func(ctx context.Context, tx update.Tx) error { return tx.UpdateRelease(ctx, &back) })
	checkRelease(t, "release after unsetting with UpdateRelease", updRelease(t, db, "a", r.ID), &back)

	// Rollout to the edges.
	for _, bp := range []int{update.FullRollout, 0, 1} {
		back.Rollout, back.UpdatedAt = bp, back.UpdatedAt.Add(time.Millisecond)
		updTx(t, db, func(ctx context.Context, tx update.Tx) error { return tx.UpdateRelease(ctx, &back) })
		checkRelease(t, fmt.Sprintf("release at rollout %d", bp), updRelease(t, db, "a", r.ID), &back)
	}

	missing := back
	missing.ID = 1 << 40
	wantErr(t, "UpdateRelease(missing)", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.UpdateRelease(ctx, &missing)
	}), apperr.ErrNotFound)
	checkRelease(t, "a's other release after UpdateRelease", updRelease(t, db, "a", sib.ID), sib)
	checkRelease(t, "b's release with the same version after UpdateRelease", updRelease(t, db, "b", rb.ID), rb)
}

// PutArtifact inserts one artifact per os/arch of a release and replaces
// (returning the old one) an artifact of the same os/arch.
func testUpdateArtifacts(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	r := addRelease(t, db, newRelease("a", "1.0.0", t0))
	r2 := addRelease(t, db, newRelease("a", "1.1.0", t0))
	rb := addRelease(t, db, newRelease("b", "1.0.0", t0))
	if got := updRelease(t, db, "a", r.ID); len(got.Artifacts) != 0 {
		t.Fatalf("artifacts of a release without any = %+v", got.Artifacts)
	}

	universal := newArtifact("", "", "universal", t0)
	win := newArtifact("windows", "amd64", "win", t0.Add(time.Second))
	winArm := newArtifact("windows", "arm64", "win-arm", t0.Add(2*time.Second))
	linux := newArtifact("linux", "", "linux", t0.Add(3*time.Second))
	win2 := newArtifact("windows", "amd64", "r2-win", t0)
	winB := newArtifact("windows", "amd64", "b-win", t0)
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		for _, p := range []struct {
			rel int64
			a   *update.Artifact
		}{{r.ID, universal}, {r.ID, win}, {r.ID, winArm}, {r.ID, linux}, {r2.ID, win2}, {rb.ID, winB}} {
			replaced, err := tx.PutArtifact(ctx, p.rel, p.a)
			if err != nil {
				return fmt.Errorf("PutArtifact %s: %w", platform(*p.a), err)
			}
			if replaced != nil {
				t.Errorf("PutArtifact of a new %s on release %d = %+v, want nil", platform(*p.a), p.rel, replaced)
			}
		}
		return nil
	})
	seen := map[int64]bool{}
	for _, a := range []*update.Artifact{universal, win, winArm, linux, win2, winB} {
		if a.ID <= 0 || seen[a.ID] {
			t.Fatalf("PutArtifact left %s (%s) with ID %d", platform(*a), a.FileName, a.ID)
		}
		seen[a.ID] = true
	}
	r.Artifacts = []update.Artifact{*universal, *win, *winArm, *linux}
	r2.Artifacts = []update.Artifact{*win2}
	rb.Artifacts = []update.Artifact{*winB}
	checkRelease(t, "release with four platforms", updRelease(t, db, "a", r.ID), r)
	checkRelease(t, "another release with one of the same platforms", updRelease(t, db, "a", r2.ID), r2)
	checkRelease(t, "another app's release with one of the same platforms", updRelease(t, db, "b", rb.ID), rb)

	// Replace windows/amd64 and the universal one.
	winNew := newArtifact("windows", "amd64", "win-new", t0.Add(time.Hour+321*time.Microsecond))
	uniNew := newArtifact("", "", "universal-new", t0.Add(2*time.Hour))
	uniNew.Size = 1
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		for _, p := range []struct {
			a, old *update.Artifact
		}{{winNew, win}, {uniNew, universal}} {
			replaced, err := tx.PutArtifact(ctx, r.ID, p.a)
			if err != nil {
				return fmt.Errorf("PutArtifact %s again: %w", platform(*p.a), err)
			}
			if replaced == nil {
				t.Errorf("PutArtifact of a second %s returned nil, want the replaced %s", platform(*p.a), p.old.BlobKey)
				continue
			}
			var d diffs
			d.artifact("replaced", *replaced, *p.old)
			d.report(t, "artifact returned by a replacing PutArtifact of "+platform(*p.a))
			if p.a.ID <= 0 {
				t.Errorf("replacing PutArtifact left %s with ID %d", platform(*p.a), p.a.ID)
			}
		}
		return nil
	})
	r.Artifacts = []update.Artifact{*uniNew, *winNew, *winArm, *linux}
	checkRelease(t, "release after replacing two artifacts", updRelease(t, db, "a", r.ID), r)
	checkRelease(t, "the other release after replacing", updRelease(t, db, "a", r2.ID), r2)
	checkRelease(t, "another app's release after replacing", updRelease(t, db, "b", rb.ID), rb)
	if rs := updReleases(t, db, "a"); len(rs) != 2 {
		t.Errorf("Releases(a) after replacing = %d releases, want 2", len(rs))
	} else {
		for i := range rs {
			want := map[int64]*update.Release{r.ID: r, r2.ID: r2}[rs[i].ID]
			if want == nil {
				t.Errorf("Releases(a) lists release %d", rs[i].ID)
				continue
			}
			checkRelease(t, fmt.Sprintf("release %s from Releases after replacing", rs[i].Version), &rs[i], want)
		}
	}

	// A replacement of a replacement returns the latest values; within one tx
	// the second put sees the first.
	winNewer := newArtifact("windows", "amd64", "win-newer", t0.Add(3*time.Hour))
	winNewest := newArtifact("windows", "amd64", "win-newest", t0.Add(4*time.Hour))
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		for _, p := range []struct {
			a, old *update.Artifact
		}{{winNewer, winNew}, {winNewest, winNewer}} {
			replaced, err := tx.PutArtifact(ctx, r.ID, p.a)
			if err != nil {
				return err
			}
			if replaced == nil {
				t.Errorf("PutArtifact(%s) returned nil, want %s", p.a.FileName, p.old.FileName)
				continue
			}
			var d diffs
			d.artifact("replaced", *replaced, *p.old)
			d.report(t, "artifact replaced by "+p.a.FileName)
		}
		got, err := tx.ReleaseForUpdate(ctx, "a", r.ID)
		if err != nil {
			return err
		}
		r.Artifacts = []update.Artifact{*uniNew, *winNewest, *winArm, *linux}
		checkRelease(t, "ReleaseForUpdate after two replacements in one tx", got, r)
		return nil
	})
	checkRelease(t, "release after two replacements", updRelease(t, db, "a", r.ID), r)
}

// DeleteRelease removes the release and its artifacts, and nothing else.
func testUpdateDeleteRelease(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	addApp(t, db, "b")
	r1 := addRelease(t, db, newRelease("a", "1.0.0", t0),
		newArtifact("", "", "r1-universal", t0), newArtifact("windows", "amd64", "r1-win", t0), newArtifact("darwin", "arm64", "r1-mac", t0))
	r2 := addRelease(t, db, newRelease("a", "2.0.0", t0), newArtifact("windows", "amd64", "r2-win", t0))
	rb := addRelease(t, db, newRelease("b", "1.0.0", t0), newArtifact("windows", "amd64", "rb-win", t0))

	updTx(t, db, func(ctx context.Context, tx update.Tx) error { return tx.DeleteRelease(ctx, "a", r1.ID) })
	_, err := db.UpdateStore().Release(ctx, "a", r1.ID)
	wantErr(t, "Release after DeleteRelease", err, apperr.ErrNotFound)
	wantErr(t, "ReleaseForUpdate after DeleteRelease", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		_, err := tx.ReleaseForUpdate(ctx, "a", r1.ID)
		return err
	}), apperr.ErrNotFound)
	if rs := updReleases(t, db, "a"); len(rs) != 1 {
		t.Errorf("Releases(a) after DeleteRelease = %v, want only 2.0.0", releaseIDs(rs))
	} else {
		checkRelease(t, "the other release after DeleteRelease", &rs[0], r2)
	}
	checkRelease(t, "b's release with the same version after DeleteRelease", updRelease(t, db, "b", rb.ID), rb)
	// Orphaned artifacts would be found (and returned as replaced) by a put
	// on the deleted release's ID; the tx is rolled back either way.
	probeOrphans(t, db, "deleted release", r1)

	wantErr(t, "DeleteRelease twice", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.DeleteRelease(ctx, "a", r1.ID)
	}), apperr.ErrNotFound)
	wantErr(t, "DeleteRelease(missing)", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.DeleteRelease(ctx, "a", 1<<40)
	}), apperr.ErrNotFound)
	wantErr(t, "DeleteRelease(another app's id)", updTxErr(db, func(ctx context.Context, tx update.Tx) error {
		return tx.DeleteRelease(ctx, "b", r2.ID)
	}), apperr.ErrNotFound)
	checkRelease(t, "a's release after b refused to delete it", updRelease(t, db, "a", r2.ID), r2)

	// A refused delete must change nothing even when the caller goes on and
	// commits (as it may after an ErrNotFound it expects, like any other
	// refused write of this store).
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		wantErr(t, "DeleteRelease(another app's id) in a tx that commits", tx.DeleteRelease(ctx, "b", r2.ID), apperr.ErrNotFound)
		return nil
	})
	if got := updRelease(t, db, "a", r2.ID); len(got.Artifacts) != len(r2.Artifacts) {
		t.Errorf("PRODUCTION BUG (internal/store/update.go, updateTx.DeleteRelease): DeleteRelease(\"b\", id of a's release) "+
			"returned ErrNotFound but had already deleted that release's artifacts (DELETE FROM release_artifacts WHERE release_id = ? "+
			"is not scoped by app_id); committing the tx lost them: a's release now has %d artifacts, want %d",
			len(got.Artifacts), len(r2.Artifacts))
	} else {
		checkRelease(t, "a's release after a refused delete by b was committed", got, r2)
	}

	// The version is free again.
	again := addRelease(t, db, newRelease("a", "1.0.0", t0.Add(time.Hour)), newArtifact("", "", "again", t0))
	if again.ID == r1.ID {
		t.Errorf("a re-created 1.0.0 reuses the deleted release's ID %d", r1.ID)
	}
	checkRelease(t, "1.0.0 re-created after DeleteRelease", updRelease(t, db, "a", again.ID), again)
}

// probeOrphans fails if artifacts of r survive where r is gone: a put on r's
// ID for the platform of each of its artifacts must not find one to replace.
func probeOrphans(t *testing.T, db *store.DB, what string, r *update.Release) {
	t.Helper()
	for _, a := range r.Artifacts {
		probe := newArtifact(a.OS, a.Arch, "probe", t0)
		err := updTxErr(db, func(ctx context.Context, tx update.Tx) error {
			replaced, err := tx.PutArtifact(ctx, r.ID, probe)
			if replaced != nil {
				t.Errorf("artifact %s of a %s survives: %+v", platform(a), what, replaced)
			}
			if err != nil {
				return err // a failed statement ends the tx on PostgreSQL
			}
			return errBoom // never keep the probe
		})
		if err == nil {
			t.Fatalf("probe tx committed")
		}
	}
}

// SetFloor sets, overwrites and (with an empty version) clears an app's
// floor of a channel; Floors returns the app's own.
func testUpdateFloors(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	if fs := updFloors(t, db, "a"); len(fs) != 0 {
		t.Fatalf("Floors of a new app = %v, want none", fs)
	}
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		for _, f := range []struct{ app, ch, v string }{
			{"a", update.Stable, "1.0.0"}, {"a", update.Beta, "1.1.0-beta.1+b.7"}, {"b", update.Stable, "3.0.0"}, {"b", update.Alpha, "0.1.0"},
		} {
			if err := tx.SetFloor(ctx, f.app, f.ch, f.v, t0); err != nil {
				return fmt.Errorf("SetFloor(%s, %s, %s): %w", f.app, f.ch, f.v, err)
			}
		}
		return nil
	})
	check := func(when, app string, want map[string]string) {
		t.Helper()
		if got := updFloors(t, db, app); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Floors(%s) %s = %v, want %v", app, when, got, want)
		}
	}
	check("after SetFloor", "a", map[string]string{update.Stable: "1.0.0", update.Beta: "1.1.0-beta.1+b.7"})
	check("after SetFloor", "b", map[string]string{update.Stable: "3.0.0", update.Alpha: "0.1.0"})
	check("of an unknown app", "missing", map[string]string{})

	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		return tx.SetFloor(ctx, "a", update.Stable, "1.2.0", t0.Add(time.Hour))
	})
	check("after an overwrite", "a", map[string]string{update.Stable: "1.2.0", update.Beta: "1.1.0-beta.1+b.7"})
	check("after a's overwrite", "b", map[string]string{update.Stable: "3.0.0", update.Alpha: "0.1.0"})

	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		return tx.SetFloor(ctx, "a", update.Beta, "", t0.Add(2*time.Hour))
	})
	check("after clearing beta", "a", map[string]string{update.Stable: "1.2.0"})
	// Clearing what is not set (here, or on another app's channel) is no error and changes nothing.
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.SetFloor(ctx, "a", update.Beta, "", t0); err != nil {
			return fmt.Errorf("clearing beta twice: %w", err)
		}
		return tx.SetFloor(ctx, "a", update.Alpha, "", t0)
	})
	check("after clearing unset channels", "a", map[string]string{update.Stable: "1.2.0"})
	check("after a's clears", "b", map[string]string{update.Stable: "3.0.0", update.Alpha: "0.1.0"})

	// Set again after a clear, then clear everything.
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		return tx.SetFloor(ctx, "a", update.Beta, "2.0.0-rc.1", t0.Add(3*time.Hour))
	})
	check("after setting beta again", "a", map[string]string{update.Stable: "1.2.0", update.Beta: "2.0.0-rc.1"})
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.SetFloor(ctx, "a", update.Stable, "", t0); err != nil {
			return err
		}
		return tx.SetFloor(ctx, "a", update.Beta, "", t0)
	})
	check("after clearing everything", "a", map[string]string{})
	check("at the end", "b", map[string]string{update.Stable: "3.0.0", update.Alpha: "0.1.0"})
}

func checkStats(t *testing.T, db *store.DB, what, appID string, since time.Time, wantDevices int64, want []update.VersionCount) {
	t.Helper()
	n, by, err := db.UpdateStore().CheckStats(context.Background(), appID, since)
	if err != nil {
		t.Fatalf("CheckStats(%s) %s: %v", appID, what, err)
	}
	if n != wantDevices {
		t.Errorf("CheckStats(%s) %s: devices = %d, want %d", appID, what, n, wantDevices)
	}
	got := append([]update.VersionCount{}, by...)
	sort.Slice(got, func(i, j int) bool { return got[i].Version < got[j].Version })
	sort.Slice(want, func(i, j int) bool { return want[i].Version < want[j].Version })
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("CheckStats(%s) %s: by version = %+v, want %+v", appID, what, got, want)
	}
}

// RecordChecks keeps each device's latest check; CheckStats counts the
// devices whose latest check is at or after since, and per version how many
// were offered it and how many run it.
func testUpdateChecks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	us := db.UpdateStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	checkStats(t, db, "without checks", "a", t0.Add(-24*time.Hour), 0, nil)

	since := t0 // sub-millisecond: what counts is the stored millisecond
	rec := func(app, device, current, offered string, at time.Time) {
		t.Helper()
		c := update.CheckRecord{AppID: app, Device: device, Current: current, Channel: update.Stable, OS: "windows", Arch: "amd64",
			Offered: offered, At: at}
		if err := us.RecordChecks(ctx, []update.CheckRecord{c}); err != nil {
			t.Fatalf("RecordCheck(%+v): %v", c, err)
		}
	}
	// d1 first checked long ago, then again recently: only the new check
	// counts, and an older record arriving late (another process's buffer)
	// does not overwrite it.
	rec("a", "d1", "0.9.0", "", t0.Add(-48*time.Hour))
	rec("a", "d1", "1.0.0", "2.0.0", t0.Add(time.Minute))
	rec("a", "d1", "0.8.0", "", t0.Add(-72*time.Hour))
	// d2 checked exactly at since.
	rec("a", "d2", "2.0.0", "", t0)
	// d3 a millisecond too early.
	rec("a", "d3", "0.8.0", "2.0.0", t0.Add(-time.Millisecond))
	// d4 checked twice recently: the second replaces the first (1.4.0 and
	// its offer of 1.5.0 disappear).
	rec("a", "d4", "1.4.0", "1.5.0", t0.Add(5*time.Minute))
	rec("a", "d4", "1.5.0", "2.0.0", t0.Add(10*time.Minute))
	// d5 runs a pre-release with build metadata and is offered nothing.
	rec("a", "d5", "2.0.0-beta.1+x.9", "", t0.Add(time.Hour))
	// Devices of b, one with the same device hash as a's d1.
	rec("b", "d1", "9.9.9", "10.0.0", t0.Add(time.Minute))
	rec("b", "d9", "10.0.0", "", t0.Add(-72*time.Hour))

	checkStats(t, db, "since t0", "a", since, 4, []update.VersionCount{
		{Version: "1.0.0", Offered: 0, Running: 1},
		{Version: "2.0.0", Offered: 2, Running: 1},
		{Version: "1.5.0", Offered: 0, Running: 1},
		{Version: "2.0.0-beta.1+x.9", Offered: 0, Running: 1},
	})
	checkStats(t, db, "since long ago", "a", t0.Add(-1000*time.Hour), 5, []update.VersionCount{
		{Version: "0.8.0", Offered: 0, Running: 1},
		{Version: "1.0.0", Offered: 0, Running: 1},
		{Version: "2.0.0", Offered: 3, Running: 1},
		{Version: "1.5.0", Offered: 0, Running: 1},
		{Version: "2.0.0-beta.1+x.9", Offered: 0, Running: 1},
	})
	checkStats(t, db, "since the last check", "a", t0.Add(time.Hour), 1, []update.VersionCount{
		{Version: "2.0.0-beta.1+x.9", Offered: 0, Running: 1},
	})
	checkStats(t, db, "since after every check", "a", t0.Add(time.Hour+time.Millisecond), 0, nil)
	checkStats(t, db, "since t0", "b", since, 1, []update.VersionCount{
		{Version: "9.9.9", Offered: 0, Running: 1},
		{Version: "10.0.0", Offered: 1, Running: 0},
	})
	checkStats(t, db, "since long ago", "b", t0.Add(-1000*time.Hour), 2, []update.VersionCount{
		{Version: "9.9.9", Offered: 0, Running: 1},
		{Version: "10.0.0", Offered: 1, Running: 1},
	})
	checkStats(t, db, "of an unknown app", "missing", t0.Add(-1000*time.Hour), 0, nil)

	// A check older than the stored one (buffered in another process and
	// written late) changes nothing; a device leaves the window only when
	// since passes its latest check.
	rec("a", "d2", "1.0.0", "", t0.Add(-time.Hour))
	checkStats(t, db, "after an older check of d2 arrived late", "a", since, 4, []update.VersionCount{
		{Version: "1.0.0", Offered: 0, Running: 1},
		{Version: "2.0.0", Offered: 2, Running: 1},
		{Version: "1.5.0", Offered: 0, Running: 1},
		{Version: "2.0.0-beta.1+x.9", Offered: 0, Running: 1},
	})
	checkStats(t, db, "once since passes d2's check", "a", since.Add(time.Millisecond), 3, []update.VersionCount{
		{Version: "1.0.0", Offered: 0, Running: 1},
		{Version: "2.0.0", Offered: 2, Running: 0},
		{Version: "1.5.0", Offered: 0, Running: 1},
		{Version: "2.0.0-beta.1+x.9", Offered: 0, Running: 1},
	})
	checkStats(t, db, "since t0 after a's new check", "b", since, 1, []update.VersionCount{
		{Version: "9.9.9", Offered: 0, Running: 1},
		{Version: "10.0.0", Offered: 1, Running: 0},
	})
}

// A failed update transaction keeps none of its writes.
func testUpdateInTxRollsBack(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	kept := addRelease(t, db, newRelease("a", "1.0.0", t0), newArtifact("", "", "kept", t0))
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		return tx.SetFloor(ctx, "a", update.Stable, "1.0.0", t0)
	})

	var gone *update.Release
	err := db.UpdateStore().InTx(ctx, func(tx update.Tx) error {
		gone = newRelease("a", "2.0.0", t0)
		if err := tx.InsertRelease(ctx, gone); err != nil {
			return err
		}
		if _, err := tx.PutArtifact(ctx, gone.ID, newArtifact("", "", "gone", t0)); err != nil {
			return err
		}
		// Changes to what was already there roll back too.
		if _, err := tx.PutArtifact(ctx, kept.ID, newArtifact("", "", "kept-replaced", t0)); err != nil {
			return err
		}
		up := *kept
		up.Changelog, up.Published, up.PublishedAt = "changed in a failed tx", true, ptr(t0)
		if err := tx.UpdateRelease(ctx, &up); err != nil {
			return err
		}
		if err := tx.SetFloor(ctx, "a", update.Stable, "2.0.0", t0); err != nil {
			return err
		}
		if err := tx.SetFloor(ctx, "a", update.Beta, "2.0.0", t0); err != nil {
			return err
		}
		if err := tx.AddEvent(ctx, event.Event{AppID: "a", Type: event.UpdatePublished, Data: map[string]any{"id": gone.ID}, CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.AddAudit(ctx, audit.Entry{At: t0, Actor: audit.System, Action: "release.create", AppID: "a", Target: "2.0.0"}); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	if rs := updReleases(t, db, "a"); len(rs) != 1 {
		t.Errorf("Releases(a) after a rolled-back insert = %v, want only 1.0.0", releaseIDs(rs))
	}
	_, err = db.UpdateStore().Release(ctx, "a", gone.ID)
	wantErr(t, "Release inserted by a rolled-back tx", err, apperr.ErrNotFound)
	checkRelease(t, "release changed in a rolled-back tx", updRelease(t, db, "a", kept.ID), kept)
	if fs := updFloors(t, db, "a"); !reflect.DeepEqual(fs, map[string]string{update.Stable: "1.0.0"}) {
		t.Errorf("Floors after a rolled-back tx = %v, want stable 1.0.0 only", fs)
	}
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 0 {
		t.Errorf("events of a rolled-back update tx = %v, %v; want none", evs, err)
	}
	if es, err := db.Audit(ctx, store.AuditFilter{}); err != nil || len(es) != 0 {
		t.Errorf("audit entries of a rolled-back update tx = %v, %v; want none", es, err)
	}
	// The version is free and the store usable.
	again := addRelease(t, db, newRelease("a", "2.0.0", t0))
	checkRelease(t, "2.0.0 inserted after the rollback", updRelease(t, db, "a", again.ID), again)
}

// Events and audit entries written in an update transaction commit with it.
func testUpdateJournal(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	r := newRelease("a", "1.2.0-rc.1", t0)
	actor := audit.Actor{Kind: "admin", ID: "u-1", Name: "root", IP: "198.51.100.1"}
	updTx(t, db, func(ctx context.Context, tx update.Tx) error {
		if err := tx.InsertRelease(ctx, r); err != nil {
			return err
		}
		if err := tx.AddEvent(ctx, event.Event{AppID: "a", Type: event.UpdatePublished, CreatedAt: t0,
			Data: map[string]any{"id": r.ID, "version": r.Version.String(), "is_mandatory": true}}); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.Entry{At: t0, Actor: actor, Action: "release.create", AppID: "a", Target: r.Version.String(),
			Details: map[string]any{"id": r.ID, "channel": r.Channel}})
	})
	evs, err := db.Events(ctx, 0, 100)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events after an update tx = %+v, %v; want one", evs, err)
	}
	var d diffs
	d.eq("AppID", evs[0].AppID, "a")
	d.eq("Type", evs[0].Type, event.UpdatePublished)
	d.time("CreatedAt", evs[0].CreatedAt, t0)
	d.eq("Data", evs[0].Data, map[string]any{"id": float64(r.ID), "version": "1.2.0-rc.1", "is_mandatory": true})
	d.report(t, "event written in an update tx")

	es, err := db.Audit(ctx, store.AuditFilter{AppID: "a"})
	if err != nil || len(es) != 1 {
		t.Fatalf("audit of a after an update tx = %+v, %v; want one entry", es, err)
	}
	d = nil
	d.time("At", es[0].At, t0)
	d.eq("Actor", es[0].Actor, actor)
	d.eq("Action", es[0].Action, "release.create")
	d.eq("AppID", es[0].AppID, "a")
	d.eq("Target", es[0].Target, "1.2.0-rc.1")
	d.eq("Details", es[0].Details, map[string]any{"id": float64(r.ID), "channel": update.Beta})
	d.report(t, "audit entry written in an update tx")
	if _, err := db.UpdateStore().Release(ctx, "a", r.ID); err != nil {
		t.Errorf("release committed with its event: %v", err)
	}
}

// Deleting an app deletes its releases, artifacts, floors and checks, and
// only its own: an app created again with the same ID starts empty.
func testUpdateDeleteAppCascades(t *testing.T, db *store.DB) {
	ctx := context.Background()
	rels := map[string]*update.Release{}
	for _, app := range []string{"gone", "kept"} {
		addApp(t, db, app)
		rels[app] = addRelease(t, db, newRelease(app, "1.0.0", t0),
			newArtifact("", "", app+"-universal", t0), newArtifact("windows", "amd64", app+"-win", t0))
		updTx(t, db, func(ctx context.Context, tx update.Tx) error {
			if err := tx.SetFloor(ctx, app, update.Stable, "1.0.0", t0); err != nil {
				return err
			}
			return tx.SetFloor(ctx, app, update.Beta, "0.9.0", t0)
		})
		for _, dev := range []string{"d1", "d2"} {
			if err := db.UpdateStore().RecordChecks(ctx, []update.CheckRecord{{AppID: app, Device: dev, Current: "0.9.0",
				Channel: update.Stable, Offered: "1.0.0", At: t0}}); err != nil {
				t.Fatalf("RecordCheck: %v", err)
			}
		}
	}

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "gone") })
	checkEmpty := func(when string) {
		t.Helper()
		if rs := updReleases(t, db, "gone"); len(rs) != 0 {
			t.Errorf("releases %s = %v", when, releaseIDs(rs))
		}
		_, err := db.UpdateStore().Release(ctx, "gone", rels["gone"].ID)
		wantErr(t, "Release "+when, err, apperr.ErrNotFound)
		if fs := updFloors(t, db, "gone"); len(fs) != 0 {
			t.Errorf("floors %s = %v", when, fs)
		}
		checkStats(t, db, when, "gone", t0.Add(-1000*time.Hour), 0, nil)
		probeOrphans(t, db, "deleted app's release", rels["gone"])
	}
	checkEmpty("of a deleted app")
	// Orphans would show up again under a new app with the same ID.
	addApp(t, db, "gone")
	checkEmpty("of an app re-created with a deleted app's ID")

	if rs := updReleases(t, db, "kept"); len(rs) != 1 {
		t.Errorf("releases of the other app = %v", releaseIDs(rs))
	} else {
		checkRelease(t, "the other app's release", &rs[0], rels["kept"])
	}
	if fs := updFloors(t, db, "kept"); !reflect.DeepEqual(fs, map[string]string{update.Stable: "1.0.0", update.Beta: "0.9.0"}) {
		t.Errorf("floors of the other app = %v", fs)
	}
	checkStats(t, db, "of the other app", "kept", t0.Add(-1000*time.Hour), 2, []update.VersionCount{
		{Version: "0.9.0", Offered: 0, Running: 2},
		{Version: "1.0.0", Offered: 2, Running: 0},
	})
}

// A batch of checks is written together; a check of an app deleted since it
// was buffered is skipped rather than failing the batch.
func testUpdateCheckBatch(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	batch := []update.CheckRecord{
		{AppID: "a", Device: "d1", Current: "1.0.0", Channel: update.Stable, Offered: "1.1.0", At: t0},
		{AppID: "gone", Device: "d9", Current: "1.0.0", Channel: update.Stable, At: t0},
		{AppID: "a", Device: "d2", Current: "1.1.0", Channel: update.Beta, At: t0},
	}
	if err := db.UpdateStore().RecordChecks(ctx, batch); err != nil {
		t.Fatalf("RecordChecks with a deleted app's check: %v", err)
	}
	checkStats(t, db, "after the batch", "a", t0, 2, []update.VersionCount{{Version: "1.1.0", Offered: 1, Running: 1},
		{Version: "1.0.0", Running: 1}})
	checkStats(t, db, "the deleted app", "gone", t0, 0, nil)
}
