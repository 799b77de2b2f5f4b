package opmemo

import (
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
func TestValueOfAMemoThatIsNotStatic(t *testing.T) {
	n := 0
	count := func() int { n++; return n }
	for _, m := range []*Memo{nil, {}} {
		n = 0
		Value(m, "k", count)
		if Value(m, "k", count) != 2 {
			t.Errorf("%v: the value was kept", m)
		}
	}
	m := &Memo{Static: true}
	n = 0
	Value(m, "k", count)
	if Value(m, "k", count) != 1 || Value(m, "other", count) != 2 {
		t.Error("a static memo does not keep its values by key")
	}
}
