package executor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"

	"github.com/99designs/gqlgen/graphql"
)

// LeafObject is an object whose selection asks only for record leaves (and
// __typename), written from its record as one element of a LeafList is.
type LeafObject struct {
	fields   []graphql.CollectedField
	written  []int
	small    [8]int // written, for up to eight fields, in the same allocation
	obj      any
	typename string
	leaf     LeafFunc
}

// NewLeafObject returns the writer of obj, of the GraphQL type typename,
// whose selection collected fields, each a record leaf or __typename.
func NewLeafObject(fields []graphql.CollectedField, obj any, typename string, leaf LeafFunc) *LeafObject {
	l := &LeafObject{fields: fields, obj: obj, typename: typename, leaf: leaf}
	l.written = leafWritten(l.small[:0], fields)
	return l
}

// MarshalGQL appends the object into the free space of the executor's
// buffer and writes it at once.
func (l *LeafObject) MarshalGQL(w io.Writer) {
	var b []byte
	if bw, ok := w.(*bytes.Buffer); ok {
		b = bw.AvailableBuffer()
	}
	_, _ = w.Write(appendLeaves(b, l.fields, l.written, l.typename, l.leaf, l.obj))
}

// LeafList is a list of objects whose selection asks only for record leaves
// (and __typename), written from the elements themselves: no Object,
// Marshaler or field set per element. It writes each alias once, as Object
// does.
type LeafList[T any] struct {
	fields   []graphql.CollectedField
	written  []int // the fields written, an alias once
	items    []T
	typename string
	leaf     LeafFunc
}

// NewLeafList returns the writer of items, of the GraphQL type typename,
// whose selection collected fields, each a record leaf or __typename; leaf
// is given a *T.
func NewLeafList[T any](fields []graphql.CollectedField, items []T, typename string, leaf LeafFunc) *LeafList[T] {
	return &LeafList[T]{fields: fields, written: leafWritten(make([]int, 0, len(fields)), fields), items: items, typename: typename, leaf: leaf}
}

// MarshalGQL appends each element into the free space of the executor's
// buffer and writes it at once, as Object does an object.
func (l *LeafList[T]) MarshalGQL(w io.Writer) {
	bw, _ := w.(*bytes.Buffer)
	var b []byte
	if bw != nil {
		b = bw.AvailableBuffer()
	}
	b = append(b, '[')
	for i := range l.items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLeaves(b, l.fields, l.written, l.typename, l.leaf, &l.items[i])
		_, _ = w.Write(b)
		if bw != nil {
			b = bw.AvailableBuffer()
		} else {
			b = b[:0]
		}
	}
	_, _ = w.Write(append(b, ']'))
}

// leafWritten appends to written the index of each field written: an
// alias once, its first.
func leafWritten(written []int, fields []graphql.CollectedField) []int {
	for i := range fields {
		if !slices.ContainsFunc(written, func(j int) bool { return fields[j].Alias == fields[i].Alias }) {
			written = append(written, i)
		}
	}
	return written
}

// appendLeaves appends the object obj as the fields written ask, each from
// obj with leaf, __typename as typename.
func appendLeaves(b []byte, fields []graphql.CollectedField, written []int, typename string, leaf LeafFunc, obj any) []byte {
	b = append(b, '{')
	for k, j := range written {
		if k > 0 {
			b = append(b, ',')
		}
		f := &fields[j]
		b = append(append(append(b, '"'), f.Alias...), '"', ':')
		if f.Name == "__typename" {
			b = append(append(append(b, '"'), typename...), '"')
			continue
		}
		b = leaf(b, f.Name, obj)
	}
	return append(b, '}')
}

// NoChildFields is the Child of the field context of a plain leaf, which
// the generated executor marshals straight from its struct member.
func NoChildFields(context.Context, graphql.CollectedField) (*graphql.FieldContext, error) {
	return nil, errNoChildFields
}

var errNoChildFields = errors.New("field of a scalar or enum type does not have child fields")
