package loadtest

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// each calls do once for every i below n, from several goroutines, and
// reports the first failure.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := each(context.Background(), 8, 1000, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d indexes called, want 1000", len(seen))
	}
	for i := range 1000 {
		if seen[i] != 1 {
			t.Fatalf("index %d called %d times", i, seen[i])
		}
	}
	boom := errors.New("boom")
	err = each(context.Background(), 4, 1000, func(_ context.Context, i int) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the failure", err)
	}
}
