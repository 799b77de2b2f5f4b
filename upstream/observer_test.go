package upstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// recorder is an Observer that keeps every attempt's result.
type recorder struct {
	mu      sync.Mutex
	started []upstream.Attempt
	results []upstream.AttemptResult
	keySeen bool // an attempt's context carried the bearer key
}

func (r *recorder) observe(ctx context.Context, a upstream.Attempt) (context.Context, func(upstream.AttemptResult)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, a)
	if _, ok := upstream.APIKeyFrom(ctx); ok {
		r.keySeen = true
	}
	return context.WithValue(ctx, attemptKey{}, a.Number), func(res upstream.AttemptResult) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.results = append(r.results, res)
	}
}

type attemptKey struct{}

func (r *recorder) count() (started, done int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started), len(r.results)
}

// countingRoundTripper counts the requests handed to the transport, as the
// gateway's access log did.
type countingRoundTripper struct {
	next http.RoundTripper
	n    atomic.Int64
	// attemptCtx counts requests whose context came from the observer.
	attemptCtx atomic.Int64
}

func (c *countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Context().Value(attemptKey{}) != nil {
		c.attemptCtx.Add(1)
	}
	return c.next.RoundTrip(r)
}

// Go's transport replays an idempotent request on a reused connection that
// broke, on its own: the upstream saw more attempts than the policy allows,
// and more than a RoundTripper around the transport counted. Now the retry
// loop is the only place that repeats a request, so the policy's bound
// holds, and every count is the upstream's.
func TestAttemptCountsMatchTheUpstreamUnderDroppedConnections(t *testing.T) {
	t.Parallel()
	t.Run("every request dropped after the first", func(t *testing.T) {
		t.Parallel()
		var seen atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) == 1 {
				writeJSON(w, http.StatusOK, `{"data":{"plannings":[]}}`) // warms a connection for reuse
				return
			}
			hangUp(t, w)
		}))
		t.Cleanup(srv.Close)
		rt := &countingRoundTripper{next: upstream.NewTransport()}
		var rec recorder
		policy := upstream.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
		c := newTestClient(t, srv.URL, upstream.WithRetry(policy), upstream.WithCircuitBreaker(upstream.BreakerSettings{}),
			upstream.WithHTTPClient(&http.Client{Transport: rt, Timeout: 5 * time.Second}), upstream.WithObserver(rec.observe))
		if _, err := c.Budgets.Planning(keyCtx(t), "b"); err != nil {
			t.Fatal(err)
		}
		for _, call := range []func() error{
			func() error { return errOf(c.Budgets.Planning(keyCtx(t), "b")) },
			func() error { return errOf(c.Budgets.Delete(keyCtx(t), "b")) },
			func() error { return errOf(c.Explorer.Summary(keyCtx(t), testQuery())) },
			func() error {
				return errOf(c.Budgets.Update(keyCtx(t), "b", &upstream.BudgetUpdate{Name: pointerTo("n")}, nil))
			},
		} {
			before := seen.Load()
			if err := call(); err == nil {
				t.Fatal("a call through dropped connections succeeded")
			}
			if got := seen.Load() - before; got != int64(policy.MaxAttempts) {
				t.Errorf("upstream saw %d attempts of one call, want the policy's %d", got, policy.MaxAttempts)
			}
		}
		started, done := rec.count()
		if n := seen.Load(); rt.n.Load() != n || int64(started) != n || int64(done) != n {
			t.Errorf("upstream saw %d requests; the RoundTripper counted %d, the observer %d started and %d done",
				n, rt.n.Load(), started, done)
		}
		if rt.attemptCtx.Load() != rt.n.Load() {
			t.Errorf("%d of %d requests carried the observer's context", rt.attemptCtx.Load(), rt.n.Load())
		}
	})
	t.Run("simulator dropping a share of answers", func(t *testing.T) {
		t.Parallel()
		s := sim.New(sim.Options{})
		rt := &countingRoundTripper{next: upstream.NewTransport()}
		var rec recorder
		c := simClient(t, s, s, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 25, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
			upstream.WithCircuitBreaker(upstream.BreakerSettings{}), upstream.WithRetryQuota(upstream.RetryQuota{Burst: 1000, PerSecond: 1000}),
			upstream.WithHTTPClient(&http.Client{Transport: rt, Timeout: 5 * time.Second}), upstream.WithObserver(rec.observe))
		s.SetFaults(sim.Faults{DropAfter: 0.3, DropBefore: 0.1})
		for range 3 {
			for _, err := range c.Anomalies.All(as(t, sim.DemoKey), 5) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		started, done := rec.count()
		n := s.TotalCalls()
		if rt.n.Load() != n || int64(started) != n || int64(done) != n {
			t.Errorf("upstream saw %d requests; the RoundTripper counted %d, the observer %d started and %d done",
				n, rt.n.Load(), started, done)
		}
		if pages := int64(3 * ((len(s.IDs(sim.DemoKey, sim.CollectionAnomalies)) + 4) / 5)); n <= pages {
			t.Errorf("%d requests for %d pages: the faults never hit", n, pages)
		}
	})
}

// The observer hears of every attempt with the route template, never the
// raw path, and its context never carries the bearer key.
func TestObserverSeesEveryAttempt(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		switch n {
		case 1:
			w.Header().Set("X-Request-Id", "req-1")
			writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "env-1"))
		case 2:
			hangUp(t, w)
		case 3:
			w.Header().Set("X-Request-Id", "req-3")
			writeJSON(w, http.StatusOK, `{"data":{"plannings":[]}}`)
		default:
			w.Header().Set("X-Request-Id", "req-4")
			writeJSON(w, http.StatusNotFound, envelope("not_found", "Budget not found", "env-4"))
		}
	})
	var rec recorder
	c := newTestClient(t, f.URL, upstream.WithObserver(rec.observe))
	if _, err := c.Budgets.Planning(keyCtx(t), "bud/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Budgets.Actuals(keyCtx(t), "bud_2"); err == nil {
		t.Fatal("want the 404")
	}
	host, port := c.Server()
	planning := upstream.Attempt{Op: "getBudgetPlanning", Method: "GET", Route: "/v1/budgets/{id}/planning", ServerAddress: host, ServerPort: port}
	actuals := upstream.Attempt{Op: "getBudgetActuals", Method: "GET", Route: "/v1/budgets/{id}/actuals", Number: 1, ServerAddress: host, ServerPort: port}
	if u, _ := url.Parse(f.URL); host != u.Hostname() || strconv.Itoa(port) != u.Port() {
		t.Errorf("Server() = %s, %d; the client calls %s", host, port, f.URL)
	}
	at := func(a upstream.Attempt, n int) upstream.Attempt { a.Number = n; return a }
	want := []upstream.AttemptResult{
		{Attempt: at(planning, 1), Status: 503, RequestID: "env-1", Class: upstream.ClassServerError, Sent: true},
		{Attempt: at(planning, 2), Class: upstream.ClassNoResponse, Sent: true},
		{Attempt: at(planning, 3), Status: 200, RequestID: "req-3", Class: upstream.ClassOK, Sent: true},
		{Attempt: actuals, Status: 404, RequestID: "env-4", Class: upstream.ClassClientError, Sent: true},
	}
	if diff := cmp.Diff(want, rec.results, cmpopts.IgnoreFields(upstream.AttemptResult{}, "Duration")); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, r := range rec.results {
		if r.Duration <= 0 {
			t.Errorf("attempt %+v has no duration", r.Attempt)
		}
	}
	if rec.keySeen {
		t.Error("the observer's context carried the bearer key")
	}
}
