package sim_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

func TestFaultStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		faults     sim.Faults
		status     int
		code       string
		retryAfter string
	}{
		{"500", sim.Faults{Error500: 1}, 500, "internal_error", ""},
		{"503 default retry", sim.Faults{Error503: 1}, 503, "service_unavailable", "1"},
		{"503 rounds up", sim.Faults{Error503: 1, RetryAfter: 2500 * time.Millisecond}, 503, "service_unavailable", "3"},
		{"429", sim.Faults{RateLimit429: 1, RetryAfter: 7 * time.Second}, 429, "rate_limited", "7"},
		{"429 sub-second is 1", sim.Faults{RateLimit429: 1, RetryAfter: time.Millisecond}, 429, "rate_limited", "1"},
		{"rate above 1 clamps", sim.Faults{Error500: 3}, 500, "internal_error", ""},
		{"earlier kind wins", sim.Faults{Error503: 1, RateLimit429: 1}, 503, "service_unavailable", "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sim.Options{Faults: tc.faults})
			for _, r := range []req{
				{path: "/v1/budgets", key: sim.DemoKey},
				{path: "/v1/budgets"},                          // faults come before credentials
				{path: "/v1/nowhere", key: sim.UnentitledKey},  // and before routing when Ops is empty
				{method: "POST", path: "/v1/explorer/summary"}, // and before the body is read
			} {
				got := e.do(t, r)
				got.wantError(t, tc.status, tc.code)
				if ra := got.header.Get("Retry-After"); ra != tc.retryAfter {
					t.Errorf("%s: Retry-After %q, want %q", r.path, ra, tc.retryAfter)
				}
			}
			if got := e.sim.Calls(ops.ListBudgets); got != 2 {
				t.Errorf("Calls(listBudgets) = %d, want 2: faulted requests still count", got)
			}
		})
	}
}

func TestFaultOps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	faulted := []string{ops.GetBudget}
	e.sim.SetFaults(sim.Faults{Error500: 1, Ops: faulted})
	faulted[0] = ops.ListBudgets // the server keeps its own copy
	id := firstBudgetID(t, e, sim.DemoKey)
	if r := e.get(t, "/v1/budgets"); r.status != http.StatusOK {
		t.Errorf("listBudgets: %d", r.status)
	}
	if r := e.get(t, "/v1/nowhere"); r.status != http.StatusNotFound {
		t.Errorf("unknown path with Ops set: %d", r.status)
	}
	e.get(t, "/v1/budgets/"+id).wantError(t, 500, "internal_error")
	e.sim.SetFaults(sim.Faults{})
	if r := e.get(t, "/v1/budgets/"+id); r.status != http.StatusOK {
		t.Errorf("after clearing faults: %d", r.status)
	}
}

// TestFaultRatesDeterministic checks that fault draws come from the seeded
// generator: the same seed and request sequence fault the same requests.
func TestFaultRatesDeterministic(t *testing.T) {
	t.Parallel()
	run := func() []int {
		e := newEnv(t, sim.Options{Seed: 42, Faults: sim.Faults{Error500: 0.25, Error503: 0.25}})
		var statuses []int
		for range 80 {
			statuses = append(statuses, e.get(t, "/v1/budgets/lookback").status)
		}
		return statuses
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("fault sequence differs (-a +b):\n%s", diff)
	}
	n := map[int]int{}
	for _, s := range a {
		n[s]++
	}
	if n[200] == 0 || n[500] == 0 || n[503] == 0 || n[200]+n[500]+n[503] != 80 {
		t.Errorf("statuses %v", n)
	}
}

func TestDropBefore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}).withoutKeepAlive()
	body := createBody(t, e, sim.DemoKey)
	before := e.sim.IDs(sim.DemoKey, "budgets")
	e.sim.SetFaults(sim.Faults{DropBefore: 1})
	if _, err := e.try(req{method: "POST", path: "/v1/budgets", key: sim.DemoKey, idem: "drop-1", body: body}); err == nil {
		t.Fatal("no error from a dropped connection")
	}
	if _, err := e.try(req{path: "/v1/recommendations", key: sim.DemoKey}); err == nil {
		t.Fatal("no error from a dropped GET")
	}
	if diff := cmp.Diff(before, e.sim.IDs(sim.DemoKey, "budgets")); diff != "" {
		t.Errorf("a drop before the operation wrote:\n%s", diff)
	}
	if got := e.sim.Calls(ops.CreateBudget); got != 1 {
		t.Errorf("Calls(createBudget) = %d, want 1", got)
	}
	// Nothing was stored under the key: the retry runs the operation.
	e.sim.SetFaults(sim.Faults{})
	r := create(t, e, sim.DemoKey, "drop-1", body)
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry: %d %q", r.status, r.header.Get("Idempotent-Replayed"))
	}
}

func TestDropAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}).withoutKeepAlive()
	body := createBody(t, e, sim.DemoKey)
	before := e.sim.IDs(sim.DemoKey, "budgets")
	e.sim.SetFaults(sim.Faults{DropAfter: 1, Ops: []string{ops.CreateBudget}})
	if _, err := e.try(req{method: "POST", path: "/v1/budgets", key: sim.DemoKey, idem: "drop-after", body: body}); err == nil {
		t.Fatal("no error from a dropped connection")
	}
	after := e.sim.IDs(sim.DemoKey, "budgets")
	if len(after) != len(before)+1 {
		t.Fatalf("the write did not commit: %d budgets, had %d", len(after), len(before))
	}
	newID := after[len(after)-1]
	e.sim.SetFaults(sim.Faults{})
	r := create(t, e, sim.DemoKey, "drop-after", body)
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry was not a replay: %d %s", r.status, r.body)
	}
	if got := budgetOf(t, r)["id"]; got != newID {
		t.Errorf("replayed budget %v, committed %s", got, newID)
	}
	if got := len(e.sim.IDs(sim.DemoKey, "budgets")); got != len(after) {
		t.Errorf("the retry created another budget")
	}
}

// TestDropWithoutHijacker checks the fallback when the writer cannot be
// hijacked: a 500, never a panic.
func TestDropWithoutHijacker(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{Faults: sim.Faults{DropBefore: 1}})
	rec := httptest.NewRecorder()
	hr := httptest.NewRequest(http.MethodGet, "/v1/budgets", nil)
	hr.Header.Set("Authorization", "Bearer "+sim.DemoKey)
	s.ServeHTTP(rec, hr)
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status %d", rec.Code)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	const fixed = 120 * time.Millisecond
	e := newEnv(t, sim.Options{Latency: sim.Latency{Fixed: fixed}})
	start := time.Now()
	e.get(t, "/v1/budgets/lookback")
	if d := time.Since(start); d < fixed {
		t.Errorf("request took %v, want at least %v", d, fixed)
	}
	t.Run("spike at rate 1", func(t *testing.T) {
		e.sim.SetLatency(sim.Latency{SpikeRate: 1, Spike: fixed, Jitter: time.Millisecond})
		start := time.Now()
		e.get(t, "/v1/budgets/lookback")
		if d := time.Since(start); d < fixed {
			t.Errorf("request took %v, want at least %v", d, fixed)
		}
	})
	t.Run("caller going away ends the wait", func(t *testing.T) {
		e.sim.SetLatency(sim.Latency{Fixed: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/budgets", nil)
		hr.Header.Set("Authorization", "Bearer "+sim.DemoKey)
		_, err := e.client.Do(hr)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v", err)
		}
		e.sim.SetLatency(sim.Latency{})
		// httptest.Server.Close (in cleanup) waits for handlers, so a
		// handler still sleeping a minute would hang the test.
	})
}

func TestCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	id := firstBudgetID(t, e, sim.DemoKey)
	e.sim.ResetCounts()
	if got := e.sim.Counts(); len(got) != 0 || e.sim.TotalCalls() != 0 {
		t.Fatalf("after reset: %v, total %d", got, e.sim.TotalCalls())
	}
	e.get(t, "/v1/budgets")
	e.get(t, "/v1/budgets?limit=x")
	e.get(t, "/v1/budgets/"+id)
	e.get(t, "/v1/budgets/"+id, sim.UnentitledKey)
	e.do(t, req{path: "/v1/budgets/" + id + "/planning"})
	e.get(t, "/v1/nowhere")
	e.do(t, req{method: http.MethodPut, path: "/v1/budgets", key: sim.DemoKey})
	want := map[string]int64{ops.ListBudgets: 2, ops.GetBudget: 2, ops.GetBudgetPlanning: 1}
	if diff := cmp.Diff(want, e.sim.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if got := e.sim.TotalCalls(); got != 7 {
		t.Errorf("TotalCalls %d, want 7 (unmatched requests count)", got)
	}
	if got := e.sim.Calls(ops.GetBudget); got != 2 {
		t.Errorf("Calls(getBudget) = %d", got)
	}
	if got := e.sim.Calls("noSuchOperation"); got != 0 {
		t.Errorf("Calls(unknown) = %d", got)
	}
	e.sim.ResetCounts()
	if got := e.sim.Calls(ops.ListBudgets); got != 0 {
		t.Errorf("after reset: %d", got)
	}
}
