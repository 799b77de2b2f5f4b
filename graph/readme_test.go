package graph_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Every GraphQL example of the README runs on the simulator without an
// error, with the variables its "# variables:" comment gives; a placeholder
// such as <an explorerReportId from a budget> is filled from the simulator.
// A dashboard whose costType or granularity the upstream does not take
// fails every one of its fields.
func TestReadmeExamplesRun(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```graphql\n(.*?)^```").FindAllSubmatch(readme, -1)
	if len(blocks) < 3 {
		t.Fatalf("the README has %d GraphQL examples; this test expects its overview, dashboard and write", len(blocks))
	}
	e := newEnv(t)
	var first struct {
		Budgets struct {
			Nodes []struct{ ExplorerReportID string } `json:"nodes"`
		} `json:"budgets"`
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 1) { nodes { explorerReportId } } }`, nil, &first)
	if len(first.Budgets.Nodes) == 0 {
		t.Fatal("the simulator has no budget")
	}
	fill := strings.NewReplacer("<an explorerReportId from a budget>", first.Budgets.Nodes[0].ExplorerReportID)
	for _, b := range blocks {
		query, vars, _ := strings.Cut(string(b[1]), "# variables:")
		var v map[string]any
		if vars != "" {
			text := regexp.MustCompile(`(?m)^#`).ReplaceAllString(vars, "")
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Errorf("the variables of %.40q are not JSON: %v", query, err)
				continue
			}
		}
		r := e.query(t, sim.DemoKey, fill.Replace(query), v)
		if len(r.Errors) > 0 || len(r.Data) == 0 {
			t.Errorf("the README's example %.40q: %s", query, r.raw)
		}
	}
}
