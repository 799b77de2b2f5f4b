package graph_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream/sim"
)

// A document kept in the cache whose selection a variable changes is
// answered by each request's own variables: what one request collected, and
// which reads it started ahead, are not another's (graph/opmemo keeps them
// only for operations that no variable changes).
func TestCachedDocumentFollowsEachRequestsVariables(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := relay.BudgetID(e.sim.IDs(sim.DemoKey, "budgets")[0])
	const q = `query Q($id: ID!, $a: Boolean!) {
  budget(id: $id) {
    name
    actuals @include(if: $a) { total }
    plannings { dimension1 ... on Planning @include(if: $a) { actuals { amount } } }
  }
}`
	for _, a := range []bool{false, true, false, true} {
		e.calls.take()
		r := e.query(t, sim.DemoKey, q, map[string]any{"id": id, "a": a})
		if len(r.Errors) > 0 {
			t.Fatalf("a=%v: %+v", a, r.Errors)
		}
		data := string(r.Data)
		if got := strings.Contains(data, `"actuals"`); got != a {
			t.Errorf("a=%v: actuals in the answer: %v: %s", a, got, data)
		}
		calls := e.calls.take()
		if got := slices.ContainsFunc(calls, func(c string) bool { return strings.HasSuffix(c, "/actuals") }); got != a {
			t.Errorf("a=%v: actuals read: %v: %v", a, got, calls)
		}
	}
}
