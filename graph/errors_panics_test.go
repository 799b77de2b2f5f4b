package graph_test

import (
	"net/http"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Panics in a resolver and in a loader: INTERNAL, with nothing of the panic in the answer.
var panicCases = []errorCase{
	{
		name: "panic in a resolver", key: sim.DemoKey, query: qBudgets,
		setup: func(_ *testing.T, e *env, _ fixture) {
			failOn(e, "GET", "/v1/budgets", func() *http.Response {
				panic("boom: " + rawMarker + " at /src/upstream/client.go:42 for http://127.0.0.1:1")
			})
		},
		code: "INTERNAL", path: []any{"budgets"}, data: `{"budgets":null}`,
	},
	{
		name: "panic in a loader", key: sim.DemoKey, query: qBudget,
		vars: func(f fixture) map[string]any { return map[string]any{"id": f.budgetGID} },
		setup: func(_ *testing.T, e *env, f fixture) {
			failOn(e, "GET", "/v1/budgets/"+f.budgetID, func() *http.Response {
				panic("boom: " + rawMarker + " at /src/upstream/client.go:42 for http://127.0.0.1:1")
			})
		},
		code: "INTERNAL", path: []any{"budget"}, data: `{"budget":null}`,
	},
}

func TestErrorsOfPanics(t *testing.T) {
	t.Parallel()
	runErrorCases(t, "panics")
}
