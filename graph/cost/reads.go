package cost

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Satisfies lists the types an object of the type typ is, for collecting a
// selection on it: the type and the interfaces it implements. The lists are
// the generated executor's own, so that gqlgen's cache of collected fields
// serves both.
func Satisfies(typ string) []string {
	if s, ok := interfaces[typ]; ok {
		return s
	}
	return []string{typ}
}

// interfaces are the object types that implement an interface: the Node
// types, which are those node(id:) refetches (a test keeps both equal to
// the schema).
var interfaces = nodeTypes()

func nodeTypes() map[string][]string {
	m := make(map[string][]string, len(RefetchOf))
	for typ := range RefetchOf {
		m[typ] = []string{typ, "Node"}
	}
	return m
}

// Reads returns the per-budget reads that a selection on an object of type
// typ needs of the budget it is about, its planning rows' included (all of
// them: the caller knows whether a record came with its rows), with @skip
// and @include applied. Fields whose objects are budgets of their own are
// left out. The resolvers start these reads as soon as the budgets are
// known, so that a page's second tier is one round of calls.
func Reads(oc *graphql.OperationContext, sel ast.SelectionSet, typ string) Read {
	var r Read
	for _, f := range graphql.CollectFields(oc, sel, Satisfies(typ)) {
		if f.ObjectDefinition == nil || f.Definition == nil {
			continue
		}
		row, ok := fields[f.ObjectDefinition.Name+"."+f.Name]
		if !ok || row.NewBudget {
			continue
		}
		r |= row.Needs
		if len(f.Selections) > 0 {
			r |= Reads(oc, f.Selections, f.Definition.Type.Name())
		}
	}
	return r
}
