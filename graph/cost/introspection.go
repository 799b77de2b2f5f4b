package cost

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/opmemo"
)

// Introspection costs no upstream call, but its answer grows with the
// schema times the selection: every list-valued introspection field (types,
// fields, args, inputFields, enumValues, interfaces, possibleTypes,
// directives) multiplies what is selected under it. 30 aliases of
// __schema { types { … } } once answered 3 MB for 110 ms of CPU, without a
// key. IntrospectionValues estimates the answer before it runs, from the
// schema's counts (IntrospectionCounts), in one pass that visits each fragment once per
// kind of object it is read as.
//
// The estimate counts values: every field written for every object (a
// null, a scalar, a list or an object each count 1, and what an object or
// list holds counts on its own). Where the selection reads every object of
// a kind (__schema.types, then their fields, then those fields' args and
// types and ofType chains), it counts the schema's exact totals; where it
// reads one object it does not know (__type(name:), a field's type read
// again for its fields), the largest one of that kind. Deprecated fields
// and values count as if includeDeprecated were true, and fields repeated
// under one response name count each time (a fragment spread twice in one
// selection counts once, as it runs once), so the estimate is an upper
// bound of what gqlgen's introspection writes.

// IntrospectionCounts is what IntrospectionValues reads of a schema: how many objects of
// each introspection kind it has, in all and at most on one parent.
type IntrospectionCounts struct {
	types, directives int // __schema.types, __schema.directives
	// roots: which of queryType, mutationType and subscriptionType the
	// schema has (the others are null)
	roots map[string]bool

	// totals over every type (or directive, or field)
	fields, enumValues, interfaces, possibleTypes int
	// the most on one type (or field, or directive)
	maxFields, maxArgs, maxInputFields, maxEnumValues, maxInterfaces, maxPossibleTypes int

	// refs[p][d]: how many type references of population p (the types of
	// every field, field argument, directive argument, input field) have
	// an ofType at depth d: refs[p][0] is all of them, refs[p][1] those
	// wrapped at least once (NON_NULL or LIST), and so on.
	refs [refPops][]int
	// maxWrap is the most wrappers of any type reference of the schema.
	maxWrap int
}

// The populations of type references.
const (
	refFields = iota
	refFieldArgs
	refDirectiveArgs
	refInputFields
	refPops
)

// NewIntrospectionCounts counts what introspection answers of s, as gqlgen's
// introspection package reads it.
func NewIntrospectionCounts(s *ast.Schema) *IntrospectionCounts {
	c := &IntrospectionCounts{types: len(s.Types), directives: len(s.Directives), roots: map[string]bool{
		"queryType": s.Query != nil, "mutationType": s.Mutation != nil, "subscriptionType": s.Subscription != nil,
	}}
	ref := func(pop int, t *ast.Type) {
		n := wrappers(t)
		for len(c.refs[pop]) <= n {
			c.refs[pop] = append(c.refs[pop], 0)
		}
		for d := 0; d <= n; d++ {
			c.refs[pop][d]++
		}
		c.maxWrap = max(c.maxWrap, n)
	}
	for _, def := range s.Types {
		switch def.Kind {
		case ast.Object, ast.Interface:
			n := 0
			for _, f := range def.Fields {
				if strings.HasPrefix(f.Name, "__") {
					continue // gqlgen leaves them out
				}
				n++
				ref(refFields, f.Type)
				c.maxArgs = max(c.maxArgs, len(f.Arguments))
				for _, a := range f.Arguments {
					ref(refFieldArgs, a.Type)
				}
			}
			c.fields += n
			c.maxFields = max(c.maxFields, n)
			c.interfaces += len(def.Interfaces)
			c.maxInterfaces = max(c.maxInterfaces, len(def.Interfaces))
		case ast.InputObject:
			c.maxInputFields = max(c.maxInputFields, len(def.Fields))
			for _, f := range def.Fields {
				ref(refInputFields, f.Type)
			}
		case ast.Enum:
			c.enumValues += len(def.EnumValues)
			c.maxEnumValues = max(c.maxEnumValues, len(def.EnumValues))
		}
		if def.Kind == ast.Interface || def.Kind == ast.Union {
			n := len(s.GetPossibleTypes(def))
			c.possibleTypes += n
			c.maxPossibleTypes = max(c.maxPossibleTypes, n)
		}
	}
	for _, d := range s.Directives {
		c.maxArgs = max(c.maxArgs, len(d.Arguments))
		for _, a := range d.Arguments {
			ref(refDirectiveArgs, a.Type)
		}
	}
	return c
}

// wrappers is how many NON_NULL and LIST types wrap t's named type: the
// length of its ofType chain before the named type.
func wrappers(t *ast.Type) int {
	n := 0
	for ; t != nil; t = t.Elem {
		if t.NonNull {
			n++
		}
		if t.Elem != nil {
			n++
		}
	}
	return n
}

// IntrospectionValues estimates how many values the introspection of op
// writes on schema s (see above). It does not depend on variables, so it is
// kept with the operation (opmemo) for every request of a cached document.
func IntrospectionValues(op *ast.OperationDefinition, s *IntrospectionCounts) int {
	if op == nil || s == nil {
		return 0
	}
	m := opmemo.For(op)
	if v, ok := m.Kept(introspectionKey{}); ok {
		return v.(int)
	}
	w := introspector{s: s, memo: map[introMemo]int{}}
	v := w.set(op.SelectionSet, objects{kind: root})
	m.Keep(introspectionKey{}, v)
	return v
}

type introspectionKey struct{}

// kind is a kind of object the selection is read on.
type kind uint8

const (
	root kind = iota // the operation's root: only __schema and __type count
	schemaObj
	oneType // one type: a named type when depth < 0, else a type reference depth wrappers in
	oneField
	oneInputValue
	oneEnumValue
	oneDirective
	allTypes // every type of the schema
	allFields
	allInputValues // every field argument, directive argument or input field (pop)
	allEnumValues
	allDirectives
	allRefs // every type reference of pop, depth wrappers in, that exists
)

// objects is a collection the selection is read on: one object, or every
// object of a kind (how many, the schema says).
type objects struct {
	kind  kind
	pop   int8 // allInputValues, allRefs: which references
	depth int8 // oneType, allRefs: how many wrappers in; -1: a named type
}

// n is how many objects there are.
func (s *IntrospectionCounts) n(o objects) int {
	switch o.kind {
	case allTypes:
		return s.types
	case allFields:
		return s.fields
	case allInputValues:
		return s.refs0(int(o.pop))
	case allEnumValues:
		return s.enumValues
	case allDirectives:
		return s.directives
	case allRefs:
		if int(o.depth) < len(s.refs[o.pop]) {
			return s.refs[o.pop][o.depth]
		}
		return 0
	}
	return 1
}

func (s *IntrospectionCounts) refs0(pop int) int {
	if len(s.refs[pop]) == 0 {
		return 0
	}
	return s.refs[pop][0]
}

type introMemo struct {
	fragment string
	on       objects
}

type introspector struct {
	s    *IntrospectionCounts
	memo map[introMemo]int // -1: being visited
}

// set is the values a selection writes for all of the objects o.
func (w *introspector) set(set ast.SelectionSet, o objects) int {
	v := 0
	var spread map[string]bool
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			v = addCapped(v, w.field(sel, o))
		case *ast.InlineFragment:
			v = addCapped(v, w.set(sel.SelectionSet, o))
		case *ast.FragmentSpread:
			if sel.Definition == nil || spread[sel.Name] {
				continue // a fragment spread twice in one selection runs once
			}
			if spread == nil {
				spread = map[string]bool{}
			}
			spread[sel.Name] = true
			k := introMemo{sel.Name, o}
			got, seen := w.memo[k]
			if !seen {
				w.memo[k] = -1
				got = w.set(sel.Definition.SelectionSet, o)
				w.memo[k] = got
			}
			v = addCapped(v, max(got, 0)) // a cycle counts nothing; validation refuses it
		}
	}
	return v
}

// field is the values field f writes for all of the objects o: one each,
// and what its objects write.
func (w *introspector) field(f *ast.Field, o objects) int {
	n := w.s.n(o)
	if o.kind == root {
		switch f.Name {
		case "__schema":
			return addCapped(1, w.set(f.SelectionSet, objects{kind: schemaObj}))
		case "__type":
			return addCapped(1, w.set(f.SelectionSet, objects{kind: oneType, depth: -1}))
		case "__typename":
			return 1
		}
		return 0 // not introspection: the upstream cost estimate's
	}
	each, sub, ok := w.child(o, f.Name)
	if !ok || each == 0 || len(f.SelectionSet) == 0 {
		return n
	}
	return addCapped(n, mulCapped(each, w.set(f.SelectionSet, sub)))
}

// child is what the field name of the objects o holds: each times the
// objects sub, or nothing (ok false, or each 0: a leaf, or null).
func (w *introspector) child(o objects, name string) (each int, sub objects, ok bool) {
	s := w.s
	named := objects{kind: oneType, depth: -1}
	one := func(count int, k kind) (int, objects, bool) { return count, objects{kind: k}, true }
	switch o.kind {
	case schemaObj:
		switch name {
		case "types":
			return one(1, allTypes)
		case "directives":
			return one(1, allDirectives)
		case "queryType", "mutationType", "subscriptionType":
			if !s.roots[name] {
				return 0, objects{}, true // null
			}
			return 1, named, true
		}
	case oneType, allRefs:
		// A type read alone, or a type reference: the largest of each list.
		n := s.n(o)
		switch name {
		case "fields":
			return one(mulCapped(n, s.maxFields), oneField)
		case "inputFields":
			return one(mulCapped(n, s.maxInputFields), oneInputValue)
		case "enumValues":
			return one(mulCapped(n, s.maxEnumValues), oneEnumValue)
		case "interfaces":
			return mulCapped(n, s.maxInterfaces), named, true
		case "possibleTypes":
			return mulCapped(n, s.maxPossibleTypes), named, true
		case "ofType":
			if o.depth < 0 || int(o.depth) >= s.maxWrap {
				return 0, objects{}, true // null
			}
			if o.kind == allRefs {
				return 1, objects{kind: allRefs, pop: o.pop, depth: o.depth + 1}, true
			}
			return 1, objects{kind: oneType, depth: o.depth + 1}, true
		}
	case allTypes:
		switch name {
		case "fields":
			return one(1, allFields)
		case "inputFields":
			return 1, objects{kind: allInputValues, pop: refInputFields}, true
		case "enumValues":
			return one(1, allEnumValues)
		case "interfaces":
			return s.interfaces, named, true
		case "possibleTypes":
			return s.possibleTypes, named, true
		case "ofType":
			return 0, objects{}, true // named types: null
		}
	case oneField:
		switch name {
		case "args":
			return one(s.maxArgs, oneInputValue)
		case "type":
			return 1, objects{kind: oneType}, true
		}
	case allFields:
		switch name {
		case "args":
			return 1, objects{kind: allInputValues, pop: refFieldArgs}, true
		case "type":
			return 1, objects{kind: allRefs, pop: refFields}, true
		}
	case oneInputValue:
		if name == "type" {
			return 1, objects{kind: oneType}, true
		}
	case allInputValues:
		if name == "type" {
			return 1, objects{kind: allRefs, pop: o.pop}, true
		}
	case oneDirective:
		if name == "args" {
			return one(s.maxArgs, oneInputValue)
		}
	case allDirectives:
		if name == "args" {
			return 1, objects{kind: allInputValues, pop: refDirectiveArgs}, true
		}
	}
	return 0, objects{}, false
}
