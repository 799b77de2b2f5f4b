package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/codes"
)

// Incremental delivery of @defer.
//
// A client that accepts multipart/mixed (Apollo Client, urql, Relay's
// network layers, graphql-http's client) gets the deferred parts as the
// GraphQL-over-HTTP incremental delivery RFC has them: the first part as
// soon as the rest of the operation is done, each deferred fragment in a
// part of its own when its data is, in the `incremental` form Apollo Client
// and urql read (deferSpec=20220824). A client that does not gets the whole
// result in one response, as if the operation had no @defer: the operation
// runs without its @defer directives, so the answer is the one the same
// query without them would get, fields in their order.

// multipartBoundary separates the parts of an incremental answer.
const multipartBoundary = "graphql"

// acceptsMultipart reports whether the client takes multipart/mixed: its
// Accept header names it, not with q=0.
func acceptsMultipart(r *http.Request) bool {
	return codes.AcceptsExactly(r, "multipart/mixed")
}

// writeIncremental writes the first response and every later one as the
// parts of a multipart/mixed answer, flushing each as it is ready. Each part
// is followed at once by the delimiter that closes it (the next part's, or
// the closing one after the last), so that a client can take a part as
// whole as soon as it arrives: a multipart reader knows a part has ended
// only when it sees the delimiter after it (RFC 2046, 5.1.1).
func writeIncremental(ctx context.Context, w http.ResponseWriter, first *graphql.Response, next graphql.ResponseHandler) {
	h := w.Header()
	h.Set("Content-Type", `multipart/mixed; boundary="`+multipartBoundary+`"; deferSpec=20220824`)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "--%s\r\n", multipartBoundary)
	part := func(v any, last bool) {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL"}}],"hasNext":false}`)
			last = true
		}
		end := "\r\n"
		if last {
			end = "--\r\n"
		}
		fmt.Fprintf(w, "Content-Type: application/json; charset=utf-8\r\n\r\n%s\r\n--%s%s", b, multipartBoundary, end)
		_ = http.NewResponseController(w).Flush()
	}
	part(first, !hasNext(first))
	for more := hasNext(first); more; {
		resp := next(ctx)
		if resp == nil {
			// The request ended (its context) before every part was ready.
			part(struct {
				HasNext bool `json:"hasNext"`
			}{false}, true)
			return
		}
		if answerTooLarge(resp) {
			resp.Errors = resp.Errors[:1] // the limit's error alone, and the last part
		}
		more = hasNext(resp)
		part(struct {
			Incremental []*graphql.Response `json:"incremental"`
			HasNext     bool                `json:"hasNext"`
		}{[]*graphql.Response{resp}, more}, !more)
	}
}

func hasNext(r *graphql.Response) bool { return r.HasNext != nil && *r.HasNext }

// withoutDefer makes the operation of rc run without its @defer directives,
// for a client that takes one JSON answer: the operation and the fragments
// are copied (the cached document stays as it is) without them. An
// operation without @defer is left alone.
func withoutDefer(rc *graphql.OperationContext) {
	if !usesDefer(rc.Doc) {
		return
	}
	frags := make(ast.FragmentDefinitionList, len(rc.Doc.Fragments))
	for i, f := range rc.Doc.Fragments {
		c := *f
		frags[i] = &c
	}
	for _, f := range frags {
		f.SelectionSet = dropDefer(f.SelectionSet, frags)
	}
	op := *rc.Operation
	op.SelectionSet = dropDefer(op.SelectionSet, frags)
	doc := *rc.Doc
	doc.Fragments = frags
	rc.Operation, rc.Doc = &op, &doc
}

// usesDefer reports whether any selection of the document has @defer.
func usesDefer(doc *ast.QueryDocument) bool {
	var walk func(ast.SelectionSet) bool
	walk = func(set ast.SelectionSet) bool {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				if walk(s.SelectionSet) {
					return true
				}
			case *ast.InlineFragment:
				if s.Directives.ForName("defer") != nil || walk(s.SelectionSet) {
					return true
				}
			case *ast.FragmentSpread:
				if s.Directives.ForName("defer") != nil {
					return true
				}
			}
		}
		return false
	}
	for _, op := range doc.Operations {
		if walk(op.SelectionSet) {
			return true
		}
	}
	for _, f := range doc.Fragments {
		if walk(f.SelectionSet) {
			return true
		}
	}
	return false
}

// dropDefer copies a selection set without @defer, its fragment spreads
// pointing at frags.
func dropDefer(set ast.SelectionSet, frags ast.FragmentDefinitionList) ast.SelectionSet {
	out := make(ast.SelectionSet, len(set))
	for i, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			c := *s
			c.SelectionSet = dropDefer(s.SelectionSet, frags)
			out[i] = &c
		case *ast.InlineFragment:
			c := *s
			c.Directives = withoutDirective(s.Directives, "defer")
			c.SelectionSet = dropDefer(s.SelectionSet, frags)
			out[i] = &c
		case *ast.FragmentSpread:
			c := *s
			c.Directives = withoutDirective(s.Directives, "defer")
			if d := frags.ForName(s.Name); d != nil {
				c.Definition = d
			}
			out[i] = &c
		default:
			out[i] = sel
		}
	}
	return out
}

func withoutDirective(list ast.DirectiveList, name string) ast.DirectiveList {
	var out ast.DirectiveList
	for _, d := range list {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out
}
