package resolvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/upstream"
)

// Helpers of the budget resolvers: reads through the request's loaders, and
// the shapes of actuals and targets.

// loadersFor returns the request's loaders. Their absence is a wiring bug,
// reported as INTERNAL rather than a panic.
func loadersFor(ctx context.Context) (*loaders.Loaders, error) {
	l := loaders.For(ctx)
	if l == nil {
		return nil, errors.New("no loaders in the request context")
	}
	return l, nil
}

// budgetDetail loads a budget with metrics and dimensions through the loader.
func budgetDetail(ctx context.Context, id string) (*upstream.BudgetDetail, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	d, err := l.Budget().Get(ctx, id)
	if err != nil {
		return nil, err
	}
	l.PrimePlannings(ctx, &d.Budget)
	return d, nil
}

// budgetActuals loads a budget's actuals through the loader.
func budgetActuals(ctx context.Context, id string) (*upstream.BudgetActuals, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	return l.Actuals().Get(ctx, id)
}

// budgetPlannings returns a budget's planning rows: from the record when it
// carries them, otherwise from its planning grid, if unestimatedGrid allows.
func budgetPlannings(ctx context.Context, b *upstream.Budget) ([]upstream.Planning, error) {
	if b.Plannings != nil {
		return b.Plannings, nil
	}
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	if err := unestimatedGrid(ctx, l, b.ID); err != nil {
		return nil, err
	}
	return planningGrid(ctx, b.ID)
}

// unestimatedGrid says whether the planning grid of budget id, whose record
// came without its rows, may be read. The contract's budget records carry
// their rows, so the cost estimate counts no such read: those of a request
// are bounded by what -max-cost leaves over its estimate, and no operation
// makes more upstream calls than -max-cost (docs/upstream.md). Past that,
// the budget's plannings are an upstream error, as the record's gap is.
func unestimatedGrid(ctx context.Context, l *loaders.Loaders, id string) error {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	c := limits.CostOf(graphql.GetOperationContext(ctx))
	if c.Max <= 0 || l.AllowUnestimated(id, c.Max-c.Estimated) {
		return nil
	}
	return fmt.Errorf("%w: budget %s came without its planning rows, and reading its planning grid would take "+
		"the operation past its limit of %d upstream calls", upstream.ErrBadResponse, id, c.Max)
}

// planningGrid loads a budget's planning grid through the loader.
func planningGrid(ctx context.Context, budgetID string) ([]upstream.Planning, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	g, err := l.Planning().Get(ctx, budgetID)
	if err != nil {
		return nil, err
	}
	return g.Plannings, nil
}

// periodAmounts turns a period → amount map into a list sorted by period.
func periodAmounts(m map[string]float64) []model.PeriodAmount {
	out := make([]model.PeriodAmount, 0, len(m))
	for k, v := range m {
		out = append(out, model.PeriodAmount{Period: k, Amount: v})
	}
	slices.SortFunc(out, func(a, b model.PeriodAmount) int { return strings.Compare(a.Period, b.Period) })
	return out
}

// actualsModel shapes a budget's actuals. The rows' actuals (byPlanning) are
// shaped only when asked for: a page of budgets rarely wants them there, and
// each row's own actuals field shapes them anyway. The total is the one
// Float the gateway computes rather than reads, so it is where a Float could
// stop being finite (model.MarshalFloat): amounts whose sum is past
// float64's range are refused as a bad upstream answer.
func actualsModel(a *upstream.BudgetActuals, byPlanning bool) (*model.BudgetActuals, error) {
	out := &model.BudgetActuals{ByPeriod: periodAmounts(a.AccountActualsByPeriod)}
	var total model.DecimalSum
	for _, p := range out.ByPeriod {
		total.Add(p.Amount)
	}
	if out.Total = total.Value(); math.IsInf(out.Total, 0) {
		return nil, fmt.Errorf("%w: the budget's actuals add up to more than a float64 holds", upstream.ErrBadResponse)
	}
	if !byPlanning {
		out.ByPlanning = []model.PlanningActuals{}
		return out, nil
	}
	ids := make([]string, 0, len(a.ActualsByPlanning))
	for id := range a.ActualsByPlanning {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out.ByPlanning = make([]model.PlanningActuals, len(ids))
	for i, id := range ids {
		out.ByPlanning[i] = model.PlanningActuals{PlanningID: id, Periods: periodAmounts(a.ActualsByPlanning[id])}
	}
	return out, nil
}

// targetItems turns a planning row's target map into a list sorted by value.
func targetItems(m map[string]float64) []model.TargetItem {
	out := make([]model.TargetItem, 0, len(m))
	for k, v := range m {
		out = append(out, model.TargetItem{DimensionValue: k, Amount: v})
	}
	slices.SortFunc(out, func(a, b model.TargetItem) int { return strings.Compare(a.DimensionValue, b.DimensionValue) })
	return out
}

// openValue returns the upstream string of an input whose value set the
// contract leaves open (docs/schema.md, "Open value sets"): the enum
// field's (known), or its …Raw sibling's (raw), which is sent as given.
// Both together are refused, and so is an empty raw string: it names no
// value, and a create or lookback body would leave it out, so that it
// would silently take the upstream's default. nil is a field left out.
func openValue(known, raw *string, field string) (*string, error) {
	switch {
	case raw == nil:
		return known, nil
	case known != nil:
		return nil, fmt.Errorf("give %s or %sRaw, not both", field, field)
	case *raw == "":
		return nil, fmt.Errorf("%sRaw is empty: give the upstream's value, or leave it out", field)
	}
	return raw, nil
}

// lookbackRequest is the upstream body of a budgetLookback.
func lookbackRequest(in model.BudgetLookbackInput) (*upstream.LookbackRequest, error) {
	req := &upstream.LookbackRequest{ExplorerReportID: in.ExplorerReportID, StartDate: in.StartDate,
		LookbackPeriod: in.LookbackPeriod.Value(), NumberOfPeriods: in.NumberOfPeriods.Value()}
	period, err := openValue(in.Period.Value(), in.PeriodRaw.Value(), "period")
	if err != nil {
		return nil, codes.Errorf(codes.BadUserInput, "input: %v", err)
	}
	if period != nil {
		req.Period = *period
	}
	return req, nil
}
