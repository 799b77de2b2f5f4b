package cost

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/opmemo"
	"github.com/costgw/gateway/graph/relay"
)

// Summary is what the limits check of an operation: its estimated upstream
// calls and its shape.
type Summary struct {
	Calls      int // estimated upstream calls (capped far above any limit)
	Depth      int // deepest nesting of fields, fragments flattened
	Aliases    int // aliased fields, fragments expanded as the executor does
	RootFields int // fields of the root selection, fragments expanded
}

// Estimate summarizes a validated operation (its fields know their
// definitions) with the variables' values.
//
// It visits each fragment once per type it is read as and reuses the
// result wherever the fragment is spread, so its work is linear in the
// document however the fragments fan out; a fragment spread twice in one
// selection counts once, as the executor runs it once.
func Estimate(op *ast.OperationDefinition, vars map[string]any) Summary {
	s, _ := estimate(op, vars)
	return s
}

// EstimateOnce is Estimate, kept for all the requests of op (opmemo) when
// no argument it reads takes a variable: for those the summary of a cached
// document is the same for every request.
func EstimateOnce(op *ast.OperationDefinition, vars map[string]any) Summary {
	if op == nil {
		return Summary{}
	}
	m := opmemo.For(op)
	if s, ok := m.Kept(estimateKey{}); ok {
		return s.(Summary)
	}
	s, varies := estimate(op, vars)
	if !varies {
		m.Keep(estimateKey{}, s)
	}
	return s
}

type estimateKey struct{}

// estimate is Estimate, and whether a variable's value went into it.
func estimate(op *ast.OperationDefinition, vars map[string]any) (Summary, bool) {
	if op == nil {
		return Summary{}, false
	}
	a := analyzer{vars: vars, memo: map[memoKey]*part{}}
	p := a.set(op.SelectionSet, "")
	return Summary{Calls: p.calls, Depth: p.depth, Aliases: p.aliases, RootFields: p.fields}, a.varies
}

// part is what a selection set adds for one object it selects on.
type part struct {
	calls   int  // calls of its fields and of the budgets they lead to
	reads   Read // counted reads it needs of the budget it belongs to
	depth   int  // deepest field nesting below and including its fields
	aliases int  // aliased fields in it and below
	fields  int  // its own fields, fragments expanded
}

// add merges q, a selection on the same object, into p.
func (p *part) add(q *part) {
	p.calls = addCapped(p.calls, q.calls)
	p.reads |= q.reads
	p.depth = max(p.depth, q.depth)
	p.aliases = addCapped(p.aliases, q.aliases)
	p.fields = addCapped(p.fields, q.fields)
}

type memoKey struct{ fragment, only string }

type analyzer struct {
	vars   map[string]any
	memo   map[memoKey]*part // nil value: the fragment is being visited
	varies bool              // an argument read took a variable
}

// arg returns the value of the argument name of f as f.ArgumentMap gives
// it (a variable's value, else the argument's default), reading no other
// argument, and notes when a variable went into it.
func (a *analyzer) arg(f *ast.Field, name string) any {
	if f.Definition == nil {
		return nil
	}
	def := f.Definition.Arguments.ForName(name)
	if def == nil {
		return nil
	}
	if v := f.Arguments.ForName(name); v != nil && v.Value != nil {
		if opmemo.HasVariable(v.Value) {
			a.varies = true
		}
		if v.Value.Kind != ast.Variable {
			val, err := v.Value.Value(a.vars)
			if err != nil {
				return nil
			}
			return val
		}
		if val, ok := a.vars[v.Value.Raw]; ok {
			return val
		}
	}
	if def.DefaultValue != nil {
		val, err := def.DefaultValue.Value(a.vars)
		if err != nil {
			return nil
		}
		return val
	}
	return nil
}

// set summarizes a selection set. only, when not empty, is the concrete
// type the object is known to be (node's refetch of a Budget or a
// Planning): fragments on other object types are left out.
func (a *analyzer) set(set ast.SelectionSet, only string) *part {
	p := &part{}
	var spread map[string]bool
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			p.add(a.field(s))
			p.fields++
		case *ast.InlineFragment:
			if !applies(s.TypeCondition, only) {
				continue
			}
			p.add(a.set(s.SelectionSet, only))
		case *ast.FragmentSpread:
			if spread[s.Name] || s.Definition == nil || !applies(s.Definition.TypeCondition, only) {
				continue
			}
			if spread == nil {
				spread = map[string]bool{}
			}
			spread[s.Name] = true
			p.add(a.fragment(s.Definition, only))
		}
	}
	return p
}

// fragment summarizes a fragment's selection once per only.
func (a *analyzer) fragment(def *ast.FragmentDefinition, only string) *part {
	k := memoKey{def.Name, only}
	if p, seen := a.memo[k]; seen {
		if p == nil {
			return &part{} // a cycle; validation refuses them before this runs
		}
		return p
	}
	a.memo[k] = nil
	p := a.set(def.SelectionSet, only)
	a.memo[k] = p
	return p
}

// refetch is the cost of node(id:), or of nodes(ids:) when perID: each ID
// is read as the type it names, with what its selection needs on that type;
// a list scanned to find objects is read once per request, however many
// IDs it serves. An ID that is not one fails without a call. An ID that is
// not known yet (a variable without a value) counts as the dearest type.
// More IDs than MaxNodes cost nothing: the field refuses them at once, and
// reading each (each as every type, when it is not a string) once made a
// body of 262 000 IDs cost 370 MB before the cost limit refused it.
func (a *analyzer) refetch(f *ast.Field, perID bool) int {
	var ids []any
	if perID {
		ids = asList(a.arg(f, "ids"))
		if len(ids) > MaxNodes {
			return 0 // refused without a call (BAD_USER_INPUT), however many there are
		}
	} else {
		ids = []any{a.arg(f, "id")}
	}
	calls := 0
	scanned := map[string]bool{}
	for _, v := range ids {
		types := []string{}
		if s, ok := v.(string); ok {
			if id, err := relay.ParseID(s); err == nil {
				types = append(types, id.Type)
			}
		} else {
			for typ := range RefetchOf {
				types = append(types, typ)
			}
		}
		dearest := 0
		for _, typ := range types {
			r := RefetchOf[typ]
			sel := a.set(f.SelectionSet, typ)
			per := addCapped(sel.calls, (r.Read | sel.reads).count())
			if r.Scan != "" && !scanned[r.Scan] {
				per = addCapped(per, MaxScanPages)
				if len(types) == 1 {
					scanned[r.Scan] = true
				}
			}
			dearest = max(dearest, per)
		}
		calls = addCapped(calls, dearest)
	}
	return calls
}

// asList is v, the value of a list argument, as the list the field gets:
// input coercion takes a single value for a list of that one.
func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

// applies reports whether a fragment on the type cond applies to an object
// known to be of the type only ("" when not known): it does unless cond is
// another of the object types node refetches.
func applies(cond, only string) bool {
	_, other := RefetchOf[cond]
	return only == "" || cond == only || !other
}

// field summarizes one field with its selection.
func (a *analyzer) field(f *ast.Field) *part {
	p := &part{}
	if f.Alias != "" && f.Alias != f.Name {
		p.aliases = 1
	}
	if strings.HasPrefix(f.Name, "__") || f.ObjectDefinition == nil {
		// Introspection costs no upstream call; its shape still counts.
		sub := a.set(f.SelectionSet, "")
		p.depth = 1 + sub.depth
		p.aliases = addCapped(p.aliases, sub.aliases)
		return p
	}
	row := fields[f.ObjectDefinition.Name+"."+f.Name]
	sub := a.set(f.SelectionSet, "")
	p.depth = 1 + sub.depth
	p.aliases = addCapped(p.aliases, sub.aliases)

	calls, each := row.Calls, 1
	if row.Connection {
		n := DefaultFirst
		if v, ok := toInt(a.arg(f, "first")); ok && v > 0 {
			n = v
		}
		calls = addCapped(calls, Pages(n, a.arg(f, "after") != nil))
		each = n
	}
	if row.PerID {
		each = len(asList(a.arg(f, "ids")))
	}
	needs := row.Needs
	if row.Uncounted {
		needs = 0
	}
	switch {
	case row.Refetch:
		calls = addCapped(calls, a.refetch(f, row.PerID))
	case row.NewBudget:
		calls = addCapped(calls, mulCapped(each, addCapped(sub.calls, (needs|sub.reads).count())))
	default:
		calls = addCapped(calls, mulCapped(each, sub.calls))
		p.reads = needs | sub.reads
	}
	p.calls = calls
	return p
}

// costCap keeps products and sums far from overflow; any estimate this big
// is rejected anyway.
const costCap = 1 << 40

func addCapped(a, b int) int {
	if a+b > costCap {
		return costCap
	}
	return a + b
}

func mulCapped(a, b int) int {
	if a != 0 && b > costCap/a {
		return costCap
	}
	return a * b
}

func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(min(v, costCap)), true
	case float64:
		return int(min(v, costCap)), true
	}
	return 0, false
}
