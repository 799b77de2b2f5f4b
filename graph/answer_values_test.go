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
		costType: LINE_ITEM_UNBLENDED_COST, granularity: DAY}) { costRows { group date cost } }`
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
		body, _ := json.Marshal(map[string]any{"query": q})
		for _, accept := range []string{"application/graphql-response+json", "application/json"} {
			req := postRequest(body, sim.DemoKey)
			req.Header.Set("Accept", accept)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			r := decode(t, rec)
			want := 400
			if accept == "application/json" {
				want = 200
			}
			if rec.Code != want || r.code(t) != "MAX_ANSWER_VALUES_LIMIT" || r.Data != nil {
				t.Errorf("%s (%s): %d %.300s", name, accept, rec.Code, rec.Body)
			}
			if rec.Body.Len() > 1<<10 {
				t.Errorf("%s: the refusal is %d bytes", name, rec.Body.Len())
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
