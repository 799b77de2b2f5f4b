package graph_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOperationsInFlightAreBoundedNotRefused: with -requests-in-flight 2,
// eight concurrent requests each get their answer, and no more than two
// operations are ever executing (their upstream calls in flight) at once.
func TestOperationsInFlightAreBoundedNotRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(0, 2))
	var now, peak atomic.Int32
	e.calls.fail = func(*http.Request) *http.Response {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		// How long a call lasts, so that operations over the bound would
		// overlap: a latency, not a wait for something to happen. (The
		// simulator's SetLatency would do, but its calls end after the
		// hook returns, out of this count.)
		time.Sleep(20 * time.Millisecond)
		now.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			e.mustQuery(t, "demo-key", `{ budgets(first: 3) { nodes { name } } }`, nil, nil)
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("at most %d upstream calls in flight, want 1 or 2 (one per operation, two operations)", p)
	}
}

// TestQueuedOperationEndsWithItsRequest: an operation waiting for a slot
// whose request ends gets REQUEST_TIMEOUT (504), and the slot it never had
// is not taken from the next one.
func TestQueuedOperationEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(0, 1))
	hold := make(chan struct{})
	var once sync.Once
	started := make(chan struct{})
	e.calls.fail = func(*http.Request) *http.Response {
		once.Do(func() { close(started); <-hold })
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.mustQuery(t, "demo-key", `{ budgets(first: 1) { nodes { name } } }`, nil, nil)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest("POST", "/graphql", bytes.NewReader([]byte(`{"query":"{ budgets(first: 1) { nodes { name } } }"}`))).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer demo-key")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	r := decode(t, rec)
	if rec.Code != http.StatusGatewayTimeout || r.code(t) != "REQUEST_TIMEOUT" {
		t.Errorf("queued request that ended: %d %s, want 504 REQUEST_TIMEOUT", rec.Code, rec.Body)
	}
	close(hold)
	<-done
	e.mustQuery(t, "demo-key", `{ budgets(first: 1) { nodes { name } } }`, nil, nil)
}
