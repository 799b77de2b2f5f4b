// Package opmemo keeps what the gateway works out from an operation once for
// all the requests that run it.
//
// A document is parsed and validated once and kept in the cache of parsed
// documents (graph's docCache); every request that sends it again runs the
// same *ast.OperationDefinition. What depends only on that operation (the
// fields each selection collects on each type, the reads a selection needs
// of a budget, the size of its answer) is the same for all of them, as long
// as no variable changes which fields are selected: Static says so. A Memo
// is held by a weak key, and forgotten when its operation is, with its
// document.
package opmemo

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Memo is what one operation's requests share.
type Memo struct {
	// Static reports that no variable changes which fields the operation
	// selects: no directive in it, its fragments' included, takes a
	// variable. Only then are Fields and At kept.
	Static bool

	kept sync.Map     // At (Fields) and Keep, each under keys of its own types
	size atomic.Int64 // SizeHint
}

var memos sync.Map // weak.Pointer[ast.OperationDefinition] → *Memo

// For returns the memo of op, made on its first request; for no operation,
// a memo of its own that is not static.
func For(op *ast.OperationDefinition) *Memo {
	if op == nil {
		return &Memo{}
	}
	k := weak.Make(op)
	if m, ok := memos.Load(k); ok {
		return m.(*Memo)
	}
	m, loaded := memos.LoadOrStore(k, &Memo{Static: static(op)})
	if !loaded {
		runtime.AddCleanup(op, func(k weak.Pointer[ast.OperationDefinition]) { memos.Delete(k) }, k)
	}
	return m.(*Memo)
}

// Fields returns the fields that sel collects on an object that satisfies
// the types satisfies (a slice that lives as long as the program, such as the
// executor's lists of implementors): collect's answer, kept when the
// operation is static. A memo that is not static, or nil, keeps nothing.
func (m *Memo) Fields(sel ast.SelectionSet, satisfies []string, collect func() []graphql.CollectedField) []graphql.CollectedField {
	if len(satisfies) == 0 {
		return collect()
	}
	return At(m, sel, implementors(&satisfies[0]), collect)
}

// implementors tells Fields' values apart by the list of types they were
// collected on.
type implementors *string

// At returns make's answer for the selection set sel and key, kept when the
// operation is static. key must tell apart everything make's answer depends
// on besides the operation and sel. A memo that is not static, or nil, and
// an empty set keep nothing.
//
// Finding a kept answer allocates nothing: the memo's map is keyed by the
// set's first selection alone (a pointer, which an interface holds without
// an allocation), and holds a short list of the answers kept for it, told
// apart by the set's length and key. The key's type and the answer's keep
// the values of different callers apart.
func At[K comparable, V any](m *Memo, sel ast.SelectionSet, key K, make func() V) V {
	if m == nil || !m.Static || len(sel) == 0 {
		return make()
	}
	k := atKey[K, V]{&sel[0]}
	slot, ok := m.kept.Load(k)
	if !ok {
		slot, _ = m.kept.LoadOrStore(k, new(atomic.Pointer[atEntry[K, V]]))
	}
	head := slot.(*atomic.Pointer[atEntry[K, V]])
	first := head.Load()
	if e := first.find(len(sel), key); e != nil {
		return e.v
	}
	e := &atEntry[K, V]{n: len(sel), key: key, v: make()}
	for {
		e.next = first
		if head.CompareAndSwap(first, e) {
			return e.v
		}
		// Another request kept one first: keep the first of the two.
		first = head.Load()
		if kept := first.find(len(sel), key); kept != nil {
			return kept.v
		}
	}
}

// atKey is At's key in the memo's map: a struct of one pointer.
type atKey[K comparable, V any] struct{ first *ast.Selection }

// atEntry is an answer At keeps, in a list that only grows at its head.
type atEntry[K comparable, V any] struct {
	n    int // the length of the selection set
	key  K
	v    V
	next *atEntry[K, V]
}

func (e *atEntry[K, V]) find(n int, key K) *atEntry[K, V] {
	for ; e != nil; e = e.next {
		if e.n == n && e.key == key {
			return e
		}
	}
	return nil
}

// Kept returns what Keep kept for key.
func (m *Memo) Kept(key any) (any, bool) { return m.kept.Load(key) }

// Keep keeps v for key whether the operation is static or not: its caller
// knows that v is the same for every request of the operation.
func (m *Memo) Keep(key, v any) { m.kept.Store(key, v) }

// SizeHint returns what SetSizeHint kept, 0 before it is first called.
func (m *Memo) SizeHint() int { return int(m.size.Load()) }

// SetSizeHint keeps n as a hint of the length of the operation's answers.
func (m *Memo) SetSizeHint(n int) { m.size.Store(int64(n)) }

// static reports whether no directive in op, or in a fragment it spreads,
// takes a variable. Each fragment is looked at once, however often it is
// spread.
func static(op *ast.OperationDefinition) bool {
	seen := map[*ast.FragmentDefinition]bool{}
	var set func(ast.SelectionSet) bool
	set = func(s ast.SelectionSet) bool {
		for _, sel := range s {
			switch sel := sel.(type) {
			case *ast.Field:
				if variable(sel.Directives) || !set(sel.SelectionSet) {
					return false
				}
			case *ast.InlineFragment:
				if variable(sel.Directives) || !set(sel.SelectionSet) {
					return false
				}
			case *ast.FragmentSpread:
				if variable(sel.Directives) {
					return false
				}
				if d := sel.Definition; d != nil && !seen[d] {
					seen[d] = true
					if variable(d.Directives) || !set(d.SelectionSet) {
						return false
					}
				}
			}
		}
		return true
	}
	return !variable(op.Directives) && set(op.SelectionSet)
}

// variable reports whether a directive of ds takes a variable anywhere in
// its arguments.
func variable(ds ast.DirectiveList) bool {
	for _, d := range ds {
		for _, a := range d.Arguments {
			if HasVariable(a.Value) {
				return true
			}
		}
	}
	return false
}

// HasVariable reports whether v is, or holds, a variable.
func HasVariable(v *ast.Value) bool {
	if v == nil {
		return false
	}
	if v.Kind == ast.Variable {
		return true
	}
	for _, c := range v.Children {
		if HasVariable(c.Value) {
			return true
		}
	}
	return false
}
