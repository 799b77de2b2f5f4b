package graph_test

import (
	"testing"

	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream/sim"
)

// withoutPlanningRows is a gateway whose listBudgets answers come without
// their planning rows, as an upstream might send them: the contract's
// budget records carry them, so the cost estimate does not count the
// planning grid each budget then needs.
func withoutPlanningRows(t *testing.T, maxCost int) *env {
	l := limits.Defaults()
	l.MaxCost = maxCost
	e := newEnv(t, withLimits(l))
	e.editBudgetList(t, func(records []any) {
		for _, b := range records {
			delete(b.(map[string]any), "plannings")
		}
	})
	return e
}

// A budget record without its planning rows has them read from its planning
// grid, once per budget; those reads are not in the estimate, so they are
// bounded by what -max-cost leaves over it, and the operation never makes
// more upstream calls than -max-cost. Before, they were unbounded: with
// -max-cost 10, 24 budgets made 25 calls, and 500 budgets 503 against 500.
func TestBudgetsWithoutPlanningRows(t *testing.T) {
	t.Parallel()
	const q = `{ budgets(first: 24) { nodes { upstreamId plannings { upstreamId } } } }`
	type page struct {
		Budgets *struct {
			Nodes []*struct {
				UpstreamID string `json:"upstreamId"`
				Plannings  []struct {
					UpstreamID string `json:"upstreamId"`
				} `json:"plannings"`
			} `json:"nodes"`
		} `json:"budgets"`
	}

	t.Run("without a cost limit", func(t *testing.T) {
		t.Parallel()
		e := withoutPlanningRows(t, 0)
		var got page
		e.mustQuery(t, sim.DemoKey, q, nil, &got)
		calls := countOps(e.calls.take())
		if len(got.Budgets.Nodes) != 24 {
			t.Fatalf("%d budgets, want 24", len(got.Budgets.Nodes))
		}
		for _, b := range got.Budgets.Nodes {
			if len(b.Plannings) == 0 {
				t.Errorf("budget %s: no planning rows", b.UpstreamID)
			}
		}
		if calls["GET /v1/budgets"] != 1 || calls["GET /v1/budgets/{id}/planning"] != 24 {
			t.Errorf("calls %v, want the list and one planning grid for each of the 24 budgets", calls)
		}
	})

	t.Run("within -max-cost", func(t *testing.T) {
		t.Parallel()
		const maxCost = 10
		e := withoutPlanningRows(t, maxCost)
		r := e.query(t, sim.DemoKey, q, nil)
		calls := e.calls.take()
		if len(calls) > maxCost {
			t.Errorf("%d upstream calls, more than -max-cost %d: %v", len(calls), maxCost, countOps(calls))
		}
		if n := countOps(calls)["GET /v1/budgets"]; n != 1 {
			t.Errorf("%d list calls, want 1", n)
		}
		// The list is 1 call of the estimate: 9 grids are read, and each
		// of the other 15 budgets has an error on its plannings.
		if len(r.Errors) != 15 {
			t.Fatalf("%d errors, want 15: %+v", len(r.Errors), r.Errors)
		}
		for _, err := range r.Errors {
			if c := err.Extensions["code"]; c != "UPSTREAM_BAD_RESPONSE" || len(err.Path) != 4 || err.Path[3] != "plannings" {
				t.Errorf("error %+v, want UPSTREAM_BAD_RESPONSE on a budget's plannings", err)
			}
		}
	})
}
