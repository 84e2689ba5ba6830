package loadtest

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestResultAddMergesRounds checks that rounds of a phase sum their counts
// and times and take percentiles over all their requests together.
func TestResultAddMergesRounds(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	var r Result
	r.add(Result{Name: "echo", Requests: 3, Elapsed: time.Second, lat: ms(1, 2, 3)})
	r.add(Result{Name: "echo", Requests: 2, Errors: 1, Elapsed: time.Second, FirstError: "refused", lat: ms(10, 20)})
	r.add(Result{Name: "echo", Requests: 1, Errors: 1, Elapsed: time.Second, FirstError: "later", lat: ms(4)})
	if r.Name != "echo" || r.Requests != 6 || r.Errors != 2 || r.Elapsed != 3*time.Second || r.RPS() != 2 {
		t.Errorf("merged %+v", r)
	}
	if r.FirstError != "refused" {
		t.Errorf("first error %q, want the earliest round's", r.FirstError)
	}
	// Nearest rank over 1 2 3 4 10 20 ms: p50 the 3rd, p99 the 6th.
	if r.P50 != 3*time.Millisecond || r.P99 != 20*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 3ms 20ms", r.P50, r.P99)
	}
}

// A sequence numbers each phase's requests on from where the phase before
// it stopped, so that phases shorter than a pass over the sessions do not
// all beat the same first ones.
func TestSequenceGoesOnAcrossPhases(t *testing.T) {
	var seq sequence
	var got []int
	record := func(_ context.Context, i int) error { got = append(got, i); return nil }
	for _, n := range []int{3, 2, 4} {
		do := seq.phase(record)
		for i := range n {
			do(context.Background(), i)
		}
		seq.done(int64(n))
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("request numbers %v, want %v", got, want)
	}
}
