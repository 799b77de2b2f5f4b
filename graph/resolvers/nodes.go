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
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
)

// nodes resolves global IDs concurrently (through the loaders); a failing ID
// is null in the list with its own error at its index.
func (r *queryResolver) nodes(ctx context.Context, ids []string) ([]model.Node, error) {
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
	}
	return nil, fmt.Errorf("%w: unknown type", relay.ErrInvalidID)
}
