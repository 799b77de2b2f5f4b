package graph_test

import (
	"math"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

func near(a, b float64) bool { return math.Abs(a-b) < 0.011 }

// Every root field answers through the real handler on the simulator.
func TestRootFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	var list struct {
		Budgets struct {
			Nodes []struct {
				ID, UpstreamID, ExplorerReportID string
				Plannings                        []struct{ ID, UpstreamID string }
			}
		}
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 2) { nodes { id upstreamId explorerReportId plannings { id upstreamId } } } }`, nil, &list)
	b := list.Budgets.Nodes[0]
	p := b.Plannings[0]

	t.Run("budget and node", func(t *testing.T) {
		var got struct {
			Budget struct {
				UpstreamID string
				Dimensions []any
				Creator    struct{ Email string }
			}
			Node  struct{ Typename, UpstreamID string }
			Row   struct{ Typename, UpstreamID, BudgetID string }
			Nodes []struct{ UpstreamID string }
		}
		e.mustQuery(t, sim.DemoKey, `query($b: ID!, $p: ID!, $b2: ID!) {
			budget(id: $b) { upstreamId dimensions creator { email } }
			node: node(id: $b) { typename: __typename ... on Budget { upstreamId } }
			row: node(id: $p) { typename: __typename ... on Planning { upstreamId budgetId } }
			nodes(ids: [$b2, $p]) { ... on Budget { upstreamId } ... on Planning { upstreamId } }
		}`, map[string]any{"b": b.ID, "p": p.ID, "b2": list.Budgets.Nodes[1].ID}, &got)
		if got.Budget.UpstreamID != b.UpstreamID || len(got.Budget.Dimensions) == 0 || got.Budget.Creator.Email == "" {
			t.Errorf("budget = %+v", got.Budget)
		}
		if got.Node.Typename != "Budget" || got.Node.UpstreamID != b.UpstreamID {
			t.Errorf("node = %+v", got.Node)
		}
		if got.Row.Typename != "Planning" || got.Row.UpstreamID != p.UpstreamID || got.Row.BudgetID != b.UpstreamID {
			t.Errorf("planning node = %+v", got.Row)
		}
		if len(got.Nodes) != 2 || got.Nodes[0].UpstreamID != list.Budgets.Nodes[1].UpstreamID || got.Nodes[1].UpstreamID != p.UpstreamID {
			t.Errorf("nodes = %+v", got.Nodes)
		}
	})

	t.Run("lookback", func(t *testing.T) {
		var got struct {
			Post struct {
				Periods []struct {
					PeriodKey string
					Actual    float64
					Projected *float64
				}
			}
			Get struct {
				Periods []struct {
					PeriodKey string
					Actual    float64
					Projected *float64
				}
			}
		}
		e.mustQuery(t, sim.DemoKey, `query($r: String!) {
			post: budgetLookback(input: {explorerReportId: $r, startDate: "2026-07-01", lookbackPeriod: 4}) { periods { periodKey actual projected } }
			get: budgetLookbackPreview { periods { periodKey actual projected } }
		}`, map[string]any{"r": b.ExplorerReportID}, &got)
		if len(got.Post.Periods) != 4 || got.Post.Periods[0].PeriodKey != "2026-03" || got.Post.Periods[3].PeriodKey != "2026-06" {
			t.Errorf("lookback POST periods = %+v", got.Post.Periods)
		}
		if len(got.Get.Periods) == 0 || got.Get.Periods[0].Projected == nil {
			t.Errorf("lookback GET periods = %+v", got.Get.Periods)
		}
	})

	t.Run("explorer agrees with itself", func(t *testing.T) {
		q := map[string]any{"dateRange": map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
			"groupBy": "product_product_name", "costType": "line_item_unblended_cost", "granularity": "week",
			"filters": []any{map[string]any{"dimension": "billing_account_name", "operator": "not_in", "values": []string{"Sandbox"}}}}
		var got struct {
			Explorer struct {
				Summary struct {
					Cards []struct {
						Title                string
						Value, PreviousValue float64
					}
				}
				PreviousPeriod struct{ CurrentTotal, PreviousTotal float64 }
				History        struct {
					CostRows []struct {
						Group, Date string
						Cost        float64
						Raw         map[string]any
					}
					TimeColumn, GroupBy string
				}
				Heatmap struct {
					Rows []struct {
						Dimension, Day string
						Cost           float64
					}
				}
				DimensionValues struct {
					Items  []struct{ Value string }
					Values []string
				}
			}
		}
		e.mustQuery(t, sim.DemoKey, `query($q: ExplorerQueryInput!) { explorer {
			summary(query: $q) { cards { title value previousValue } }
			previousPeriod(query: $q) { currentTotal previousTotal }
			history(query: $q) { costRows { group date cost raw } timeColumn groupBy }
			heatmap(query: $q) { rows { dimension day cost } }
			dimensionValues(key: "product_product_name") { items { value } values }
		} }`, map[string]any{"q": q}, &got)
		x := got.Explorer
		if len(x.Summary.Cards) == 0 || !near(x.Summary.Cards[0].Value, x.PreviousPeriod.CurrentTotal) {
			t.Fatalf("summary %+v vs previous period %+v", x.Summary.Cards, x.PreviousPeriod)
		}
		var hist, heat float64
		for _, r := range x.History.CostRows {
			hist += r.Cost
			if r.Raw[x.History.GroupBy] != r.Group || r.Raw["cost"] == nil {
				t.Fatalf("typed row %+v disagrees with its raw row", r)
			}
		}
		for _, r := range x.Heatmap.Rows {
			heat += r.Cost
		}
		if !near(hist, x.PreviousPeriod.CurrentTotal) || !near(heat, x.PreviousPeriod.CurrentTotal) {
			t.Fatalf("history %.2f, heatmap %.2f, total %.2f", hist, heat, x.PreviousPeriod.CurrentTotal)
		}
		if len(x.DimensionValues.Values) == 0 || len(x.DimensionValues.Items) != len(x.DimensionValues.Values) {
			t.Fatalf("dimension values = %+v", x.DimensionValues)
		}
	})

	t.Run("explorer dedups identical queries", func(t *testing.T) {
		e.calls.take()
		q := `{ explorer { a: dimensionValues(key: "billing_account_name") { values } b: dimensionValues(key: "billing_account_name") { hasMore } } }`
		e.mustQuery(t, sim.DemoKey, q, nil, nil)
		if calls := e.calls.take(); len(calls) != 1 {
			t.Fatalf("two identical Explorer fields made %d calls: %v", len(calls), calls)
		}
	})

	t.Run("insights and notifications", func(t *testing.T) {
		var got struct {
			Recommendations struct {
				Nodes []struct {
					RecommendationID        string
					EstimatedMonthlySavings float64
					Extra                   map[string]any
				}
			}
			Anomalies struct {
				Nodes []struct {
					AnomalyID, StartDate, EndDate string
					Extra                         map[string]any
				}
			}
			ScheduledNotifications struct {
				TotalCount int
				Nodes      []struct{ ID, ScheduledAt, CreatedAt string }
			}
		}
		e.mustQuery(t, sim.DemoKey, `{
			recommendations(first: 3) { nodes { recommendationId estimatedMonthlySavings extra } }
			anomalies(first: 3) { nodes { anomalyId startDate endDate extra } }
			scheduledNotifications(first: 3) { totalCount nodes { id scheduledAt createdAt } }
		}`, nil, &got)
		if len(got.Recommendations.Nodes) != 3 || got.Recommendations.Nodes[0].Extra == nil {
			t.Errorf("recommendations = %+v", got.Recommendations)
		}
		if len(got.Anomalies.Nodes) != 3 || got.Anomalies.Nodes[0].StartDate > got.Anomalies.Nodes[0].EndDate {
			t.Errorf("anomalies = %+v", got.Anomalies)
		}
		n := got.ScheduledNotifications
		if n.TotalCount != len(e.sim.IDs(sim.DemoKey, "notifications")) || len(n.Nodes) != 3 || len(n.Nodes[0].ScheduledAt) != len("2026-07-20T18:00:00.000Z") {
			t.Errorf("notifications = %+v", n)
		}
	})
}

// Mutations round-trip, and later queries show the changes.
func TestBudgetMutationsRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	report := reportID(t, e)

	type payload struct {
		Budget *struct {
			ID, UpstreamID, Name, Status, EndDate string
			LookbackPeriod                        *int
			Metrics                               *struct{ TotalTarget float64 }
		}
		UserErrors []struct {
			Field   []string
			Message string
		}
		IdempotencyKey string
	}
	var created struct{ CreateBudget payload }
	create := `mutation($in: CreateBudgetInput!) { createBudget(input: $in) {
		budget { id upstreamId name status endDate lookbackPeriod metrics { totalTarget } } userErrors { field message } idempotencyKey } }`
	in := map[string]any{"name": "Round trip", "startDate": "2026-01-01", "numberOfPeriods": 12, "explorerReportId": report,
		"lookbackPeriod": 3, "idempotencyKey": "round-trip-1"}
	e.mustQuery(t, sim.DemoKey, create, map[string]any{"in": in}, &created)
	c := created.CreateBudget
	if c.Budget == nil || c.Budget.Name != "Round trip" || c.Budget.Status != "DRAFT" || c.Budget.EndDate != "2026-12-01" || c.IdempotencyKey != "round-trip-1" {
		t.Fatalf("create payload = %+v", c)
	}
	if c.Budget.Metrics == nil {
		t.Fatal("a created budget's metrics should come from the single-budget read")
	}

	// The same idempotencyKey and input, in a separate request, replays the original result.
	var replay struct{ CreateBudget payload }
	e.mustQuery(t, sim.DemoKey, create, map[string]any{"in": in}, &replay)
	if replay.CreateBudget.Budget == nil || replay.CreateBudget.Budget.ID != c.Budget.ID {
		t.Fatalf("replay created another budget: %+v vs %+v", replay.CreateBudget.Budget, c.Budget)
	}

	// Without a key, the gateway makes one per mutation field.
	var fresh struct{ A, B payload }
	delete(in, "idempotencyKey")
	e.mustQuery(t, sim.DemoKey, `mutation($in: CreateBudgetInput!) {
		a: createBudget(input: $in) { budget { id } idempotencyKey }
		b: createBudget(input: $in) { budget { id } idempotencyKey } }`, map[string]any{"in": in}, &fresh)
	if fresh.A.IdempotencyKey == "" || fresh.A.IdempotencyKey == fresh.B.IdempotencyKey || fresh.A.Budget.ID == fresh.B.Budget.ID {
		t.Fatalf("two mutation fields shared a key or a budget: %+v %+v", fresh.A, fresh.B)
	}

	var updated struct{ UpdateBudget payload }
	e.mustQuery(t, sim.DemoKey, `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) {
		budget { id name status lookbackPeriod } userErrors { field message } idempotencyKey } }`,
		map[string]any{"in": map[string]any{"id": c.Budget.ID, "name": "Renamed", "status": "ACTIVE", "lookbackPeriod": nil}}, &updated)
	u := updated.UpdateBudget
	if u.Budget == nil || u.Budget.Name != "Renamed" || u.Budget.Status != "ACTIVE" || u.Budget.LookbackPeriod != nil {
		t.Fatalf("update payload = %+v", u)
	}

	var read struct {
		Budget struct{ Name, Status string }
	}
	e.mustQuery(t, sim.DemoKey, `query($id: ID!) { budget(id: $id) { name status } }`, map[string]any{"id": c.Budget.ID}, &read)
	if read.Budget.Name != "Renamed" || read.Budget.Status != "ACTIVE" {
		t.Fatalf("later read = %+v", read.Budget)
	}

	var deleted struct {
		DeleteBudget struct {
			DeletedBudgetID string
			Success         bool
		}
	}
	e.mustQuery(t, sim.DemoKey, `mutation($id: ID!) { deleteBudget(input: {id: $id}) { deletedBudgetId success } }`, map[string]any{"id": c.Budget.ID}, &deleted)
	if !deleted.DeleteBudget.Success || deleted.DeleteBudget.DeletedBudgetID != c.Budget.ID {
		t.Fatalf("delete payload = %+v", deleted.DeleteBudget)
	}
	r := e.query(t, sim.DemoKey, `query($id: ID!) { budget(id: $id) { name } }`, map[string]any{"id": c.Budget.ID})
	if string(r.Data) != `{"budget":null}` || r.code(t) != "NOT_FOUND" {
		t.Fatalf("deleted budget read: data %s errors %+v", r.Data, r.Errors)
	}
	// And a list no longer holds it.
	var after struct {
		Budgets struct{ Nodes []struct{ ID string } }
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 500) { nodes { id } } }`, nil, &after)
	for _, n := range after.Budgets.Nodes {
		if n.ID == c.Budget.ID {
			t.Fatal("deleted budget still listed")
		}
	}
}
