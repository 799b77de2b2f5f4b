package resolvers

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// nodes resolves global IDs concurrently (through the loaders); a failing ID
// is null in the list with its own error at its index.
func (r queryResolver) nodes(ctx context.Context, ids []string) ([]model.Node, error) {
	if len(ids) > cost.MaxNodes {
		return nil, codes.Errorf(codes.BadUserInput, "nodes takes at most %d ids, got %d", cost.MaxNodes, len(ids))
	}
	out := make([]model.Node, len(ids))
	errsAt := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out[i], errsAt[i] = node(ctx, id) })
	}
	wg.Wait()
	path := graphql.GetPath(ctx)
	for i, err := range errsAt {
		if err != nil {
			graphql.AddError(ctx, &gqlerror.Error{Err: err, Message: err.Error(), Path: append(slices.Clone(path), ast.PathIndex(i))})
		}
	}
	return out, nil
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
	case relay.TypeRecommendation:
		return scanned(ctx, id, (*loaders.Loaders).RecommendationList, func(r *upstream.Recommendation) string { return r.RecommendationID })
	case relay.TypeAnomaly:
		return scanned(ctx, id, (*loaders.Loaders).AnomalyList, func(a *upstream.Anomaly) string { return a.AnomalyID })
	case relay.TypeScheduledNotification:
		return scanned(ctx, id, (*loaders.Loaders).NotificationList, func(n *upstream.ScheduledNotification) string { return n.ID })
	case relay.TypeUser, relay.TypeExplorerReport:
		return embedded(ctx, id)
	}
	return nil, fmt.Errorf("%w: unknown type", relay.ErrInvalidID)
}

// scanned finds an object the upstream can only list on the first
// cost.MaxScanPages pages of its list, which the request reads once however
// many IDs ask.
func scanned[T any](ctx context.Context, id relay.ID, list func(*loaders.Loaders, context.Context) ([]T, error), key func(*T) string) (model.Node, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	all, err := list(l, ctx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if key(&all[i]) == id.Key {
			return &all[i], nil
		}
	}
	return nil, notScanned(id)
}

// embedded finds a user or an Explorer report among those the budgets on
// the first cost.MaxScanPages pages embed.
func embedded(ctx context.Context, id relay.ID) (model.Node, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return nil, err
	}
	budgets, err := l.BudgetList(ctx)
	if err != nil {
		return nil, err
	}
	for i := range budgets {
		b := &budgets[i]
		if id.Type == relay.TypeUser && b.Creator != nil && b.Creator.ID == id.Key {
			return b.Creator, nil
		}
		if id.Type == relay.TypeExplorerReport && b.ExplorerReport != nil && b.ExplorerReport.ID == id.Key {
			return b.ExplorerReport, nil
		}
	}
	return nil, notScanned(id)
}

func notScanned(id relay.ID) error {
	return codes.Errorf(codes.NotFound, "no %s with this ID on the first %d pages the upstream lists", id.Type, cost.MaxScanPages)
}

// queryCost is the cost of the operation ctx belongs to, as the limits
// estimated it before any call.
func queryCost(ctx context.Context) *model.QueryCost {
	c := limits.CostOf(graphql.GetOperationContext(ctx))
	out := &model.QueryCost{EstimatedUpstreamCalls: c.Estimated}
	if c.Max > 0 {
		out.MaxUpstreamCalls = &c.Max
	}
	return out
}
