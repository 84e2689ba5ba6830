package license

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
)

// Lazy migration (issue 24): an app moving from another license service
// names that service as its upstream (Settings.UpstreamURL, UpstreamAppID,
// the sealed App.UpstreamToken) and turns it on (UpstreamEnabled). A
// login or key check (Login, CheckKey and so Validate) with a key string the app does not know — neither a
// key nor the alias of a rotated one — asks the upstream's admin API for
// it; a key it has is imported (status, expiry, activation, terms,
// features, bound devices; one audit entry by the system actor
// "upstream") and the request is then answered as if the key had always
// been here. Known keys never consult the upstream, so an upstream outage
// never refuses a known key; an unknown key is INVALID_KEY whatever the
// upstream answers or fails to answer.
//
// A later route that takes a key string (the license-file route of issue
// 23) joins by calling KnownOrUpstream where it would answer INVALID_KEY.

// UpstreamActor is the audit actor of keys imported from an upstream.
var UpstreamActor = audit.Actor{Kind: "system", Name: "upstream"}

// ErrUpstreamNoKey is an upstream's answer that it has no such key.
var ErrUpstreamNoKey = errors.New("upstream: no such key")

// Upstream is the HTTP side of lazy migration, implemented outside the
// domain (internal/upstream over internal/outbound): bounded in time and
// answer size, guarded against private addresses.
type Upstream interface {
	// FetchKey asks app's upstream for licenseKey and returns its key
	// object (the "key" of the admin API's reply), ErrUpstreamNoKey when
	// the upstream has none, or another error when it could not answer.
	FetchKey(ctx context.Context, app *App, licenseKey string) ([]byte, error)
	// KeyPage returns one page of the key strings app's upstream lists,
	// from cursor ("" first), and the next cursor ("" after the last).
	KeyPage(ctx context.Context, app *App, cursor string) ([]string, string, error)
}

// Outcomes of an upstream lookup, as UpstreamReport receives them.
const (
	UpstreamImported = "imported" // the upstream had the key; it is imported
	UpstreamNotFound = "not_found"
	UpstreamFailed   = "error"   // timeout, network, 5xx, unreadable answer
	UpstreamRefused  = "invalid" // the upstream's key object failed the import rules
)

// UpstreamReport receives each upstream lookup's outcome (for a log line and a metric);
// err is set for UpstreamFailed and UpstreamRefused.
type UpstreamReport func(appID, outcome string, err error)

// Lazy-migration limits.
const (
	// upstreamMissTTL is how long an upstream's "no such key" is believed.
	upstreamMissTTL = 10 * time.Minute
	// upstreamFailTTL is how long a failed lookup is not retried for that
	// key, so an unreachable upstream costs one timeout per key and period,
	// not one per request.
	upstreamFailTTL = 15 * time.Second
	// upstreamMissCap bounds the negative cache (entries, per process).
	upstreamMissCap = 10000
	// UpstreamStatusPages bounds the pages upstream-status reads.
	UpstreamStatusPages = 200
	// UpstreamConcurrency bounds the lookups one process has at an
	// upstream at once: a flood of made-up key strings (each a new key to
	// ask about) neither floods the service being left nor piles up
	// goroutines here. A lookup waits up to upstreamSlotWait for a slot,
	// then counts as failed (INVALID_KEY, not remembered).
	UpstreamConcurrency = 16
	upstreamSlotWait    = 5 * time.Second
)

// upstreamState is a Service's lazy-migration machinery.
type upstreamState struct {
	client  Upstream
	allowed func(netip.Addr) bool
	report  UpstreamReport
	flight  singleflight.Group
	slots   chan struct{} // UpstreamConcurrency lookups at once

	mu     sync.Mutex
	misses map[string]time.Time // app ID + "\x00" + key → believed until
}

// SetUpstream turns lazy migration on for this process: client talks to
// upstreams, allowed is the address guard a literal IP in an upstream URL
// must pass at save (the connect-time guard is client's), report gets
// each lookup's outcome (nil: none). Without it no upstream is asked.
func (s *Service) SetUpstream(client Upstream, allowed func(netip.Addr) bool, report UpstreamReport) {
	if report == nil {
		report = func(string, string, error) {}
	}
	s.up = &upstreamState{client: client, allowed: allowed, report: report, misses: map[string]time.Time{},
		slots: make(chan struct{}, UpstreamConcurrency)}
}

// validateUpstream checks the upstream settings of a: a plain http(s) URL
// (no user info, query or fragment), an app id and token of sane size,
// and, when turned on, all three present. A host that is an IP literal
// must pass allowed (nil: not checked); host names are checked at connect
// time, after resolution.
func validateUpstream(a *App, allowed func(netip.Addr) bool) error {
	st := a.Settings
	if st.UpstreamURL != "" {
		u, err := url.Parse(st.UpstreamURL)
		switch {
		case err != nil || len(st.UpstreamURL) > 2048 || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
			return apperr.InvalidField("upstream_url", "must be an http or https URL (the upstream's base URL) of at most 2048 characters")
		case u.User != nil:
			return apperr.InvalidField("upstream_url", "must not hold a user name or password; send the token as upstream_token")
		case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Path, "/api") || strings.Contains(u.Path, "/api/"):
			return apperr.InvalidField("upstream_url", "must be the service's base URL, without /api/…, query or fragment")
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && allowed != nil && !allowed(ip) {
			return apperr.InvalidField("upstream_url", ip.String()+" is a private, loopback, link-local or reserved address, "+
				"which keyward may not reach; the server operator can allow its network with --webhook-allow-networks")
		}
	}
	if len(st.UpstreamAppID) > 128 || !printable(st.UpstreamAppID) {
		return apperr.InvalidField("upstream_app_id", "must be at most 128 printable characters")
	}
	if len(a.UpstreamToken) > 4096 || !printable(a.UpstreamToken) || strings.ContainsAny(a.UpstreamToken, " \t") {
		return apperr.InvalidField("upstream_token", "must be at most 4096 printable characters without spaces")
	}
	if st.UpstreamEnabled && (st.UpstreamURL == "" || st.UpstreamAppID == "" || a.UpstreamToken == "") {
		return apperr.InvalidField("upstream_enabled", "needs upstream_url, upstream_app_id and upstream_token")
	}
	return nil
}

func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// upstreamOn reports whether app asks its upstream for unknown keys here.
func (s *Service) upstreamOn(app *App) bool {
	st := app.Settings
	return s.up != nil && st.UpstreamEnabled && st.UpstreamURL != "" && st.UpstreamAppID != "" && app.UpstreamToken != ""
}

// KnownOrUpstream is called where a request would answer INVALID_KEY for a
// key string app does not have: with the app's upstream on, it asks the
// upstream and imports the key, and reports whether the key is now the
// app's (the caller reads it again). A string the app uses as a rotated
// key's alias, one the upstream lately said it lacks, and one the import
// rules refuse are not asked for or not imported; no upstream failure is
// returned as an error (the caller answers INVALID_KEY). Concurrent calls
// for one key share one upstream request.
func (s *Service) KnownOrUpstream(ctx context.Context, app *App, licenseKey string) (bool, error) {
	if !s.upstreamOn(app) || !importKeyRE.MatchString(licenseKey) {
		return false, nil
	}
	id := app.ID + "\x00" + licenseKey
	if s.up.missed(id, s.now()) {
		return false, nil
	}
	v, err, _ := s.up.flight.Do(id, func() (any, error) {
		// One lookup for everyone waiting, not cut short when the first
		// caller goes away; the upstream client bounds its time.
		return s.fromUpstream(context.WithoutCancel(ctx), app, licenseKey)
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// fromUpstream does one lookup of KnownOrUpstream.
func (s *Service) fromUpstream(ctx context.Context, app *App, licenseKey string) (bool, error) {
	id := app.ID + "\x00" + licenseKey
	if taken, err := s.store.TakenKeyStrings(ctx, app.ID, []string{licenseKey}); err != nil {
		return false, err
	} else if len(taken) > 0 {
		// A key now (imported by another request or process), or a rotated
		// key's alias, which is not the upstream's to answer for.
		_, err := s.store.Key(ctx, app.ID, licenseKey)
		return err == nil, nil
	}
	slot := time.NewTimer(upstreamSlotWait)
	select {
	case s.up.slots <- struct{}{}:
		slot.Stop()
	case <-slot.C:
		s.up.report(app.ID, UpstreamFailed, fmt.Errorf("%d lookups already waiting on upstreams; this one gave up after %s", UpstreamConcurrency, upstreamSlotWait))
		return false, nil
	}
	obj, err := s.up.client.FetchKey(ctx, app, licenseKey)
	<-s.up.slots
	switch {
	case errors.Is(err, ErrUpstreamNoKey):
		s.up.miss(id, s.now(), upstreamMissTTL)
		s.up.report(app.ID, UpstreamNotFound, nil)
		return false, nil
	case err != nil:
		s.up.miss(id, s.now(), upstreamFailTTL)
		s.up.report(app.ID, UpstreamFailed, err)
		return false, nil
	}
	row, problems := ImportRowFromObject(1, obj)
	if len(problems) == 0 && row.Key.LicenseKey != licenseKey {
		problems = []ImportError{{Field: "license_key", Message: "the upstream answered for another key"}}
	}
	if len(problems) == 0 {
		if err := app.checkFlagTypes("features", row.Key.Features); err != nil {
			problems = []ImportError{{Field: "features", Message: apperr.From(err).Message}}
		}
	}
	if len(problems) > 0 {
		s.up.miss(id, s.now(), upstreamMissTTL)
		p := problems[0]
		s.up.report(app.ID, UpstreamRefused, fmt.Errorf("the upstream's key does not import: %s %s", p.Field, p.Message))
		return false, nil
	}
	if err := s.importUpstream(ctx, app, row); err != nil {
		return false, err
	}
	s.up.report(app.ID, UpstreamImported, nil)
	return true, nil
}

// errImportedMeanwhile ends an import transaction that found the key
// inserted by another process (a unique-constraint refusal).
var errImportedMeanwhile = errors.New("imported meanwhile")

// importUpstream inserts the upstream's key with its devices, counts it and
// audits it, in one transaction. A key inserted meanwhile by another
// process (the unique constraint refuses ours) is left as it is: that
// import came from the same upstream answer.
func (s *Service) importUpstream(ctx context.Context, app *App, row ImportRow) error {
	now := s.Now()
	row.Complete(now)
	k := row.Key
	k.AppID, k.UpdatedAt = app.ID, now
	err := s.store.InTx(ctx, func(tx Tx) error {
		if taken, err := tx.TakenKeyStrings(ctx, app.ID, []string{k.LicenseKey}); err != nil {
			return err
		} else if len(taken) > 0 {
			return errImportedMeanwhile
		}
		keys := []Key{k}
		if err := tx.InsertKeys(ctx, keys); errors.Is(err, apperr.ErrConflict) {
			return errImportedMeanwhile
		} else if err != nil {
			return err
		}
		for j, h := range row.HWIDs {
			if err := tx.UpsertDevice(ctx, keys[0].ID, h, now.Add(time.Duration(j)*time.Millisecond)); err != nil {
				return err
			}
		}
		if err := tx.CountUpstreamImport(ctx, app.ID); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(UpstreamActor, now, "key.upstream_import", app.ID, k.LicenseKey,
			map[string]any{"upstream_url": app.Settings.UpstreamURL, "status": k.Status, "expires_at": OptTimestamp(k.ExpiresAt),
				"devices": len(row.HWIDs)}))
	})
	if errors.Is(err, errImportedMeanwhile) {
		return nil
	}
	return err
}

// missed reports whether id is in the negative cache at now.
func (u *upstreamState) missed(id string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.misses[id]
	if ok && !now.Before(until) {
		delete(u.misses, id)
		return false
	}
	return ok
}

// miss remembers id from now for ttl. A full cache drops its expired
// entries, and when too few are, arbitrary ones (a map's order) down to
// nine tenths of the cap, to stay bounded.
func (u *upstreamState) miss(id string, now time.Time, ttl time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.misses) >= upstreamMissCap {
		for k, t := range u.misses {
			if !now.Before(t) {
				delete(u.misses, k)
			}
		}
		for k := range u.misses {
			if len(u.misses) < upstreamMissCap*9/10 {
				break
			}
			delete(u.misses, k)
		}
	}
	u.misses[id] = now.Add(ttl)
}

// forget empties the negative cache (upstream settings changed).
func (u *upstreamState) forget() {
	if u == nil {
		return
	}
	u.mu.Lock()
	clear(u.misses)
	u.mu.Unlock()
}

// UpstreamStatus is how far an app's lazy migration has come (see
// wire.UpstreamStatusReply).
type UpstreamStatus struct {
	Enabled      bool
	Imported     int
	UpstreamKeys int
	Remaining    int
	Complete     bool
	Err          error
}

// UpstreamStatus counts, on demand, the keys app's upstream lists that the
// app does not have yet, reading at most UpstreamStatusPages pages (so a
// huge upstream gives a lower bound, Complete false), and reports how many
// keys were imported on first use so far. An upstream that fails is
// reported in Err with the counts so far, not as the call's error.
func (s *Service) UpstreamStatus(ctx context.Context, appID string) (*UpstreamStatus, error) {
	app, err := s.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	st := &UpstreamStatus{Enabled: app.Settings.UpstreamEnabled, Imported: app.UpstreamImported}
	if s.up == nil || app.Settings.UpstreamURL == "" || app.Settings.UpstreamAppID == "" || app.UpstreamToken == "" {
		st.Err = errors.New("no upstream is configured")
		return st, nil
	}
	cursor := ""
	for page := 0; page < UpstreamStatusPages; page++ {
		keys, next, err := s.up.client.KeyPage(ctx, app, cursor)
		if err != nil {
			st.Err = err
			return st, nil
		}
		st.UpstreamKeys += len(keys)
		if len(keys) > 0 {
			have, err := s.store.TakenKeyStrings(ctx, app.ID, keys)
			if err != nil {
				return nil, err
			}
			st.Remaining += len(keys) - len(have)
		}
		if next == "" {
			st.Complete = true
			return st, nil
		}
		cursor = next
	}
	return st, nil
}
