package resolvers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/upstream"
)

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

// explorerKey is the loader key of an Explorer query: the same query twice
// in a request is fetched once. A query with an empty groupBy, costType or
// granularity is refused before any call: each names an upstream column or
// bucket size, and the empty string names none. Any other value is the
// upstream's to take or refuse, whatever its length (the contract leaves the
// sets open and bounds no string; the request's own limits bound them).
func explorerKey(in model.ExplorerQueryInput) (loaders.ExplorerKey, error) {
	for _, f := range []struct{ name, value string }{
		{"groupBy", in.GroupBy}, {"costType", in.CostType}, {"granularity", in.Granularity},
	} {
		if f.value == "" {
			return loaders.ExplorerKey{}, codes.Errorf(codes.BadUserInput, "query.%s must not be empty", f.name)
		}
	}
	return loaders.NewExplorerKey(explorerQuery(in)), nil
}

// loadExplorer loads the Explorer report of query through the request's
// loader of it (which).
func loadExplorer[V any](ctx context.Context, query model.ExplorerQueryInput, which func(*loaders.Loaders) *loaders.Loader[loaders.ExplorerKey, V]) (V, error) {
	var zero V
	l, err := loadersFor(ctx)
	if err != nil {
		return zero, err
	}
	k, err := explorerKey(query)
	if err != nil {
		return zero, err
	}
	return which(l).Load(ctx, k)()
}

// historyRows types the cost rows of an Explorer history: the group-by
// value as upstream.HistoryRow.Group reads it (text, a number's JSON text,
// or null), read once for each value as written and shared by the rows
// that repeat it (a group stands in every bucket of the range). Each row is
// encoded again as raw JSON only when raw is asked for: it is the costliest
// part and a chart rarely wants it.
func historyRows(h *upstream.ExplorerHistory, withRaw bool) ([]model.HistoryCostRow, error) {
	out := make([]model.HistoryCostRow, len(h.CostRows))
	groups := map[string]*string{}
	for i, row := range h.CostRows {
		v, _ := row.Column(h.GroupBy)
		group, ok := groups[string(v)]
		if !ok {
			group, ok = row.Group(h.GroupBy)
			if !ok {
				return nil, fmt.Errorf("%w: history row %d has no column %q of text, a number or null", upstream.ErrBadResponse, i, h.GroupBy)
			}
			groups[string(v)] = group
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
