package main

import (
	"encoding/json"
	"fmt"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream/ops"
)

// A query is one page of representative frontend work, written three times:
// for the gateway, for GraphQL Mesh's generated schema, and as the REST calls
// a hand-written client makes (direct.go).
type query struct {
	// Name is the GraphQL operation name and names the query in reports,
	// tests and BenchmarkQuery<Name>.
	Name string
	// Title says what page of a frontend it serves.
	Title string

	// Gateway is the query against the gateway's schema.
	Gateway string
	// Mesh is the same work against Mesh's schema generated from
	// upstream/openapi.yaml; empty when Mesh cannot express it.
	Mesh string
	// Vars are the variables of both, from the fixture.
	Vars func(fx fixture) map[string]any
	// MeshVars, when set, replaces Vars for Mesh, whose argument types differ.
	MeshVars func(fx fixture) map[string]any

	// Direct makes the same REST calls as the gateway with ideal parallelism
	// and builds the same answer (see direct.go).
	Direct directFunc

	// Min is the least number of upstream calls per operation id that can
	// serve the query, worked out by hand (see Why); tests assert that the
	// gateway and the direct client make exactly these.
	Min map[string]int
	// Tiers is the number of upstream round trips on the critical path: calls
	// that need another call's answer before they can be sent add a tier.
	Tiers int
	// Why explains Min and Tiers.
	Why string

	// Records counts the records of an answer, for checking that the three
	// contenders did the same work: records of the gateway's and the direct
	// client's answers (same shape), and of Mesh's.
	Records     func(data map[string]any) (int, error)
	MeshRecords func(data map[string]any) (int, error)
}

// fixture is the data the queries refer to, read from the simulator at setup.
type fixture struct {
	// BudgetID is the REST id of the first budget of organization one.
	BudgetID string
	// Explorer is the Explorer query of the dashboard.
	Explorer map[string]any
}

// overviewBudgets is how many budgets the overview shows. Organization one
// has 24; setup creates the rest.
const overviewBudgets = 50

// dashboardQuery is the Explorer query of the dashboard: October 2026 by
// product, daily.
func dashboardQuery() map[string]any {
	return map[string]any{
		"dateRange":   map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
		"groupBy":     "product_product_name",
		"costType":    "line_item_unblended_cost",
		"granularity": "day",
		"filters":     []any{},
	}
}

// meshError is selected on every Mesh union, so an upstream error shows up in
// the answer as "error":{…}.
const meshError = `... on Error { error { code message } }`

// queries is the benchmark's query set, in report order.
var queries = []query{
	{
		Name:  "BudgetList",
		Title: "budget list page: the first 20 budgets with their report and creator",
		Gateway: `query BudgetList {
  budgets(first: 20) {
    nodes {
      id name status period startDate endDate numberOfPeriods
      explorerReport { name }
      creator { firstName lastName }
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
		Mesh: `query BudgetList {
  listBudgets(limit: 20) {
    ... on BudgetList {
      data {
        id name status period startDate endDate numberOfPeriods
        explorerReport { name }
        creator { firstName lastName }
      }
      pagination { has_more next_cursor }
    }
    ` + meshError + `
  }
}`,
		Vars:   noVars,
		Direct: directBudgetList,
		Min:    map[string]int{ops.ListBudgets: 1},
		Tiers:  1,
		Why: "One page of listBudgets (limit 20) carries every field shown, the report and the creator " +
			"included: 1 call, 1 tier.",
		Records:     count("budgets", "nodes"),
		MeshRecords: count("listBudgets", "data"),
	},
	{
		Name:  "BudgetDetail",
		Title: "budget detail: one budget with its metrics, actuals and planning rows with their actuals",
		Gateway: `query BudgetDetail($id: ID!) {
  budget(id: $id) {
    id name status startDate endDate
    metrics { totalTarget totalActual variance }
    actuals { total byPeriod { period amount } }
    plannings {
      id dimension1 previousMonth avgLookback percentGrowth
      targetItems { dimensionValue amount }
      actuals { period amount }
    }
  }
}`,
		Mesh: `query BudgetDetail($id: String!) {
  getBudget(id: $id) {
    ... on getBudget_200_response {
      data {
        budget {
          id name status startDate endDate
          plannings { id dimension1 previousMonth avgLookback percentGrowth targetItems }
        }
        metrics { totalTarget totalActual variance }
      }
    }
    ` + meshError + `
  }
  getBudgetActuals(id: $id) {
    ... on getBudgetActuals_200_response { data { actualsByPlanning accountActualsByPeriod } }
    ` + meshError + `
  }
}`,
		Vars:     func(fx fixture) map[string]any { return map[string]any{"id": relay.BudgetID(fx.BudgetID)} },
		MeshVars: func(fx fixture) map[string]any { return map[string]any{"id": fx.BudgetID} },
		Direct:   directBudgetDetail,
		Min:      map[string]int{ops.GetBudget: 1, ops.GetBudgetActuals: 1},
		Tiers:    1,
		Why: "getBudget gives the record with its planning rows and the metrics; getBudgetActuals the actuals of " +
			"the budget and of every row. Both need only the id, which the caller has, so they go out together: " +
			"2 calls, 1 tier.",
		Records:     count("budget", "plannings"),
		MeshRecords: count("getBudget", "data", "budget", "plannings"),
	},
	{
		Name:  "Overview",
		Title: "50-budget overview: metrics, actuals and per-planning actuals of every budget",
		Gateway: `query Overview {
  budgets(first: 50) {
    nodes {
      id name startDate endDate
      metrics { totalTarget totalActual variance }
      actuals { total byPeriod { period amount } }
      plannings {
        dimension1
        targetItems { dimensionValue amount }
        actuals { period amount }
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
		Mesh: `query Overview {
  listBudgets(limit: 50) {
    ... on BudgetList {
      data {
        id name startDate endDate
        plannings { dimension1 targetItems }
        detail {
          ... on getBudget_200_response { data { metrics { totalTarget totalActual variance } } }
          ` + meshError + `
        }
        actuals {
          ... on getBudgetActuals_200_response { data { actualsByPlanning accountActualsByPeriod } }
          ` + meshError + `
        }
      }
      pagination { has_more next_cursor }
    }
    ` + meshError + `
  }
}`,
		Vars:   noVars,
		Direct: directOverview,
		Min: map[string]int{ops.ListBudgets: 1, ops.GetBudget: overviewBudgets,
			ops.GetBudgetActuals: overviewBudgets},
		Tiers: 2,
		Why: "One listBudgets page (limit 50) gives the ids and the planning rows; metrics exist only in getBudget " +
			"and actuals only in getBudgetActuals, one call each per budget, and the REST API has no batch read: " +
			"1 + 50 + 50 = 101 calls. The per-budget calls need the ids from the list: 2 tiers.",
		Records:     count("budgets", "nodes"),
		MeshRecords: count("listBudgets", "data"),
	},
	{
		Name:  "Dashboard",
		Title: "Explorer dashboard: summary, previous period, history and heatmap of one query",
		Gateway: `query Dashboard($q: ExplorerQueryInput!) {
  explorer {
    summary(query: $q) { cards { title value previousValue } }
    previousPeriod(query: $q) { currentTotal previousTotal changePercent }
    history(query: $q) { costRows { group date cost } }
    heatmap(query: $q) { rows { dimension day cost } }
  }
}`,
		Mesh: `query Dashboard($q: ExplorerQuery_Input) {
  explorerSummary(input: $q) {
    ... on explorerSummary_200_response { data { cards { title value previousValue } } }
    ` + meshError + `
  }
  explorerPreviousPeriod(input: $q) {
    ... on explorerPreviousPeriod_200_response { data { currentTotal previousTotal changePercent } }
    ` + meshError + `
  }
  explorerHistory(input: $q) {
    ... on explorerHistory_200_response { data { groupBy timeColumn costRows { cost additionalProperties } } }
    ` + meshError + `
  }
  explorerHeatmap(input: $q) {
    ... on explorerHeatmap_200_response { data { rows { dimension day cost } } }
    ` + meshError + `
  }
}`,
		Vars:     func(fx fixture) map[string]any { return map[string]any{"q": fx.Explorer} },
		MeshVars: func(fx fixture) map[string]any { return map[string]any{"q": fx.Explorer} },
		Direct:   directDashboard,
		Min: map[string]int{ops.ExplorerSummary: 1, ops.ExplorerPreviousPeriod: 1, ops.ExplorerHistory: 1,
			ops.ExplorerHeatmap: 1},
		Tiers: 1,
		Why: "Each of the four panels is its own Explorer operation and none needs another's answer: 4 calls, " +
			"1 tier.",
		Records:     count("explorer", "heatmap", "rows"),
		MeshRecords: count("explorerHeatmap", "data", "rows"),
	},
	{
		Name:  "Recommendations",
		Title: "recommendations page: the first 50 recommendations",
		Gateway: `query Recommendations {
  recommendations(first: 50) {
    nodes {
      recommendationId recommendationName estimatedMonthlySavings implementationEffort
      category actionType accountName region resourceId
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
		Mesh: `query Recommendations {
  listRecommendations(limit: 50) {
    ... on RecommendationList {
      data {
        recommendation_id recommendation_name estimated_monthly_savings implementation_effort
        category action_type account_name region resource_id
      }
      pagination { has_more next_cursor }
    }
    ` + meshError + `
  }
}`,
		Vars:        noVars,
		Direct:      directRecommendations,
		Min:         map[string]int{ops.ListRecommendations: 1},
		Tiers:       1,
		Why:         "One listRecommendations page (limit 50): 1 call, 1 tier.",
		Records:     count("recommendations", "nodes"),
		MeshRecords: count("listRecommendations", "data"),
	},
	{
		Name:  "Anomalies",
		Title: "anomalies page: the first 50 anomalies",
		Gateway: `query Anomalies {
  anomalies(first: 50) {
    nodes {
      anomalyId service startDate endDate scoreCurrent scoreMax impactMax impactTotal impactPct
      impactActualSpend impactExpectedSpend dimensionValue detectionSource
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
		Mesh: `query Anomalies {
  listAnomalies(limit: 50) {
    ... on AnomalyList {
      data {
        anomaly_id service start_date end_date score_current score_max impact_max impact_total impact_pct
        impact_actual_spend impact_expected_spend dimension_value detection_source
      }
      pagination { has_more next_cursor }
    }
    ` + meshError + `
  }
}`,
		Vars:        noVars,
		Direct:      directAnomalies,
		Min:         map[string]int{ops.ListAnomalies: 1},
		Tiers:       1,
		Why:         "One listAnomalies page (limit 50): 1 call, 1 tier.",
		Records:     count("anomalies", "nodes"),
		MeshRecords: count("listAnomalies", "data"),
	},
}

func noVars(fixture) map[string]any { return nil }

// minCalls is the total of q.Min.
func (q query) minCalls() int {
	n := 0
	for _, c := range q.Min {
		n += c
	}
	return n
}

// count returns a function that counts the elements of the list at path in
// a GraphQL answer's data, failing when any step is missing or null.
func count(path ...string) func(map[string]any) (int, error) {
	return func(data map[string]any) (int, error) {
		var v any = data
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok || m[p] == nil {
				return 0, fmt.Errorf("answer has no %v", path)
			}
			v = m[p]
		}
		l, ok := v.([]any)
		if !ok {
			return 0, fmt.Errorf("%v is not a list", path)
		}
		return len(l), nil
	}
}

// gqlAnswer is a GraphQL answer, with data decoded generically.
type gqlAnswer struct {
	Data   map[string]any    `json:"data"`
	Errors []json.RawMessage `json:"errors"`
}
