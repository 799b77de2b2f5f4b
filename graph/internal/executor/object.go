// Package executor is the runtime code of the generated executor
// (graph/generated) where internal/gqlgen's templates differ from gqlgen's:
// the field set of an object and the writers of record leaves, the deferred
// fields of an object, the answer's count of values against
// -max-answer-values, the cache of collected fields and the answer's
// buffer. The templates only call it, so that it is ordinary Go, checked by
// the compiler and tested here. docs/architecture.md ("The executor's fork")
// says what each piece changes and why.
package executor

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// LeafFunc appends the record leaf named field of obj, a record of the
// generated type it is made for, to b.
type LeafFunc func(b []byte, field string, obj any) []byte

// Object is the field set of an object being resolved: gqlgen's
// graphql.FieldSet without the views of @defer (which stay on the
// DeferredGroup of Defer), writing itself without a map of the aliases
// written, an iterator or a copy of each field.
type Object struct {
	fields   []graphql.CollectedField
	Values   []graphql.Marshaler
	Invalids uint32
	delayed  []delayed
	small    [4]graphql.Marshaler // Values of an object of up to four fields, in the same allocation

	// Record and Leaf write a field whose value is RecordLeaf{}: Leaf
	// appends it from Record when the object is written.
	Record any
	Leaf   LeafFunc
}

// RecordLeaf stands in Object.Values for a field that the Object writes
// itself from its record.
type RecordLeaf struct{}

// Deferred stands in Object.Values for a field under @defer: the Object
// leaves it out, and it comes in a later part of the answer. The incremental
// delivery format has the first payload without the deferred fields; with
// them there as null (gqlgen's), a client cannot tell "still to come" from
// "none", and Apollo Client took such a result as complete.
type Deferred struct{}

// MarshalGQL panics: a deferred field is left out by its executor.Object.
func (Deferred) MarshalGQL(io.Writer) { panic("a deferred field is left out by its executor.Object") }

// MarshalGQL panics: a record leaf is written by its Object.
func (RecordLeaf) MarshalGQL(io.Writer) { panic("a record leaf is written by its executor.Object") }

type delayed struct {
	i       int
	nonNull bool
	f       func(context.Context) graphql.Marshaler
	// recover reports a panic of f through oc, and makes the field null.
	recover bool
	oc      *graphql.OperationContext
}

// NewObject returns the field set of an object whose selection collected
// fields.
func NewObject(fields []graphql.CollectedField) *Object {
	o := &Object{fields: fields}
	if len(fields) <= len(o.small) {
		o.Values = o.small[:len(fields)]
	} else {
		o.Values = make([]graphql.Marshaler, len(fields))
	}
	return o
}

// ResolveConcurrently records resolve, the resolution of field i, for
// Dispatch, as graphql.FieldSet.ResolveConcurrently does for a field that is
// not deferred: with recoverFromPanic a panic is reported through oc and the
// field is null; a non-null field that resolves to graphql.Null, or a
// nullable one to graphql.RequiredNull, counts in Invalids.
func (o *Object) ResolveConcurrently(oc *graphql.OperationContext, i int, recoverFromPanic, nonNull bool, resolve func(context.Context) graphql.Marshaler) {
	o.delayed = append(o.delayed, delayed{i: i, nonNull: nonNull, f: resolve, recover: recoverFromPanic, oc: oc})
}

// ResolveRootConcurrently is ResolveConcurrently for a field of a root
// object, run under the operation's RootResolverMiddleware with ctx, the
// context that carries the field's RootFieldContext.
func (o *Object) ResolveRootConcurrently(ctx context.Context, oc *graphql.OperationContext, i int, recoverFromPanic, nonNull bool, resolve func(context.Context) graphql.Marshaler) {
	o.delayed = append(o.delayed, delayed{i: i, nonNull: nonNull, f: func(context.Context) graphql.Marshaler {
		return oc.RootResolverMiddleware(ctx, func(ctx context.Context) graphql.Marshaler {
			if recoverFromPanic {
				return recoverToNull(ctx, oc, resolve)
			}
			return resolve(ctx)
		})
	}})
}

// Concurrent is the number of fields recorded for Dispatch.
func (o *Object) Concurrent() int { return len(o.delayed) }

func recoverToNull(ctx context.Context, oc *graphql.OperationContext, resolve func(context.Context) graphql.Marshaler) (res graphql.Marshaler) {
	defer func() {
		if r := recover(); r != nil {
			oc.Error(ctx, oc.Recover(ctx, r))
			res = graphql.Null
		}
	}()
	return resolve(ctx)
}

func (o *Object) run(ctx context.Context, d *delayed) {
	var v graphql.Marshaler
	if d.recover {
		v = recoverToNull(ctx, d.oc, d.f)
	} else {
		v = d.f(ctx)
	}
	o.Values[d.i] = v
	if d.nonNull && v == graphql.Null || !d.nonNull && v == graphql.RequiredNull {
		atomic.AddUint32(&o.Invalids, 1)
	}
}

// Dispatch runs what ResolveConcurrently recorded as graphql.FieldSet does:
// the first on this goroutine, each other on a goroutine of its own.
func (o *Object) Dispatch(ctx context.Context) {
	switch len(o.delayed) {
	case 0:
	case 1:
		o.run(ctx, &o.delayed[0])
	default:
		var wg sync.WaitGroup
		for k := 1; k < len(o.delayed); k++ {
			d := &o.delayed[k]
			wg.Go(func() { o.run(ctx, d) })
		}
		o.run(ctx, &o.delayed[0])
		wg.Wait()
	}
}

// DispatchHere runs what ResolveConcurrently recorded one after another on
// this goroutine. It is for an object whose every upstream read is under
// way already (ReadsStarter): each field then only waits for a read that
// was started, so waiting for them in turn ends when the last of them does,
// as waiting for them at once would, and no field is handed to another
// goroutine and waited for. A field that starts a read of its own must not
// be run here: the fields after it would start theirs only once it ended,
// one upstream latency later.
func (o *Object) DispatchHere(ctx context.Context) {
	for k := range o.delayed {
		o.run(ctx, &o.delayed[k])
	}
}

// MarshalGQL writes the object's fields in order, an alias once, as
// graphql.FieldSet does. Aliases are GraphQL names, which need no escaping.
// What the object writes itself (the punctuation, the names, its later
// leaves) is appended into the free space of the executor's buffer and
// written at once, before each value that writes itself and at the end. An
// object of more than 16 fields keeps a map of the aliases written, so that
// a wide one cannot make the scan quadratic.
func (o *Object) MarshalGQL(w io.Writer) {
	var seen map[string]struct{}
	if len(o.fields) > 16 {
		seen = make(map[string]struct{}, len(o.fields))
	}
	bw, _ := w.(*bytes.Buffer)
	var b []byte
	if bw != nil {
		b = bw.AvailableBuffer()
	}
	b = append(b, '{')
	first := true
	for i := range o.fields {
		if _, deferred := o.Values[i].(Deferred); deferred {
			continue
		}
		alias := o.fields[i].Alias
		if seen != nil {
			if _, ok := seen[alias]; ok {
				continue
			}
			seen[alias] = struct{}{}
		} else if o.written(i, alias) {
			continue
		}
		if first {
			first = false
		} else {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), alias...), '"', ':')
		if _, later := o.Values[i].(RecordLeaf); later {
			b = o.Leaf(b, o.fields[i].Name, o.Record)
			continue
		}
		_, _ = w.Write(b)
		o.Values[i].MarshalGQL(w)
		if bw != nil {
			b = bw.AvailableBuffer()
		} else {
			b = b[:0]
		}
	}
	_, _ = w.Write(append(b, '}'))
}

// written reports whether a field before the i-th, not deferred, has alias.
func (o *Object) written(i int, alias string) bool {
	for j := range i {
		if _, deferred := o.Values[j].(Deferred); !deferred && o.fields[j].Alias == alias {
			return true
		}
	}
	return false
}

// Defer schedules field, which is deferred, on g, the deferred group of its
// object, made on the first deferred field so that an object with none
// makes no second field set or map of labels: gqlgen's
// graphql.FieldSet.ResolveConcurrently for a deferred field, but with the
// field in each label's view once. gqlgen adds it once per @defer fragment
// it is under, so a field under two fragments of one label (nested @defer
// without labels, or two with the same label) is counted twice by a view
// that is told of it once: the view never completes, and the answer's
// deferred part never comes (TestNestedDeferEnds).
func Defer(ctx context.Context, oc *graphql.OperationContext, g *graphql.DeferredGroup, field graphql.CollectedField, recoverFromPanic, nonNull bool, resolve func(context.Context) graphql.Marshaler) {
	if g.FieldSet == nil {
		*g = graphql.NewDeferredGroup(ctx)
	}
	field.Deferrables = uniqueLabels(field.Deferrables)
	one := graphql.NewFieldSet([]graphql.CollectedField{field})
	one.ResolveConcurrently(oc, g, 0, recoverFromPanic, nonNull, resolve)
}

// uniqueLabels returns ds with each label once, its first.
func uniqueLabels(ds []*graphql.Deferrable) []*graphql.Deferrable {
	for j := range ds {
		if slices.ContainsFunc(ds[:j], func(e *graphql.Deferrable) bool { return e.Label == ds[j].Label }) {
			out := slices.Clone(ds[:j])
			for _, d := range ds[j:] {
				if !slices.ContainsFunc(out, func(e *graphql.Deferrable) bool { return e.Label == d.Label }) {
					out = append(out, d)
				}
			}
			return out
		}
	}
	return ds
}

// ReadsStarter is what the resolver root implements to tell the executor
// that every upstream read the fields selected by sel of obj, an object of
// the GraphQL type typ, will wait for, down to the leaves, is under way
// already; the object then resolves its fields with DispatchHere. Its
// answer must be false whenever one of those fields would start a read.
type ReadsStarter interface {
	ReadsStarted(ctx context.Context, sel ast.SelectionSet, typ string, obj any) bool
}

// ReadsStarted reports whether root says every read that obj's fields will
// wait for is under way (ReadsStarter); false when root does not say.
func ReadsStarted(ctx context.Context, root any, sel ast.SelectionSet, typ string, obj any) bool {
	s, ok := root.(ReadsStarter)
	return ok && s.ReadsStarted(ctx, sel, typ, obj)
}

// NextDeferred waits for the next deferred part of the answer, or for the
// end of the request (ok false), so that a deferred part owed cannot hold
// the request, and its place, past its deadline.
func NextDeferred(ctx context.Context, results <-chan graphql.DeferredResult) (r graphql.DeferredResult, ok bool) {
	select {
	case r = <-results:
		return r, true
	case <-ctx.Done():
		return r, false
	}
}
