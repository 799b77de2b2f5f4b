package cost_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/internal/golden"
	"github.com/costgw/gateway/graph/internal/schematest"
	"github.com/costgw/gateway/graph/relay"
)

var schema = schematest.Schema

// Every field of the schema has a row in the table, and every row names a
// field of the schema: a field added without saying what it costs fails
// here.
func TestEveryFieldHasARow(t *testing.T) {
	t.Parallel()
	rows := cost.Fields()
	for _, def := range schema.Types {
		if def.BuiltIn || strings.HasPrefix(def.Name, "__") || (def.Kind != ast.Object && def.Kind != ast.Interface) {
			continue
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			key := def.Name + "." + f.Name
			if _, ok := rows[key]; !ok {
				t.Errorf("%s has no row in the cost table (graph/cost/cost.go)", key)
			}
			delete(rows, key)
		}
	}
	for key := range rows {
		t.Errorf("the cost table has a row for %s, which the schema does not have", key)
	}
}

// The rows are consistent with the schema: connections take first and
// after, the fields that call the upstream on every resolution sit where
// they resolve once per operation (a row under a list would be counted once
// for all its elements), node and nodes return Node, and Satisfies knows
// every interface an object implements.
func TestRowsFitTheSchema(t *testing.T) {
	t.Parallel()
	for key, row := range cost.Fields() {
		typ, name, _ := strings.Cut(key, ".")
		f := schema.Types[typ].Fields.ForName(name)
		if row.Connection && (f.Arguments.ForName("first") == nil || f.Arguments.ForName("after") == nil) {
			t.Errorf("%s is a connection without first and after", key)
		}
		if (row.Calls > 0 || row.Connection) && !slices.Contains([]string{"Query", "Mutation", "Explorer"}, typ) {
			t.Errorf("%s calls the upstream itself but is not on a root type or Explorer", key)
		}
		if row.Refetch && f.Type.Name() != "Node" {
			t.Errorf("%s refetches but does not return Node", key)
		}
		if row.Op == "" && (row.Calls > 0 || row.Connection || row.Needs != 0) {
			t.Errorf("%s costs calls but names no upstream operation", key)
		}
	}
	for _, def := range schema.Types {
		if def.Kind != ast.Object || len(def.Interfaces) == 0 {
			continue
		}
		want := append([]string{def.Name}, def.Interfaces...)
		if got := cost.Satisfies(def.Name); !slices.Equal(got, want) {
			t.Errorf("Satisfies(%s) = %v, want %v", def.Name, got, want)
		}
	}
	for typ := range cost.RefetchOf {
		if !slices.Contains(schema.GetPossibleTypes(schema.Types["Node"]), schema.Types[typ]) {
			t.Errorf("RefetchOf names %s, which does not implement Node", typ)
		}
	}
	for _, def := range schema.GetPossibleTypes(schema.Types["Node"]) {
		if _, ok := cost.RefetchOf[def.Name]; !ok {
			t.Errorf("%s implements Node but RefetchOf does not say how node refetches it", def.Name)
		}
	}
}

// The schema's default of first is the one the estimate and the resolvers use.
func TestDefaultFirstIsTheSchemas(t *testing.T) {
	t.Parallel()
	for key, row := range cost.Fields() {
		if !row.Connection {
			continue
		}
		typ, name, _ := strings.Cut(key, ".")
		arg := schema.Types[typ].Fields.ForName(name).Arguments.ForName("first")
		if arg.DefaultValue == nil || arg.DefaultValue.Raw != "50" || cost.DefaultFirst != 50 {
			t.Errorf("%s: first defaults to %v in the schema, %d in package cost", key, arg.DefaultValue, cost.DefaultFirst)
		}
	}
}

// The estimate is the number of upstream calls the resolvers make for the
// queries whose calls the gateway tests count.
func TestEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string
		vars  map[string]any
		want  int
	}{
		{"names", `{ budgets { edges { node { name } } } }`, nil, 1},
		{"overview of 50", `{ budgets(first: 50) { nodes { metrics { variance } actuals { total } plannings { actuals { period } } } } }`, nil, 101},
		{"overview via variable", `query($n: Int) { budgets(first: $n) { edges { node { dimensions plannings { actuals { amount } } } } } }`, map[string]any{"n": 10}, 21},
		{"rows' budget is the budget's read", `{ budgets(first: 5) { nodes { plannings { budget { metrics { variance } } } } } }`, nil, 6},
		{"nodes and edges are the same budgets", `{ budgets(first: 5) { nodes { metrics { variance } } edges { node { metrics { variance } actuals { total } } } } }`, nil, 11},
		{"walking pages", `{ recommendations(first: 500) { nodes { recommendationId } } }`, nil, 3},
		{"resuming adds a page", `{ anomalies(first: 200, after: "x") { nodes { anomalyId } } }`, nil, 2},
		{"budget by id", `{ budget(id: "x") { name actuals { total } } }`, nil, 2},
		{"planning node", `{ node(id: "` + relay.PlanningID("b", "p") + `") { ... on Planning { actuals { amount } } } }`, nil, 2},
		{"budget node", `{ node(id: "` + relay.BudgetID("b") + `") { id ... on Budget { actuals { total } metrics { variance } } } }`, nil, 2},
		{"budget node by variable", `query($id: ID!) { node(id: $id) { id ... on Budget { actuals { total } } } }`, map[string]any{"id": relay.BudgetID("b")}, 2},
		{"a node that is not an ID", `{ node(id: "x") { id } }`, nil, 0},
		{"nodes", `{ nodes(ids: ["` + relay.BudgetID("a") + `", "` + relay.BudgetID("b") + `", "` + relay.PlanningID("a", "p") + `"]) { id } }`, nil, 3},
		// Input coercion takes a single value for a list of one: the
		// estimate was 0 for these, and 20 aliases of them made 40 calls
		// under a limit of 10.
		{"nodes of one ID written alone", `{ nodes(ids: "` + relay.BudgetID("a") + `") { ... on Budget { metrics { variance } actuals { total } } } }`, nil, 2},
		{"nodes of one ID given alone", `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Budget { metrics { variance } actuals { total } } } }`,
			map[string]any{"ids": relay.BudgetID("a")}, 2},
		{"nodes found by listing share the list", `{ nodes(ids: ["` + relay.NodeID(relay.TypeRecommendation, "r1") + `", "` +
			relay.NodeID(relay.TypeRecommendation, "r2") + `", "` + relay.NodeID(relay.TypeUser, "u") + `"]) { id } }`, nil, 2 * cost.MaxScanPages},
		{"explorer", `{ explorer { __typename dimensionValues(key: "k") { values } summary(query: {dateRange: {start: "2026-01-01", end: "2026-01-31"}, groupBy: "g", costType: "line_item_unblended_cost", granularity: "day"}) { servedFromCache } } }`, nil, 2},
		{"mutation and its payload", `mutation { createBudget(input: {name: "n", startDate: "2026-01-01", numberOfPeriods: 1, explorerReportId: "r"}) { budget { metrics { variance } } } }`, nil, 2},
		{"introspection is free", `{ __schema { types { name } } __typename }`, nil, 0},
		{"fragments count", `{ budgets(first: 3) { ...B } } fragment B on BudgetConnection { nodes { ...M } } fragment M on Budget { metrics { variance } }`, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := cost.Estimate(schematest.Operation(t, tc.query), tc.vars).Calls; got != tc.want {
				t.Fatalf("Estimate = %d, want %d", got, tc.want)
			}
		})
	}
}

// Fragments that each spread the next one twice expand to 2^26 copies of
// the last one's fields; the estimate visits each fragment once, so it
// answers at once, and counts what the executor runs: a fragment spread
// twice in one selection runs once.
func TestEstimateIsLinearInFragments(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{ budgets(first: 2) { nodes { ...F0 } } }`)
	const n = 26
	for i := range n {
		fmt.Fprintf(&b, " fragment F%d on Budget { ...F%d ...F%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment F%d on Budget { metrics { variance } a: name }", n)
	s := cost.Estimate(schematest.Operation(t, b.String()), nil)
	if want := (cost.Summary{Calls: 1 + 2, Depth: 4, Aliases: 1, RootFields: 1}); s != want {
		t.Fatalf("Estimate = %+v, want %+v", s, want)
	}
}

// docs/upstream.md lists what each GraphQL field calls, generated from the
// table: the documentation cannot drift from what the limits and the
// resolvers read.
func TestUpstreamDocListsEveryCallingField(t *testing.T) {
	t.Parallel()
	const path = "../../docs/upstream.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- fields:begin -->\n", "<!-- fields:end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q … %q markers", path, begin, end)
	}
	want := append(append(append([]byte{}, doc[:i+len(begin)]...), fieldTable()...), doc[j:]...)
	golden.Compare(t, path, "the table generated from cost.Fields", want)
}

// fieldTable is the Markdown table of the fields that call the upstream.
func fieldTable() []byte {
	var rows []string
	for key, f := range cost.Fields() {
		var calls string
		switch {
		case f.Connection:
			calls = fmt.Sprintf("ceil(first / %d) pages, one more after a cursor; each element counts its selection", cost.PageSize)
		case f.Refetch && f.PerID:
			calls = "per id, as `node`"
		case f.Refetch:
			calls = "the object's read (a Budget: `getBudget`; a Planning: `getBudgetPlanning` of its budget), plus its selection's per-budget reads"
		case f.Calls > 0:
			calls = fmt.Sprintf("%d per use", f.Calls)
		case f.NewBudget && f.Needs != 0:
			calls = "1, plus the budget's selection's per-budget reads"
		case f.Uncounted:
			calls = "per budget, only for a budget record that came without its planning rows, within what `-max-cost` leaves over the estimate"
		case f.Needs != 0:
			calls = "per budget, shared with every field that needs it"
		default:
			continue
		}
		op := "`" + f.Op + "`"
		if f.Op == "" {
			op = "—"
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |\n", key, op, calls))
	}
	slices.Sort(rows)
	return []byte("| field | upstream operation | calls |\n|---|---|---|\n" + strings.Join(rows, ""))
}

// EstimateOnce keeps an operation's estimate for its next requests only when
// no variable went into it: a cached document whose page size, ID or IDs
// come from variables is estimated again with each request's values.
func TestEstimateOnceFollowsTheVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		vars  []map[string]any
	}{
		{`query($n: Int) { budgets(first: $n) { nodes { actuals { total } } } }`,
			[]map[string]any{{"n": 10}, {"n": 50}, {}}},
		{`query($a: String) { anomalies(first: 200, after: $a) { nodes { anomalyId } } }`,
			[]map[string]any{{"a": nil}, {"a": "x"}}},
		{`query($id: ID!) { node(id: $id) { id ... on Budget { actuals { total } metrics { variance } } } }`,
			[]map[string]any{{"id": relay.BudgetID("b")}, {"id": "x"}, {"id": relay.NodeID(relay.TypeRecommendation, "r")}}},
		{`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`,
			[]map[string]any{{"ids": []any{relay.BudgetID("a")}}, {"ids": []any{relay.BudgetID("a"), relay.BudgetID("b")}}}},
		{`query($id: ID!) { budget(id: $id) { actuals { total } } budgets(first: 3) { nodes { name } } }`,
			[]map[string]any{{"id": "a"}, {"id": "b"}}},
	}
	for _, tc := range tests {
		op := schematest.Operation(t, tc.query)
		for _, vars := range tc.vars {
			if got, want := cost.EstimateOnce(op, vars), cost.Estimate(op, vars); got != want {
				t.Errorf("%s with %v: EstimateOnce = %+v, want %+v", tc.query, vars, got, want)
			}
		}
	}
}
