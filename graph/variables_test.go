package graph_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream/sim"
)

// A request refused for a variable's value names the variable in
// extensions.variablePath and in its message, and has no path: an error's
// path is a path of the answer (GraphQL spec, "Errors"), which a refused
// request has none of. It had ["variable", "n"], and gqlparser's messages
// ("cannot be null") did not say which variable.
func TestVariableErrorsHaveNoPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		query string
		vars  map[string]any
		at    []any
		msg   string
	}{
		{`query($n: Int!) { budgets(first: $n) { nodes { id } } }`, map[string]any{"n": nil}, []any{"n"}, "$n: "},
		{`query($n: Int) { budgets(first: $n) { nodes { id } } }`, map[string]any{"n": 2.5}, []any{"n"}, "$n: 2.5 is not"},
		{`query($q: ExplorerQueryInput!) { explorer { summary(query: $q) { cards { title } } } }`,
			map[string]any{"q": map[string]any{"dateRange": map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
				"groupBy": "g", "costType": 7, "granularity": "day"}}, []any{"q", "costType"}, "$q.costType: 7 is not"},
	} {
		r := e.query(t, sim.DemoKey, tc.query, tc.vars)
		if len(r.Errors) != 1 || r.Errors[0].Path != nil || !strings.HasPrefix(r.Errors[0].Message, tc.msg) ||
			!cmp.Equal(r.Errors[0].Extensions["variablePath"], tc.at) {
			t.Errorf("%s %v: %s", tc.query, tc.vars, r.raw)
		}
	}
}

// A variable that does not coerce to its type is a request error, as the
// GraphQL spec asks: 400 GRAPHQL_VALIDATION_FAILED under
// application/graphql-response+json, before any upstream call. gqlparser,
// which coerces variables first, compares enum values without case and
// takes a string of digits for an Int: an enum value written in another
// case once ran, and failed on each of its fields with BAD_USER_INPUT.
func TestVariablesCoerceAsTheSpecSays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const explorer = `query($q: ExplorerQueryInput!) { explorer { summary(query: $q) { cards { title } } } }`
	explorerVars := func(costType, granularity any) map[string]any {
		return map[string]any{"q": map[string]any{"dateRange": map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
			"groupBy": "product_product_name", "costType": costType, "granularity": granularity}}
	}
	const lookback = `query($p: BudgetPeriod) { budgetLookback(input: {explorerReportId: "rpt_1", startDate: "2026-01-01", period: $p}) { periods { periodKey } } }`
	const page = `query($n: Int) { budgets(first: $n) { nodes { id } } }`
	const nodes = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	for name, tc := range map[string]struct {
		query string
		vars  map[string]any
	}{
		"an enum in another case":        {lookback, map[string]any{"p": "monthly"}},
		"an enum in another case, again": {lookback, map[string]any{"p": "Monthly"}},
		"an enum as a number":            {lookback, map[string]any{"p": 1}},
		"a String as a number":           {explorer, explorerVars("line_item_unblended_cost", 1)},
		"an Int as a string":             {page, map[string]any{"n": "2"}},
		"an Int with a fraction":         {page, map[string]any{"n": 2.5}},
		"an Int with a tiny fraction":    {page, map[string]any{"n": 2.0000001}},
		"an Int past 32 bits, as 3e9":    {page, map[string]any{"n": 3e9}},
		"an Int past 32 bits":            {page, map[string]any{"n": 99999999999}},
		"a Boolean for an ID in a list":  {nodes, map[string]any{"ids": []any{"QnVkZ2V0OjE=", true}}},
	} {
		r := e.queryAs(t, "application/graphql-response+json", sim.DemoKey, tc.query, tc.vars)
		if r.status != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Data != nil {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		} else if p, _ := r.Errors[0].Extensions["variablePath"].([]any); len(p) < 1 || r.Errors[0].Path != nil {
			t.Errorf("%s: the error's variablePath %v does not name the variable, or it has a path %v", name, p, r.Errors[0].Path)
		}
	}
	if calls := e.calls.take(); len(calls) != 0 {
		t.Errorf("refused variables made upstream calls: %v", calls)
	}
	// What the spec coerces runs: the enum values as written (the report is
	// not one of the simulator's, which its field's error says), an Int as a
	// JSON integer, an ID as a string or an integer, one value for a list
	// of one (each ID then fails on its own, as an ID this API did not make).
	if r := e.query(t, sim.DemoKey, lookback, map[string]any{"p": "MONTHLY"}); r.status != 200 || r.Data == nil || r.code(t) != "BAD_USER_INPUT" {
		t.Errorf("an enum value as written: %s", r.raw)
	}
	e.mustQuery(t, sim.DemoKey, explorer, explorerVars("line_item_unblended_cost", "day"), nil)
	e.mustQuery(t, sim.DemoKey, page, map[string]any{"n": 2}, nil)
	// An Int written as a JSON number with a fraction of zero or an
	// exponent is the integer it is, as graphql-js reads JSON: a client that
	// writes numbers as floats (Python's json module, for one) sends 2.0.
	// They were refused, "2.0 is not a value of type Int".
	for _, n := range []string{"2.0", "2e0", "0.2e1", "20.000e-1"} {
		body := []byte(`{"query": "query($n: Int) { budgets(first: $n) { nodes { id } pageInfo { hasNextPage } } }", "variables": {"n": ` + n + `}}`)
		if r := e.serve(t, postRequest(body, sim.DemoKey)); r.status != 200 || len(r.Errors) > 0 || r.Data == nil {
			t.Errorf("first: %s: %d %s", n, r.status, r.raw)
		}
	}
	for _, ids := range []any{"QnVkZ2V0OjE=", []any{"QnVkZ2V0OjE=", 7}} {
		if r := e.query(t, sim.DemoKey, nodes, map[string]any{"ids": ids}); r.Data == nil || r.Errors[0].Extensions["code"] != "BAD_USER_INPUT" {
			t.Errorf("ids %v: %s", ids, r.raw)
		}
	}
	// The refusal says which value is wrong (gqlparser's said "cannot use
	// value 0 as Int" of 2.5).
	for v, want := range map[any]string{"2": `"2" is not a value of type Int`, 2.5: `2.5 is not a value of type Int`} {
		if r := e.query(t, sim.DemoKey, page, map[string]any{"n": v}); len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, want) {
			t.Errorf("the refusal of %v does not say what was wrong: %s", v, r.raw)
		}
	}
}

// A variable the request sets to null is refused where the operation uses
// it for a value of a non-null type: a nullable variable with a default may
// stand there (All Variable Usages Are Allowed), null may not
// (CoerceArgumentValues). Before, @skip(if: $s) with $s null panicked twice
// and answered 500, without a key too; an input argument got its zero
// value, and an empty body went upstream.
func TestNullWhereNonNullIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, tc := range map[string]struct {
		query, variable string
	}{
		"@skip(if:)":                  {`query($s: Boolean = true) { __typename @skip(if: $s) }`, "s"},
		"@include(if:) in a fragment": {`query($s: Boolean = true) { ...F } fragment F on Query { __typename @include(if: $s) }`, "s"},
		"an input argument": {`query($i: BudgetLookbackInput = {explorerReportId: "rpt_1", startDate: "2026-01-01"}) {
			budgetLookback(input: $i) { periods { periodKey } } }`, "i"},
		"an input field": {`query($r: String = "rpt_1") {
			budgetLookback(input: {explorerReportId: $r, startDate: "2026-01-01"}) { periods { periodKey } } }`, "r"},
		"a list element":       {`query($id: ID = "QnVkZ2V0OjE=") { nodes(ids: [$id]) { id } }`, "id"},
		"an introspection arg": {`query($n: String = "Budget") { __type(name: $n) { name } }`, "n"},
	} {
		for _, key := range []string{sim.DemoKey, ""} {
			r := e.queryAs(t, "application/graphql-response+json", key, tc.query, map[string]any{tc.variable: nil})
			if r.status != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Data != nil {
				t.Errorf("%s (key %q): %d %s", name, key, r.status, r.raw)
			} else if p, _ := r.Errors[0].Extensions["variablePath"].([]any); len(p) != 1 || p[0] != tc.variable || r.Errors[0].Path != nil {
				t.Errorf("%s: the error's variablePath %v does not name $%s, or it has a path %v", name, p, tc.variable, r.Errors[0].Path)
			}
		}
	}
	if calls := e.calls.take(); len(calls) != 0 {
		t.Errorf("refused variables made upstream calls: %v", calls)
	}
	// Null where null may be is the value null: first: null is the default.
	var got struct{ Budgets struct{ Nodes []any } }
	e.mustQuery(t, sim.DemoKey, `query($n: Int = 2) { budgets(first: $n) { nodes { id } } }`, map[string]any{"n": nil}, &got)
	if len(got.Budgets.Nodes) < 3 {
		t.Errorf("first: null gave %d budgets, want the default page", len(got.Budgets.Nodes))
	}
}

// An Int written in the document is a 32-bit integer, as one sent in a
// variable is (above): one past that range is a validation error. Before,
// first: 2147483648 reached the cost estimate, and a lookbackPeriod of
// 4294967299 was sent upstream.
func TestIntLiteralsAre32Bit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{
		`{ budgets(first: 2147483648) { nodes { id } } }`,
		`{ budgets(first: -2147483649) { nodes { id } } }`,
		`{ budgetLookback(input: {explorerReportId: "rpt_1", startDate: "2026-01-01", lookbackPeriod: 4294967299}) { periods { periodKey } } }`,
		`query($n: Int = 99999999999) { budgets(first: $n) { nodes { id } } }`,
	} {
		if r := e.queryAs(t, "application/graphql-response+json", sim.DemoKey, q, nil); r.status != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Data != nil {
			t.Errorf("%s: %d %s", q, r.status, r.raw)
		}
	}
	if calls := e.calls.take(); len(calls) != 0 {
		t.Errorf("refused documents made upstream calls: %v", calls)
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 2) { nodes { id } } }`, nil, nil)
}

// A variable of an input object type that is not a JSON object is refused
// in the words of GraphQL, naming the value: gqlparser named Go's kinds,
// "not a slice", "not a bool", and "not a string" of the number 5.
func TestInputObjectVariableOfAnotherKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const q = `query($q: ExplorerQueryInput!) { explorer { summary(query: $q) { cards { title } } } }`
	for v, want := range map[string]string{
		`[1]`:   `$q: [1] is not a value of type ExplorerQueryInput`,
		`true`:  `$q: true is not a value of type ExplorerQueryInput`,
		`5`:     `$q: 5 is not a value of type ExplorerQueryInput`,
		`"abc"`: `$q: "abc" is not a value of type ExplorerQueryInput`,
	} {
		body := []byte(`{"query": ` + strconv.Quote(q) + `, "variables": {"q": ` + v + `}}`)
		r := e.serve(t, postRequest(body, sim.DemoKey))
		if r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Errors[0].Message != want {
			t.Errorf("%s: %s, want %q", v, r.raw, want)
		}
	}
}

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
