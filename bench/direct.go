package main

// The direct client: what a hand-written Go program does to serve each query
// straight from the REST API. It makes exactly the minimal calls with ideal
// parallelism (every call of a tier at once), decodes them with the same
// upstream client the gateway uses, and builds the same answer the gateway
// would (sorted periods and target items, totals), which the caller encodes
// as JSON. It has no GraphQL parsing, validation, resolver machinery or
// second HTTP hop: it is the physical limit of the work.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/upstream"
)

// directFunc serves a query with REST calls and returns its data member.
type directFunc func(ctx context.Context, c *upstream.Client, fx fixture) (any, error)

// parallel runs fns at once and returns the first error.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

func pageInfoOf(p upstream.Pagination) pageInfo {
	return pageInfo{HasNextPage: p.HasMore, EndCursor: p.NextCursor}
}

// connection is a list field of the gateway's answer: the nodes and the
// page's pageInfo, under field.
func connection[N any](field string, nodes []N, p upstream.Pagination) map[string]any {
	return map[string]any{field: map[string]any{"nodes": nodes, "pageInfo": pageInfoOf(p)}}
}

// listAnswer answers a list that one call fetched (pg, err): its records,
// each as node makes it, under field.
func listAnswer[T, N any](field string, pg *upstream.Page[T], err error, node func(*T) N) (any, error) {
	if err != nil {
		return nil, err
	}
	nodes := make([]N, len(pg.Data))
	for i := range pg.Data {
		nodes[i] = node(&pg.Data[i])
	}
	return connection(field, nodes, pg.Pagination), nil
}

type listBudget struct {
	ID              string        `json:"id"`
	Name            string        `json:"name"`
	Status          string        `json:"status"`
	Period          string        `json:"period"`
	StartDate       upstream.Date `json:"startDate"`
	EndDate         upstream.Date `json:"endDate"`
	NumberOfPeriods int           `json:"numberOfPeriods"`
	ExplorerReport  *struct {
		Name string `json:"name"`
	} `json:"explorerReport"`
	Creator *struct {
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
	} `json:"creator"`
}

func directBudgetList(ctx context.Context, c *upstream.Client, _ fixture) (any, error) {
	pg, err := c.Budgets.List(ctx, &upstream.ListOptions{Limit: 20})
	return listAnswer("budgets", pg, err, func(b *upstream.Budget) listBudget {
		n := listBudget{ID: b.ID, Name: b.Name, Status: b.Status, Period: b.Period, StartDate: b.StartDate,
			EndDate: b.EndDate, NumberOfPeriods: b.NumberOfPeriods}
		if b.ExplorerReport != nil {
			n.ExplorerReport = &struct {
				Name string `json:"name"`
			}{b.ExplorerReport.Name}
		}
		if b.Creator != nil {
			n.Creator = &struct {
				FirstName string `json:"firstName"`
				LastName  string `json:"lastName"`
			}{b.Creator.FirstName, b.Creator.LastName}
		}
		return n
	})
}

type periodAmount struct {
	Period string  `json:"period"`
	Amount float64 `json:"amount"`
}

type targetItem struct {
	DimensionValue string  `json:"dimensionValue"`
	Amount         float64 `json:"amount"`
}

type actualsOut struct {
	Total    float64        `json:"total"`
	ByPeriod []periodAmount `json:"byPeriod"`
}

type planningOut struct {
	ID            string         `json:"id,omitempty"`
	Dimension1    string         `json:"dimension1"`
	PreviousMonth *float64       `json:"previousMonth,omitempty"`
	AvgLookback   *float64       `json:"avgLookback,omitempty"`
	PercentGrowth *float64       `json:"percentGrowth,omitempty"`
	TargetItems   []targetItem   `json:"targetItems"`
	Actuals       []periodAmount `json:"actuals"`
}

type budgetOut struct {
	ID        string                  `json:"id"`
	Name      string                  `json:"name"`
	Status    string                  `json:"status,omitempty"`
	StartDate upstream.Date           `json:"startDate"`
	EndDate   upstream.Date           `json:"endDate"`
	Metrics   *upstream.BudgetMetrics `json:"metrics"`
	Actuals   *actualsOut             `json:"actuals"`
	Plannings []planningOut           `json:"plannings"`
}

// periods turns a period → amount map into a list sorted by period.
func periods(m map[string]float64) []periodAmount {
	out := make([]periodAmount, 0, len(m))
	for k, v := range m {
		out = append(out, periodAmount{k, v})
	}
	slices.SortFunc(out, func(a, b periodAmount) int { return strings.Compare(a.Period, b.Period) })
	return out
}

// budgetAnswer shapes a budget with its metrics and actuals; detail adds the
// fields only the detail page shows.
func budgetAnswer(b *upstream.Budget, m *upstream.BudgetMetrics, a *upstream.BudgetActuals, detail bool) budgetOut {
	out := budgetOut{ID: b.ID, Name: b.Name, StartDate: b.StartDate, EndDate: b.EndDate, Metrics: m}
	if detail {
		out.Status = b.Status
	}
	act := &actualsOut{ByPeriod: periods(a.AccountActualsByPeriod)}
	var total model.DecimalSum
	for _, p := range act.ByPeriod {
		total.Add(p.Amount)
	}
	act.Total = total.Value()
	out.Actuals = act
	out.Plannings = make([]planningOut, len(b.Plannings))
	for i := range b.Plannings {
		p := &b.Plannings[i]
		items := make([]targetItem, 0, len(p.TargetItems))
		for k, v := range p.TargetItems {
			items = append(items, targetItem{k, v})
		}
		slices.SortFunc(items, func(x, y targetItem) int { return strings.Compare(x.DimensionValue, y.DimensionValue) })
		po := planningOut{Dimension1: p.Dimension1, TargetItems: items, Actuals: periods(a.ActualsByPlanning[p.ID])}
		if detail {
			po.ID, po.PreviousMonth, po.AvgLookback, po.PercentGrowth = p.ID, &p.PreviousMonth, &p.AvgLookback, &p.PercentGrowth
		}
		out.Plannings[i] = po
	}
	return out
}

func directBudgetDetail(ctx context.Context, c *upstream.Client, fx fixture) (any, error) {
	var d *upstream.BudgetDetail
	var a *upstream.BudgetActuals
	err := parallel(
		func() (err error) { d, err = c.Budgets.Get(ctx, fx.BudgetID); return err },
		func() (err error) { a, err = c.Budgets.Actuals(ctx, fx.BudgetID); return err },
	)
	if err != nil {
		return nil, err
	}
	return map[string]any{"budget": budgetAnswer(&d.Budget, &d.Metrics, a, true)}, nil
}

func directOverview(ctx context.Context, c *upstream.Client, _ fixture) (any, error) {
	pg, err := c.Budgets.List(ctx, &upstream.ListOptions{Limit: overviewBudgets})
	if err != nil {
		return nil, err
	}
	details := make([]*upstream.BudgetDetail, len(pg.Data))
	actuals := make([]*upstream.BudgetActuals, len(pg.Data))
	fns := make([]func() error, 0, 2*len(pg.Data))
	for i := range pg.Data {
		id := pg.Data[i].ID
		fns = append(fns,
			func() (err error) { details[i], err = c.Budgets.Get(ctx, id); return err },
			func() (err error) { actuals[i], err = c.Budgets.Actuals(ctx, id); return err },
		)
	}
	if err := parallel(fns...); err != nil {
		return nil, err
	}
	nodes := make([]budgetOut, len(pg.Data))
	for i := range pg.Data {
		// The list record carries the planning rows; the detail only the metrics.
		nodes[i] = budgetAnswer(&pg.Data[i], &details[i].Metrics, actuals[i], false)
	}
	return connection("budgets", nodes, pg.Pagination), nil
}

type historyRow struct {
	Group string        `json:"group"`
	Date  upstream.Date `json:"date"`
	Cost  float64       `json:"cost"`
}

func directDashboard(ctx context.Context, c *upstream.Client, fx fixture) (any, error) {
	q := explorerQueryOf(fx.Explorer)
	var (
		sum  *upstream.ExplorerSummary
		prev *upstream.ExplorerPreviousPeriod
		hist *upstream.ExplorerHistory
		heat *upstream.ExplorerHeatmap
	)
	err := parallel(
		func() (err error) { sum, err = c.Explorer.Summary(ctx, q); return err },
		func() (err error) { prev, err = c.Explorer.PreviousPeriod(ctx, q); return err },
		func() (err error) { hist, err = c.Explorer.History(ctx, q); return err },
		func() (err error) { heat, err = c.Explorer.Heatmap(ctx, q); return err },
	)
	if err != nil {
		return nil, err
	}
	rows := make([]historyRow, len(hist.CostRows))
	for i, r := range hist.CostRows {
		group, ok := r.String(hist.GroupBy)
		cost, ok2 := r.Number("cost")
		date, err := r.Date(hist.TimeColumn)
		if !ok || !ok2 || err != nil {
			return nil, fmt.Errorf("history row %d is malformed", i)
		}
		rows[i] = historyRow{group, date, cost}
	}
	return map[string]any{"explorer": map[string]any{
		"summary":        map[string]any{"cards": sum.Cards},
		"previousPeriod": prev,
		"history":        map[string]any{"costRows": rows},
		"heatmap":        map[string]any{"rows": heat.Rows},
	}}, nil
}

// explorerQueryOf turns the fixture's Explorer variables into the REST body.
func explorerQueryOf(m map[string]any) *upstream.ExplorerQuery {
	dr := m["dateRange"].(map[string]any)
	start, _ := upstream.ParseDate(dr["start"].(string))
	end, _ := upstream.ParseDate(dr["end"].(string))
	return &upstream.ExplorerQuery{
		DateRange:   upstream.DateRange{Start: start, End: end},
		GroupBy:     m["groupBy"].(string),
		CostType:    m["costType"].(string),
		Granularity: m["granularity"].(string),
	}
}

type recommendationOut struct {
	RecommendationID        string  `json:"recommendationId"`
	RecommendationName      string  `json:"recommendationName"`
	EstimatedMonthlySavings float64 `json:"estimatedMonthlySavings"`
	ImplementationEffort    string  `json:"implementationEffort"`
	Category                string  `json:"category"`
	ActionType              string  `json:"actionType"`
	AccountName             string  `json:"accountName"`
	Region                  string  `json:"region"`
	ResourceID              string  `json:"resourceId"`
}

func directRecommendations(ctx context.Context, c *upstream.Client, _ fixture) (any, error) {
	pg, err := c.Recommendations.List(ctx, &upstream.ListOptions{Limit: 50})
	return listAnswer("recommendations", pg, err, func(r *upstream.Recommendation) recommendationOut {
		return recommendationOut{r.RecommendationID, r.RecommendationName, r.EstimatedMonthlySavings,
			r.ImplementationEffort, r.Category, r.ActionType, r.AccountName, r.Region, r.ResourceID}
	})
}

type anomalyOut struct {
	AnomalyID           string        `json:"anomalyId"`
	Service             string        `json:"service"`
	StartDate           upstream.Date `json:"startDate"`
	EndDate             upstream.Date `json:"endDate"`
	ScoreCurrent        float64       `json:"scoreCurrent"`
	ScoreMax            float64       `json:"scoreMax"`
	ImpactMax           float64       `json:"impactMax"`
	ImpactTotal         float64       `json:"impactTotal"`
	ImpactPct           float64       `json:"impactPct"`
	ImpactActualSpend   float64       `json:"impactActualSpend"`
	ImpactExpectedSpend float64       `json:"impactExpectedSpend"`
	DimensionValue      string        `json:"dimensionValue"`
	DetectionSource     string        `json:"detectionSource"`
}

func directAnomalies(ctx context.Context, c *upstream.Client, _ fixture) (any, error) {
	pg, err := c.Anomalies.List(ctx, &upstream.ListOptions{Limit: 50})
	return listAnswer("anomalies", pg, err, func(a *upstream.Anomaly) anomalyOut {
		return anomalyOut{a.AnomalyID, a.Service, a.StartDate, a.EndDate, a.ScoreCurrent, a.ScoreMax, a.ImpactMax,
			a.ImpactTotal, a.ImpactPct, a.ImpactActualSpend, a.ImpactExpectedSpend, a.DimensionValue, a.DetectionSource}
	})
}
