package resolvers

import (
	"context"
	"slices"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/model"
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
