package resolvers

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/upstream"
)

// The type conditions a selection on each type satisfies, as the generated
// executor collects them, so that gqlgen's cache of collected fields serves
// both.
var (
	budgetTypes         = []string{"Budget", "Node"}
	planningTypes       = []string{"Planning", "Node"}
	budgetActualsTypes  = []string{"BudgetActuals"}
	historyCostRowTypes = []string{"HistoryCostRow"}
	connectionTypes     = map[string][]string{
		connBudgets:         {"BudgetConnection"},
		connRecommendations: {"RecommendationConnection"},
		connAnomalies:       {"AnomalyConnection"},
		connNotifications:   {"ScheduledNotificationConnection"},
	}
)

// selected returns the fields that the field ctx resolves selects on an
// object of the given types, with @skip and @include applied; nil outside
// a GraphQL operation.
func selected(ctx context.Context, types []string) []graphql.CollectedField {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return nil
	}
	return collect(ctx, fc.Field.Selections, types)
}

func collect(ctx context.Context, sel ast.SelectionSet, types []string) []graphql.CollectedField {
	return graphql.CollectFields(graphql.GetOperationContext(ctx), sel, types)
}

// has reports whether fields holds one named name.
func has(fields []graphql.CollectedField, name string) bool {
	for _, f := range fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// budgetNeeds is what a selection on Budget will load that depends on
// nothing but the budget's id.
type budgetNeeds struct {
	detail    bool // getBudget: metrics, dimensions, or a planning row's budget
	actuals   bool // getBudgetActuals: actuals, or a planning row's actuals
	plannings bool // getBudgetPlanning, for a record without planning rows
}

func needsOf(ctx context.Context, sel ast.SelectionSet) budgetNeeds {
	var n budgetNeeds
	for _, f := range collect(ctx, sel, budgetTypes) {
		switch f.Name {
		case "metrics", "dimensions":
			n.detail = true
		case "actuals":
			n.actuals = true
		case "plannings":
			n.plannings = true
			row := collect(ctx, f.Selections, planningTypes)
			n.actuals = n.actuals || has(row, "actuals")
			n.detail = n.detail || has(row, "budget")
		}
	}
	return n
}

func (n budgetNeeds) or(m budgetNeeds) budgetNeeds {
	return budgetNeeds{n.detail || m.detail, n.actuals || m.actuals, n.plannings || m.plannings}
}

// start starts the loads of n for budget b; the loaders keep the answers
// for the fields that ask, so the returned waits are not needed here.
func (n budgetNeeds) start(ctx context.Context, l *loaders.Loaders, b *upstream.Budget) {
	if n.detail {
		l.Budget.Load(ctx, b.ID)
	}
	if n.actuals {
		l.Actuals.Load(ctx, b.ID)
	}
	if n.plannings && b.Plannings == nil {
		l.Planning.Load(ctx, b.ID)
	}
}

// prefetchBudget starts, together with a budget's own read, the read that
// its selection will need and that depends on nothing but the budget's id:
// its actuals, for `actuals` or a planning row's `actuals`. Started only once
// the budget has arrived, that call would cost one more upstream latency.
// ctx is that of the field that returns the budget.
func prefetchBudget(ctx context.Context, id string) {
	l, fc := loaders.For(ctx), graphql.GetFieldContext(ctx)
	if l == nil || fc == nil || !graphql.HasOperationContext(ctx) {
		return
	}
	n := needsOf(ctx, fc.Field.Selections)
	// The field's own resolver reads the budget, and with it the planning
	// rows; a planning row's budget is that same read.
	if n.actuals {
		l.Actuals.Load(ctx, id)
	}
}

// prefetchPlanning starts, together with the read of a planning row, the
// reads of its budget that its selection will need: so a list of planning
// rows of several budgets (nodes) makes them all at once. ctx is that of the
// field that returns the row.
func prefetchPlanning(ctx context.Context, budgetID string) {
	l := loaders.For(ctx)
	if l == nil {
		return
	}
	row := selected(ctx, planningTypes)
	if has(row, "actuals") {
		l.Actuals.Load(ctx, budgetID)
	}
	if has(row, "budget") {
		l.Budget.Load(ctx, budgetID)
	}
}

// prefetchPage starts at once, for every budget of a page, the reads that
// the selection of its nodes (or edges' nodes) will need. Every call of the
// page's second tier is then under way before the first budget is resolved,
// whatever order and concurrency the executor resolves the budgets in.
// ctx is that of the connection field.
func prefetchPage(ctx context.Context, budgets []upstream.Budget) {
	l := loaders.For(ctx)
	if l == nil || len(budgets) == 0 {
		return
	}
	var n budgetNeeds
	for _, f := range selected(ctx, connectionTypes[connBudgets]) {
		switch f.Name {
		case "nodes":
			n = n.or(needsOf(ctx, f.Selections))
		case "edges":
			for _, e := range collect(ctx, f.Selections, []string{"BudgetEdge"}) {
				if e.Name == "node" {
					n = n.or(needsOf(ctx, e.Selections))
				}
			}
		}
	}
	for i := range budgets {
		n.start(ctx, l, &budgets[i])
	}
}
