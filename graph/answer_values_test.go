package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream/sim"
)

// An answer holds at most -max-answer-values values, the fields of its
// objects and the items of its lists, counted as they are resolved; past
// that the request is refused with the limit's error alone. Before, 29
// aliases of a year's history (a 3 KB request) answered 21 MB for 1.2 s of
// CPU, within every limit: an alias writes a loaded answer again, however
// large the upstream made it.
func TestAnswerValuesAreBounded(t *testing.T) {
	t.Parallel()
	const history = `history(query: {dateRange: {start: "2025-11-01", end: "2026-10-31"}, groupBy: "product_product_name",
		costType: "line_item_unblended_cost", granularity: "day"}) { costRows { group date cost } }`
	var aliased strings.Builder
	aliased.WriteString("{ explorer {")
	for i := range 29 {
		fmt.Fprintf(&aliased, " h%d: %s", i, history)
	}
	aliased.WriteString(" } }")

	e := newEnv(t)
	for name, q := range map[string]string{
		"29 aliases of a year's history": aliased.String(),
	} {
		for _, accept := range []string{"application/graphql-response+json", "application/json"} {
			r := e.queryAs(t, accept, sim.DemoKey, q, nil)
			want := 400
			if accept == "application/json" {
				want = 200
			}
			if r.status != want || r.code(t) != "MAX_ANSWER_VALUES_LIMIT" || r.Data != nil {
				t.Errorf("%s (%s): %d %.300s", name, accept, r.status, r.raw)
			}
			if len(r.raw) > 1<<10 {
				t.Errorf("%s: the refusal is %d bytes", name, len(r.raw))
			}
		}
	}

	// Within the bound, an answer is whole; one value past it, refused.
	var one struct {
		Explorer map[string]struct{ CostRows []any }
	}
	e.mustQuery(t, sim.DemoKey, "{ explorer { "+history+" } }", nil, &one)
	rows := len(one.Explorer["history"].CostRows)
	values := 1 + 1 + 1 + rows*(1+3) // explorer, history, costRows' items, each row's three fields
	for _, tc := range []struct {
		max  int
		want bool
	}{{values, true}, {values - 1, false}} {
		l := limits.Defaults()
		l.MaxAnswerValues = tc.max
		r := newEnv(t, withLimits(l)).query(t, sim.DemoKey, "{ explorer { "+history+" } }", nil)
		if got := len(r.Errors) == 0; got != tc.want {
			t.Errorf("-max-answer-values %d for %d values: answered %v, want %v: %.200s", tc.max, values, got, tc.want, r.raw)
		}
	}
}

// Every way an answer is built counts: objects resolved field by field,
// lists of them, objects written from their record (edges' nodes, which
// went uncounted in the first version), introspection, mutations.
func TestAnswerValuesCountEveryPath(t *testing.T) {
	t.Parallel()
	e := withAnswerValues(t, 40)
	ids := budgetIDs(t, newEnv(t), 12)
	k := len(ids)
	for name, q := range map[string]string{
		"objects resolved field by field": `{ budgets(first: 12) { nodes { name metrics { variance } } } }`,
		"nodes of edges, from the record": `{ budgets(first: 12) { edges { node { id name status } } } }`,
		"introspection":                   `{ __schema { types { name } } }`,
	} {
		r := e.query(t, sim.DemoKey, q, nil)
		if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "MAX_ANSWER_VALUES_LIMIT" || r.Data != nil {
			t.Errorf("%s: %.300s", name, r.raw)
		}
	}
	// edges { node } is 2 + 5k values: the query's field, the connection's,
	// k edges, an edge's node, a node's three fields.
	const edges = `{ budgets(first: 12) { edges { node { id name status } } } }`
	for _, tc := range []struct {
		max  int
		want bool
	}{{2 + 5*k, true}, {1 + 5*k, false}} {
		l := limits.Defaults()
		l.MaxAnswerValues = tc.max
		if r := newEnv(t, withLimits(l)).query(t, sim.DemoKey, edges, nil); (len(r.Errors) == 0) != tc.want {
			t.Errorf("-max-answer-values %d for %d budgets' edges: answered %v, want %v", tc.max, k, len(r.Errors) == 0, tc.want)
		}
	}

	// A mutation's answer is bounded too (a budget's plannings' budget's
	// plannings… once answered 17 MB to 636 bytes), but its writes are made
	// by then: its outcome is kept whole (the payload, its userErrors and
	// idempotencyKey), what it holds beyond that is cut, and the error says
	// the writes were made. The first version nulled the whole payload.
	m := withAnswerValues(t, 3)
	r := m.query(t, sim.DemoKey, `mutation($in: UpdateBudgetInput!) {
		updateBudget(input: $in) { budget { id name status plannings { id } } userErrors { message } idempotencyKey } }`,
		map[string]any{"in": map[string]any{"id": ids[0], "name": "Renamed"}})
	var out struct {
		UpdateBudget *struct {
			UserErrors     []any
			IdempotencyKey string
		}
	}
	if err := json.Unmarshal(r.Data, &out); err != nil || out.UpdateBudget == nil || out.UpdateBudget.UserErrors == nil ||
		out.UpdateBudget.IdempotencyKey == "" || len(r.Errors) == 0 ||
		r.Errors[0].Extensions["code"] != "MAX_ANSWER_VALUES_LIMIT" || !strings.Contains(r.Errors[0].Message, "writes were made") {
		t.Errorf("the mutation's answer past the bound: %.400s", r.raw)
	}
	var read struct{ Budget struct{ Name string } }
	m.mustQuery(t, sim.DemoKey, `query($id: ID!) { budget(id: $id) { name } }`, map[string]any{"id": ids[0]}, &read)
	if read.Budget.Name != "Renamed" {
		t.Errorf("the write of a mutation whose answer went past the bound: name %q", read.Budget.Name)
	}
}

// With @defer, a part past the bound carries the limit's error alone, says
// where it belongs and ends the answer; when the first part is past it, the
// request is refused as without @defer. Which happens depends on which part
// resolves first.
func TestAnswerValuesWithDefer(t *testing.T) {
	t.Parallel()
	l := limits.Defaults()
	l.MaxAnswerValues = 80
	e := newEnv(t, withLimits(l))
	body, _ := json.Marshal(map[string]any{"query": `{ budgets(first: 24) { nodes { name ... @defer { metrics { variance } } } } }`})
	for range 5 {
		req := postRequest(body, sim.DemoKey)
		req.Header.Set("Accept", "multipart/mixed, application/graphql-response+json")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		out := rec.Body.String()
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "multipart/mixed") {
			if r := decode(t, rec); rec.Code != 400 || r.code(t) != "MAX_ANSWER_VALUES_LIMIT" {
				t.Errorf("refused at once: %d %s", rec.Code, out)
			}
			continue
		}
		last := out[strings.LastIndex(out, "\r\n\r\n{")+4:]
		var part struct {
			Incremental []struct {
				Path   []any
				Errors []gqlError
			}
			HasNext bool
		}
		if err := json.Unmarshal([]byte(last[:strings.Index(last, "\r\n")]), &part); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if part.HasNext || len(part.Incremental) != 1 || len(part.Incremental[0].Path) == 0 ||
			len(part.Incremental[0].Errors) != 1 || part.Incremental[0].Errors[0].Extensions["code"] != "MAX_ANSWER_VALUES_LIMIT" {
			t.Errorf("the last part: %s", out)
		}
	}
}

// A JSON value counts by its size: one value and one more for each 40
// bytes of it. It counted as one, so twenty aliases of a budget's four JSON
// fields, each a 64 KB string the upstream stored, answered 5 MB to a
// 2 KB request within the bound.
func TestAnswerValuesCountJSONBySize(t *testing.T) {
	t.Parallel()
	e := withAnswerValues(t, 500)
	ids := budgetIDs(t, e, 1)
	big := strings.Repeat("x", 40_000)
	var upd struct {
		UpdateBudget struct{ UserErrors []any }
	}
	e.mustQuery(t, sim.DemoKey, `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { userErrors { message } } }`,
		map[string]any{"in": map[string]any{"id": ids[0], "growthRate": big}}, &upd)
	if len(upd.UpdateBudget.UserErrors) > 0 {
		t.Fatalf("storing the value: %+v", upd)
	}
	for _, q := range []string{
		`{ budgets(first: 30) { nodes { growthRate } } }`,
		`query($id: ID!) { budget(id: $id) { growthRate } }`,
	} {
		r := e.query(t, sim.DemoKey, q, map[string]any{"id": ids[0]})
		if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "MAX_ANSWER_VALUES_LIMIT" {
			t.Errorf("%s: a JSON value of 40 000 bytes within 500 values: %.300s", q, r.raw)
		}
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 30) { nodes { name } } }`, nil, nil)
}

// withAnswerValues is a gateway whose -max-answer-values is max.
func withAnswerValues(t *testing.T, max int) *env {
	l := limits.Defaults()
	l.MaxAnswerValues = max
	return newEnv(t, withLimits(l))
}

// budgetIDs returns the global ids of e's first n budgets of demo-key.
func budgetIDs(t *testing.T, e *env, n int) []string {
	var page struct {
		Budgets struct{ Nodes []struct{ ID string } }
	}
	e.mustQuery(t, sim.DemoKey, `query($n: Int) { budgets(first: $n) { nodes { id } } }`, map[string]any{"n": n}, &page)
	ids := make([]string, len(page.Budgets.Nodes))
	for i, b := range page.Budgets.Nodes {
		ids[i] = b.ID
	}
	return ids
}
