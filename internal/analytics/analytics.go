// Package analytics counts what happens to an app — logins, failures,
// activations, trials, heartbeat refusals, logouts — as hourly rollups, samples
// how many sessions are live, and reports both per app over a time range
// together with the app's keys by status and the versions its clients run.
//
// Counting is in memory (Recorder) and written in one transaction per flush,
// so a busy app costs one upserted row per app, metric, code and hour rather
// than a row per event, and a report reads at most hours × metrics rows
// whatever the event volume. The package knows nothing of HTTP or SQL: it
// declares the Store it needs.
package analytics

import (
	"context"
	"time"
)

// Metrics counted by the Recorder. The code that goes with each is described
// on the constant; metrics without one take the empty code.
const (
	// Login is a successful sign-in that opened a session, with a license
	// key or an app user account. Code: empty.
	Login = "login"
	// LoginFailed is a refused sign-in. Code: the wire error_code
	// (INVALID_KEY, HWID_MISMATCH, EXPIRED, BANNED, …).
	LoginFailed = "login_failed"
	// Activation is a license key used for the first time (its status went
	// from unused to active). Code: empty.
	Activation = "activation"
	// Trial is a new trial issued to a device (not a running trial handed
	// back to it). Code: empty.
	Trial = "trial"
	// HeartbeatRefused is a heartbeat that ended its session. Code: the kill
	// code (SESSION_EXPIRED, BANNED, HWID_RESET, …).
	HeartbeatRefused = "heartbeat_refused"
	// Logout is a session closed by its client. Code: empty.
	Logout = "logout"
)

// Count is n occurrences of one metric (and code) for one app within the
// hour that starts at Hour (UTC, on the hour).
type Count struct {
	AppID  string
	Metric string
	Code   string
	Hour   time.Time
	N      int64
}

// Point is one value of a series: the bucket that starts at At.
type Point struct {
	At time.Time
	N  int64
}

// VersionDevices is how many devices last reported running Version.
type VersionDevices struct {
	Version string
	Devices int64
}

// Store is the persistence analytics needs. Ranges are half-open: from is
// included, to is not. Series buckets are step long and start at from +
// i × step; buckets without data are left out.
type Store interface {
	// AddUsage adds every count to its app's hourly rollup (n = n + N), in
	// one transaction. Counts of apps that no longer exist are dropped.
	AddUsage(ctx context.Context, counts []Count) error
	// SampleSessions records, for every app with live sessions, how many
	// it has, as of at.
	SampleSessions(ctx context.Context, at time.Time) error
	// LiveSessions counts the app's sessions that have not ended.
	LiveSessions(ctx context.Context, appID string) (int64, error)
	// SessionSeries returns the largest session sample of each bucket.
	SessionSeries(ctx context.Context, appID string, from, to time.Time, step time.Duration) ([]Point, error)
	// UsageSeries sums each metric's counts, all codes together, per bucket.
	UsageSeries(ctx context.Context, appID string, metrics []string, from, to time.Time, step time.Duration) (map[string][]Point, error)
	// UsageByCode sums each metric's counts per code over the range.
	UsageByCode(ctx context.Context, appID string, metrics []string, from, to time.Time) (map[string]map[string]int64, error)
	// KeysByStatus counts the app's license keys per status.
	KeysByStatus(ctx context.Context, appID string) (map[string]int64, error)
	// Versions counts, per version, the app's devices whose latest update
	// check falls in the range, most devices first.
	Versions(ctx context.Context, appID string, from, to time.Time) ([]VersionDevices, error)
}
