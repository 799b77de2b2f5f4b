package graph_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/sim"
)

// A list of objects whose every field is a leaf of the object (PeriodAmount,
// TargetItem) is written by one writer for the whole list. Each element
// still answers its selection as an object would: the fields in the order
// asked, an alias once, __typename, aliases of one field, and fields that
// @include and @skip leave out.
func TestLeafListElementsAnswerTheirSelection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type period struct {
		Period string
		Amount float64
	}
	type target struct {
		DimensionValue string
		Amount         float64
	}
	var plain struct {
		Budgets struct {
			Nodes []struct {
				Actuals   struct{ ByPeriod []period }
				Plannings []struct{ TargetItems []target }
			}
		}
	}
	e.mustQuery(t, sim.DemoKey, `{ budgets(first: 3) { nodes {
		actuals { byPeriod { period amount } } plannings { targetItems { dimensionValue amount } } } } }`, nil, &plain)

	r := e.query(t, sim.DemoKey, `query($yes: Boolean!, $no: Boolean!) { budgets(first: 3) { nodes {
		actuals { byPeriod { __typename p: period period @include(if: $no) amount p: period a: amount @include(if: $yes)
			... on PeriodAmount { amount } amount @skip(if: $yes) } }
		plannings { targetItems { amount t: __typename dimensionValue } } } } }`,
		map[string]any{"yes": true, "no": false})
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	var got struct {
		Budgets struct {
			Nodes []struct {
				Actuals   struct{ ByPeriod []json.RawMessage }
				Plannings []struct{ TargetItems []json.RawMessage }
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Budgets.Nodes) != len(plain.Budgets.Nodes) || len(plain.Budgets.Nodes) == 0 {
		t.Fatalf("%d budgets, want %d (and some)", len(got.Budgets.Nodes), len(plain.Budgets.Nodes))
	}
	elements := 0
	for i, n := range got.Budgets.Nodes {
		want := plain.Budgets.Nodes[i]
		if len(n.Actuals.ByPeriod) != len(want.Actuals.ByPeriod) {
			t.Fatalf("budget %d: %d periods, want %d", i, len(n.Actuals.ByPeriod), len(want.Actuals.ByPeriod))
		}
		for j, raw := range n.Actuals.ByPeriod {
			p := want.Actuals.ByPeriod[j]
			checkMembers(t, raw, []string{"__typename", "p", "amount", "a"},
				map[string]any{"__typename": "PeriodAmount", "p": p.Period, "amount": p.Amount, "a": p.Amount})
			elements++
		}
		for k, pl := range n.Plannings {
			for j, raw := range pl.TargetItems {
				ti := want.Plannings[k].TargetItems[j]
				checkMembers(t, raw, []string{"amount", "t", "dimensionValue"},
					map[string]any{"amount": ti.Amount, "t": "TargetItem", "dimensionValue": ti.DimensionValue})
				elements++
			}
		}
	}
	if elements == 0 {
		t.Fatal("no element to check")
	}
}

// checkMembers checks that the JSON object raw has the members names, in
// that order, with the values want.
func checkMembers(t *testing.T, raw json.RawMessage, names []string, want map[string]any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(names, keys); diff != "" {
		t.Errorf("members of %s (-want +got):\n%s", raw, diff)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values of %s (-want +got):\n%s", raw, diff)
	}
}

// A list whose type has other fields (here the resolver id) is written by
// one writer when its selection asks only for later leaves, and element by
// element otherwise: both answer the same.
func TestLeafListFollowsTheSelection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type anomaly struct {
		ID, AnomalyID, DetectionSource, S, Typename string
		ImpactTotal                                 float64
	}
	var leaves, mixed struct{ Anomalies struct{ Nodes []anomaly } }
	e.mustQuery(t, sim.DemoKey, `{ anomalies(first: 20) { nodes {
		anomalyId detectionSource typename: __typename s: service impactTotal } } }`, nil, &leaves)
	e.mustQuery(t, sim.DemoKey, `{ anomalies(first: 20) { nodes {
		id anomalyId detectionSource typename: __typename s: service impactTotal } } }`, nil, &mixed)
	if len(leaves.Anomalies.Nodes) == 0 {
		t.Fatal("no anomaly")
	}
	for i := range mixed.Anomalies.Nodes {
		if mixed.Anomalies.Nodes[i].ID == "" {
			t.Fatalf("anomaly %d has no id", i)
		}
		mixed.Anomalies.Nodes[i].ID = ""
	}
	if diff := cmp.Diff(mixed.Anomalies.Nodes, leaves.Anomalies.Nodes); diff != "" {
		t.Errorf("leaves only (+) against with the id (-):\n%s", diff)
	}
	for _, n := range leaves.Anomalies.Nodes {
		if n.Typename != "Anomaly" || n.DetectionSource == "" || n.S == "" {
			t.Fatalf("incomplete anomaly: %+v", n)
		}
	}
}
