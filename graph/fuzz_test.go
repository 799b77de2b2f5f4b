package graph_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream"
)

// FuzzDocument sends whole documents (fragments, aliases, directives,
// variables) through the real handler, with a key, against an upstream that
// refuses every connection: whatever the document, the answer is JSON with
// a registered code or data, and the work per document stays bounded: at
// most 64 MB allocated, and 2 s (a backstop for a loaded machine; the
// documents CI runs take milliseconds).
func FuzzDocument(f *testing.F) {
	for _, q := range []string{
		`{ budgets(first: 3) { nodes { ...B } } } fragment B on Budget { id a: name metrics @include(if: true) { variance } }`,
		`query Q($n: Int = 2, $skip: Boolean!) { recommendations(first: $n) @skip(if: $skip) { edges { cursor node { recommendationId } } } }`,
		`query { ...F0 } fragment F0 on Query { ...F1 ...F1 } fragment F1 on Query { __typename t: __typename }`,
		`{ node(id: "QnVkZ2V0OmI=") { id ... on Budget { plannings { budget { id } } } ... on Planning { actuals { amount } } } }`,
		`mutation M($in: CreateBudgetInput!) { createBudget(input: $in) { userErrors { field message code } } }`,
		`{ explorer { summary(query: {dateRange: {start: "2026-01-01", end: "2026-01-31"}, groupBy: "g", costType: "line_item_unblended_cost", granularity: "day", filters: [{a: [[[1]]]}]}) { cards { title } } } }`,
		`{ __schema { types { name fields { name type { ofType { ofType { name } } } } } } }`,
		`{ a: __typename a: __typename b: budgets { nodes { id } } b: budgets { nodes { id } } }`,
	} {
		f.Add(q, `{"n": 1, "skip": false, "in": {"name": "x", "startDate": "2026-01-01", "numberOfPeriods": 1, "explorerReportId": "r"}}`)
	}
	c, err := upstream.NewClient("http://127.0.0.1:1", upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}),
		upstream.WithTimeout(time.Second))
	if err != nil {
		f.Fatal(err)
	}
	h := graph.NewHandler(graph.Options{Client: c, Introspection: true})
	f.Fuzz(func(t *testing.T, query, vars string) {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": json.RawMessage(vars)})
		if !json.Valid([]byte(vars)) {
			body, _ = json.Marshal(map[string]any{"query": query})
		}
		req := postRequest(body, "fuzz-key")
		rec := httptest.NewRecorder()
		start := time.Now()
		n := allocated(func() { h.ServeHTTP(rec, req) })
		took := time.Since(start)
		if n > 64<<20 {
			t.Errorf("the document allocated %d MB", n>>20)
		}
		if took > 2*time.Second {
			t.Errorf("the document took %v", took)
		}
		r := decode(t, rec)
		if rec.Code >= 500 && rec.Code != http.StatusGatewayTimeout {
			t.Errorf("status %d: %.300s", rec.Code, rec.Body)
		}
		if len(r.Errors) == 0 && len(r.Data) == 0 {
			t.Errorf("neither data nor errors: %.300s", rec.Body)
		}
	})
}
