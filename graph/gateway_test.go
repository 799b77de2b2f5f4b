package graph_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/sim"
)

// countOps turns a call log into counts per "METHOD route", with ids replaced by {id}.
func countOps(calls []string) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		method, path, _ := strings.Cut(c, " ")
		parts := strings.Split(path, "/")
		if len(parts) >= 4 && parts[2] == "budgets" && parts[3] != "lookback" {
			parts[3] = "{id}"
		}
		out[method+" "+strings.Join(parts, "/")]++
	}
	return out
}

// A list of names is exactly one upstream call: no field asks for more.
func TestBudgetNamesAreOneCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var got struct {
		Budgets struct {
			Edges []struct{ Node struct{ Name string } }
		}
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets { edges { node { name } } } }`, nil, &got)
	if len(got.Budgets.Edges) != len(e.sim.IDs(sim.DemoKey, "budgets")) {
		t.Fatalf("got %d budgets, want %d", len(got.Budgets.Edges), len(e.sim.IDs(sim.DemoKey, "budgets")))
	}
	if diff := cmp.Diff([]string{"GET /v1/budgets"}, e.calls.take()); diff != "" {
		t.Fatalf("upstream calls (-want +got):\n%s", diff)
	}
}

const overviewQuery = `query Overview($first: Int) {
  budgets(first: $first) {
    nodes {
      upstreamId name
      metrics { totalTarget totalActual variance }
      actuals { total byPeriod { period amount } }
      plannings { upstreamId dimension1 targetItems { dimensionValue amount } actuals { period amount } }
    }
  }
}`

// The 50-budget overview costs 1 list + 50 getBudget + 50 getBudgetActuals:
// metrics come from the single-budget read, plannings from the list record,
// and every planning row's actuals from its budget's actuals call.
func TestOverviewCallCountIsMinimal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	have := len(e.sim.IDs(sim.DemoKey, "budgets"))
	for i := have; i < 50; i++ {
		e.mustQuery(t, sim.DemoKey, `mutation($in: CreateBudgetInput!) { createBudget(input: $in) { budget { id } userErrors { message } } }`,
			map[string]any{"in": map[string]any{"name": fmt.Sprintf("Overview %d", i), "startDate": "2026-01-01",
				"numberOfPeriods": 12, "explorerReportId": reportID(t, e)}}, nil)
	}
	e.calls.take()

	var got struct {
		Budgets struct {
			Nodes []struct {
				UpstreamID string
				Metrics    *struct{ TotalTarget, TotalActual, Variance float64 }
				Actuals    *struct {
					Total    float64
					ByPeriod []struct {
						Period string
						Amount float64
					}
				}
				Plannings []struct {
					UpstreamID string
					Actuals    []struct {
						Period string
						Amount float64
					}
				}
			}
		}
	}
	e.mustQuery(t, sim.DemoKey, overviewQuery, map[string]any{"first": 50}, &got)
	calls := e.calls.take()
	want := map[string]int{"GET /v1/budgets": 1, "GET /v1/budgets/{id}": 50, "GET /v1/budgets/{id}/actuals": 50}
	if diff := cmp.Diff(want, countOps(calls)); diff != "" {
		t.Fatalf("upstream calls per route (-want +got):\n%s", diff)
	}
	seen := map[string]int{}
	for _, c := range calls {
		seen[c]++
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("%s called %d times, want once", c, n)
		}
	}
	if len(got.Budgets.Nodes) != 50 {
		t.Fatalf("got %d budgets, want 50", len(got.Budgets.Nodes))
	}
	for _, b := range got.Budgets.Nodes {
		if b.Metrics == nil || b.Actuals == nil || len(b.Plannings) == 0 {
			t.Fatalf("budget %s lacks metrics, actuals or plannings", b.UpstreamID)
		}
		// The budget's actuals per period are the sum of its rows' actuals.
		sums := map[string]float64{}
		for _, p := range b.Plannings {
			for _, a := range p.Actuals {
				sums[a.Period] += a.Amount
			}
		}
		for _, a := range b.Actuals.ByPeriod {
			if math.Abs(sums[a.Period]-a.Amount) > 0.011 {
				t.Errorf("budget %s period %s: rows sum to %.2f, budget says %.2f", b.UpstreamID, a.Period, sums[a.Period], a.Amount)
			}
		}
		if !sort.SliceIsSorted(b.Actuals.ByPeriod, func(i, j int) bool { return b.Actuals.ByPeriod[i].Period < b.Actuals.ByPeriod[j].Period }) {
			t.Errorf("budget %s: byPeriod not sorted", b.UpstreamID)
		}
	}
}

// reportID returns an Explorer report id of organization one, read through the gateway.
func reportID(t *testing.T, e *env) string {
	t.Helper()
	var got struct {
		Budgets struct {
			Nodes []struct{ ExplorerReportID string }
		}
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 1) { nodes { explorerReportId } } }`, nil, &got)
	return got.Budgets.Nodes[0].ExplorerReportID
}

// connQueries maps each connection to a query returning its records' REST ids.
var connQueries = map[string]struct{ collection, query, idField string }{
	"budgets":                {"budgets", `query($first: Int, $after: String) { c: budgets(first: $first, after: $after) { edges { cursor node { key: upstreamId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, "upstreamId"},
	"recommendations":        {"recommendations", `query($first: Int, $after: String) { c: recommendations(first: $first, after: $after) { edges { cursor node { key: recommendationId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, "recommendationId"},
	"anomalies":              {"anomalies", `query($first: Int, $after: String) { c: anomalies(first: $first, after: $after) { edges { cursor node { key: anomalyId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, "anomalyId"},
	"scheduledNotifications": {"notifications", `query($first: Int, $after: String) { c: scheduledNotifications(first: $first, after: $after) { totalCount edges { cursor node { key: upstreamId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, "id"},
}

type connPage struct {
	C struct {
		TotalCount *int
		Edges      []struct {
			Cursor string
			Node   struct{ Key string }
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
}

// Paging every connection with several page sizes returns exactly the
// records of the REST lists, in order; every edge cursor resumes right after
// its record.
func TestConnectionsPageExactlyTheRESTRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, cq := range connQueries {
		want := e.sim.IDs(sim.DemoKey, cq.collection)
		for _, first := range []int{1, 7, 50, 200, 500} {
			t.Run(fmt.Sprintf("%s/first=%d", name, first), func(t *testing.T) {
				var got []string
				var after any
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatal("paging does not end")
					}
					var p connPage
					e.mustQuery(t, sim.DemoKey, cq.query, map[string]any{"first": first, "after": after}, &p)
					if p.C.PageInfo.HasPreviousPage {
						t.Fatal("hasPreviousPage must be false")
					}
					if cq.collection == "notifications" && (p.C.TotalCount == nil || *p.C.TotalCount != len(want)) {
						t.Fatalf("totalCount = %v, want %d", p.C.TotalCount, len(want))
					}
					for _, edge := range p.C.Edges {
						got = append(got, edge.Node.Key)
					}
					if len(p.C.Edges) > first {
						t.Fatalf("page of %d edges for first=%d", len(p.C.Edges), first)
					}
					if !p.C.PageInfo.HasNextPage {
						break
					}
					if len(p.C.Edges) != first {
						t.Fatalf("short page (%d) with hasNextPage", len(p.C.Edges))
					}
					after = *p.C.PageInfo.EndCursor
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("records (-REST +GraphQL):\n%s", diff)
				}
			})
		}
		t.Run(name+"/every cursor resumes", func(t *testing.T) {
			var p connPage
			e.mustQuery(t, sim.DemoKey, cq.query, map[string]any{"first": 60}, &p)
			for i, edge := range p.C.Edges {
				if i%7 != 3 {
					continue
				}
				var q connPage
				e.mustQuery(t, sim.DemoKey, cq.query, map[string]any{"first": 2, "after": edge.Cursor}, &q)
				if i+1 < len(want) && (len(q.C.Edges) == 0 || q.C.Edges[0].Node.Key != want[i+1]) {
					t.Fatalf("after edge %d: got %+v, want %s", i, q.C.Edges, want[i+1])
				}
			}
		})
	}
}

// Two callers with different keys, at once, each see only their own data.
func TestTenantsNeverSeeEachOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := map[string][]string{
		sim.DemoKey:     e.sim.IDs(sim.DemoKey, "budgets"),
		sim.OtherOrgKey: e.sim.IDs(sim.OtherOrgKey, "budgets"),
	}
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for i := range 40 {
		key := sim.DemoKey
		if i%2 == 1 {
			key = sim.OtherOrgKey
		}
		wg.Go(func() {
			r := e.query(t, key, `{ budgets(first: 100) { nodes { upstreamId organizationId metrics { totalTarget } } } recommendations(first: 5) { nodes { recommendationId } } }`, nil)
			var got struct {
				Budgets struct {
					Nodes []struct{ UpstreamID, OrganizationID string }
				}
			}
			if len(r.Errors) > 0 || json.Unmarshal(r.Data, &got) != nil {
				errc <- fmt.Errorf("%s: %+v", key, r.Errors)
				return
			}
			var ids []string
			orgs := map[string]bool{}
			for _, n := range got.Budgets.Nodes {
				ids = append(ids, n.UpstreamID)
				orgs[n.OrganizationID] = true
			}
			if !slices.Equal(ids, own[key]) || len(orgs) != 1 {
				errc <- fmt.Errorf("%s saw budgets %v of organizations %v", key, ids, orgs)
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
