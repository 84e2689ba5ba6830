package analytics

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// Report refuses what it cannot answer with MISSING_FIELDS, naming the field.
func TestReportValidation(t *testing.T) {
	svc := NewService(newFakeStore())
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		app      string
		from, to time.Time
		step     time.Duration
		field    string // "" when the report is valid
	}{
		{"no app", "", base, base.Add(day), Hourly, "app_id"},
		{"no from", "a", time.Time{}, base.Add(day), Hourly, "from"},
		{"no to", "a", base, time.Time{}, Hourly, "to"},
		{"step of two hours", "a", base, base.Add(day), 2 * time.Hour, "step"},
		{"step of a minute", "a", base, base.Add(day), time.Minute, "step"},
		{"no step", "a", base, base.Add(day), 0, "step"},
		{"empty range", "a", base, base, Daily, "to"},
		{"reversed range", "a", base.Add(day), base, Daily, "to"},
		{"367 days", "a", base, base.Add(367 * day), Daily, "from"},
		{"366 days and a millisecond", "a", base, base.Add(366*day + time.Millisecond), Daily, "from"},
		{"366 days", "a", base, base.Add(366 * day), Daily, ""},
		{"366 days hourly", "a", base, base.Add(366 * day), Hourly, ""},
		{"one millisecond", "a", base, base.Add(time.Millisecond), Hourly, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := svc.Report(ctx, tc.app, tc.from, tc.to, tc.step)
			if tc.field == "" {
				if err != nil || r == nil {
					t.Fatalf("Report = %v, %v; want a report", r, err)
				}
				return
			}
			e := apperr.From(err)
			if err == nil || e.Kind != apperr.Invalid || e.Code != "MISSING_FIELDS" || !containsWord(e.Message, tc.field) {
				t.Errorf("Report = %v, %v; want MISSING_FIELDS (invalid) naming %s", r, err, tc.field)
			}
		})
	}
}

// containsWord reports whether msg (apperr.Missing or InvalidField) names field.
func containsWord(msg, field string) bool {
	return strings.Contains(msg, "field: "+field+".") || strings.Contains(msg, "field "+field+":")
}

// The range widens to whole UTC steps and every series has one point per
// step, zero where the store had nothing.
func TestReportFillsWholeSteps(t *testing.T) {
	st := newFakeStore()
	h := time.Hour
	st.live = 7
	st.samples = []Point{{base.Add(2 * h), 40}}
	st.series = map[string][]Point{
		Login:      {{base, 5}, {base.Add(3 * h), 2}},
		Activation: {{base.Add(h), 1}},
	}
	st.byCode = map[string]map[string]int64{LoginFailed: {"INVALID_KEY": 9}}
	st.versions = []VersionDevices{{"1.0.0", 3}}
	svc := NewService(st)
	cet := time.FixedZone("CET", 3600)
	// 11:20 CET = 10:20 UTC to 14:05 UTC: hours 10, 11, 12, 13 and 14.
	r, err := svc.Report(ctx, "a", base.Add(20*time.Minute).In(cet), base.Add(4*h+5*time.Minute), Hourly)
	if err != nil {
		t.Fatal(err)
	}
	if !r.From.Equal(base) || !r.To.Equal(base.Add(5*h)) || r.From.Location() != time.UTC || r.Step != Hourly {
		t.Errorf("range = %v to %v by %v, want %v to %v by an hour, in UTC", r.From, r.To, r.Step, base, base.Add(5*h))
	}
	if !st.gotFrom.Equal(base) || !st.gotTo.Equal(base.Add(5*h)) || st.gotStep != Hourly {
		t.Errorf("store asked for %v to %v by %v, want the widened range", st.gotFrom, st.gotTo, st.gotStep)
	}
	for name, got := range map[string][]Point{"Logins": r.Logins, "Activations": r.Activations, "Trials": r.Trials,
		"Logouts": r.Logouts, "Active": r.Active} {
		if len(got) != 5 {
			t.Errorf("%s has %d points, want 5", name, len(got))
			continue
		}
		for i, p := range got {
			if !p.At.Equal(base.Add(time.Duration(i) * h)) {
				t.Errorf("%s point %d at %v, want %v", name, i, p.At, base.Add(time.Duration(i)*h))
			}
		}
	}
	if got, want := ns(r.Logins), []int64{5, 0, 0, 2, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("Logins = %v, want %v", got, want)
	}
	if got, want := ns(r.Activations), []int64{0, 1, 0, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("Activations = %v, want %v", got, want)
	}
	if got, want := ns(r.Active), []int64{0, 0, 40, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("Active = %v, want %v", got, want)
	}
	if r.ActiveNow != 7 || r.LoginFailures["INVALID_KEY"] != 9 || r.HeartbeatRefusals == nil || len(r.HeartbeatRefusals) != 0 ||
		r.KeysByStatus == nil || !reflect.DeepEqual(r.Versions, st.versions) {
		t.Errorf("report = %+v; want ActiveNow 7, 9 INVALID_KEY, empty (not nil) refusals and keys, the store's versions", r)
	}
}

// Daily steps are UTC days; a range already on day boundaries stays as is.
func TestReportDaily(t *testing.T) {
	st := newFakeStore()
	day0 := base.Truncate(Daily)
	st.series = map[string][]Point{Trial: {{day0.Add(Daily), 4}}}
	r, err := NewService(st).Report(ctx, "a", day0, day0.Add(3*Daily), Daily)
	if err != nil {
		t.Fatal(err)
	}
	if !r.From.Equal(day0) || !r.To.Equal(day0.Add(3*Daily)) {
		t.Errorf("range = %v to %v, want %v to %v", r.From, r.To, day0, day0.Add(3*Daily))
	}
	if got, want := ns(r.Trials), []int64{0, 4, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("Trials = %v, want %v", got, want)
	}
	if r.Versions == nil || len(r.Versions) != 0 {
		t.Errorf("Versions = %#v, want empty, not nil", r.Versions)
	}
}

// A store failure is the report's failure.
func TestReportStoreError(t *testing.T) {
	st := newFakeStore()
	st.fail = errors.New("boom")
	if _, err := NewService(st).Report(ctx, "a", base, base.Add(time.Hour), Hourly); !errors.Is(err, st.fail) {
		t.Errorf("Report = %v, want the store's error", err)
	}
	if err := NewService(st).Sample(ctx, base); !errors.Is(err, st.fail) {
		t.Errorf("Sample = %v, want the store's error", err)
	}
	// The key count runs beside the other reads; its failure is the
	// report's too.
	st = newFakeStore()
	st.keysFail = errors.New("keys unavailable")
	if r, err := NewService(st).Report(ctx, "a", base, base.Add(time.Hour), Hourly); !errors.Is(err, st.keysFail) {
		t.Errorf("Report = %+v, %v; want the key count's error", r, err)
	}
}

func ns(ps []Point) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.N
	}
	return out
}
