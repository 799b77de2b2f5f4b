package loaders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testlog"

	"github.com/graph-gophers/dataloader/v7"
)

// counting is a fetch that records its calls and answers key*10.
type counting struct {
	calls          atomic.Int32
	inFlight, most atomic.Int32
	hold           chan struct{} // when not nil, calls wait for it to close
	started        chan struct{} // when not nil, has a value for each call started
}

// holding is a counting whose calls wait for hold to close, and say that
// they have started (up to n not yet waited for).
func holding(n int) *counting {
	return &counting{hold: make(chan struct{}), started: make(chan struct{}, n)}
}

// waitStarted waits for n calls of c to start, failing if they do not in 5 s.
func (c *counting) waitStarted(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for i := range n {
		select {
		case <-c.started:
		case <-timeout:
			t.Fatalf("%d of %d calls started in 5s", i, n)
		}
	}
}

func (c *counting) fetch(ctx context.Context, key int) (int, error) {
	c.calls.Add(1)
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case c.started <- struct{}{}:
	default: // nil, or n calls started that the test has not waited for
	}
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if key < 0 {
		return 0, errors.New("negative")
	}
	return key * 10, nil
}

func TestLoaderFetchesEachKeyOnce(t *testing.T) {
	t.Parallel()
	var c counting
	l := newLoader(&fetcher{sem: make(chan struct{}, 10)}, c.fetch)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			key := i % 5
			if v, err := l.Load(context.Background(), key)(); err != nil || v != key*10 {
				t.Errorf("Load(%d) = %d, %v", key, v, err)
			}
		})
	}
	wg.Wait()
	if n := c.calls.Load(); n != 5 {
		t.Errorf("%d calls for 5 keys", n)
	}
	// Errors are kept too: asking again does not call again.
	for range 2 {
		if _, err := l.Load(context.Background(), -1)(); err == nil {
			t.Error("want the fetch's error")
		}
	}
	if n := c.calls.Load(); n != 6 {
		t.Errorf("%d calls, want 6", n)
	}
}

// A call starts when its key is first asked for, before anyone waits.
func TestLoaderStartsAtOnce(t *testing.T) {
	t.Parallel()
	started := make(chan int, 1)
	l := newLoader(&fetcher{sem: make(chan struct{}, 1)}, func(_ context.Context, k int) (int, error) { started <- k; return k, nil })
	l.Load(context.Background(), 7)
	select {
	case k := <-started:
		if k != 7 {
			t.Errorf("started %d", k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not start without a wait")
	}
}

// Keys asked for in a row from one goroutine, as a page's prefetch asks
// (here twice the budgets of the largest page and their actuals), all have
// their calls in flight at once.
func TestLoaderTakesKeysInARow(t *testing.T) {
	t.Parallel()
	const n = 200
	c := holding(n)
	l := newLoader(&fetcher{sem: make(chan struct{}, n)}, c.fetch)
	waits := make([]dataloader.Thunk[int], n)
	for i := range waits {
		waits[i] = l.Load(context.Background(), i)
	}
	c.waitStarted(t, n)
	if got := c.inFlight.Load(); got != n {
		t.Errorf("%d calls in flight, want all %d", got, n)
	}
	close(c.hold)
	for i, w := range waits {
		if v, err := w(); err != nil || v != i*10 {
			t.Errorf("key %d: %d, %v", i, v, err)
		}
	}
}

func TestLoaderBoundsCallsInFlight(t *testing.T) {
	t.Parallel()
	c := holding(10)
	l := newLoader(&fetcher{sem: make(chan struct{}, 3)}, c.fetch)
	waits := make([]dataloader.Thunk[int], 10)
	for i := range waits {
		waits[i] = l.Load(context.Background(), i)
	}
	c.waitStarted(t, 3) // as many as may be in flight, which the others wait behind
	close(c.hold)
	for i, w := range waits {
		if v, err := w(); err != nil || v != i*10 {
			t.Errorf("key %d: %d, %v", i, v, err)
		}
	}
	if m := c.most.Load(); m != 3 {
		t.Errorf("at most %d calls in flight, want 3", m)
	}
}

func TestLoaderPrimeAndClear(t *testing.T) {
	t.Parallel()
	var c counting
	l := newLoader(&fetcher{sem: make(chan struct{}, 1)}, c.fetch)
	l.Prime(context.Background(), 1, 99)
	if v, _ := l.Load(context.Background(), 1)(); v != 99 || c.calls.Load() != 0 {
		t.Errorf("primed key: %d after %d calls", v, c.calls.Load())
	}
	l.Prime(context.Background(), 1, 5) // a known key keeps its value
	if v, _ := l.Load(context.Background(), 1)(); v != 99 {
		t.Errorf("re-primed key = %d, want 99", v)
	}
	l.Clear(context.Background(), 1)
	if v, _ := l.Load(context.Background(), 1)(); v != 10 || c.calls.Load() != 1 {
		t.Errorf("cleared key: %d after %d calls", v, c.calls.Load())
	}
}

// Loading a key the loader holds allocates nothing: most loads of a request
// are of keys loaded before (the lookahead's, then the fields').
func TestLoadOfAKeyHeldAllocatesNothing(t *testing.T) {
	var c counting
	l := newLoader(&fetcher{sem: make(chan struct{}, 1)}, c.fetch)
	ctx := context.Background()
	if v, err := l.Load(ctx, 3)(); v != 30 || err != nil {
		t.Fatalf("Load(3) = %d, %v", v, err)
	}
	var th dataloader.Thunk[int]
	allocs := testing.AllocsPerRun(100, func() { th = l.Load(ctx, 3) })
	if v, err := th(); v != 30 || err != nil || c.calls.Load() != 1 {
		t.Errorf("Load(3) = %d, %v after %d calls", v, err, c.calls.Load())
	}
	if allocs != 0 {
		t.Errorf("%v allocations to load a held key", allocs)
	}
}

// The first load of a key starts its call with a handful of allocations
// (the call's state, its channel, the closure that runs it, its thunk, the
// cache's share): through dataloader's batcher, with its two goroutines, its
// timer and its channels, it took 22.
func TestFirstLoadOfAKeyAllocatesLittle(t *testing.T) {
	var c counting
	l := newLoader(&fetcher{sem: make(chan struct{}, 1)}, c.fetch)
	ctx := context.Background()
	k := 0
	n := testing.AllocsPerRun(1000, func() {
		k++
		if v, err := l.Load(ctx, k)(); v != k*10 || err != nil {
			t.Fatalf("Load(%d) = %d, %v", k, v, err)
		}
	})
	if n > 6 {
		t.Errorf("%v allocations to load a new key, want at most 6", n)
	}
}

// A panicking fetch is an error for its key, logged once with its stack.
func TestLoaderRecoversPanics(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	l := newLoader(&fetcher{sem: make(chan struct{}, 1), log: slog.New(slog.NewJSONHandler(logs, nil))},
		func(context.Context, int) (int, error) { panic("boom") })
	if _, err := l.Load(context.Background(), 1)(); err == nil {
		t.Error("want an error from a panicking fetch")
	}
	lines := logs.JSONLines(t)
	if len(lines) != 1 || lines[0]["panic"] != "boom" || !strings.Contains(fmt.Sprint(lines[0]["stack"]), "goroutine") {
		t.Errorf("log lines: %v", lines)
	}
}

// A call waiting for a place ends with its context.
func TestLoaderCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	c := holding(2)
	defer close(c.hold)
	l := newLoader(&fetcher{sem: make(chan struct{}, 1)}, c.fetch)
	// Both keys of one request, which shares one context.
	ctx, cancel := context.WithCancel(context.Background())
	l.Load(ctx, 1) // takes the only place
	c.waitStarted(t, 1)
	w := l.Load(ctx, 2)
	cancel()
	if _, err := w(); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// Forget, after a write, clears only the loaders the request made: it
// makes none (here, none could be made: there is no client).
func TestForgetMakesNoLoader(t *testing.T) {
	t.Parallel()
	l := New(nil, Options{})
	l.Forget(context.Background(), "b")
	if l.budget.l.Load() != nil || l.actuals.l.Load() != nil || l.planning.l.Load() != nil {
		t.Error("Forget made a loader")
	}
}

// Shape makes what it is asked once per loaded answer and kind, however
// many fields ask at once: aliases of one Explorer history once shaped its
// rows once each, six times the work of one before -max-answer-values
// stopped them, where they now share it.
func TestShapeOncePerAnswerAndKind(t *testing.T) {
	t.Parallel()
	l := New(nil, Options{})
	a, b := new(int), new(int)
	var made atomic.Int32
	shape := func(n int) func() (int, error) {
		return func() (int, error) { made.Add(1); return n, nil }
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if got, err := Shape(l, a, "rows", shape(7)); got != 7 || err != nil {
				t.Errorf("Shape = %d, %v; want 7", got, err)
			}
		})
	}
	wg.Wait()
	if n := made.Load(); n != 1 {
		t.Fatalf("made %d times for one answer and kind, want once", n)
	}
	if got, _ := Shape(l, a, "rows+raw", shape(8)); got != 8 {
		t.Errorf("another kind of the same answer: %d, want 8", got)
	}
	if got, _ := Shape(l, b, "rows", shape(9)); got != 9 {
		t.Errorf("another answer: %d, want 9", got)
	}
	if n := made.Load(); n != 3 {
		t.Errorf("made %d times for three answers and kinds, want 3", n)
	}
	fail := errors.New("bad answer")
	for range 2 {
		if _, err := Shape(l, b, "failing", func() (int, error) { made.Add(1); return 0, fail }); !errors.Is(err, fail) {
			t.Errorf("err = %v, want the shape's error each time", err)
		}
	}
	if n := made.Load(); n != 4 {
		t.Errorf("a failing shape made %d times in all, want once", n-3)
	}
}

// Get makes a key's call on the goroutine that asks, and shares it as Load
// does: with other Gets of the key, with a Load before or after it, its
// error kept, a panic of the fetch an error.
func TestLoaderGetSharesCalls(t *testing.T) {
	t.Parallel()
	c := holding(2)
	l := newLoader(&fetcher{sem: make(chan struct{}, 10)}, c.fetch)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			key := i % 2
			if v, err := l.Get(ctx, key); err != nil || v != key*10 {
				t.Errorf("Get(%d) = %d, %v", key, v, err)
			}
		})
	}
	c.waitStarted(t, 2) // each key's one call
	close(c.hold)
	wg.Wait()
	if v, err := l.Load(ctx, 1)(); err != nil || v != 10 {
		t.Errorf("Load(1) after Get = %d, %v", v, err)
	}
	l.Load(ctx, 2)
	if v, err := l.Get(ctx, 2); err != nil || v != 20 {
		t.Errorf("Get(2) after Load = %d, %v", v, err)
	}
	for range 2 {
		if _, err := l.Get(ctx, -1); err == nil {
			t.Error("Get(-1): want the fetch's error")
		}
	}
	if n := c.calls.Load(); n != 4 {
		t.Errorf("%d calls for 4 keys", n)
	}
	p := newLoader(&fetcher{sem: make(chan struct{}, 1)}, func(context.Context, int) (int, error) { panic("boom") })
	if _, err := p.Get(ctx, 1); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Get of a panicking fetch: %v", err)
	}
}
