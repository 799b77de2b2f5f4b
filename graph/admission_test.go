package graph

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A caller over its bound waits; another caller is admitted meanwhile; the
// waiting request is admitted when one of its caller's ends, in the order
// it came.
func TestAdmissionPerCaller(t *testing.T) {
	t.Parallel()
	a := newAdmission(2, 0)
	ctx := context.Background()
	l1, l2 := a.acquire(ctx, 10), a.acquire(ctx, 10)
	if l1 == nil || l2 == nil {
		t.Fatal("the first two requests of a caller wait")
	}
	order := make(chan int, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if l := a.acquire(ctx, 10); l != nil {
				order <- i
				time.Sleep(10 * time.Millisecond)
				a.release(l)
			}
		})
		time.Sleep(20 * time.Millisecond) // the first waits before the second
	}
	select {
	case i := <-order:
		t.Fatalf("request %d was admitted over its caller's bound", i)
	case <-time.After(50 * time.Millisecond):
	}
	if other := a.acquire(ctx, 11); other == nil {
		t.Fatal("another caller waits behind a busy one")
	} else {
		a.release(other)
	}
	a.release(l1)
	if i := <-order; i != 0 {
		t.Errorf("request %d was admitted first", i)
	}
	a.release(l2)
	if i := <-order; i != 1 {
		t.Errorf("request %d was admitted second", i)
	}
	wg.Wait()
	waitIdle(t, a)
}

// A request that is not admitted by its deadline gives up, and leaves no
// trace in the line.
func TestAdmissionDeadline(t *testing.T) {
	t.Parallel()
	a := newAdmission(1, 0)
	l := a.acquire(context.Background(), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if a.acquire(ctx, 10) != nil {
		t.Fatal("admitted over the bound")
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > time.Second {
		t.Errorf("gave up after %v", d)
	}
	a.release(l)
	waitIdle(t, a)
}

// With a bound on places, each place that frees goes to the callers in
// turn: a caller with many requests waiting does not pass one that came
// later.
func TestAdmissionRoundRobin(t *testing.T) {
	t.Parallel()
	a := newAdmission(100, 1)
	ctx := context.Background()
	first := a.acquire(ctx, 10)
	var mu sync.Mutex
	var got []callerID
	var wg sync.WaitGroup
	enqueue := func(id callerID) {
		wg.Go(func() {
			l := a.acquire(ctx, id)
			mu.Lock()
			got = append(got, id)
			mu.Unlock()
			a.release(l)
		})
		time.Sleep(5 * time.Millisecond)
	}
	for range 3 {
		enqueue(10)
	}
	enqueue(11)
	a.release(first)
	wg.Wait()
	if len(got) != 4 || got[0] != 10 || got[1] != 11 {
		t.Errorf("served %v, want caller 11 second", got)
	}
	waitIdle(t, a)
}

// Many requests of a few callers, with random work and deadlines: the
// bounds hold throughout, and everything is released.
func TestAdmissionUnderLoad(t *testing.T) {
	t.Parallel()
	const perCaller, total = 3, 4
	a := newAdmission(perCaller, total)
	var inFlight [4]atomic.Int32
	var all, over atomic.Int32
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(40))*time.Millisecond)
			defer cancel()
			l := a.acquire(ctx, callerID(10+i%4))
			if l == nil {
				return
			}
			if inFlight[i%4].Add(1) > perCaller || all.Add(1) > total {
				over.Add(1)
			}
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			inFlight[i%4].Add(-1)
			all.Add(-1)
			a.release(l)
		})
	}
	wg.Wait()
	if over.Load() > 0 {
		t.Errorf("a bound was passed %d times", over.Load())
	}
	waitIdle(t, a)
}

// waitIdle fails unless the admission comes back to nothing held.
func waitIdle(t *testing.T, a *admission) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.placed != 0 || len(a.callers) != 0 || len(a.turns) != 0 {
		t.Errorf("left %d places held, %d callers, %d turns", a.placed, len(a.callers), len(a.turns))
	}
}
