package graph_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream/sim"
)

// Every limit answers with its own code and the status the GraphQL-over-HTTP
// spec gives an invalid request, before any upstream call.
func TestLimitsRejectBeforeAnyUpstreamCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	many := func(n int, s string) string { return strings.Repeat(s, n) }
	// aliased is n selections of field, each under an alias of its own
	// (prefix, prefix+"x", prefix+"xx", …).
	aliased := func(n int, prefix, field string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(prefix + many(i, "x") + ": " + field + " ")
		}
		return b.String()
	}
	tests := []struct {
		name, query string
		status      int
		code        string
	}{
		{"tokens", "{ " + many(15001, "__typename ") + "}", 400, string(codes.MaxTokens)},
		{"depth", "{ budgets { nodes " + many(10, "{ plannings { budget ") + "{ name }" + many(21, " }") + " }", 400, string(codes.MaxDepth)},
		{"aliases", "{ budgets { nodes { " + aliased(31, "a", "name") + "} } }", 400, string(codes.MaxAliases)},
		{"root fields", "{ " + aliased(21, "r", "budgetLookbackPreview { periods { actual } }") + "}", 400, string(codes.MaxRootFields)},
		{"cost", "{ budgets(first: 500) { nodes { metrics { variance } actuals { total } } } }", 400, string(codes.CostTooHigh)},
		{"body", `{"query":"{ __typename }","pad":"` + many(2_000_001, "x") + `"}`, 413, "REQUEST_TOO_LARGE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.calls.take()
			body := tc.query
			if tc.code != "REQUEST_TOO_LARGE" {
				body = queryBody(tc.query)
			}
			r := e.post(t, body, "Accept", "application/graphql-response+json", "Authorization", "Bearer "+sim.DemoKey)
			if r.status != tc.status || r.code(t) != tc.code {
				t.Fatalf("status %d code %q, want %d %q: %+v", r.status, r.code(t), tc.status, tc.code, r.Errors)
			}
			if calls := e.calls.take(); len(calls) != 0 {
				t.Fatalf("a rejected operation made upstream calls: %v", calls)
			}
		})
	}
}

// Every answer states -max-cost in extensions.cost.maxUpstreamCalls, null
// only when the limit is off: those refused before the limits ran (a parse
// or validation failure, the token limit, a malformed persistedQuery) once
// said null with the limit at 500.
func TestEveryAnswerStatesTheCostLimit(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		"data":       queryBody(`{ __typename }`),
		"parse":      queryBody(`{`),
		"validation": queryBody(`{ nope }`),
		"tokens":     queryBody("{ " + strings.Repeat("__typename ", 15001) + "}"),
		"persisted": bodyOf(map[string]any{"query": `{ __typename }`,
			"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf("other")}}}),
	}
	for _, tc := range []struct {
		env  *env
		want any
	}{{newEnv(t), float64(limits.Defaults().MaxCost)}, {newEnv(t, withLimits(noCostLimit())), nil}} {
		for name, body := range bodies {
			r := tc.env.post(t, body, "Authorization", "Bearer "+sim.DemoKey)
			var a struct {
				Extensions struct {
					Cost map[string]any `json:"cost"`
				} `json:"extensions"`
			}
			if err := json.Unmarshal(r.raw, &a); err != nil {
				t.Fatal(err)
			}
			if got, ok := a.Extensions.Cost["maxUpstreamCalls"]; !ok || got != tc.want {
				t.Errorf("%s: maxUpstreamCalls %v, want %v: %s", name, got, tc.want, r.raw)
			}
		}
	}
}

// noCostLimit is the default limits with -max-cost 0.
func noCostLimit() limits.Config {
	l := limits.Defaults()
	l.MaxCost = 0
	return l
}

// A document of nothing but whitespace or comments does not parse: the
// grammar asks for one definition. It was GRAPHQL_VALIDATION_FAILED; one of
// fragments only is still a validation error.
func TestEmptyDocumentDoesNotParse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for q, want := range map[string]codes.Code{
		"   \n\t ":                           codes.ParseFailed,
		"# just a comment":                   codes.ParseFailed,
		"fragment F on Query { __typename }": codes.ValidationFailed,
	} {
		if r := e.post(t, bodyOf(map[string]any{"query": q}), "Authorization", "Bearer "+sim.DemoKey); r.code(t) != string(want) {
			t.Errorf("%q: %s, want %s", q, r.raw, want)
		}
	}
}

// A document of several operations needs operationName, and an
// operationName the document lacks says so; gqlgen answered both with
// "operation  not found".
func TestOperationNameSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const two = `query A { __typename } query B { __typename }`
	for _, tc := range []struct{ name, want string }{
		{"", "the document has 2 operations: name the one to run in operationName"},
		{"C", `the document has no operation named "C"`},
	} {
		for range 2 { // parsed, then from the cache
			r := e.post(t, bodyOf(map[string]any{"query": two, "operationName": tc.name}), "Authorization", "Bearer "+sim.DemoKey)
			if r.code(t) != string(codes.ValidationFailed) || r.Errors[0].Message != tc.want {
				t.Errorf("operationName %q: %s", tc.name, r.raw)
			}
		}
	}
	// A name is shown clipped: one of 400 KB was repeated whole in its
	// error, and in the access line of each request that ran it.
	long := strings.Repeat("Z", 400_000)
	shown := strings.Repeat("Z", limits.MaxShownName) + "…"
	if r := e.post(t, bodyOf(map[string]any{"query": two, "operationName": long}), "Authorization", "Bearer "+sim.DemoKey); r.code(t) != string(codes.ValidationFailed) ||
		r.Errors[0].Message != `the document has no operation named "`+shown+`"` {
		t.Errorf("operationName of 400 KB: %.300s", r.raw)
	}
	ctx, info := graph.WithInfo(context.Background())
	req := postRequest([]byte(bodyOf(map[string]any{"query": "query " + long + " { __typename }"})), sim.DemoKey).WithContext(ctx)
	e.h.ServeHTTP(httptest.NewRecorder(), req)
	if name, _ := info.Operation(); name != shown {
		t.Errorf("an operation named with 400 KB is shown as %.200q…", name)
	}

	var data struct {
		Typename string `json:"__typename"`
	}
	if r := e.post(t, bodyOf(map[string]any{"query": two, "operationName": "B"}), "Authorization", "Bearer "+sim.DemoKey); len(r.Errors) > 0 ||
		json.Unmarshal(r.Data, &data) != nil || data.Typename != "Query" {
		t.Errorf("operationName B: %s", r.raw)
	}
}
