package graph_test

import (
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Errors of input values: scalars of the wrong form, input the upstream refuses, an idempotency key reused.
var inputCases = []errorCase{
	{
		name: "impossible Date literal", key: sim.DemoKey,
		query: `{ budgetLookback(input: {explorerReportId: "rpt_1", startDate: "2026-02-30"}) { periods { periodKey } } }`,
		code:  "BAD_USER_INPUT", path: []any{"budgetLookback", "input", "startDate"}, data: `{"budgetLookback":null}`, noCall: true,
	},
	{
		name: "impossible Date variable", key: sim.DemoKey, query: qCreate,
		vars: func(f fixture) map[string]any {
			return createInput(f.reportID, map[string]any{"startDate": "2026-02-30"})
		},
		code: "BAD_USER_INPUT", path: []any{"createBudget", "input", "startDate"}, data: `{"createBudget":null}`, noCall: true,
	},
	{
		name: "Date of another form", key: sim.DemoKey, query: qLookback,
		vars: func(f fixture) map[string]any {
			return map[string]any{"in": map[string]any{"explorerReportId": f.reportID, "startDate": "2026-01-01T00:00:00.000Z"}}
		},
		code: "BAD_USER_INPUT", path: []any{"budgetLookback", "input", "startDate"}, data: `{"budgetLookback":null}`, noCall: true,
	},
	{
		name: "Date as a number", key: sim.DemoKey,
		query: `{ budgetLookback(input: {explorerReportId: "rpt_1", startDate: 20260101}) { periods { periodKey } } }`,
		code:  "BAD_USER_INPUT", path: []any{"budgetLookback", "input", "startDate"}, data: `{"budgetLookback":null}`, noCall: true,
	},
	{
		name: "input the upstream refuses in a query", key: sim.DemoKey, query: qLookback,
		vars: func(f fixture) map[string]any {
			return map[string]any{"in": map[string]any{"explorerReportId": f.reportID, "startDate": "2026-01-01", "lookbackPeriod": 99}}
		},
		code: "BAD_USER_INPUT", up: &upstreamErr{code: "validation_error", status: 400},
		path: []any{"budgetLookback"}, data: `{"budgetLookback":null}`,
	},
	{
		name: "idempotency key reused with another input", key: sim.DemoKey, query: qCreate,
		setup: func(t *testing.T, e *env, f fixture) {
			var got struct {
				CreateBudget struct{ Budget *struct{ ID string } }
			}
			e.mustChecked(t, sim.DemoKey, qCreate, createInput(f.reportID, map[string]any{"idempotencyKey": "errors-test-key"}), &got)
			if got.CreateBudget.Budget == nil {
				t.Fatal("the first create made no budget")
			}
		},
		vars: func(f fixture) map[string]any {
			return createInput(f.reportID, map[string]any{"idempotencyKey": "errors-test-key", "name": "Another name"})
		},
		code: "CONFLICT", up: &upstreamErr{code: "idempotency_conflict", status: 409},
		path: []any{"createBudget"}, data: `{"createBudget":null}`,
		ext: func(fixture) map[string]any { return map[string]any{"idempotencyKey": "errors-test-key"} },
	},
}

func TestErrorsOfInputValues(t *testing.T) {
	t.Parallel()
	runErrorCases(t, "input")
}
