package gopool

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Every function runs, once, and none waits for another to end: a hundred
// functions that each wait until all have started finish.
func TestGoRunsEachFunctionAtOnce(t *testing.T) {
	const n = 100
	var started sync.WaitGroup
	started.Add(n)
	var done sync.WaitGroup
	done.Add(n)
	var runs atomic.Int64
	for range n {
		Go(func() {
			defer done.Done()
			runs.Add(1)
			started.Done()
			started.Wait()
		})
	}
	done.Wait()
	if got := runs.Load(); got != n {
		t.Fatalf("%d runs of %d functions", got, n)
	}
}
