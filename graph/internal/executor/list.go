package executor

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// List marshals the elements of v with marshal, one after another on this
// goroutine, each from the element itself (&v[i]), not from a copy, which
// its record leaves would keep on the heap. It is what gqlgen's
// graphql.MarshalSliceConcurrently does with exec.worker_limit 1, whose
// semaphore of one marshals the elements in the same order, without a
// goroutine, a semaphore waiter and a closure for each: as there, each
// element has a field context with its index, a cancelled request stops
// the list with its error, and with recoverFromPanic a panic is reported at
// the element's path and makes the list nil, which is written as [].
func List[T, E any](ctx context.Context, ec E, sel ast.SelectionSet, v []T, recoverFromPanic bool, marshal func(E, context.Context, ast.SelectionSet, *T) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, len(v))
	if len(v) == 0 {
		return ret
	}
	indices := make([]int, len(v))
	fcs := make([]graphql.FieldContext, len(v))
	for i := range v {
		indices[i] = i
		fcs[i] = graphql.FieldContext{Index: &indices[i], Result: &v[i]}
		ctx := graphql.WithFieldContext(ctx, &fcs[i])
		if len(v) > 1 && ctx.Err() != nil {
			graphql.AddError(ctx, ctx.Err())
			return nil
		}
		if !recoverFromPanic {
			ret[i] = marshal(ec, ctx, sel, &v[i])
			continue
		}
		if !element(ctx, ec, sel, &v[i], &ret[i], marshal) {
			return nil
		}
	}
	return ret
}

// ListValues is List for elements marshalled from their value: pointers,
// interfaces, scalars and lists.
func ListValues[T, E any](ctx context.Context, ec E, sel ast.SelectionSet, v []T, recoverFromPanic bool, marshal func(E, context.Context, ast.SelectionSet, T) graphql.Marshaler) graphql.Array {
	return List(ctx, ec, sel, v, recoverFromPanic, func(ec E, ctx context.Context, sel ast.SelectionSet, e *T) graphql.Marshaler {
		return marshal(ec, ctx, sel, *e)
	})
}

// element marshals e into *ret, and reports false after a panic, which it
// reports at the element's path.
func element[T, E any](ctx context.Context, ec E, sel ast.SelectionSet, e *T, ret *graphql.Marshaler, marshal func(E, context.Context, ast.SelectionSet, *T) graphql.Marshaler) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			graphql.AddError(ctx, graphql.Recover(ctx, r))
			ok = false
		}
	}()
	*ret = marshal(ec, ctx, sel, e)
	return true
}
