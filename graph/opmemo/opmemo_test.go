package opmemo

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

var schema = gqlparser.MustLoadSchema(&ast.Source{Input: `
type Query { a(n: Int): Int, b: B }
type B { c: Int, d: Int }
`})

func TestStatic(t *testing.T) {
	for _, tc := range []struct {
		q      string
		static bool
	}{
		{`{ a b { c } }`, true},
		{`query($n: Int) { a(n: $n) }`, true}, // an argument does not change the selection
		{`{ a @skip(if: true) b @include(if: false) { c } }`, true},
		{`query($s: Boolean!) { a @skip(if: $s) }`, false},
		{`query($s: Boolean!) { b { c d @include(if: $s) } }`, false},
		{`query($s: Boolean!) { b { ... @include(if: $s) { c } } }`, false},
		{`query($s: Boolean!) { b { ...F @skip(if: $s) } } fragment F on B { c }`, false},
		{`query($s: Boolean!) { b { ...F ...F } } fragment F on B { c @skip(if: $s) }`, false},
		{`query($s: Boolean!) { b { ...F } } fragment F on B { ...G } fragment G on B { d @include(if: $s) }`, false},
		{`{ b { ...F ...F } } fragment F on B { c @skip(if: false) }`, true},
	} {
		doc, err := gqlparser.LoadQuery(schema, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if got := static(doc.Operations[0]); got != tc.static {
			t.Errorf("static(%s) = %v, want %v", tc.q, got, tc.static)
		}
		if got := For(doc.Operations[0]); got.Static != tc.static || For(doc.Operations[0]) != got {
			t.Errorf("For(%s): static %v, or not the same memo twice", tc.q, got.Static)
		}
	}
}

// A memo that is not static keeps nothing: each call makes its value.
// A static one keeps a value for each selection set (its first selection
// and its length) and key, the key's type included.
func TestAt(t *testing.T) {
	doc, err := gqlparser.LoadQuery(schema, `{ a b { c d } }`)
	if err != nil {
		t.Fatal(err)
	}
	sel := doc.Operations[0].SelectionSet
	n := 0
	count := func() int { n++; return n }
	for _, m := range []*Memo{nil, {}} {
		n = 0
		At(m, sel, "k", count)
		if At(m, sel, "k", count) != 2 {
			t.Errorf("%v: the value was kept", m)
		}
	}
	type other string
	m := &Memo{Static: true}
	n = 0
	for _, c := range []struct {
		name string
		get  func() int
		want int
	}{
		{"first", func() int { return At(m, sel, "k", count) }, 1},
		{"again", func() int { return At(m, sel, "k", count) }, 1},
		{"another key", func() int { return At(m, sel, "other", count) }, 2},
		{"a key of another type", func() int { return At(m, sel, other("k"), count) }, 3},
		{"a shorter set with the same first selection", func() int { return At(m, sel[:1], "k", count) }, 4},
		{"another set", func() int { return At(m, sel[1].(*ast.Field).SelectionSet, "k", count) }, 5},
		{"the first again", func() int { return At(m, sel, "k", count) }, 1},
		{"the shorter set again", func() int { return At(m, sel[:1], "k", count) }, 4},
	} {
		if got := c.get(); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { At(m, sel, "other", count) }); a != 0 {
		t.Errorf("a kept value costs %v allocations", a)
	}
}

// Requests racing to a value all get the first one kept.
func TestAtKeepsOneOfConcurrentValues(t *testing.T) {
	doc, err := gqlparser.LoadQuery(schema, `{ a }`)
	if err != nil {
		t.Fatal(err)
	}
	sel := doc.Operations[0].SelectionSet
	m := &Memo{Static: true}
	var n atomic.Int64
	got := make([]int64, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = At(m, sel, "k", func() int64 { return n.Add(1) }) })
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("different values: %v", got)
		}
	}
}
