package limits

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/costgw/gateway/graph/internal/schematest"
)

// Variables that coerce cost the check no allocation: it runs on every
// request, cached documents included, and once built the path of every
// value it looked at.
func TestCheckVariablesAllocatesNothingWhenValid(t *testing.T) {
	op := schematest.Operation(t, `query($q: ExplorerQueryInput!, $ids: [ID!]!, $n: Int) {
  explorer { summary(query: $q) { cards { title } } }
  nodes(ids: $ids) { id }
  budgets(first: $n) { nodes { id } }
}`)
	var vars map[string]any
	d := json.NewDecoder(strings.NewReader(`{"q": {"dateRange": {"start": "2026-10-01", "end": "2026-10-31"},
  "groupBy": "product_product_name", "costType": "line_item_unblended_cost", "granularity": "day", "filters": [{"a": 1}]},
  "ids": ["QnVkZ2V0OjE=", "QnVkZ2V0OjI=", 7], "n": 20}`))
	d.UseNumber()
	if err := d.Decode(&vars); err != nil {
		t.Fatal(err)
	}
	if err := checkVariables(schematest.Schema, op, vars); err != nil {
		t.Fatalf("valid variables refused: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = checkVariables(schematest.Schema, op, vars) }); n != 0 {
		t.Errorf("%v allocations a check", n)
	}
}
