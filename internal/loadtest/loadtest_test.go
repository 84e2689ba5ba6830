package loadtest_test

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// TestRunEveryMode drives a real server briefly in each mode and checks that
// the run provisioned what it was asked for, completed requests without a
// single failure, and removed its app afterwards.
func TestRunEveryMode(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Start(t, kwtest.Options{Engine: engine})
		for _, mode := range []loadtest.Mode{loadtest.Heartbeat, loadtest.Login, loadtest.CheckKey} {
			t.Run(string(mode), func(t *testing.T) {
				var marks []bool // Measured's calls
				rep, err := loadtest.Run(context.Background(), loadtest.Options{
					URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
					Mode: mode, Sessions: 40, Keys: 20, Conns: 4,
					Duration: 300 * time.Millisecond, Now: srv.Clock.Now,
					HalfRate: true,
					Measured: func(start bool) { marks = append(marks, start) },
				})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Target.Name != string(mode) || rep.Echo.Name != "echo" {
					t.Errorf("phase names %q, %q", rep.Echo.Name, rep.Target.Name)
				}
				phases := []loadtest.Result{rep.Echo, rep.Target}
				// --half-rate: the mode, then the echo, at half the rate,
				// through the paced client (paced.go).
				if rep.Half == nil || rep.HalfEcho == nil || rep.Half.Name != "half-rate" || rep.HalfEcho.Name != "echo-half" {
					t.Fatalf("half-rate phases %+v, %+v", rep.Half, rep.HalfEcho)
				}
				phases = append(phases, *rep.Half, *rep.HalfEcho)
				for _, r := range phases {
					if r.Requests == 0 || r.Errors != 0 {
						t.Errorf("%s: %d requests, %d errors (first: %s)", r.Name, r.Requests, r.Errors, r.FirstError)
					}
					if r.P50 <= 0 || r.P99 < r.P50 {
						t.Errorf("%s: p50 %v p99 %v", r.Name, r.P50, r.P99)
					}
				}
				if len(marks) != 2 || !marks[0] || marks[1] {
					t.Errorf("Measured called with %v, want [true false]", marks)
				}
				if mode == loadtest.Heartbeat && rep.Sessions != 40 {
					t.Errorf("opened %d sessions, want 40", rep.Sessions)
				}
				var out strings.Builder
				rep.Print(&out)
				if !strings.Contains(out.String(), string(mode)+" / echo:") {
					t.Errorf("report lacks the ratio line:\n%s", out.String())
				}
				apps := srv.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)
				if len(apps) != 0 {
					t.Errorf("%d apps left behind after the run", len(apps))
				}
			})
		}
	})
}

// TestMeasureCountsFailures checks the accounting: every call is a request,
// failed calls are errors, and the first failure is reported.
func TestMeasureCountsFailures(t *testing.T) {
	var calls atomic.Int64
	res := loadtest.Measure(context.Background(), "x", 3, 0, 50*time.Millisecond, func(ctx context.Context, i int) error {
		if calls.Add(1)%2 == 0 {
			return errOdd
		}
		return nil
	})
	if res.Requests != calls.Load() || res.Requests == 0 {
		t.Fatalf("requests %d, calls %d", res.Requests, calls.Load())
	}
	if res.Errors != res.Requests/2 {
		t.Errorf("errors %d, want %d", res.Errors, res.Requests/2)
	}
	if res.FirstError != errOdd.Error() {
		t.Errorf("first error %q", res.FirstError)
	}
}

type stringErr string

func (e stringErr) Error() string { return string(e) }

const errOdd = stringErr("every second call fails")

// TestRunRefusesBadCredentials makes sure a wrong admin password is an error
// before any load is generated.
func TestRunRefusesBadCredentials(t *testing.T) {
	srv := kwtest.Start(t, kwtest.Options{})
	_, err := loadtest.Run(context.Background(), loadtest.Options{URL: srv.URL, AdminUsername: "admin",
		AdminPassword: "wrong password", Duration: time.Millisecond, Now: srv.Clock.Now})
	if err == nil || !strings.Contains(err.Error(), "admin sign-in") {
		t.Fatalf("err = %v, want an admin sign-in failure", err)
	}
}

// TestMeasureAtKeepsToTheSchedule checks that a paced phase never sends more
// than its schedule allows (2 goroutines at 200 req/s for 100 ms: 20 slots)
// and does send. A slow machine sends fewer, never more, so nothing here
// depends on speed.
func TestMeasureAtKeepsToTheSchedule(t *testing.T) {
	var calls atomic.Int64
	res := loadtest.MeasureAt(context.Background(), "x", 2, 0, 100*time.Millisecond, 200, func(ctx context.Context, i int) error {
		calls.Add(1)
		return nil
	})
	if res.Requests != calls.Load() || res.Requests == 0 || res.Requests > 20 {
		t.Fatalf("requests %d (calls %d), want 1–20", res.Requests, calls.Load())
	}
}

// TestRunAlternatesRounds checks Options.Rounds: the echo and the mode
// measured by turns, each round's requests summed into one phase, and the
// profile hook around the mode's first round only.
func TestRunAlternatesRounds(t *testing.T) {
	srv := kwtest.Start(t, kwtest.Options{})
	var progress strings.Builder
	var marks []bool
	rep, err := loadtest.Run(context.Background(), loadtest.Options{
		URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
		Mode: loadtest.Heartbeat, Sessions: 20, Conns: 2, Now: srv.Clock.Now,
		Duration: 300 * time.Millisecond, Rounds: 3, Progress: &progress,
		Measured: func(start bool) { marks = append(marks, start) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(progress.String(), "\n") {
		if strings.HasPrefix(line, "round ") {
			steps = append(steps, line[:strings.Index(line, " for ")])
		}
	}
	want := []string{
		"round 1 of 3: measuring echo baseline", "round 1 of 3: measuring heartbeat",
		"round 2 of 3: measuring echo baseline", "round 2 of 3: measuring heartbeat",
		"round 3 of 3: measuring echo baseline", "round 3 of 3: measuring heartbeat",
	}
	if strings.Join(steps, "|") != strings.Join(want, "|") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range []loadtest.Result{rep.Echo, rep.Target} {
		// Each round runs until a request is due at or after its end.
		if r.Requests == 0 || r.Errors != 0 || r.Elapsed < 300*time.Millisecond || r.P99 < r.P50 {
			t.Errorf("%s: %d requests, %d errors, %v, p50 %v p99 %v", r.Name, r.Requests, r.Errors, r.Elapsed, r.P50, r.P99)
		}
	}
	if len(marks) != 2 || !marks[0] || marks[1] {
		t.Errorf("Measured called with %v, want [true false]", marks)
	}
	if len(rep.PerURL) != 1 || rep.PerURL[0].Requests != rep.Target.Requests {
		t.Errorf("per address %+v, want the mode's %d requests", rep.PerURL, rep.Target.Requests)
	}
	if len(rep.RoundRatios) != 3 {
		t.Fatalf("round ratios %v, want one per round", rep.RoundRatios)
	}
	for i, x := range rep.RoundRatios {
		if !(x > 0) || math.IsInf(x, 0) {
			t.Errorf("round %d ratio %v", i+1, x)
		}
	}
	var out strings.Builder
	rep.Print(&out)
	if !strings.Contains(out.String(), "in 3 alternating rounds") || !strings.Contains(out.String(), "heartbeat / echo by round:") {
		t.Errorf("report does not say the rounds:\n%s", out.String())
	}
}

// TestPrintShowsEachRound checks the report's line of per-round ratios:
// each round's figure in order and the spread between the lowest and the
// highest, and no such line for a single round.
func TestPrintShowsEachRound(t *testing.T) {
	rep := &loadtest.Report{Mode: loadtest.Heartbeat, Sessions: 10, Conns: 2, Rounds: 3,
		Echo:        loadtest.Result{Name: "echo", Requests: 300, Elapsed: time.Second},
		Target:      loadtest.Result{Name: "heartbeat", Requests: 255, Elapsed: time.Second},
		RoundRatios: []float64{0.81, 0.894, 0.846},
	}
	var out strings.Builder
	rep.Print(&out)
	if want := "heartbeat / echo: 85%\nheartbeat / echo by round: 81% 89% 85% (spread 8 points)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report:\n%s\nwant it to hold:\n%s", out.String(), want)
	}
	rep.Rounds, rep.RoundRatios = 1, []float64{0.85}
	out.Reset()
	rep.Print(&out)
	if strings.Contains(out.String(), "by round") {
		t.Errorf("a single round's report lists rounds:\n%s", out.String())
	}
}

// TestTextHoldsShortStrings checks the load tool's pointer-free strings:
// any string up to the limit comes back unchanged, a longer one is refused.
func TestTextHoldsShortStrings(t *testing.T) {
	for _, s := range []string{"", "ABCDE-FGHIJ-KLMNO-PQRST-UVWXY", "0b0e8f1c-7a52-4d2e-9a43-3c6f1f2b9d10", strings.Repeat("é", 35) + "x"} {
		v, err := loadtest.TextOf(s)
		if err != nil || v.String() != s {
			t.Errorf("TextOf(%q) = %q, %v", s, v.String(), err)
		}
	}
	if _, err := loadtest.TextOf(strings.Repeat("x", 72)); err == nil {
		t.Error("a 72-byte string fits")
	}
}
