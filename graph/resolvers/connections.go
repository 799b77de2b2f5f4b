package resolvers

import (
	"context"

	"github.com/costgw/gateway/graph/errs"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// MaxFirst is the largest `first` a connection serves. Above the upstream's
// page size (200) it is served by walking upstream pages, one call per page.
const MaxFirst = 500

// Connection names, bound into cursors so one connection's cursor is refused by another.
const (
	connBudgets         = "budgets"
	connRecommendations = "recommendations"
	connAnomalies       = "anomalies"
	connNotifications   = "scheduledNotifications"
)

// listOps names the upstream list operation each connection walks, for its errors.
var listOps = map[string]string{
	connBudgets:         upstream.OpListBudgets,
	connRecommendations: upstream.OpListRecommendations,
	connAnomalies:       upstream.OpListAnomalies,
	connNotifications:   upstream.OpListScheduledNotifications,
}

// pagesAllowed is how many upstream pages a connection may fetch for first
// records: what the operation's cost estimate charged for it, ceil(first /
// 200), plus one when it resumes from a cursor, whose upstream page is
// partly skipped (up to a whole page). With full pages that is always
// enough; only an upstream that answers short pages can reach it.
func pagesAllowed(first int, resuming bool) int {
	pages := (first + upstream.MaxPageSize - 1) / upstream.MaxPageSize
	if resuming {
		pages++
	}
	return pages
}

// window is one page of a connection: the records, the cursor of each, and
// the upstream total when the upstream gives one. A record's cursor is
// signed only when an edge asks for it; pageInfo's two are signed at once.
type window[T any] struct {
	items []T
	at    []relay.Cursor
	codec *relay.Codec
	conn  string
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
// and fetches no more than pagesAllowed. When an upstream answers short
// pages (fewer records than asked, has_more true) and the bound is reached,
// page returns the records it has with hasNextPage true: a valid Relay
// page, whose endCursor goes on where the walk stopped.
func page[T any](ctx context.Context, codec *relay.Codec, conn string, first *int, after *string, fetch fetchPage[T]) (*window[T], error) {
	n := 50
	if first != nil {
		n = *first
	}
	if n < 1 || n > MaxFirst {
		return nil, errs.Inputf("first must be between 1 and %d, got %d", MaxFirst, n)
	}
	var at relay.Cursor
	if after != nil {
		var err error
		if at, err = codec.Decode(conn, *after); err != nil {
			return nil, err
		}
	}
	w := &window[T]{items: make([]T, 0, n), at: make([]relay.Cursor, 0, n), codec: codec, conn: conn}
	walk := upstream.NewPageWalk(listOps[conn], fetch, at.Upstream, pagesAllowed(n, after != nil))
	skip := at.Skip
	for {
		upCursor := walk.Cursor()
		want := n - len(w.items)
		pg, err := walk.Next(ctx, min(skip+want, upstream.MaxPageSize))
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
		for ; j < len(data) && len(w.items) < n; j++ {
			w.items = append(w.items, data[j])
			c := relay.Cursor{Upstream: upCursor, Skip: j + 1}
			if j == len(data)-1 && more {
				c = relay.Cursor{Upstream: walk.Cursor()}
			}
			w.at = append(w.at, c)
		}
		if len(w.items) == n {
			w.info.HasNextPage = j < len(data) || more
			break
		}
		if !more {
			break
		}
		skip = 0
	}
	if len(w.at) > 0 {
		start, end := codec.Encode(conn, w.at[0]), codec.Encode(conn, w.at[len(w.at)-1])
		w.info.StartCursor, w.info.EndCursor = &start, &end
	}
	return w, nil
}

// edges builds the edges of a window with a constructor of the connection's
// edge type, or none when the query does not ask for edges (ctx is that of
// the connection field): each edge costs a signed cursor.
func edges[T, E any](ctx context.Context, w *window[T], edge func(cursor string, node *T) E) []E {
	if !has(selected(ctx, connectionTypes[w.conn]), "edges") {
		return nil
	}
	out := make([]E, len(w.items))
	for i := range w.items {
		out[i] = edge(w.codec.Encode(w.conn, w.at[i]), &w.items[i])
	}
	return out
}
