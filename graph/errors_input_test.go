package graph_test

import (
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Errors of input values: scalars of the wrong form, input the upstream refuses, an idempotency key reused.
//
// An argument's value of the wrong form is an error of the field, at the
// field's path, which is a path of the answer; the argument is named in
// extensions.argumentPath. Its path once went on into the argument
// ("budgetLookback", "input", "startDate"), which no answer has.
var inputCases = []errorCase{
	{
		name: "impossible Date literal", key: sim.DemoKey,
		query: `{ budgetLookback(input: {explorerReportId: "rpt_1", startDate: "2026-02-30"}) { periods { periodKey } } }`,
		code:  "BAD_USER_INPUT", path: []any{"budgetLookback"}, ext: argumentAt("input", "startDate"), data: `{"budgetLookback":null}`, noCall: true,
	},
	{
		name: "impossible Date variable", key: sim.DemoKey, query: qCreate,
		vars: func(f fixture) map[string]any {
			return createInput(f.reportID, map[string]any{"startDate": "2026-02-30"})
		},
		code: "BAD_USER_INPUT", path: []any{"createBudget"}, ext: argumentAt("input", "startDate"), data: `{"createBudget":null}`, noCall: true,
	},
	{
		name: "Date of another form", key: sim.DemoKey, query: qLookback,
		vars: func(f fixture) map[string]any {
			return map[string]any{"in": map[string]any{"explorerReportId": f.reportID, "startDate": "2026-01-01T00:00:00.000Z"}}
		},
		code: "BAD_USER_INPUT", path: []any{"budgetLookback"}, ext: argumentAt("input", "startDate"), data: `{"budgetLookback":null}`, noCall: true,
	},
	{
		name: "Date as a number", key: sim.DemoKey,
		query: `{ budgetLookback(input: {explorerReportId: "rpt_1", startDate: 20260101}) { periods { periodKey } } }`,
		code:  "BAD_USER_INPUT", path: []any{"budgetLookback"}, ext: argumentAt("input", "startDate"), data: `{"budgetLookback":null}`, noCall: true,
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
		// 0 is sent, for the upstream to refuse; it was left out, and the
		// answer was of the upstream's default of 3 months instead.
		name: "zero months the upstream refuses", key: sim.DemoKey, query: qLookback,
		vars: func(f fixture) map[string]any {
			return map[string]any{"in": map[string]any{"explorerReportId": f.reportID, "startDate": "2026-01-01", "lookbackPeriod": 0}}
		},
		code: "BAD_USER_INPUT", up: &upstreamErr{code: "validation_error", status: 400},
		path: []any{"budgetLookback"}, data: `{"budgetLookback":null}`,
	},
}

func TestErrorsOfInputValues(t *testing.T) {
	t.Parallel()
	runErrorCases(t, "input")
}

// argumentAt is the extension naming the argument an error is about.
func argumentAt(path ...any) func(fixture) map[string]any {
	return func(fixture) map[string]any { return map[string]any{"argumentPath": path} }
}
