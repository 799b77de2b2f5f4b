package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// TestConcurrentMix runs many goroutines mixing reads and writes across
// organizations, while the instruments are read and reconfigured. Run with
// -race; afterwards every organization's list must equal its IDs.
func TestConcurrentMix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	type orgRun struct {
		key     string
		body    map[string]any
		initial int
	}
	runs := []orgRun{
		{key: sim.DemoKey, body: createBody(t, e, sim.DemoKey)},
		{key: sim.OtherOrgKey, body: createBody(t, e, sim.OtherOrgKey)},
	}
	for i := range runs {
		runs[i].initial = len(e.sim.IDs(runs[i].key, "budgets"))
	}
	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	kept := make([][]string, len(runs)) // budgets created and not deleted, per organization
	var keptMu sync.Mutex
	for oi, run := range runs {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					idem := fmt.Sprintf("w%d-r%d", w, r)
					res, err := e.try(req{method: "POST", path: "/v1/budgets", key: run.key, idem: idem, body: run.body})
					if err != nil || res.status != http.StatusOK {
						report("create %s: %v %d %s", run.key, err, res.status, res.body)
						continue
					}
					// The same request again: replayed, not created twice.
					if again, err := e.try(req{method: "POST", path: "/v1/budgets", key: run.key, idem: idem, body: run.body}); err != nil ||
						again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(res.body) {
						report("replay %s: %v %d", run.key, err, again.status)
					}
					id := extractID(res.body)
					if res, err := e.try(req{method: "PATCH", path: "/v1/budgets/" + id, key: run.key, idem: idem + "-u",
						body: map[string]any{"name": "Worker " + idem}}); err != nil || res.status != http.StatusOK {
						report("update: %v %d %s", err, res.status, res.body)
					}
					for _, path := range []string{"/v1/budgets?limit=7", "/v1/budgets/" + id, "/v1/budgets/" + id + "/actuals",
						"/v1/recommendations?limit=20", "/v1/budgets/lookback"} {
						if res, err := e.try(req{path: path, key: run.key}); err != nil || res.status != http.StatusOK {
							report("GET %s: %v %d %s", path, err, res.status, res.body)
						}
					}
					if res, err := e.try(req{method: "POST", path: "/v1/explorer/summary", key: run.key, body: explorerBody()}); err != nil || res.status != http.StatusOK {
						report("summary: %v %d", err, res.status)
					}
					// The other organization cannot see it.
					other := runs[1-oi].key
					if res, err := e.try(req{path: "/v1/budgets/" + id, key: other}); err != nil || res.status != http.StatusNotFound {
						report("cross-organization get: %v %d", err, res.status)
					}
					if r%2 == 0 {
						if res, err := e.try(req{method: "DELETE", path: "/v1/budgets/" + id, key: run.key}); err != nil || res.status != http.StatusOK {
							report("delete: %v %d %s", err, res.status, res.body)
						}
					} else {
						keptMu.Lock()
						kept[oi] = append(kept[oi], id)
						keptMu.Unlock()
					}
				}
			}()
		}
	}
	// Instruments used concurrently with requests.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			e.sim.SetLatency(sim.Latency{})
			e.sim.SetFaults(sim.Faults{Ops: []string{"none"}})
			_ = e.sim.Counts()
			_ = e.sim.TotalCalls()
			_ = e.sim.IDs(sim.DemoKey, "budgets")
			_ = e.sim.Calls(ops.CreateBudget)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for oi, run := range runs {
		ids := e.sim.IDs(run.key, "budgets")
		if want := run.initial + len(kept[oi]); len(ids) != want {
			t.Errorf("%s: %d budgets, want %d", run.key, len(ids), want)
		}
		if diff := cmp.Diff(ids, pageThrough(t, e, run.key, collections()[0], 13)); diff != "" {
			t.Errorf("%s: list differs from IDs:\n%s", run.key, diff)
		}
	}
	if got, want := e.sim.Calls(ops.CreateBudget), int64(2*len(runs)*workers*rounds); got != want {
		t.Errorf("Calls(createBudget) = %d, want %d", got, want)
	}
}

// extractID pulls data.budget.id out of a create answer without a *testing.T,
// for use in goroutines.
func extractID(body []byte) string {
	var v struct {
		Data struct {
			Budget struct {
				ID string `json:"id"`
			} `json:"budget"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Data.Budget.ID
}
