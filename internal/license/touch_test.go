package license

import (
	"fmt"
	"testing"
	"time"
)

func TestTouchBuffer(t *testing.T) {
	b := newTouchBuffer()
	t0 := time.Unix(1_790_000_000, 0)
	for i := range 200 {
		b.touch(fmt.Sprint("s", i), Touch{SeenKey: int64(100 + i), TokenHash: fmt.Sprint("h", i), At: t0.Add(time.Duration(i) * time.Second)})
	}
	b.forget("s7")
	if _, ok := b.last("s7"); ok {
		t.Fatal("last(s7) after forget: still buffered")
	}
	batch := b.take()
	if len(batch) != 199 {
		t.Fatalf("take: %d sessions, want 199", len(batch))
	}
	if got, ok := b.last("s5"); !ok || !got.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("last(s5) while its batch is written = %v %v, want %v", got, ok, t0.Add(5*time.Second))
	}
	if again := b.take(); len(again) != 0 {
		t.Fatalf("second take: %d sessions, want 0", len(again))
	}
	// A failed write puts the batch back without overwriting newer beats.
	b.touch("s1", Touch{SeenKey: 101, TokenHash: "h1", At: t0.Add(time.Hour)})
	b.putBack(batch)
	batch = b.take()
	if len(batch) != 199 || !batch["s1"].At.Equal(t0.Add(time.Hour)) || !batch["s2"].At.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("after putBack: %d sessions, s1=%v s2=%v", len(batch), batch["s1"], batch["s2"])
	}
	// What the store writes by travels with the time.
	if s2 := batch["s2"]; s2.SeenKey != 102 || s2.TokenHash != "h2" {
		t.Fatalf("after putBack: s2 = %+v, want seen key 102 and token hash h2", s2)
	}
}
