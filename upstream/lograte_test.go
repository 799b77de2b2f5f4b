package upstream

import (
	"testing"
	"time"
)

// The bound writes LogBurst lines in a window, leaves out the rest, and the
// first line of a later window says how many were left out.
func TestLogRate(t *testing.T) {
	now := time.Unix(1000, 0)
	r := logRate{now: func() time.Time { return now }}
	for i := range LogBurst {
		if ok, n := r.allow(); !ok || n != 0 {
			t.Fatalf("line %d of the window: allowed %v, suppressed %d", i+1, ok, n)
		}
	}
	for range 5 {
		if ok, _ := r.allow(); ok {
			t.Fatal("a line past the burst was allowed")
		}
	}
	now = now.Add(LogEvery)
	if ok, n := r.allow(); !ok || n != 5 {
		t.Errorf("the next window's first line: allowed %v, suppressed %d, want true and 5", ok, n)
	}
	if ok, n := r.allow(); !ok || n != 0 {
		t.Errorf("its second: allowed %v, suppressed %d, want true and 0", ok, n)
	}
}
