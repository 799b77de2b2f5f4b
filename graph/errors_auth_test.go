package graph_test

import (
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Errors of credentials: no key (refused before execution: without a key
// only introspection runs), an unknown one, a key without the scope, an
// organization without the API.
var authCases = []errorCase{
	{
		name: "no key", query: qBudgets,
		code: "UNAUTHENTICATED", status: 401, noCall: true,
	},
	{
		name: "no key on a mutation", query: qCreate,
		vars: func(f fixture) map[string]any { return createInput(f.reportID, nil) },
		code: "UNAUTHENTICATED", status: 401, noCall: true,
	},
	{
		name: "no key on node", query: qNode,
		vars: func(f fixture) map[string]any { return map[string]any{"id": f.budgetGID} },
		code: "UNAUTHENTICATED", status: 401, noCall: true,
	},
	{
		name: "unknown key", key: "not-a-demo-key-7f3a", query: qBudgets,
		code: "UNAUTHENTICATED", up: &upstreamErr{code: "invalid_credentials", status: 401},
		path: []any{"budgets"}, data: `{"budgets":null}`,
	},
	{
		name: "unentitled organization", key: sim.UnentitledKey, query: qBudgets,
		code: "FORBIDDEN", up: &upstreamErr{code: "forbidden_entitlement", status: 403},
		path: []any{"budgets"}, data: `{"budgets":null}`,
	},
}

func TestErrorsOfCredentials(t *testing.T) {
	t.Parallel()
	runErrorCases(t, "auth")
}
