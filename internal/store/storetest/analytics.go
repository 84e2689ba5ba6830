package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/update"
)

// ---- analytics ----

// h0 is an hour boundary (UTC) near t0; analytics buckets start on hours.
var h0 = t0.UTC().Truncate(24 * time.Hour)

func addUsage(t *testing.T, db *store.DB, counts ...analytics.Count) {
	t.Helper()
	if err := db.AnalyticsStore().AddUsage(context.Background(), counts); err != nil {
		t.Fatalf("AddUsage: %v", err)
	}
}

func usage(app, metric, code string, hour time.Time, n int64) analytics.Count {
	return analytics.Count{AppID: app, Metric: metric, Code: code, Hour: hour, N: n}
}

func wantPoints(t *testing.T, what string, got []analytics.Point, want ...analytics.Point) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].At.Equal(want[i].At) && got[i].At.Location() == time.UTC && got[i].N == want[i].N
	}
	if !ok {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func pt(at time.Time, n int64) analytics.Point { return analytics.Point{At: at, N: n} }

// AddUsage adds to the stored rollups (a second flush of the same hour
// adds, equal cells in one call are summed), drops counts of apps that do
// not exist, and writes batches larger than one statement; UsageSeries and
// UsageByCode sum over [from, to) by step and by code.
func testAnalyticsUsage(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AnalyticsStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	h := time.Hour
	addUsage(t, db,
		usage("a", analytics.Login, "", h0, 3),
		usage("a", analytics.Login, "", h0, 2), // the same cell twice in one call
		usage("a", analytics.Login, "", h0.Add(h), 1),
		usage("a", analytics.Login, "", h0.Add(25*h), 7),
		usage("a", analytics.Trial, "", h0.Add(2*h), 4),
		usage("a", analytics.LoginFailed, license.CodeInvalidKey, h0, 5),
		usage("a", analytics.LoginFailed, license.CodeInvalidKey, h0.Add(3*h), 1),
		usage("a", analytics.LoginFailed, license.CodeBanned, h0.Add(h), 2),
		usage("a", analytics.HeartbeatRefused, license.CodeBanned, h0.Add(h), 6),
		usage("b", analytics.Login, "", h0, 100),
		usage("gone", analytics.Login, "", h0, 9), // no such app: dropped
	)
	addUsage(t, db, usage("a", analytics.Login, "", h0, 10)) // a later flush adds
	if err := as.AddUsage(ctx, nil); err != nil {
		t.Errorf("AddUsage(nil) = %v, want nil", err)
	}

	series, err := as.UsageSeries(ctx, "a", []string{analytics.Login, analytics.Trial, analytics.Activation}, h0, h0.Add(48*h), h)
	if err != nil {
		t.Fatal(err)
	}
	wantPoints(t, "hourly logins", series[analytics.Login], pt(h0, 15), pt(h0.Add(h), 1), pt(h0.Add(25*h), 7))
	wantPoints(t, "hourly trials", series[analytics.Trial], pt(h0.Add(2*h), 4))
	wantPoints(t, "hourly activations", series[analytics.Activation])

	daily, err := as.UsageSeries(ctx, "a", []string{analytics.Login}, h0, h0.Add(48*h), 24*h)
	if err != nil {
		t.Fatal(err)
	}
	wantPoints(t, "daily logins", daily[analytics.Login], pt(h0, 16), pt(h0.Add(24*h), 7))

	// from is included, to is not.
	part, err := as.UsageSeries(ctx, "a", []string{analytics.Login}, h0.Add(h), h0.Add(25*h), h)
	if err != nil {
		t.Fatal(err)
	}
	wantPoints(t, "logins from the second hour to hour 25", part[analytics.Login], pt(h0.Add(h), 1))

	codes, err := as.UsageByCode(ctx, "a", []string{analytics.LoginFailed, analytics.HeartbeatRefused}, h0, h0.Add(3*h))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int64{
		analytics.LoginFailed:      {license.CodeInvalidKey: 5, license.CodeBanned: 2},
		analytics.HeartbeatRefused: {license.CodeBanned: 6},
	}
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("UsageByCode over the first three hours = %v, want %v", codes, want)
	}
	other, err := as.UsageSeries(ctx, "b", []string{analytics.Login}, h0, h0.Add(h), h)
	if err != nil {
		t.Fatal(err)
	}
	wantPoints(t, "app b's logins", other[analytics.Login], pt(h0, 100))
	none, err := as.UsageByCode(ctx, "gone", []string{analytics.Login}, h0, h0.Add(h))
	if err != nil || len(none) != 0 {
		t.Errorf("UsageByCode of an app that never existed = %v, %v; want nothing", none, err)
	}

	// More rollups than one statement writes.
	var many []analytics.Count
	for i := range 1234 {
		many = append(many, usage("b", analytics.Logout, "", h0.Add(time.Duration(i)*h), int64(i%3+1)))
	}
	addUsage(t, db, many...)
	addUsage(t, db, many...)
	year, err := as.UsageSeries(ctx, "b", []string{analytics.Logout}, h0, h0.Add(1234*h), 24*h)
	if err != nil {
		t.Fatal(err)
	}
	var total, wantTotal int64
	for _, p := range year[analytics.Logout] {
		total += p.N
	}
	for _, c := range many {
		wantTotal += 2 * c.N
	}
	if len(year[analytics.Logout]) != 52 || total != wantTotal { // 1234 hours: 51 whole days and part of a 52nd
		t.Errorf("daily logouts over 1234 hours: %d points summing to %d, want 52 summing to %d", len(year[analytics.Logout]), total, wantTotal)
	}
}

// Flushes of several processes at once, touching the same rollups, all
// land: nothing lost, nothing counted twice, no deadlock.
func testAnalyticsConcurrentUsage(t *testing.T, db *store.DB) {
	addApp(t, db, "a")
	addApp(t, db, "b")
	const writers, rounds = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			for range rounds {
				var cs []analytics.Count
				// Each writer lists the cells in a different order.
				for i := range 40 {
					j := (i*7 + w*13) % 40
					app := []string{"a", "b"}[j%2]
					cs = append(cs, usage(app, analytics.Login, "", h0.Add(time.Duration(j/2)*time.Hour), 1))
				}
				if err := db.AnalyticsStore().AddUsage(context.Background(), cs); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent AddUsage: %v", err)
	}
	for _, app := range []string{"a", "b"} {
		s, err := db.AnalyticsStore().UsageSeries(context.Background(), app, []string{analytics.Login}, h0, h0.Add(20*time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pts := s[analytics.Login]
		if len(pts) != 20 {
			t.Fatalf("app %s: %d hours with logins, want 20", app, len(pts))
		}
		for _, p := range pts {
			if p.N != writers*rounds {
				t.Errorf("app %s at %v: %d logins, want %d", app, p.At, p.N, writers*rounds)
			}
		}
	}
}

// LiveSessions counts an app's sessions that have not ended;
// SampleSessions records that count for every app with live sessions (the
// same instant twice replaces), and SessionSeries keeps each bucket's
// highest sample.
func testAnalyticsSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AnalyticsStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	addApp(t, db, "idle")
	ka := addKeys(t, db, newKey("a", "K-1"))[0]
	kb := addKeys(t, db, newKey("b", "K-1"))[0]
	addSessions(t, db, newSession("a1", "a", ka.ID, t0), newSession("a2", "a", ka.ID, t0), newSession("a3", "a", ka.ID, t0),
		newSession("b1", "b", kb.ID, t0))
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.EndSession(ctx, "a3", license.CodeBanned, t0)
	})

	live := func(app string, want int64) {
		t.Helper()
		if n, err := as.LiveSessions(ctx, app); err != nil || n != want {
			t.Errorf("LiveSessions(%s) = %d, %v; want %d", app, n, err, want)
		}
	}
	live("a", 2)
	live("b", 1)
	live("idle", 0)

	sample := func(at time.Time) {
		t.Helper()
		if err := as.SampleSessions(ctx, at); err != nil {
			t.Fatalf("SampleSessions(%v): %v", at, err)
		}
	}
	m := time.Minute
	sample(h0.Add(5 * m))  // a: 2, b: 1
	sample(h0.Add(10 * m)) // the same counts
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.EndSession(ctx, "a2", license.CodeSessionExpired, t0)
	})
	sample(h0.Add(65 * m)) // a: 1 in the second hour
	addSessions(t, db, newSession("a4", "a", ka.ID, t0), newSession("a5", "a", ka.ID, t0))
	sample(h0.Add(65 * m)) // the same instant again: a: 3 replaces 1
	sample(h0.Add(70 * m)) // a: 3
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		return tx.EndSession(ctx, "b1", license.CodeBanned, t0)
	})
	sample(h0.Add(3 * time.Hour)) // b has no live session: no sample

	series := func(app string, from, to time.Time, step time.Duration, want ...analytics.Point) {
		t.Helper()
		got, err := as.SessionSeries(ctx, app, from, to, step)
		if err != nil {
			t.Fatal(err)
		}
		wantPoints(t, fmt.Sprintf("SessionSeries(%s, %v, %v, %v)", app, from, to, step), got, want...)
	}
	h := time.Hour
	series("a", h0, h0.Add(24*h), h, pt(h0, 2), pt(h0.Add(h), 3), pt(h0.Add(3*h), 3))
	series("a", h0, h0.Add(24*h), 24*h, pt(h0, 3))
	series("a", h0.Add(h), h0.Add(3*h), h, pt(h0.Add(h), 3))
	series("b", h0, h0.Add(24*h), h, pt(h0, 1), pt(h0.Add(h), 1))
	series("idle", h0, h0.Add(24*h), h)
}

// KeysByStatus counts all of an app's keys per status; Versions counts
// devices whose latest check is in [from, to) by the version they run,
// most devices first.
func testAnalyticsKeysAndVersions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AnalyticsStore()
	addApp(t, db, "a")
	addApp(t, db, "b")
	var keys []license.Key
	for i, st := range []license.Status{license.StatusActive, license.StatusActive, license.StatusActive, license.StatusBanned,
		license.StatusUnused, license.StatusExpired, license.StatusPaused, license.StatusUnused} {
		k := newKey("a", fmt.Sprintf("K-%d", i))
		k.Status = st
		keys = append(keys, k)
	}
	addKeys(t, db, keys...)
	addKeys(t, db, newKey("b", "K-0"))
	got, err := as.KeysByStatus(ctx, "a")
	want := map[string]int64{"active": 3, "banned": 1, "unused": 2, "expired": 1, "paused": 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("KeysByStatus(a) = %v, %v; want %v", got, err, want)
	}
	if got, err := as.KeysByStatus(ctx, "none"); err != nil || len(got) != 0 {
		t.Errorf("KeysByStatus of an app without keys = %v, %v; want empty", got, err)
	}

	m := time.Minute
	var checks []update.CheckRecord
	rec := func(app, device, current string, at time.Time) {
		checks = append(checks, update.CheckRecord{AppID: app, Device: device, Current: current, Channel: update.Stable, At: at})
	}
	rec("a", "d1", "1.0.0", h0.Add(-m)) // before the range
	rec("a", "d2", "1.1.0", h0)         // at from: counted
	rec("a", "d3", "1.1.0", h0.Add(m))
	rec("a", "d4", "2.0.0", h0.Add(2*m))
	rec("a", "d5", "1.0.0", h0.Add(3*m))
	rec("a", "d6", "1.0.0", h0.Add(4*m))
	rec("a", "d7", "0.9.0", h0.Add(time.Hour)) // at to: not counted
	rec("b", "d2", "9.0.0", h0.Add(m))
	if err := db.UpdateStore().RecordChecks(ctx, checks); err != nil {
		t.Fatal(err)
	}
	vs, err := as.Versions(ctx, "a", h0, h0.Add(time.Hour))
	wantVs := []analytics.VersionDevices{{Version: "1.0.0", Devices: 2}, {Version: "1.1.0", Devices: 2}, {Version: "2.0.0", Devices: 1}}
	if err != nil || !reflect.DeepEqual(vs, wantVs) {
		t.Errorf("Versions(a, first hour) = %+v, %v; want %+v (most devices first, then by version)", vs, err, wantVs)
	}
	if vs, err := as.Versions(ctx, "a", h0.Add(-time.Hour), h0); err != nil || !reflect.DeepEqual(vs,
		[]analytics.VersionDevices{{Version: "1.0.0", Devices: 1}}) {
		t.Errorf("Versions(a, the hour before) = %+v, %v; want one device on 1.0.0", vs, err)
	}
	if vs, err := as.Versions(ctx, "b", h0.Add(time.Hour), h0.Add(2*time.Hour)); err != nil || len(vs) != 0 {
		t.Errorf("Versions(b) of a range without checks = %+v, %v; want none", vs, err)
	}
}

// An app's rollups and samples go with the app; another app's stay.
func testAnalyticsDeleteAppCascades(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AnalyticsStore()
	addApp(t, db, "gone")
	addApp(t, db, "kept")
	kg := addKeys(t, db, newKey("gone", "K-1"))[0]
	kk := addKeys(t, db, newKey("kept", "K-1"))[0]
	addSessions(t, db, newSession("g", "gone", kg.ID, t0), newSession("k", "kept", kk.ID, t0))
	addUsage(t, db, usage("gone", analytics.Login, "", h0, 1), usage("kept", analytics.Login, "", h0, 2))
	if err := as.SampleSessions(ctx, h0); err != nil {
		t.Fatal(err)
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "gone") })
	for app, want := range map[string]int64{"gone": 0, "kept": 1} {
		u, err := as.UsageByCode(ctx, app, []string{analytics.Login}, h0, h0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		s, err := as.SessionSeries(ctx, app, h0, h0.Add(time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(len(u) + len(s)); got != 2*want {
			t.Errorf("after deleting app gone, app %s has usage %v and samples %v; want %s", app, u, s,
				map[bool]string{true: "both", false: "neither"}[want == 1])
		}
	}
}

// The analytics service over the store: a Recorder's flush and the
// samples come back in a zero-filled report.
func testAnalyticsReport(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "a")
	k := addKeys(t, db, newKey("a", "K-1"))[0]
	addSessions(t, db, newSession("s1", "a", k.ID, t0))
	rec := analytics.NewRecorder(db.AnalyticsStore())
	svc := analytics.NewService(db.AnalyticsStore())
	for range 3 {
		rec.Add("a", analytics.Login, "", h0.Add(90*time.Minute))
	}
	rec.Add("a", analytics.LoginFailed, license.CodeExpired, h0.Add(30*time.Minute))
	rec.Add("a", analytics.HeartbeatRefused, license.CodeHWIDReset, h0.Add(4*time.Hour))
	rec.Add("a", analytics.Login, "", h0.Add(30*time.Hour)) // outside the range
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Sample(ctx, h0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, err := svc.Report(ctx, "a", h0.Add(10*time.Minute), h0.Add(5*time.Hour+time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var d diffs
	d.eq("From", r.From, h0)
	d.eq("To", r.To, h0.Add(6*time.Hour))
	d.eq("ActiveNow", r.ActiveNow, int64(1))
	d.eq("Logins", ns(r.Logins), []int64{0, 3, 0, 0, 0, 0})
	d.eq("Active", ns(r.Active), []int64{0, 0, 1, 0, 0, 0})
	d.eq("Trials", ns(r.Trials), []int64{0, 0, 0, 0, 0, 0})
	d.eq("LoginFailures", r.LoginFailures, map[string]int64{license.CodeExpired: 1})
	d.eq("HeartbeatRefusals", r.HeartbeatRefusals, map[string]int64{license.CodeHWIDReset: 1})
	d.eq("KeysByStatus", r.KeysByStatus, map[string]int64{"unused": 1})
	d.eq("Versions", r.Versions, []analytics.VersionDevices{})
	d.report(t, "Report")
}

func ns(ps []analytics.Point) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.N
	}
	return out
}
