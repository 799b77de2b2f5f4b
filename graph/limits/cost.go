package limits

import (
	"github.com/vektah/gqlparser/v2/ast"
)

// The cost model, in upstream calls, mirrors what the resolvers do:
//
//   - a connection costs its upstream pages: ceil(first / 200), plus one
//     when it resumes from a cursor (the resumed page is partly skipped);
//   - each budget of a connection adds one call per kind of per-budget data
//     its selection needs: the single-budget read (metrics, dimensions, a
//     planning row's budget) and the actuals (the budget's or any of its
//     rows'). Planning rows come with the budget record, as the contract
//     lists them among a budget's fields;
//   - budget(id) and node(id) cost the read of the object plus the same
//     per-budget kinds; nodes(ids) that times the number of ids;
//   - each Explorer field, lookback and mutation is one call.
//
// Aliases of the same field are counted separately although the loaders may
// fetch them once, so the estimate is an upper bound for what the resolvers
// send.

const pageSize = 200 // the upstream's largest page
const defaultFirst = 50

// kinds are the per-budget upstream reads a selection needs.
type kinds struct{ detail, actuals bool }

func (k kinds) count() int {
	n := 0
	if k.detail {
		n++
	}
	if k.actuals {
		n++
	}
	return n
}

// Estimate returns the estimated number of upstream calls of an operation.
func Estimate(op *ast.OperationDefinition, vars map[string]any) int {
	total := 0
	for _, f := range flatten(op.SelectionSet) {
		total = addCapped(total, rootCost(f, vars))
	}
	return total
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

func rootCost(f *ast.Field, vars map[string]any) int {
	args := f.ArgumentMap(vars)
	switch f.Name {
	case "budgets":
		n, pages := connection(args)
		var k kinds
		for _, sub := range flatten(f.SelectionSet) {
			switch sub.Name {
			case "nodes":
				budgetKinds(sub.SelectionSet, &k, 0)
			case "edges":
				for _, e := range flatten(sub.SelectionSet) {
					if e.Name == "node" {
						budgetKinds(e.SelectionSet, &k, 0)
					}
				}
			}
		}
		return addCapped(pages, mulCapped(n, k.count()))
	case "recommendations", "anomalies", "scheduledNotifications":
		_, pages := connection(args)
		return pages
	case "budget":
		k := kinds{detail: true}
		budgetKinds(f.SelectionSet, &k, 0)
		return k.count()
	case "node":
		return nodeCost(f.SelectionSet)
	case "nodes":
		ids, _ := args["ids"].([]any)
		return mulCapped(len(ids), nodeCost(f.SelectionSet))
	case "explorer":
		n := 0
		for _, sub := range flatten(f.SelectionSet) {
			if sub.Name != "__typename" {
				n++
			}
		}
		return n
	case "budgetLookback", "budgetLookbackPreview", "deleteBudget":
		return 1
	case "createBudget", "updateBudget":
		var k kinds
		for _, sub := range flatten(f.SelectionSet) {
			if sub.Name == "budget" {
				budgetKinds(sub.SelectionSet, &k, 0)
			}
		}
		return 1 + k.count()
	}
	return 0 // __typename, __schema, __type
}

// connection returns the records and upstream pages a connection field asks for.
func connection(args map[string]any) (int, int) {
	n := defaultFirst
	if v, ok := toInt(args["first"]); ok && v > 0 {
		n = v
	}
	pages := (n + pageSize - 1) / pageSize
	if args["after"] != nil {
		pages = (n + pageSize - 1 + pageSize - 1) / pageSize
	}
	return n, pages
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

// budgetKinds adds the per-budget reads a Budget selection needs.
func budgetKinds(set ast.SelectionSet, k *kinds, guard int) {
	if guard > maxFragmentDepth {
		return
	}
	for _, f := range flatten(set) {
		switch f.Name {
		case "metrics", "dimensions":
			k.detail = true
		case "actuals":
			k.actuals = true
		case "plannings":
			planningKinds(f.SelectionSet, k, guard+1)
		}
	}
}

// planningKinds adds the reads of a Planning selection to its budget's.
func planningKinds(set ast.SelectionSet, k *kinds, guard int) {
	if guard > maxFragmentDepth {
		return
	}
	for _, f := range flatten(set) {
		switch f.Name {
		case "actuals":
			k.actuals = true
		case "budget":
			k.detail = true
			budgetKinds(f.SelectionSet, k, guard+1)
		}
	}
}

// nodeCost is the cost of refetching one node: the larger of a Budget's and a
// Planning's, whichever fragments the selection has.
func nodeCost(set ast.SelectionSet) int {
	b := kinds{detail: true}
	budgetKinds(set, &b, 0)
	var p kinds
	planningKinds(set, &p, 0)
	return max(b.count(), 1+p.count()) // a planning row is read through its budget's planning grid
}
