package sim_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	id := firstBudgetID(t, e, sim.DemoKey)
	body := createBody(t, e, sim.DemoKey)
	for _, op := range []struct{ method, path string }{{"POST", "/v1/budgets"}, {"PATCH", "/v1/budgets/" + id}} {
		cases := []struct {
			name    string
			headers map[string]string
			code    string
		}{
			{"missing", nil, "idempotency_key_missing"},
			{"empty", map[string]string{"Idempotency-Key": ""}, "idempotency_key_invalid"},
			{"blank", map[string]string{"Idempotency-Key": "   "}, "idempotency_key_invalid"},
			{"65 characters", map[string]string{"Idempotency-Key": strings.Repeat("k", 65)}, "idempotency_key_invalid"},
		}
		for _, tc := range cases {
			t.Run(op.method+"/"+tc.name, func(t *testing.T) {
				r := req{method: op.method, path: op.path, key: sim.DemoKey, body: body, headers: tc.headers}
				e.do(t, r).wantError(t, http.StatusBadRequest, tc.code)
			})
		}
		t.Run(op.method+"/64 characters", func(t *testing.T) {
			r := e.do(t, req{method: op.method, path: op.path, key: sim.DemoKey, body: body, idem: strings.Repeat(strings.ToLower(op.method[1:2]), 64)})
			if r.status != http.StatusOK {
				t.Errorf("status %d: %s", r.status, r.body)
			}
		})
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e := newEnv(t, sim.Options{Now: clock.Now})
	body := createBody(t, e, sim.DemoKey)
	first := create(t, e, sim.DemoKey, "replay-1", body)
	if first.status != http.StatusOK {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Error("first answer carries Idempotent-Replayed")
	}
	n := len(e.sim.IDs(sim.DemoKey, "budgets"))
	clock.Advance(time.Minute)

	t.Run("same body replays", func(t *testing.T) {
		again := create(t, e, sim.DemoKey, "replay-1", body)
		if again.status != first.status || string(again.body) != string(first.body) {
			t.Errorf("replay %d %s\nfirst %d %s", again.status, again.body, first.status, first.body)
		}
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("Idempotent-Replayed %q", again.header.Get("Idempotent-Replayed"))
		}
		if again.header.Get("X-Request-Id") == first.header.Get("X-Request-Id") {
			t.Error("a replay has its own request id header")
		}
		if got := len(e.sim.IDs(sim.DemoKey, "budgets")); got != n {
			t.Errorf("replay created a budget: %d, want %d", got, n)
		}
	})
	t.Run("same body, other key order and spacing, replays", func(t *testing.T) {
		raw := `{ "explorerReportId": "` + body["explorerReportId"].(string) + `", "numberOfPeriods": 12,
			"startDate": "2026-12-01", "name": "Test Budget" }`
		again := create(t, e, sim.DemoKey, "replay-1", raw)
		if string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("canonical body did not replay: %d %s", again.status, again.body)
		}
	})
	t.Run("different body conflicts", func(t *testing.T) {
		other := map[string]any{}
		for k, v := range body {
			other[k] = v
		}
		other["name"] = "Another name"
		create(t, e, sim.DemoKey, "replay-1", other).wantError(t, http.StatusConflict, "idempotency_conflict")
	})
	t.Run("same key on another path conflicts", func(t *testing.T) {
		id := firstBudgetID(t, e, sim.DemoKey)
		update(t, e, sim.DemoKey, id, "replay-1", body).wantError(t, http.StatusConflict, "idempotency_conflict")
	})
	t.Run("keys are scoped per API key", func(t *testing.T) {
		otherBody := createBody(t, e, sim.OtherOrgKey)
		r := create(t, e, sim.OtherOrgKey, "replay-1", otherBody)
		if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("other API key with the same Idempotency-Key: %d %q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
		}
		if budgetOf(t, r)["organizationId"] != "org-2002" {
			t.Errorf("created in %v", budgetOf(t, r)["organizationId"])
		}
	})
	t.Run("stored validation errors replay", func(t *testing.T) {
		bad := map[string]any{"name": 1}
		r1 := create(t, e, sim.DemoKey, "bad-1", bad)
		r1.wantError(t, http.StatusBadRequest, "validation_error")
		r2 := create(t, e, sim.DemoKey, "bad-1", bad)
		if string(r2.body) != string(r1.body) || r2.status != r1.status || r2.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("validation error not replayed: %d %s", r2.status, r2.body)
		}
	})
	t.Run("update replays", func(t *testing.T) {
		id := firstBudgetID(t, e, sim.DemoKey)
		u1 := update(t, e, sim.DemoKey, id, "upd-1", map[string]any{"name": "Once"})
		clock.Advance(time.Second)
		u2 := update(t, e, sim.DemoKey, id, "upd-1", map[string]any{"name": "Once"})
		if string(u1.body) != string(u2.body) || u2.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("update not replayed:\n%s\n%s", u1.body, u2.body)
		}
		got := budgetOf(t, e.get(t, "/v1/budgets/"+id))
		if got["updatedAt"] != budgetOf(t, u1)["updatedAt"] {
			t.Errorf("replay moved updatedAt: %v, first %v", got["updatedAt"], budgetOf(t, u1)["updatedAt"])
		}
	})
	t.Run("checks before the operation are not stored", func(t *testing.T) {
		// A 415 with the key, then the real request with the same key runs.
		r := e.do(t, req{method: "POST", path: "/v1/budgets", key: sim.DemoKey, idem: "late", body: body,
			headers: map[string]string{"Content-Type": "text/plain"}})
		r.wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		r = create(t, e, sim.DemoKey, "late", body)
		if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("after a 415: %d %q", r.status, r.header.Get("Idempotent-Replayed"))
		}
	})
	t.Run("keys expire after 24 hours", func(t *testing.T) {
		clock.Advance(24 * time.Hour)
		other := map[string]any{}
		for k, v := range body {
			other[k] = v
		}
		other["name"] = "After expiry"
		r := create(t, e, sim.DemoKey, "replay-1", other)
		if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("expired key: %d %q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
		}
		if budgetOf(t, r)["name"] != "After expiry" {
			t.Errorf("name %v", budgetOf(t, r)["name"])
		}
	})
}

// TestIdempotencyConcurrent sends the same create many times at once: exactly
// one budget is created and every answer carries it.
func TestIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	body := createBody(t, e, sim.DemoKey)
	before := len(e.sim.IDs(sim.DemoKey, "budgets"))
	const n = 16
	results := make([]result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.try(req{method: "POST", path: "/v1/budgets", key: sim.DemoKey, idem: "race", body: body})
		}()
	}
	wg.Wait()
	replayed := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.status != http.StatusOK || string(r.body) != string(results[0].body) {
			t.Errorf("answer %d: %d %s", i, r.status, r.body)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d replays, want %d", replayed, n-1)
	}
	if got := len(e.sim.IDs(sim.DemoKey, "budgets")); got != before+1 {
		t.Errorf("%d budgets, want %d", got, before+1)
	}
	if got := e.sim.Calls(ops.CreateBudget); got != n {
		t.Errorf("Calls(createBudget) = %d, want %d", got, n)
	}
}
