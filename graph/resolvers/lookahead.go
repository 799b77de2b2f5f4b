package resolvers

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/opmemo"
	"github.com/costgw/gateway/upstream"
)

// selection returns the operation and the selection of the field ctx
// resolves; no selection outside a GraphQL operation.
func selection(ctx context.Context) (*graphql.OperationContext, ast.SelectionSet) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return nil, nil
	}
	return graphql.GetOperationContext(ctx), fc.Field.Selections
}

// selects reports whether the field ctx resolves selects a field named
// name on an object of the GraphQL type typ, with @skip and @include
// applied; false outside a GraphQL operation. The answer is kept for every
// request of a static operation (opmemo).
func selects(ctx context.Context, typ, name string) bool {
	oc, sel := selection(ctx)
	if len(sel) == 0 {
		return false
	}
	return opmemo.At(opmemo.For(oc.Operation), sel, selectsKey{typ, name}, func() bool {
		for _, f := range graphql.CollectFields(oc, sel, cost.Satisfies(typ)) {
			if f.Name == name {
				return true
			}
		}
		return false
	})
}

type selectsKey struct{ typ, name string }

// reads returns the per-budget reads that the selection of the field ctx
// resolves needs, on an object of the GraphQL type typ (readsOf).
func reads(ctx context.Context, typ string) cost.Read {
	oc, sel := selection(ctx)
	if len(sel) == 0 {
		return 0
	}
	return readsOf(oc, sel, typ)
}

// readsOf returns the per-budget reads that sel needs on an object of the
// GraphQL type typ (see cost.Reads), kept for every request of a static
// operation (opmemo).
func readsOf(oc *graphql.OperationContext, sel ast.SelectionSet, typ string) cost.Read {
	return opmemo.At(opmemo.For(oc.Operation), sel, readsKey(typ), func() cost.Read {
		return cost.Reads(oc, sel, typ)
	})
}

// ReadsStarted tells the executor (executor.ReadsStarter) whether every
// upstream read that the fields sel selects of obj will wait for, down to
// the leaves, is under way already: the reads cost.Reads finds in sel, of a
// budget or of a planning row's budget. They are when the budget came in a
// page or by its id, whose resolvers start them together with the budget's
// own read (prefetchPage, prefetchBudget, prefetchPlanning). The object's
// loading fields then run one after another on its goroutine, each waiting
// for a call already made, instead of each on a goroutine of its own.
// False for any other object, and whenever one of the reads has not been
// started: a field that starts its read must run beside the others, so
// that their calls overlap.
func (r *Resolver) ReadsStarted(ctx context.Context, sel ast.SelectionSet, typ string, obj any) bool {
	var id string
	rows := false
	switch o := obj.(type) {
	case *upstream.Budget:
		id, rows = o.ID, o.Plannings != nil
		for i := range o.Plannings {
			if o.Plannings[i].BudgetID != id {
				// A row of another budget (an upstream that contradicts
				// itself) reads under that budget's id, which the
				// prefetch did not read.
				return false
			}
		}
	case *upstream.Planning:
		id = o.BudgetID
	default:
		return false
	}
	l := loaders.For(ctx)
	if l == nil || !graphql.HasOperationContext(ctx) {
		return false
	}
	need := readsOf(graphql.GetOperationContext(ctx), sel, typ)
	if rows {
		need &^= cost.Planning // its plannings are the record's rows
	}
	return l.Started(ctx, id, need)
}

// readsKey tells reads' values apart by the GraphQL type.
type readsKey string

// start starts the reads r of budget b; the loaders keep the answers for the
// fields that ask, so the returned waits are not needed here. The planning
// grid is read only for a record that came without its rows, within
// unestimatedGrid's bound.
func start(ctx context.Context, l *loaders.Loaders, r cost.Read, b *upstream.Budget) {
	if r&cost.Detail != 0 {
		l.Budget().Load(ctx, b.ID)
	}
	if r&cost.Actuals != 0 {
		l.Actuals().Load(ctx, b.ID)
	}
	if r&cost.Planning != 0 && b.Plannings == nil && unestimatedGrid(ctx, l, b.ID) == nil {
		l.Planning().Load(ctx, b.ID)
	}
}

// prefetchBudget starts, before a budget's own read, the reads its
// selection will need that depend on nothing but the budget's id (its
// actuals, for `actuals` or a planning row's `actuals`). Started only once
// the budget has arrived, they would cost one more upstream latency. ctx is
// that of the field that returns the budget, whose resolver then makes the
// budget's own read (getBudget) itself and waits for it (budgetDetail).
func prefetchBudget(ctx context.Context, id string) {
	if l := loaders.For(ctx); l != nil {
		// The planning rows come with the budget's own read.
		start(ctx, l, reads(ctx, "Budget")&^(cost.Planning|cost.Detail), &upstream.Budget{ID: id, Plannings: []upstream.Planning{}})
	}
}

// prefetchPlanning starts, together with the read of a planning row, the
// reads of its budget that its selection will need: so a list of planning
// rows of several budgets (nodes) makes them all at once. ctx is that of the
// field that returns the row.
func prefetchPlanning(ctx context.Context, budgetID string) {
	if l := loaders.For(ctx); l != nil {
		start(ctx, l, reads(ctx, "Planning")&^cost.Planning, &upstream.Budget{ID: budgetID, Plannings: []upstream.Planning{}})
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
	r := reads(ctx, "BudgetConnection")
	for i := range budgets {
		start(ctx, l, r, &budgets[i])
	}
}
