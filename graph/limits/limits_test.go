package limits_test

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/internal/schematest"
	"github.com/costgw/gateway/graph/limits"
)

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
		{"cost over budget", `{ budgets(first: 300) { nodes { metrics { variance } actuals { total } } } }`, limits.Defaults(), string(codes.CostTooHigh)},
		{"depth", deep, limits.Config{MaxDepth: 8}, string(codes.MaxDepth)},
		{"depth within", deep, limits.Config{MaxDepth: 10}, ""},
		{"aliases", aliases, limits.Defaults(), string(codes.MaxAliases)},
		{"root fields", roots, limits.Config{MaxRootFields: 20}, string(codes.MaxRootFields)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := limits.Check(schematest.Operation(t, tc.query), nil, tc.cfg)
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
	err := limits.Check(schematest.Operation(t, `{ budgets(first: 500) { nodes { metrics { variance } } } }`), nil, limits.Config{MaxCost: 100})
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
	if err := limits.CheckTokens(q, 101); err == nil || err.Extensions["code"] != string(codes.MaxTokens) {
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
		doc, errs := gqlparser.LoadQuery(schematest.Schema, q)
		if len(errs) > 0 {
			return
		}
		for _, op := range doc.Operations {
			if err := limits.Check(op, map[string]any{"n": 120}, cfg); err == nil && cost.Estimate(op, map[string]any{"n": 120}).Calls > cfg.MaxCost {
				t.Fatalf("passed with an estimate over the budget: %s", q)
			}
		}
	})
}

// A name is shown whole up to MaxShownName bytes, and clipped at a
// character's start past it.
func TestShownName(t *testing.T) {
	t.Parallel()
	fits := strings.Repeat("n", limits.MaxShownName)
	for in, want := range map[string]string{
		"":                        "",
		"Overview":                "Overview",
		fits:                      fits,
		fits + "x":                fits + "…",
		fits[1:] + "é" + "tail":   fits[1:] + "…", // é's second byte is past the bound
		fits[2:] + "é" + "tail":   fits[2:] + "é…",
		strings.Repeat("名", 1000): strings.Repeat("名", limits.MaxShownName/3) + "…",
	} {
		if got := limits.ShownName(in); got != want {
			t.Errorf("ShownName(%.20q…) = %.20q…, want %.20q…", in, got, want)
		}
	}
}
