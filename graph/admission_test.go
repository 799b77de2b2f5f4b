package graph

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A caller over its bound waits; another caller is admitted meanwhile; the
// waiting request is admitted when one of its caller's ends, in the order
// it came. On synctest's clock: synctest.Wait is "every goroutine is
// blocked", so nothing here waits for time to pass.
func TestAdmissionPerCaller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(2, 0, 0)
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
					a.release(l, false)
				}
			})
			synctest.Wait() // the first waits in line before the second comes
		}
		select {
		case i := <-order:
			t.Fatalf("request %d was admitted over its caller's bound", i)
		default:
		}
		if other := a.acquire(ctx, 11); other == nil {
			t.Fatal("another caller waits behind a busy one")
		} else {
			a.release(other, false)
		}
		a.release(l1, false)
		if i := <-order; i != 0 {
			t.Errorf("request %d was admitted first", i)
		}
		a.release(l2, false)
		if i := <-order; i != 1 {
			t.Errorf("request %d was admitted second", i)
		}
		wg.Wait()
		waitIdle(t, a)
	})
}

// A request that is not admitted by its deadline gives up at its deadline,
// and leaves no trace in the line.
func TestAdmissionDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(1, 0, 0)
		l := a.acquire(context.Background(), 10)
		const timeout = 30 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		if a.acquire(ctx, 10) != nil {
			t.Fatal("admitted over the bound")
		}
		if d := time.Since(start); d != timeout {
			t.Errorf("gave up after %v, want its deadline, %v", d, timeout)
		}
		a.release(l, false)
		waitIdle(t, a)
	})
}

// With a bound on places, each place that frees goes to the callers in
// turn: a caller with many requests waiting does not pass one that came
// later.
func TestAdmissionRoundRobin(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(100, 1, 0)
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
				a.release(l, false)
			})
			synctest.Wait() // in line before the next comes
		}
		for range 3 {
			enqueue(10)
		}
		enqueue(11)
		a.release(first, false)
		wg.Wait()
		if len(got) != 4 || got[0] != 10 || got[1] != 11 {
			t.Errorf("served %v, want caller 11 second", got)
		}
		waitIdle(t, a)
	})
}

// Many requests of a few callers, with random work and deadlines: the
// bounds hold throughout, and everything is released. (The work and the
// deadlines are on synctest's clock.)
func TestAdmissionUnderLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const perCaller, total = 3, 4
		a := newAdmission(perCaller, total, 0)
		var inFlight [4]atomic.Int32
		var all, over, admitted atomic.Int32
		var wg sync.WaitGroup
		for i := range 400 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(40))*time.Millisecond)
				defer cancel()
				l := a.acquire(ctx, callerID(10+i%4))
				if l == nil {
					return
				}
				admitted.Add(1)
				if inFlight[i%4].Add(1) > perCaller || all.Add(1) > total {
					over.Add(1)
				}
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
				inFlight[i%4].Add(-1)
				all.Add(-1)
				a.release(l, false)
			})
		}
		wg.Wait()
		if over.Load() > 0 {
			t.Errorf("a bound was passed %d times", over.Load())
		}
		if n := admitted.Load(); n < total || n == 400 {
			t.Errorf("%d of 400 requests admitted: the load did not make requests wait past their deadlines", n)
		}
		waitIdle(t, a)
	})
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

// pacedAdmission returns an admission with -caller-refusals refusals, and a
// context that has ended (acquire then admits only what needs no wait). The
// tests that pace run in a synctest bubble, whose clock moves only when
// they sleep.
func pacedAdmission(refusals int) (*admission, context.Context) {
	a := newAdmission(0, 0, refusals)
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	return a, expired
}

// admitN admits n requests of caller id one after another, each ended at
// once, refused or not; it fails if one waits.
func admitN(t *testing.T, a *admission, ctx context.Context, id callerID, n int, refused bool, what string) {
	t.Helper()
	for i := range n {
		l := a.acquire(ctx, id)
		if l == nil {
			t.Fatalf("%s: request %d waited", what, i)
		}
		a.release(l, refused)
	}
}

// A caller refused more than its allowance is paced: one of its requests
// an interval is admitted, while another caller, and a caller whose
// requests succeed however many it sends, are admitted at once; a waiting
// paced request is admitted when its turn comes, not before.
func TestAdmissionPacesRefusedCallers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const refusals = 20 // a burst of 40, then one each 50 ms
		a, expired := pacedAdmission(refusals)
		ctx := context.Background()
		admitN(t, a, expired, 10, 2*refusals+1, true, "the allowance, and the first paced request")
		if a.acquire(expired, 10) != nil {
			t.Fatal("a caller past its allowance was admitted before its turn")
		}
		admitN(t, a, expired, 11, 1000, false, "a caller whose requests succeed")
		if l := a.acquire(expired, 12); l == nil {
			t.Fatal("another caller waited behind a paced one")
		} else {
			a.release(l, true)
		}

		admitted := make(chan *callerLine, 1)
		go func() { admitted <- a.acquire(ctx, 10) }()
		time.Sleep(time.Second/refusals - time.Millisecond)
		synctest.Wait()
		select {
		case <-admitted:
			t.Fatal("a paced request was admitted before its turn")
		default:
		}
		time.Sleep(time.Millisecond)
		l := <-admitted
		if l == nil {
			t.Fatal("not admitted")
		}
		a.release(l, false)
		if a.acquire(expired, 10) != nil {
			t.Fatal("a paced caller's next request did not wait its turn")
		}

		// Paid off: the allowance comes back at refusals a second.
		time.Sleep(3 * time.Second)
		admitN(t, a, expired, 10, 2*refusals, false, "a caller that stopped being refused")
		waitIdleSoon(t, a)
	})
}

// Without -caller-refusals nobody is paced.
func TestAdmissionNoPacing(t *testing.T) {
	t.Parallel()
	a, expired := pacedAdmission(0)
	admitN(t, a, expired, 10, 1000, true, "no -caller-refusals")
	waitIdle(t, a)
}

// A paced caller's line is let in one by one as its allowance comes back,
// not all at once: while it is watched, each request in flight counts
// against the allowance until it ends.
func TestAdmissionPacedLineComesBackSlowly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const refusals = 20 // a burst of 40, then one each 50 ms
		a, expired := pacedAdmission(refusals)
		// The allowance spent, then the first paced request: -1 left.
		admitN(t, a, expired, 10, 2*refusals+1, true, "the allowance, and the first paced request")

		const waiting = 10
		admitted := make(chan *callerLine, waiting)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range waiting {
			wg.Go(func() {
				if l := a.acquire(ctx, 10); l != nil {
					admitted <- l
				}
			})
		}
		synctest.Wait() // all in line
		// Two intervals: the allowance is back to 1, and the next paced turn due.
		time.Sleep(2 * time.Second / refusals)
		synctest.Wait()
		var held []*callerLine
		for drained := false; !drained; {
			select {
			case l := <-admitted:
				held = append(held, l)
			default:
				drained = true
			}
		}
		if len(held) == 0 || len(held) > 2 {
			t.Errorf("%d of %d waiting requests were let in when the allowance came back to 1, want 1 or 2", len(held), waiting)
		}
		stop()
		wg.Wait()
		close(admitted)
		for l := range admitted {
			held = append(held, l)
		}
		for _, l := range held {
			a.release(l, false)
		}
		waitIdleSoon(t, a)
	})
}

// waitIdleSoon is waitIdle once any wake timer due has fired.
func waitIdleSoon(t *testing.T, a *admission) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		a.mu.Lock()
		idle := len(a.callers) == 0
		a.mu.Unlock()
		if idle {
			break
		}
	}
	waitIdle(t, a)
}
