package executor

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2/ast"
)

func field(alias, name string) graphql.CollectedField {
	return graphql.CollectedField{Field: &ast.Field{Alias: alias, Name: name}}
}

type record struct{ A, B int }

func leafRecord(b []byte, name string, obj any) []byte {
	r := obj.(*record)
	switch name {
	case "a":
		return strconv.AppendInt(b, int64(r.A), 10)
	case "b":
		return strconv.AppendInt(b, int64(r.B), 10)
	}
	panic("not a record leaf: " + name)
}

func marshal(m graphql.Marshaler) string {
	var buf bytes.Buffer
	m.MarshalGQL(&buf)
	return buf.String()
}

func TestObjectWritesEachAliasOnce(t *testing.T) {
	t.Parallel()
	o := NewObject([]graphql.CollectedField{field("a", "a"), field("x", "b"), field("a", "a"), field("s", "s")})
	o.Record, o.Leaf = &record{A: 1, B: 2}, leafRecord
	o.Values[0], o.Values[1], o.Values[2] = RecordLeaf{}, RecordLeaf{}, RecordLeaf{}
	o.Values[3] = graphql.MarshalString("t")
	if got, want := marshal(o), `{"a":1,"x":2,"s":"t"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestObjectCountsInvalidFields(t *testing.T) {
	t.Parallel()
	oc := &graphql.OperationContext{RecoverFunc: quietRecover}
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, quietRecover)
	o := NewObject([]graphql.CollectedField{field("a", "a"), field("b", "b"), field("c", "c"), field("d", "d")})
	o.ResolveConcurrently(oc, 0, true, true, func(context.Context) graphql.Marshaler { return graphql.Null })
	o.ResolveConcurrently(oc, 1, true, false, func(context.Context) graphql.Marshaler { return graphql.Null })
	o.ResolveConcurrently(oc, 2, true, true, func(context.Context) graphql.Marshaler { panic("boom") })
	o.ResolveConcurrently(oc, 3, true, false, func(context.Context) graphql.Marshaler { return graphql.RequiredNull })
	o.Dispatch(ctx)
	// a: non-null and null; b: nullable and null (valid); c: a panic is null; d: RequiredNull.
	if o.Invalids != 3 {
		t.Errorf("Invalids = %d, want 3", o.Invalids)
	}
	if errs := graphql.GetErrors(ctx); len(errs) != 1 {
		t.Errorf("errors = %v, want the panic's", errs)
	}
}

func TestLeafListWritesEveryElement(t *testing.T) {
	t.Parallel()
	fields := []graphql.CollectedField{field("__typename", "__typename"), field("b", "b"), field("b", "b"), field("z", "a")}
	l := NewLeafList(fields, []record{{1, 2}, {3, 4}}, "R", func(b []byte, name string, obj any) []byte { return leafRecord(b, name, obj) })
	if got, want := marshal(l), `[{"__typename":"R","b":2,"z":1},{"__typename":"R","b":4,"z":3}]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := marshal(NewLeafObject(fields[1:], &record{5, 6}, "R", leafRecord)), `{"b":6,"z":5}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestListIsNilAfterAPanic(t *testing.T) {
	t.Parallel()
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, quietRecover)
	mark := func(_ *int, _ context.Context, _ ast.SelectionSet, v *record) graphql.Marshaler {
		if v.A < 0 {
			panic("negative")
		}
		return graphql.MarshalInt(v.A)
	}
	if got := marshal(List(ctx, (*int)(nil), nil, []record{{A: 1}, {A: 2}}, true, mark)); got != "[1,2]" {
		t.Errorf("got %s, want [1,2]", got)
	}
	if got := List(ctx, (*int)(nil), nil, []record{{A: 1}, {A: -1}}, true, mark); got != nil {
		t.Errorf("got %v after a panic, want nil", got)
	}
	if errs := graphql.GetErrors(ctx); len(errs) != 1 || errs[0].Path.String() != "[1]" {
		t.Errorf("errors = %v, want one at the element's index", errs)
	}
}

func TestUniqueLabels(t *testing.T) {
	t.Parallel()
	a, b, a2, none, none2 := &graphql.Deferrable{Label: "a"}, &graphql.Deferrable{Label: "b"}, &graphql.Deferrable{Label: "a"}, &graphql.Deferrable{}, &graphql.Deferrable{}
	for _, c := range []struct{ in, want []*graphql.Deferrable }{
		{[]*graphql.Deferrable{a, b}, []*graphql.Deferrable{a, b}},
		{[]*graphql.Deferrable{a, b, a2}, []*graphql.Deferrable{a, b}},
		{[]*graphql.Deferrable{none, none2}, []*graphql.Deferrable{none}},
		{nil, nil},
	} {
		if diff := cmp.Diff(c.want, uniqueLabels(c.in)); diff != "" {
			t.Errorf("uniqueLabels (-want +got):\n%s", diff)
		}
	}
}

func TestNextDeferredEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := NextDeferred(ctx, make(chan graphql.DeferredResult)); ok {
		t.Error("NextDeferred of an ended request answered a part")
	}
}

func TestSpend(t *testing.T) {
	t.Parallel()
	r := &Request{}
	if !r.Spend(1 << 40) {
		t.Error("no bound refused a value")
	}
	r.values.max = 10
	if !r.Spend(10) || !r.Spend(0) || r.Spend(1) || !r.OverValues() {
		t.Error("a bound of 10 took 11 values, or refused 10")
	}
	if r.Spend(1) {
		t.Error("an answer past its bound took more")
	}
}

// quietRecover is graphql.DefaultRecover without its stack on stderr.
func quietRecover(context.Context, any) error { return errors.New("internal system error") }
