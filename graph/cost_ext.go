package graph

import (
	"context"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/limits"
)

// callCounter counts the upstream calls of one request.
type callCounter struct{ n atomic.Int64 }

type callCounterKey struct{}

// CountUpstreamCall counts one upstream call of the request ctx belongs to.
// Whatever sends the upstream client's calls (its transport, or its
// observer) calls it for every attempt, so that the response's
// extensions.cost says how many calls the request made.
func CountUpstreamCall(ctx context.Context) {
	if c, ok := ctx.Value(callCounterKey{}).(*callCounter); ok {
		c.n.Add(1)
	}
}

// upstreamCalls is how many upstream calls the request ctx belongs to has
// made so far.
func upstreamCalls(ctx context.Context) int64 {
	if c, ok := ctx.Value(callCounterKey{}).(*callCounter); ok {
		return c.n.Load()
	}
	return 0
}

// costExtension adds to every response what the operation costs, as GitHub's
// rateLimit does in data: the upstream calls estimated before any was made,
// the calls made, and the limit on the estimate (-max-cost; null when off).
func costExtension(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || !graphql.HasOperationContext(ctx) {
		return resp
	}
	c := limits.CostOf(graphql.GetOperationContext(ctx))
	var max any
	if c.Max > 0 {
		max = c.Max
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	resp.Extensions["cost"] = map[string]any{
		"estimatedUpstreamCalls": c.Estimated,
		"upstreamCalls":          upstreamCalls(ctx),
		"maxUpstreamCalls":       max,
	}
	return resp
}
