package upstream

import (
	"context"
	"fmt"
)

// A PageWalk walks the pages of one list operation in order, one Next per
// page. It is the one place that decides whether an upstream's pagination
// can go on, for the client's iterators and for any caller that pages
// itself (the gateway's connections): a walk always ends.
//
// It stops with an *Error matching ErrBadResponse, naming the operation,
// when the upstream's pagination would not end: a next_cursor seen before
// in the walk (the start cursor included), a page with has_more but no
// next_cursor, or, in a walk without a bound, MaxEmptyPages pages in a row
// with has_more but no records. And it never fetches more than the bound of
// pages it was given, so a caller that priced a request in upstream calls
// is never charged more.
//
// A page with has_more and no records is not an error by itself: the
// contract ends a list only where has_more is false, and an upstream that
// filters may answer a page that kept nothing. Its cursor is new (a
// repeated one is refused), so the walk goes on; the bound, or in a walk
// without one MaxEmptyPages, keeps a run of them from going on forever.
type PageWalk[T any] struct {
	op      string
	fetch   func(context.Context, *ListOptions) (*Page[T], error)
	max     int    // most pages to fetch; 0: no bound
	fetched int    // pages fetched so far
	empty   int    // pages in a row with has_more and no records
	cursor  string // cursor of the next page; "" for the list's first page
	more    bool   // there is a page after the last one fetched
	seen    map[string]struct{}
}

// MaxEmptyPages is how many pages in a row with has_more and no records
// make a walk without a bound of pages fail: with nothing to yield, its
// consumer could not stop it. A walk with a bound goes on to the
// bound, which is what its caller priced.
const MaxEmptyPages = 10

// NewPageWalk returns a walk of the list operation op, whose pages fetch
// returns (a List method of the client), starting at cursor (empty: the
// first page) and fetching at most maxPages pages (0: no bound).
func NewPageWalk[T any](op string, fetch func(context.Context, *ListOptions) (*Page[T], error), cursor string, maxPages int) *PageWalk[T] {
	return &PageWalk[T]{op: op, fetch: fetch, max: maxPages, cursor: cursor, more: true}
}

// Cursor returns the cursor the next page is fetched with: the start cursor
// before the first Next, then the last page's next_cursor.
func (w *PageWalk[T]) Cursor() string { return w.cursor }

// More reports whether the upstream has a page after the last one fetched,
// whether or not the bound lets the walk fetch it.
func (w *PageWalk[T]) More() bool { return w.more }

// Pages returns how many pages the walk fetched.
func (w *PageWalk[T]) Pages() int { return w.fetched }

// Next fetches the next page, of at most limit records (0: the upstream's
// default). It returns nil and no error when the walk is over: the list
// ended (More is false), or the bound of pages was reached (More is true).
//
// Like an io.Reader's n and error, a page that arrived but whose pagination
// cannot go on comes with the error: its records are good, and the walk is
// over. The client's iterators yield them before the error; a caller that
// would rather fail loudly ignores them.
func (w *PageWalk[T]) Next(ctx context.Context, limit int) (*Page[T], error) {
	if !w.more || (w.max > 0 && w.fetched >= w.max) {
		return nil, nil
	}
	if w.cursor != "" && w.seen == nil {
		w.seen = map[string]struct{}{w.cursor: {}}
	}
	page, err := w.fetch(ctx, &ListOptions{Limit: limit, Cursor: w.cursor})
	w.fetched++
	if err != nil {
		w.more = false
		return nil, err
	}
	p := page.Pagination
	if !p.HasMore {
		// has_more is the contract's end marker; a cursor beside it is ignored.
		w.more = false
		return page, nil
	}
	if p.NextCursor == nil || *p.NextCursor == "" {
		return page, w.fail("has_more is true but next_cursor is empty")
	}
	next := *p.NextCursor
	if _, dup := w.seen[next]; dup {
		return page, w.fail("pagination cursor repeats after %d pages", w.fetched)
	}
	if len(page.Data) > 0 {
		w.empty = 0
	} else {
		w.empty++
		if w.max == 0 && w.empty == MaxEmptyPages {
			return page, w.fail("%d pages in a row have has_more but no records", w.empty)
		}
	}
	if w.seen == nil {
		w.seen = map[string]struct{}{}
	}
	w.seen[next] = struct{}{}
	w.cursor = next
	return page, nil
}

// fail ends the walk with an ErrBadResponse naming the operation.
func (w *PageWalk[T]) fail(format string, args ...any) error {
	w.more = false
	return &Error{Op: w.op, Status: 200, Code: codeBadResponse, Message: "pagination does not end",
		Err: fmt.Errorf(format, args...)}
}
