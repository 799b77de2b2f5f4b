package resolvers

import (
	"context"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
)

// Connections: the name bound into their cursors, so one connection's
// cursor is refused by another, their GraphQL type, and the upstream list
// operation they walk, which their errors name.
var (
	connBudgets         = connection{"budgets", "BudgetConnection", ops.ListBudgets}
	connRecommendations = connection{"recommendations", "RecommendationConnection", ops.ListRecommendations}
	connAnomalies       = connection{"anomalies", "AnomalyConnection", ops.ListAnomalies}
	connNotifications   = connection{"scheduledNotifications", "ScheduledNotificationConnection", ops.ListScheduledNotifications}
)

// connection names a connection field.
type connection struct {
	name string // the root field, bound into cursors
	typ  string // the GraphQL type of the connection
	op   string // the upstream list operation
}

// window is one page of a connection: the records, the cursor of each, and
// the upstream total when the upstream gives one. A record's cursor is
// signed only when an edge asks for it; pageInfo's two are signed at once.
type window[T any] struct {
	items []T
	at    []relay.Cursor
	codec *relay.Codec
	conn  connection
	info  model.PageInfo
	total *int
}

// fetchPage is a list operation of the client.
type fetchPage[T any] func(context.Context, *upstream.ListOptions) (*upstream.Page[T], error)

// page serves first records after the cursor after from a forward-only
// upstream list. Each record's cursor points just past it: to the same
// upstream page with one more record skipped, or, for a page's last record,
// to the next upstream page. So every edge cursor is valid as after, and
// resuming from a page's end costs no refetch.
//
// The pages are walked by an upstream.PageWalk, which fails loudly (an
// ErrBadResponse naming the operation) on pagination that would not end,
// and fetches no more than the pages the operation's cost estimate charged
// for it (cost.Pages). When an upstream answers short or empty pages
// (fewer records than asked, or none, has_more true) and the bound is
// reached, page returns the records it has with hasNextPage true: a valid
// Relay page, whose endCursor goes on where the walk stopped. The last
// record's cursor points past the empty pages after it; with no record at
// all, the page has no edges and an endCursor all the same, so the client
// can go on past the empty pages it was charged for.
func page[T any](ctx context.Context, codec *relay.Codec, conn connection, first *int, after *string, fetch fetchPage[T]) (*window[T], error) {
	n := cost.DefaultFirst
	if first != nil {
		n = *first
	}
	if n < 1 || n > cost.MaxFirst {
		return nil, codes.Errorf(codes.BadUserInput, "first must be between 1 and %d, got %d", cost.MaxFirst, n)
	}
	var at relay.Cursor
	if after != nil {
		var err error
		if at, err = codec.Decode(conn.name, *after); err != nil {
			return nil, err
		}
	}
	w := &window[T]{at: make([]relay.Cursor, 0, n), codec: codec, conn: conn}
	walk := upstream.NewPageWalk(conn.op, fetch, at.Upstream, cost.Pages(n, after != nil))
	skip := at.Skip
	for {
		upCursor := walk.Cursor()
		want := n - len(w.items)
		pg, err := walk.Next(ctx, min(skip+want, cost.PageSize))
		if err != nil {
			return nil, err
		}
		if pg == nil {
			// The bound of pages is reached with more to come: the last
			// record's cursor already points past it.
			w.info.HasNextPage = walk.More()
			break
		}
		w.total = pg.Pagination.Total
		data := pg.Data
		more := walk.More()
		j := skip
		if j < len(data) && len(w.items) < n {
			end := min(len(data), j+n-len(w.items))
			// A window within one page (most) keeps the page's records
			// where the decoder put them; a window over pages copies them.
			if w.items == nil {
				w.items = data[j:end:end]
			} else {
				w.items = append(w.items, data[j:end]...)
			}
			for ; j < end; j++ {
				c := relay.Cursor{Upstream: upCursor, Skip: j + 1}
				if j == len(data)-1 && more {
					c = relay.Cursor{Upstream: walk.Cursor()}
				}
				w.at = append(w.at, c)
			}
		}
		if len(w.items) == n {
			w.info.HasNextPage = j < len(data) || more
			break
		}
		if !more {
			break
		}
		skip = 0
		// The window is not full, so every record of the pages so far is
		// in it: what follows the last is the next page, past any empty
		// ones between.
		if len(w.at) > 0 {
			w.at[len(w.at)-1] = relay.Cursor{Upstream: walk.Cursor()}
		}
	}
	if w.items == nil {
		w.items = []T{}
	}
	switch {
	case len(w.at) > 0:
		start, end := codec.Encode(conn.name, w.at[0]), codec.Encode(conn.name, w.at[len(w.at)-1])
		w.info.StartCursor, w.info.EndCursor = &start, &end
	case w.info.HasNextPage:
		// The bound was reached on empty pages: no edge, and a cursor to
		// go on from after them.
		end := codec.Encode(conn.name, relay.Cursor{Upstream: walk.Cursor()})
		w.info.EndCursor = &end
	}
	return w, nil
}

// edges builds the edges of a window with a constructor of the connection's
// edge type, or none when the query does not ask for edges (ctx is that of
// the connection field): each edge costs a signed cursor.
func edges[T, E any](ctx context.Context, w *window[T], edge func(cursor string, node *T) E) []E {
	if !selects(ctx, w.conn.typ, "edges") {
		return nil
	}
	out := make([]E, len(w.items))
	for i := range w.items {
		out[i] = edge(w.codec.Encode(w.conn.name, w.at[i]), &w.items[i])
	}
	return out
}
