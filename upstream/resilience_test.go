package upstream_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
)

// counting serves status to every request and counts them.
func counting(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"code":"x","message":"x","request_id":"r"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func codeOf(err error) string {
	var e *upstream.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestBreakerOpensOnFailuresAndProbesLater(t *testing.T) {
	t.Parallel()
	srv, hits := counting(t, http.StatusServiceUnavailable)
	c := newTestClient(t, srv.URL,
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: 50 * time.Millisecond}))
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
	if hits.Load() != 4 {
		t.Fatalf("the open breaker let a call through: %d calls", hits.Load())
	}
	time.Sleep(60 * time.Millisecond)
	if _, err := c.Budgets.Get(ctx, "b"); codeOf(err) != "x" || hits.Load() != 5 {
		t.Fatalf("after OpenFor, one probe should reach the upstream: %v, %d calls", err, hits.Load())
	}
}

func TestBreakerIgnoresClientErrors(t *testing.T) {
	t.Parallel()
	srv, hits := counting(t, http.StatusNotFound)
	c := newTestClient(t, srv.URL, upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute}))
	for range 30 {
		if _, err := c.Budgets.Get(as(t, "k"), "b"); !errors.Is(err, upstream.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	}
	if hits.Load() != 30 {
		t.Fatalf("404s tripped the breaker: %d of 30 calls sent", hits.Load())
	}
}

func TestRetryBudgetBoundsRetries(t *testing.T) {
	t.Parallel()
	srv, hits := counting(t, http.StatusServiceUnavailable)
	c := newTestClient(t, srv.URL,
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}),
		upstream.WithRetryBudget(upstream.RetryBudget{Ratio: 0, PerSecond: 0, Burst: 3}),
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

func TestMaxInFlightBoundsConcurrentCalls(t *testing.T) {
	t.Parallel()
	var cur, peak atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, upstream.WithMaxInFlight(2))
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { _, _ = c.Budgets.Planning(as(t, "k"), "b") })
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrent calls = %d, want 2", p)
	}
}
