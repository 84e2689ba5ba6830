package analytics

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// Report steps and the longest range a report covers.
const (
	Hourly   = time.Hour
	Daily    = 24 * time.Hour
	MaxRange = 366 * Daily
)

// Report is an app's activity over a range, per step. Every series has one
// point per step from From to To (zero where nothing happened), so a chart
// needs no gap logic. Maps and slices are empty, never nil.
type Report struct {
	AppID string
	// From and To are the requested range widened to whole steps (UTC
	// hours or days): From rounded down, To rounded up. Points start at
	// From, From+Step, … and the last one starts at To-Step.
	From, To time.Time
	Step     time.Duration

	// ActiveNow counts the app's live sessions at the time of the report.
	ActiveNow int64
	// Active is the highest sampled live session count of each step (zero
	// when no sample was taken in it; see Service.Sample).
	Active []Point
	// Logins, Activations, Trials and Logouts count those metrics per step.
	Logins, Activations, Trials, Logouts []Point
	// LoginFailures counts refused sign-ins over the range by error code;
	// HeartbeatRefusals counts sessions ended by a heartbeat, by kill code.
	LoginFailures     map[string]int64
	HeartbeatRefusals map[string]int64
	// KeysByStatus counts all of the app's keys per status now (not limited
	// to the range).
	KeysByStatus map[string]int64
	// Versions is how many devices ran each version at their latest update
	// check, counting the devices whose latest check is in the range, most
	// devices first. Only a device's latest check is stored, so a device
	// that checked again after To is counted in later ranges only.
	Versions []VersionDevices
}

// Service answers analytics reports and takes session samples.
type Service struct {
	store Store
}

// NewService returns a Service over store.
func NewService(store Store) *Service { return &Service{store: store} }

// Sample records the live session count of every app as of at. Run it from
// one process at a time (a leader job) every few minutes; Report's Active
// series shows the highest sample per step.
func (s *Service) Sample(ctx context.Context, at time.Time) error {
	return s.store.SampleSessions(ctx, at)
}

// Report returns appID's activity from from to to, per step (Hourly or
// Daily). It returns MISSING_FIELDS when appID, from or to is missing, step
// is neither an hour nor a day, from is not before to, or the range is longer
// than MaxRange. An app without data (or unknown) reports zeros; the caller
// checks that the app exists and belongs to the asking owner.
func (s *Service) Report(ctx context.Context, appID string, from, to time.Time, step time.Duration) (*Report, error) {
	if err := validate(appID, from, to, step); err != nil {
		return nil, err
	}
	from, to = floorTo(from, step), ceilTo(to, step)
	r := &Report{AppID: appID, From: from, To: to, Step: step}
	// Counting the app's keys is the one read that grows with the app (a
	// pass over its entries in an index); it runs beside the others, which
	// read at most hours × metrics rows. Returning early cancels it and
	// waits for it, so no read outlives the call.
	ctx, cancel := context.WithCancel(ctx)
	var keys map[string]int64
	var keysErr error
	keysDone := make(chan struct{})
	defer func() {
		cancel()
		<-keysDone
	}()
	go func() {
		defer close(keysDone)
		keys, keysErr = s.store.KeysByStatus(ctx, appID)
	}()
	var err error
	if r.ActiveNow, err = s.store.LiveSessions(ctx, appID); err != nil {
		return nil, err
	}
	active, err := s.store.SessionSeries(ctx, appID, from, to, step)
	if err != nil {
		return nil, err
	}
	r.Active = fill(active, from, to, step)
	series, err := s.store.UsageSeries(ctx, appID, []string{Login, Activation, Trial, Logout}, from, to, step)
	if err != nil {
		return nil, err
	}
	r.Logins = fill(series[Login], from, to, step)
	r.Activations = fill(series[Activation], from, to, step)
	r.Trials = fill(series[Trial], from, to, step)
	r.Logouts = fill(series[Logout], from, to, step)
	codes, err := s.store.UsageByCode(ctx, appID, []string{LoginFailed, HeartbeatRefused}, from, to)
	if err != nil {
		return nil, err
	}
	r.LoginFailures = orEmpty(codes[LoginFailed])
	r.HeartbeatRefusals = orEmpty(codes[HeartbeatRefused])
	if r.Versions, err = s.store.Versions(ctx, appID, from, to); err != nil {
		return nil, err
	}
	if r.Versions == nil {
		r.Versions = []VersionDevices{}
	}
	<-keysDone
	if keysErr != nil {
		return nil, keysErr
	}
	r.KeysByStatus = orEmpty(keys)
	return r, nil
}

// validate checks a report's arguments (see Service.Report).
func validate(appID string, from, to time.Time, step time.Duration) error {
	switch {
	case appID == "":
		return apperr.Missing("app_id")
	case from.IsZero():
		return apperr.Missing("from")
	case to.IsZero():
		return apperr.Missing("to")
	case step != Hourly && step != Daily:
		return apperr.InvalidField("step", "must be one hour or one day")
	case !from.Before(to):
		return apperr.InvalidField("to", "must be after from")
	case to.Sub(from) > MaxRange:
		return apperr.InvalidField("from", "the range must be at most 366 days")
	}
	return nil
}

// floorTo rounds t down to a multiple of step since the Unix epoch (UTC
// hours and days).
func floorTo(t time.Time, step time.Duration) time.Time {
	ms, s := t.UnixMilli(), step.Milliseconds()
	f := ms / s * s
	if f > ms {
		f -= s
	}
	return time.UnixMilli(f).UTC()
}

// ceilTo rounds t up to a multiple of step since the Unix epoch.
func ceilTo(t time.Time, step time.Duration) time.Time {
	f := floorTo(t, step)
	if f.Before(t) {
		return f.Add(step)
	}
	return f
}

// fill returns one point per step from from to to, taking the values of
// sparse (points at bucket starts) and zero elsewhere.
func fill(sparse []Point, from, to time.Time, step time.Duration) []Point {
	n := int(to.Sub(from) / step)
	out := make([]Point, n)
	for i := range out {
		out[i].At = from.Add(time.Duration(i) * step)
	}
	for _, p := range sparse {
		if i := int(p.At.Sub(from) / step); i >= 0 && i < n {
			out[i].N += p.N
		}
	}
	return out
}

func orEmpty(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}
