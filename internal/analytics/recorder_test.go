package analytics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeStore keeps AddUsage's counts in memory and answers reads from canned
// values; fail makes AddUsage (and every read) fail.
type fakeStore struct {
	mu      sync.Mutex
	fail    error
	calls   int
	totals  map[cell]int64
	enter   chan struct{} // when set, AddUsage signals here and waits on release
	release chan struct{}

	live     int64
	samples  []Point
	series   map[string][]Point
	byCode   map[string]map[string]int64
	keys     map[string]int64
	keysFail error // KeysByStatus's own failure
	versions []VersionDevices
	// got records the ranges the reads were asked for.
	gotFrom, gotTo time.Time
	gotStep        time.Duration
}

func newFakeStore() *fakeStore { return &fakeStore{totals: map[cell]int64{}} }

func (f *fakeStore) AddUsage(ctx context.Context, counts []Count) error {
	if f.enter != nil {
		f.enter <- struct{}{}
		<-f.release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	for _, c := range counts {
		f.totals[cell{c.AppID, c.Metric, c.Code, c.Hour.UnixMilli()}] += c.N
	}
	return nil
}

func (f *fakeStore) SampleSessions(ctx context.Context, at time.Time) error { return f.fail }

func (f *fakeStore) LiveSessions(ctx context.Context, appID string) (int64, error) {
	return f.live, f.fail
}

func (f *fakeStore) SessionSeries(ctx context.Context, appID string, from, to time.Time, step time.Duration) ([]Point, error) {
	f.gotFrom, f.gotTo, f.gotStep = from, to, step
	return f.samples, f.fail
}

func (f *fakeStore) UsageSeries(ctx context.Context, appID string, metrics []string, from, to time.Time,
	step time.Duration) (map[string][]Point, error) {
	return f.series, f.fail
}

func (f *fakeStore) UsageByCode(ctx context.Context, appID string, metrics []string, from, to time.Time) (map[string]map[string]int64, error) {
	return f.byCode, f.fail
}

func (f *fakeStore) KeysByStatus(ctx context.Context, appID string) (map[string]int64, error) {
	if f.keysFail != nil {
		return nil, f.keysFail
	}
	return f.keys, f.fail
}

func (f *fakeStore) Versions(ctx context.Context, appID string, from, to time.Time) ([]VersionDevices, error) {
	return f.versions, f.fail
}

var (
	base = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ctx  = context.Background()
)

// Many goroutines adding at once, then one flush: every count arrives,
// exactly, in one store call.
func TestRecorderConcurrentAdds(t *testing.T) {
	st := newFakeStore()
	r := NewRecorder(st)
	const goroutines, adds = 32, 5000
	metrics := []struct{ metric, code string }{
		{Login, ""}, {LoginFailed, "INVALID_KEY"}, {LoginFailed, "BANNED"}, {HeartbeatRefused, "SESSION_EXPIRED"}, {Trial, ""},
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range adds {
				m := metrics[(g+i)%len(metrics)]
				r.Add(fmt.Sprintf("app-%d", i%3), m.metric, m.code, base.Add(time.Duration(i%4)*time.Hour))
			}
		})
	}
	wg.Wait()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st.calls != 1 {
		t.Errorf("store calls = %d, want 1", st.calls)
	}
	var total int64
	for _, n := range st.totals {
		total += n
	}
	if total != goroutines*adds {
		t.Errorf("flushed %d events, want %d", total, goroutines*adds)
	}
	// Recount what each cell must hold.
	want := map[cell]int64{}
	for g := range goroutines {
		for i := range adds {
			m := metrics[(g+i)%len(metrics)]
			want[cell{fmt.Sprintf("app-%d", i%3), m.metric, m.code, base.Add(time.Duration(i%4) * time.Hour).UnixMilli()}]++
		}
	}
	if len(st.totals) != len(want) {
		t.Errorf("flushed %d cells, want %d", len(st.totals), len(want))
	}
	for k, n := range want {
		if st.totals[k] != n {
			t.Errorf("cell %+v = %d, want %d", k, st.totals[k], n)
		}
	}
	if r.Pending() != 0 {
		t.Errorf("Pending after a flush = %d, want 0", r.Pending())
	}
	if err := r.Flush(ctx); err != nil || st.calls != 1 {
		t.Errorf("flushing nothing = %v with %d store calls; want nil and no new call", err, st.calls)
	}
}

// A failed flush keeps its counts; they are written, with what was added
// since, by the next flush that succeeds.
func TestRecorderKeepsCountsWhenStoreFails(t *testing.T) {
	st := newFakeStore()
	r := NewRecorder(st)
	r.Add("a", Login, "", base)
	r.Add("a", Login, "", base)
	r.Add("a", LoginFailed, "EXPIRED", base)
	st.fail = errors.New("database is down")
	if err := r.Flush(ctx); !errors.Is(err, st.fail) {
		t.Fatalf("Flush = %v, want the store's error", err)
	}
	if err := r.Flush(ctx); !errors.Is(err, st.fail) {
		t.Fatalf("second Flush = %v, want the store's error", err)
	}
	r.Add("a", Login, "", base)
	if r.Pending() != 2 {
		t.Errorf("Pending = %d, want 2 cells kept", r.Pending())
	}
	st.fail = nil
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h := base.UnixMilli()
	if got := st.totals[cell{"a", Login, "", h}]; got != 3 {
		t.Errorf("logins = %d, want 3 (two kept through two failures, one added since)", got)
	}
	if got := st.totals[cell{"a", LoginFailed, "EXPIRED", h}]; got != 1 {
		t.Errorf("failures = %d, want 1", got)
	}
}

// Adds during a flush go to the next flush, never lost nor written twice.
func TestRecorderAddDuringFlush(t *testing.T) {
	st := newFakeStore()
	st.enter, st.release = make(chan struct{}), make(chan struct{})
	r := NewRecorder(st)
	r.Add("a", Login, "", base)
	done := make(chan error)
	go func() { done <- r.Flush(ctx) }()
	<-st.enter // the flush holds its batch and is writing it
	r.Add("a", Login, "", base)
	r.Add("a", Logout, "", base)
	st.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := st.totals[cell{"a", Login, "", base.UnixMilli()}]; got != 1 {
		t.Errorf("first flush wrote %d logins, want 1", got)
	}
	if r.Pending() != 2 {
		t.Errorf("Pending = %d, want the 2 cells added during the flush", r.Pending())
	}
	go func() { done <- r.Flush(ctx) }()
	<-st.enter
	st.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := st.totals[cell{"a", Login, "", base.UnixMilli()}]; got != 2 {
		t.Errorf("after two flushes: %d logins, want 2", got)
	}
}

// Counts land in the UTC hour that contains them, whatever the zone of the
// time given.
func TestRecorderHourBuckets(t *testing.T) {
	st := newFakeStore()
	r := NewRecorder(st)
	tokyo := time.FixedZone("JST", 9*3600)
	india := time.FixedZone("IST", 5*3600+1800) // a half-hour offset
	for _, at := range []time.Time{
		base,                                  // 10:00:00.000
		base.Add(time.Hour - time.Nanosecond), // 10:59:59.999999999
		base.In(tokyo).Add(30 * time.Minute),  // 19:30 JST = 10:30 UTC
		base.In(india).Add(59 * time.Minute),  // 16:29 IST = 10:59 UTC
		base.Add(time.Hour),                   // 11:00: the next hour
		base.Add(-time.Millisecond),           // 09:59:59.999: the hour before
		time.UnixMilli(-1).UTC(),              // before 1970: floor, not truncation
	} {
		r.Add("a", Login, "", at)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[cell]int64{
		{"a", Login, "", base.UnixMilli()}:                 4,
		{"a", Login, "", base.Add(time.Hour).UnixMilli()}:  1,
		{"a", Login, "", base.Add(-time.Hour).UnixMilli()}: 1,
		{"a", Login, "", -time.Hour.Milliseconds()}:        1,
	}
	if fmt.Sprint(st.totals) != fmt.Sprint(want) {
		t.Errorf("cells = %v, want %v", st.totals, want)
	}
}

// Add allocates nothing once its cell exists.
func TestRecorderAddDoesNotAllocate(t *testing.T) {
	r := NewRecorder(newFakeStore())
	r.Add("app", LoginFailed, "INVALID_KEY", base)
	if n := testing.AllocsPerRun(1000, func() { r.Add("app", LoginFailed, "INVALID_KEY", base) }); n != 0 {
		t.Errorf("Add allocates %.1f times per call, want 0", n)
	}
}

// Flush hands the store counts stamped with the UTC hour.
func TestRecorderFlushCounts(t *testing.T) {
	var got []Count
	st := &captureStore{fakeStore: newFakeStore(), got: &got}
	r := NewRecorder(st)
	r.Add("a", Activation, "", base.Add(10*time.Minute).In(time.FixedZone("X", -7*3600)))
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Hour.Equal(base) || got[0].Hour.Location() != time.UTC || got[0].N != 1 || got[0].Metric != Activation {
		t.Errorf("flushed %+v, want one activation at %v UTC", got, base)
	}
}

type captureStore struct {
	*fakeStore
	got *[]Count
}

func (c *captureStore) AddUsage(ctx context.Context, counts []Count) error {
	*c.got = append(*c.got, counts...)
	return nil
}

func BenchmarkRecorderAdd(b *testing.B) {
	r := NewRecorder(newFakeStore())
	codes := []string{"INVALID_KEY", "EXPIRED", "BANNED", "HWID_MISMATCH"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Add("app", LoginFailed, codes[i%len(codes)], base)
			i++
		}
	})
}
