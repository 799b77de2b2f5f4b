package upstream_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/costgw/gateway/upstream"
)

// The resilience tests call their upstream in process, through
// inProcessTransport, so that those of breakers opening and closing can run
// in a synctest bubble: its clock, which gobreaker reads, moves only when
// every goroutine of the test is blocked, and a goroutine reading a real
// connection is never blocked so.

// inProcessTransport serves each request with its handler on the calling
// goroutine.
type inProcessTransport struct{ h http.Handler }

func (t inProcessTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// newInProcessClient is newTestClient of an upstream that h serves in
// process.
func newInProcessClient(t *testing.T, h http.Handler, opts ...upstream.Option) *upstream.Client {
	t.Helper()
	hc := &http.Client{Transport: inProcessTransport{h}, Timeout: 10 * time.Second}
	return newTestClient(t, "http://upstream.test"+basePath, append([]upstream.Option{upstream.WithHTTPClient(hc)}, opts...)...)
}

// counting serves status to every request and counts them.
func counting(status int) (http.Handler, *atomic.Int64) {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"code":"x","message":"x","request_id":"r"}}`))
	}), &n
}

func codeOf(err error) string {
	var e *upstream.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// An open breaker refuses every call for OpenFor, on synctest's clock, and
// then lets one probe through.
func TestBreakerOpensOnFailuresAndProbesLater(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const openFor = 50 * time.Millisecond
		h, hits := counting(http.StatusServiceUnavailable)
		c := newInProcessClient(t, h,
			upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
			upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: openFor}))
		ctx := as(t, "k")
		for range 4 {
			if _, err := c.Budgets.Get(ctx, "b"); codeOf(err) != "x" {
				t.Fatalf("before tripping: %v", err)
			}
		}
		_, err := c.Budgets.Get(ctx, "b")
		if codeOf(err) != "circuit_open" || !errors.Is(err, upstream.ErrUnavailable) {
			t.Fatalf("after 4 failures: %v, want circuit_open matching ErrUnavailable", err)
		}
		time.Sleep(openFor - time.Millisecond)
		if _, err := c.Budgets.Get(ctx, "b"); codeOf(err) != "circuit_open" {
			t.Fatalf("just before OpenFor has passed: %v, want circuit_open", err)
		}
		if hits.Load() != 4 {
			t.Fatalf("the open breaker let a call through: %d calls", hits.Load())
		}
		time.Sleep(2 * time.Millisecond) // OpenFor has passed
		if _, err := c.Budgets.Get(ctx, "b"); codeOf(err) != "x" || hits.Load() != 5 {
			t.Fatalf("after OpenFor, one probe should reach the upstream: %v, %d calls", err, hits.Load())
		}
	})
}

func TestBreakerIgnoresClientErrors(t *testing.T) {
	t.Parallel()
	h, hits := counting(http.StatusNotFound)
	c := newInProcessClient(t, h, upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute}))
	for range 30 {
		if _, err := c.Budgets.Get(as(t, "k"), "b"); !errors.Is(err, upstream.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	}
	if hits.Load() != 30 {
		t.Fatalf("404s tripped the breaker: %d of 30 calls sent", hits.Load())
	}
}

func TestRetryQuotaBoundsRetries(t *testing.T) {
	t.Parallel()
	h, hits := counting(http.StatusServiceUnavailable)
	c := newInProcessClient(t, h,
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}),
		upstream.WithRetryQuota(upstream.RetryQuota{Ratio: 0, PerSecond: 0, Burst: 3}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{}))
	for range 5 {
		if _, err := c.Budgets.Get(as(t, "k"), "b"); !errors.Is(err, upstream.ErrUnavailable) {
			t.Fatalf("got %v", err)
		}
	}
	// 5 first attempts and the 3 retries the budget holds; 10 attempts each would be 50.
	if got := hits.Load(); got != 8 {
		t.Fatalf("upstream saw %d calls, want 8", got)
	}
}

// Six calls at once on a client of two in flight: two reach the upstream,
// and the other four wait (synctest.Wait: every goroutine is blocked) until
// those end.
func TestMaxInFlightBoundsConcurrentCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var cur, peak atomic.Int64
		release := make(chan struct{})
		c := newInProcessClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			cur.Add(-1)
			_, _ = w.Write([]byte(`{"data":{"plannings":[]}}`))
		}), upstream.WithMaxInFlight(2))
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() { _, _ = c.Budgets.Planning(as(t, "k"), "b") })
		}
		synctest.Wait()
		if n := cur.Load(); n != 2 {
			t.Errorf("%d of 6 calls reached the upstream at once, want 2", n)
		}
		close(release)
		wg.Wait()
		if p := peak.Load(); p != 2 {
			t.Fatalf("peak concurrent calls = %d, want 2", p)
		}
	})
}

// perKey answers 503 to the keys in failing and a planning grid to others,
// and counts requests per key.
func perKey(failing ...string) (http.Handler, *sync.Map) {
	var hits sync.Map // key → *atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		n, _ := hits.LoadOrStore(key, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		for _, k := range failing {
			if k == key {
				writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "r"))
				return
			}
		}
		writeJSON(w, http.StatusOK, `{"data":{"plannings":[]}}`)
	}), &hits
}

func hitsOf(m *sync.Map, key string) int64 {
	n, ok := m.Load(key)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// One caller whose calls all fail opens its own breaker, never the others':
// before, one breaker per host counted every caller's failures.
func TestOneCallerCannotOpenTheBreakerForOthers(t *testing.T) {
	t.Parallel()
	h, hits := perKey("failing-key")
	c := newInProcessClient(t, h,
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute}))
	for range 30 {
		_, _ = c.Budgets.Planning(as(t, "failing-key"), "b")
	}
	_, err := c.Budgets.Planning(as(t, "failing-key"), "b")
	if codeOf(err) != "circuit_open" || !errors.Is(err, upstream.ErrUnavailable) {
		t.Fatalf("the failing caller after 31 failures: %v, want its own breaker open", err)
	}
	if n := hitsOf(hits, "failing-key"); n != 4 {
		t.Errorf("the failing caller reached the upstream %d times, want 4 (then its breaker opened)", n)
	}
	for _, key := range []string{"other-1", "other-2"} {
		for range 5 {
			if _, err := c.Budgets.Planning(as(t, key), "b"); err != nil {
				t.Fatalf("%s: %v, want success: another caller's failures must not stop it", key, err)
			}
		}
	}
}

// The upstream failing for several callers opens the breaker of the host:
// then a caller that has seen no failure of its own is spared the calls too,
// for OpenFor on synctest's clock.
func TestHostBreakerTripsOnFailuresOfSeveralCallers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const openFor = 50 * time.Millisecond
		h, hits := perKey("a", "b", "c", "d")
		c := newInProcessClient(t, h,
			upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
			upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 6, FailureRatio: 0.5, Window: time.Minute, OpenFor: openFor, MinCallers: 3}))
		// Two callers failing are not enough, however often they fail...
		for range 3 {
			for _, key := range []string{"a", "b"} {
				_, _ = c.Budgets.Planning(as(t, key), "b")
			}
		}
		if _, err := c.Budgets.Planning(as(t, "fresh-1"), "b"); err != nil {
			t.Fatalf("after failures of two callers: %v, want success", err)
		}
		// ...a third one is.
		_, _ = c.Budgets.Planning(as(t, "c"), "b")
		_, err := c.Budgets.Planning(as(t, "fresh-2"), "b")
		if codeOf(err) != "circuit_open" {
			t.Fatalf("after failures of three callers: %v, want the host's breaker open", err)
		}
		time.Sleep(openFor - time.Millisecond)
		if _, err := c.Budgets.Planning(as(t, "fresh-3"), "b"); codeOf(err) != "circuit_open" {
			t.Fatalf("just before OpenFor has passed: %v, want the host's breaker open", err)
		}
		if n := hitsOf(hits, "fresh-2") + hitsOf(hits, "fresh-3"); n != 0 {
			t.Errorf("a call through the open host breaker reached the upstream %d times", n)
		}
		time.Sleep(2 * time.Millisecond) // OpenFor has passed
		if _, err := c.Budgets.Planning(as(t, "fresh-2"), "b"); err != nil {
			t.Fatalf("after OpenFor, a probe should get through: %v", err)
		}
	})
}

// Per-caller breakers are kept in a bounded set: a flood of keys cannot grow
// it, and a caller forgotten to make room starts afresh.
func TestCallerBreakersAreBounded(t *testing.T) {
	t.Parallel()
	h, _ := perKey("failing-key")
	c := newInProcessClient(t, h,
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 2, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute, MaxCallers: 8}))
	for range 3 {
		_, _ = c.Budgets.Planning(as(t, "failing-key"), "b")
	}
	if _, err := c.Budgets.Planning(as(t, "failing-key"), "b"); codeOf(err) != "circuit_open" {
		t.Fatalf("err = %v, want the caller's breaker open", err)
	}
	for i := range 100 {
		if _, err := c.Budgets.Planning(as(t, fmt.Sprintf("flood-%d", i)), "b"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Budgets.Planning(as(t, "failing-key"), "b"); codeOf(err) != "x" && codeOf(err) != "service_unavailable" {
		t.Errorf("err = %v: after 100 other callers, the failing caller's breaker should have been forgotten", err)
	}
}
