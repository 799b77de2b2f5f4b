package limits_test

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/limits"
)

var schema = generated.NewExecutableSchema(generated.Config{}).Schema()

func operation(t testing.TB, q string) *ast.OperationDefinition {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(schema, q)
	if len(errs) > 0 {
		t.Fatalf("query does not validate: %v", errs)
	}
	return doc.Operations[0]
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
		{"walking pages", `{ recommendations(first: 500) { nodes { recommendationId } } }`, nil, 3},
		{"resuming adds a page", `{ anomalies(first: 200, after: "x") { nodes { anomalyId } } }`, nil, 2},
		{"budget by id", `{ budget(id: "x") { name actuals { total } } }`, nil, 2},
		{"planning node", `{ node(id: "x") { ... on Planning { actuals { amount } } } }`, nil, 2},
		{"nodes", `{ nodes(ids: ["a", "b", "c"]) { id } }`, nil, 3},
		{"explorer", `{ explorer { __typename dimensionValues(key: "k") { values } summary(query: {dateRange: {start: "2026-01-01", end: "2026-01-31"}, groupBy: "g", costType: "c", granularity: "day"}) { servedFromCache } } }`, nil, 2},
		{"mutation and its payload", `mutation { createBudget(input: {name: "n", startDate: "2026-01-01", numberOfPeriods: 1, explorerReportId: "r"}) { budget { metrics { variance } } } }`, nil, 2},
		{"introspection is free", `{ __schema { types { name } } __typename }`, nil, 0},
		{"fragments count", `{ budgets(first: 3) { ...B } } fragment B on BudgetConnection { nodes { ...M } } fragment M on Budget { metrics { variance } }`, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := limits.Estimate(operation(t, tc.query), tc.vars); got != tc.want {
				t.Fatalf("Estimate = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := "{ budgets { nodes { plannings { budget { plannings { budget { plannings { budget { name } } } } } } } } }"
	aliases := "{ budgets { nodes { "
	for i := range 31 {
		aliases += "a" + strings.Repeat("x", i) + ": name "
	}
	aliases += "} } }"
	roots := "{ " + strings.Repeat("budgetLookbackPreview { periods { actual } } ", 1)
	for i := range 21 {
		roots += "r" + strings.Repeat("x", i) + ": budgetLookbackPreview { periods { actual } } "
	}
	roots += "}"
	tests := []struct {
		name  string
		query string
		cfg   limits.Config
		code  string
	}{
		{"within defaults", `{ budgets(first: 200) { nodes { metrics { variance } actuals { total } } } }`, limits.Defaults(), ""},
		{"cost over budget", `{ budgets(first: 300) { nodes { metrics { variance } actuals { total } } } }`, limits.Defaults(), limits.CodeCost},
		{"depth", deep, limits.Config{MaxDepth: 8}, limits.CodeDepth},
		{"depth within", deep, limits.Config{MaxDepth: 10}, ""},
		{"aliases", aliases, limits.Defaults(), limits.CodeAliases},
		{"root fields", roots, limits.Config{MaxRootFields: 20}, limits.CodeRootFields},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := limits.Check(operation(t, tc.query), nil, tc.cfg)
			got := ""
			if err != nil {
				got, _ = err.Extensions["code"].(string)
			}
			if got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

func TestCostErrorStatesEstimateAndBudget(t *testing.T) {
	t.Parallel()
	err := limits.Check(operation(t, `{ budgets(first: 500) { nodes { metrics { variance } } } }`), nil, limits.Config{MaxCost: 100})
	if err == nil || err.Extensions["estimatedCost"] != 503 || err.Extensions["maxCost"] != 100 ||
		!strings.Contains(err.Message, "503") || !strings.Contains(err.Message, "100") {
		t.Fatalf("error = %+v", err)
	}
}

func TestCheckTokens(t *testing.T) {
	t.Parallel()
	q := "{ " + strings.Repeat("__typename ", 100) + "}"
	if err := limits.CheckTokens(q, 102); err != nil {
		t.Fatalf("102 tokens within a limit of 102: %v", err)
	}
	if err := limits.CheckTokens(q, 101); err == nil || err.Extensions["code"] != limits.CodeTokens {
		t.Fatalf("102 tokens over a limit of 101: %v", err)
	}
}

// FuzzCheck feeds arbitrary documents through validation and the limit
// checks: they must never panic, and an operation that passes must have an
// estimate within the budget.
func FuzzCheck(f *testing.F) {
	for _, q := range []string{
		`{ budgets(first: 50) { nodes { metrics { variance } plannings { actuals { amount } budget { name } } } } }`,
		`query($n: Int) { recommendations(first: $n, after: "c") { nodes { recommendationId } } }`,
		`{ nodes(ids: ["a"]) { ... on Budget { actuals { total } } ... on Planning { budget { metrics { variance } } } } }`,
		`fragment F on Budget { dimensions } { budget(id: "x") { ...F } }`,
		`mutation { deleteBudget(input: {id: "x"}) { success } }`,
	} {
		f.Add(q)
	}
	cfg := limits.Defaults()
	f.Fuzz(func(t *testing.T, q string) {
		if limits.CheckTokens(q, cfg.MaxTokens) != nil {
			return
		}
		doc, errs := gqlparser.LoadQuery(schema, q)
		if len(errs) > 0 {
			return
		}
		for _, op := range doc.Operations {
			if err := limits.Check(op, map[string]any{"n": 120}, cfg); err == nil && limits.Estimate(op, map[string]any{"n": 120}) > cfg.MaxCost {
				t.Fatalf("passed with an estimate over the budget: %s", q)
			}
		}
	})
}
