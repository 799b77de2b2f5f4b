package resolvers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

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
	d, err := l.Budget.Load(ctx, id)()
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
	return l.Actuals.Load(ctx, id)()
}

// budgetPlannings returns a budget's planning rows: from the record when it
// carries them, otherwise from its planning grid.
func budgetPlannings(ctx context.Context, b *upstream.Budget) ([]upstream.Planning, error) {
	if b.Plannings != nil {
		return b.Plannings, nil
	}
	return planningGrid(ctx, b.ID)
}

// planningGrid loads a budget's planning grid through the loader.
func planningGrid(ctx context.Context, budgetID string) ([]upstream.Planning, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	g, err := l.Planning.Load(ctx, budgetID)()
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
// each row's own actuals field shapes them anyway.
func actualsModel(a *upstream.BudgetActuals, byPlanning bool) *model.BudgetActuals {
	out := &model.BudgetActuals{ByPeriod: periodAmounts(a.AccountActualsByPeriod)}
	for _, p := range out.ByPeriod {
		out.Total += p.Amount
	}
	out.Total = math.Round(out.Total*100) / 100 // amounts are cents; drop float noise
	if !byPlanning {
		out.ByPlanning = []model.PlanningActuals{}
		return out
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
	return out
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

// parseID decodes a global ID that must be of type want.
func parseID(gid, want string) (relay.ID, error) {
	id, err := relay.ParseID(gid)
	if err != nil {
		return id, err
	}
	if id.Type != want {
		return id, codes.Errorf(codes.BadUserInput, "ID is a %s's, not a %s's", id.Type, want)
	}
	return id, nil
}

// node resolves a global ID to its object.
func node(ctx context.Context, gid string) (model.Node, error) {
	id, err := relay.ParseID(gid)
	if err != nil {
		return nil, err
	}
	switch id.Type {
	case relay.TypeBudget:
		prefetchBudget(ctx, id.BudgetID)
		d, err := budgetDetail(ctx, id.BudgetID)
		if err != nil {
			return nil, err
		}
		return &d.Budget, nil
	case relay.TypePlanning:
		prefetchPlanning(ctx, id.BudgetID)
		rows, err := planningGrid(ctx, id.BudgetID)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			if rows[i].ID == id.PlanningID {
				return &rows[i], nil
			}
		}
		return nil, codes.Errorf(codes.NotFound, "not found")
	}
	return nil, fmt.Errorf("%w: unknown type", relay.ErrInvalidID)
}

// explorerQuery turns the GraphQL input into the upstream body.
func explorerQuery(in model.ExplorerQueryInput) *upstream.ExplorerQuery {
	q := &upstream.ExplorerQuery{
		GroupBy:     in.GroupBy,
		CostType:    in.CostType,
		Granularity: in.Granularity,
		Filters:     in.Filters,
	}
	if in.DateRange != nil {
		q.DateRange = upstream.DateRange{Start: in.DateRange.Start, End: in.DateRange.End}
	}
	return q
}

// explorer runs an Explorer operation through the request's loader, so the
// same operation with the same query is fetched once per request.
func explorer[T any](ctx context.Context, op string, q *upstream.ExplorerQuery, key string) (*T, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	k := loaders.ExplorerKey{Op: op, Key: key}
	if q != nil {
		b, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		k.Key = string(b)
	}
	v, err := l.Explorer.Load(ctx, k)()
	if err != nil {
		return nil, err
	}
	t, ok := v.(*T)
	if !ok {
		return nil, fmt.Errorf("explorer loader returned %T for %s", v, op)
	}
	return t, nil
}

// historyRows types the cost rows of an Explorer history. Each row is
// encoded again as raw JSON only when raw is asked for: it is the costliest
// part and a chart rarely wants it.
func historyRows(h *upstream.ExplorerHistory, withRaw bool) ([]model.HistoryCostRow, error) {
	out := make([]model.HistoryCostRow, len(h.CostRows))
	for i, row := range h.CostRows {
		group, ok := row.String(h.GroupBy)
		if !ok {
			return nil, fmt.Errorf("%w: history row %d has no text column %q", upstream.ErrBadResponse, i, h.GroupBy)
		}
		date, err := row.Date(h.TimeColumn)
		if err != nil {
			return nil, fmt.Errorf("%w: history row %d: %v", upstream.ErrBadResponse, i, err)
		}
		cost, ok := row.Number("cost")
		if !ok {
			return nil, fmt.Errorf("%w: history row %d has no numeric cost", upstream.ErrBadResponse, i)
		}
		out[i] = model.HistoryCostRow{Group: group, Date: date, Cost: cost}
		if withRaw {
			raw, err := json.Marshal(row)
			if err != nil {
				return nil, err
			}
			out[i].Raw = raw
		}
	}
	return out, nil
}

// extra encodes the extra members of an open object, or nil when it has none.
func extra(m map[string]json.RawMessage) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return json.Marshal(m)
}
