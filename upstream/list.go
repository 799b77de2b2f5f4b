package upstream

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// MaxPageSize is the largest limit a list operation accepts.
const MaxPageSize = 200

// listCall builds the call of a list operation; options outside the
// contract's limits are refused before sending.
func listCall(op, path string, opts *ListOptions) (call, error) {
	cl := call{op: op, method: "GET", route: path, path: path, safe: true}
	if opts == nil {
		return cl, nil
	}
	if opts.Limit < 0 || opts.Limit > MaxPageSize {
		return cl, refuse(op, fmt.Sprintf("limit %d is outside 1–%d", opts.Limit, MaxPageSize))
	}
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	cl.query = q
	return cl, nil
}

// list sends a list call and returns the page.
func list[T any](ctx context.Context, c *Client, op, path string, opts *ListOptions) (*Page[T], error) {
	cl, err := listCall(op, path, opts)
	if err != nil {
		return nil, err
	}
	data, pg, err := do[[]T](ctx, c, cl)
	if err != nil {
		return nil, err
	}
	if pg == nil {
		return nil, &Error{Op: op, Status: 200, Code: codeBadResponse, Message: "list answer has no pagination"}
	}
	return &Page[T]{Data: *data, Pagination: *pg}, nil
}

// all walks every page of a list, pageSize records at a time (0: the
// upstream's default), with a PageWalk and no bound: the consumer decides
// how far to go. It stops at the first error, which it yields.
func all[T any](ctx context.Context, op string, pageSize int, fetch func(context.Context, *ListOptions) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		w := NewPageWalk(op, fetch, "", 0)
		for {
			page, err := w.Next(ctx, pageSize)
			if page != nil {
				for _, v := range page.Data {
					if !yield(v, nil) {
						return
					}
				}
			}
			if err != nil {
				yield(zero, err)
				return
			}
			if page == nil {
				return
			}
		}
	}
}

// refuse returns the error for a request refused before sending.
func refuse(op, msg string) *Error {
	return &Error{Op: op, Code: codeRefused, Message: msg}
}

// pathID escapes an id for a path segment, refusing an empty one and the dot
// segments "." and ".." (which PathEscape leaves as they are): each would
// address another route.
func pathID(op, id string) (string, error) {
	if id == "" {
		return "", refuse(op, "empty id")
	}
	if id == "." || id == ".." {
		return "", refuse(op, fmt.Sprintf("id %q is a dot segment", id))
	}
	return url.PathEscape(id), nil
}
