package graph_test

import (
	"testing"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream/sim"
)

// Errors of IDs, cursors and page sizes, and of objects that do not exist or are another organization's.
var idCases = []errorCase{
	{
		name: "budget of another organization", key: sim.DemoKey, query: qBudget,
		vars: func(f fixture) map[string]any { return map[string]any{"id": relay.BudgetID(f.otherBudgetID)} },
		code: "NOT_FOUND", up: &upstreamErr{code: "not_found", status: 404},
		path: []any{"budget"}, data: `{"budget":null}`,
	},
	{
		name: "unknown budget", key: sim.DemoKey, query: qBudget,
		vars: func(fixture) map[string]any { return map[string]any{"id": relay.BudgetID("bud_doesnotexist")} },
		code: "NOT_FOUND", up: &upstreamErr{code: "not_found", status: 404},
		path: []any{"budget"}, data: `{"budget":null}`,
	},
	{
		name: "unknown planning row in node", key: sim.DemoKey, query: qNode,
		vars: func(f fixture) map[string]any {
			return map[string]any{"id": relay.PlanningID(f.budgetID, "pln_doesnotexist")}
		},
		code: "NOT_FOUND", path: []any{"node"}, data: `{"node":null}`,
	},
	{
		name: "planning row of another organization in node", key: sim.OtherOrgKey, query: qNode,
		vars: func(f fixture) map[string]any { return map[string]any{"id": f.planningGID} },
		code: "NOT_FOUND", up: &upstreamErr{code: "not_found", status: 404},
		path: []any{"node"}, data: `{"node":null}`,
	},
	{
		name: "malformed ID", key: sim.DemoKey, query: qBudget,
		vars: func(fixture) map[string]any { return map[string]any{"id": "bud_1 is not a global ID"} },
		code: "BAD_USER_INPUT", path: []any{"budget"}, data: `{"budget":null}`, noCall: true,
	},
	{
		name: "malformed ID in node", key: sim.DemoKey, query: qNode,
		vars: func(f fixture) map[string]any { return map[string]any{"id": f.budgetGID + "="} },
		code: "BAD_USER_INPUT", path: []any{"node"}, data: `{"node":null}`, noCall: true,
	},
	{
		// Well formed, but no id the client sends: refused before any call,
		// so nothing of the upstream's (upstreamCode) is in the error.
		name: "budget ID of a dot segment", key: sim.DemoKey, query: qBudget,
		vars: func(fixture) map[string]any { return map[string]any{"id": relay.BudgetID("..")} },
		code: "BAD_USER_INPUT", path: []any{"budget"}, data: `{"budget":null}`, noCall: true,
	},
	{
		name: "planning ID to budget", key: sim.DemoKey, query: qBudget,
		vars: func(f fixture) map[string]any { return map[string]any{"id": f.planningGID} },
		code: "BAD_USER_INPUT", path: []any{"budget"}, data: `{"budget":null}`, noCall: true,
	},
	{
		name: "planning ID to updateBudget", key: sim.DemoKey, query: qUpdate,
		vars: func(f fixture) map[string]any {
			return map[string]any{"in": map[string]any{"id": f.planningGID, "name": "x"}}
		},
		code: "BAD_USER_INPUT", path: []any{"updateBudget"}, data: `{"updateBudget":null}`, noCall: true,
	},
	{
		name: "tampered cursor", key: sim.DemoKey, query: qBudgets,
		vars: func(f fixture) map[string]any { return map[string]any{"after": flip(f.budgetsCursor)} },
		code: "BAD_USER_INPUT", path: []any{"budgets"}, data: `{"budgets":null}`, noCall: true,
	},
	{
		name: "cursor of another connection", key: sim.DemoKey, query: qBudgets,
		vars: func(f fixture) map[string]any { return map[string]any{"after": f.recsCursor} },
		code: "BAD_USER_INPUT", path: []any{"budgets"}, data: `{"budgets":null}`, noCall: true,
	},
	{
		name: "global ID as cursor", key: sim.DemoKey, query: qBudgets,
		vars: func(f fixture) map[string]any { return map[string]any{"after": f.budgetGID} },
		code: "BAD_USER_INPUT", path: []any{"budgets"}, data: `{"budgets":null}`, noCall: true,
	},
	{
		name: "first 0", key: sim.DemoKey, query: qBudgets,
		vars: func(fixture) map[string]any { return map[string]any{"first": 0} },
		code: "BAD_USER_INPUT", path: []any{"budgets"}, data: `{"budgets":null}`, noCall: true,
	},
	{
		name: "first 501", key: sim.DemoKey, query: qBudgets,
		vars: func(fixture) map[string]any { return map[string]any{"first": 501} },
		code: "BAD_USER_INPUT", path: []any{"budgets"}, data: `{"budgets":null}`, noCall: true,
	},
}

func TestErrorsOfIDsAndCursors(t *testing.T) {
	t.Parallel()
	runErrorCases(t, "ids")
}
