package graph_test

import (
	"bytes"
	"encoding/json"
	"net/http"
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
// one writer when its selection asks only for record leaves, and element by
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

// An object held by its parent's record (a budget's report and creator, a
// page's pageInfo) is written from the record when its selection asks only
// for record leaves, and resolved as any object otherwise (here with the
// resolver id): both answer the same, in the order and with the aliases
// asked, null where the record holds none.
func TestLeafObjectsFollowTheSelection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const leaves = `explorerReport { __typename n: name upstreamId name n: name } creator { lastName f: firstName firstName }`
	query := func(extra string) string {
		return `{ budgets(first: 50) { nodes { name ` + extra + ` } pageInfo { endCursor hasNextPage e: endCursor } } }`
	}
	type page struct {
		Budgets struct {
			Nodes []struct {
				Name           string
				ExplorerReport json.RawMessage
				Creator        json.RawMessage
			}
			PageInfo json.RawMessage
		}
	}
	var got, resolved page
	e.mustQuery(t, sim.DemoKey, query(leaves), nil, &got)
	e.mustQuery(t, sim.DemoKey, query(`explorerReport { id __typename n: name upstreamId name n: name } creator { id lastName f: firstName firstName }`), nil, &resolved)
	if len(got.Budgets.Nodes) == 0 || len(got.Budgets.Nodes) != len(resolved.Budgets.Nodes) {
		t.Fatalf("%d and %d budgets", len(got.Budgets.Nodes), len(resolved.Budgets.Nodes))
	}
	withoutID := func(raw json.RawMessage) string {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m == nil {
			return "null"
		}
		if id, _ := m["id"].(string); id == "" {
			t.Fatalf("resolved without an id: %s", raw)
		}
		delete(m, "id")
		b, _ := json.Marshal(m)
		return string(b)
	}
	reports, creators, nulls := 0, 0, 0
	for i, n := range got.Budgets.Nodes {
		r := resolved.Budgets.Nodes[i]
		for _, pair := range [][2]json.RawMessage{{n.ExplorerReport, r.ExplorerReport}, {n.Creator, r.Creator}} {
			if string(pair[0]) == "null" {
				nulls++
				if string(pair[1]) != "null" {
					t.Errorf("budget %q: null written, %s resolved", n.Name, pair[1])
				}
				continue
			}
			var m map[string]any
			_ = json.Unmarshal(pair[0], &m)
			if w := withoutID(pair[1]); string(must(json.Marshal(m))) != w {
				t.Errorf("budget %q: written %s, resolved %s", n.Name, pair[0], pair[1])
			}
		}
		if string(n.ExplorerReport) != "null" {
			var m map[string]string
			_ = json.Unmarshal(n.ExplorerReport, &m)
			checkMembers(t, n.ExplorerReport, []string{"__typename", "n", "upstreamId", "name"},
				map[string]any{"__typename": "ExplorerReport", "n": m["name"], "upstreamId": m["upstreamId"], "name": m["name"]})
			reports++
		}
		if string(n.Creator) != "null" {
			var m map[string]string
			_ = json.Unmarshal(n.Creator, &m)
			checkMembers(t, n.Creator, []string{"lastName", "f", "firstName"},
				map[string]any{"lastName": m["lastName"], "f": m["firstName"], "firstName": m["firstName"]})
			creators++
		}
	}
	if reports == 0 || creators == 0 {
		t.Fatalf("%d reports and %d creators to check", reports, creators)
	}
	if nulls != 0 {
		t.Fatalf("%d nulls before any was forged", nulls)
	}

	// The first budget of the listing comes without its report and creator.
	e.editBudgetList(t, func(records []any) {
		first := records[0].(map[string]any)
		delete(first, "explorerReport")
		first["creator"] = nil
	})
	e.mustQuery(t, sim.DemoKey, query(leaves), nil, &got)
	if n := got.Budgets.Nodes[0]; string(n.ExplorerReport) != "null" || string(n.Creator) != "null" {
		t.Errorf("a budget without its report and creator: %s and %s", n.ExplorerReport, n.Creator)
	}
	var info map[string]any
	_ = json.Unmarshal(got.Budgets.PageInfo, &info)
	checkMembers(t, got.Budgets.PageInfo, []string{"endCursor", "hasNextPage", "e"},
		map[string]any{"endCursor": info["endCursor"], "hasNextPage": info["hasNextPage"], "e": info["endCursor"]})
	if string(got.Budgets.PageInfo) != string(resolved.Budgets.PageInfo) {
		t.Errorf("pageInfo %s, then %s", got.Budgets.PageInfo, resolved.Budgets.PageInfo)
	}
}

// A list written from its resolver's answer without a field context (a
// planning row's actuals, which load) still reports a failure at its own
// path: when the budget's actuals fail, every row's actuals is null with an
// error at the row's path, the rows' other fields answer, and the failed
// call is made once.
func TestDirectListsReportErrorsAtTheirPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noRetry)
	f := loadFixture(t, e)
	failOn(e, http.MethodGet, "/v1/budgets/"+f.budgetID+"/actuals", func() *http.Response {
		return answer(http.StatusServiceUnavailable, `{"error":{"code":"service_unavailable","message":"down","request_id":"req-1"}}`)
	})
	e.calls.take()
	r := e.query(t, sim.DemoKey, `query($id: ID!) { budget(id: $id) { plannings { id actuals { period amount } } } }`,
		map[string]any{"id": f.budgetGID})
	var got struct {
		Budget struct {
			Plannings []struct {
				ID      string
				Actuals json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	rows := got.Budget.Plannings
	if len(rows) == 0 || len(r.Errors) != len(rows) {
		t.Fatalf("%d rows, %d errors: %+v", len(rows), len(r.Errors), r.Errors)
	}
	for i, row := range rows {
		if row.ID == "" || string(row.Actuals) != "null" {
			t.Errorf("row %d: id %q, actuals %s", i, row.ID, row.Actuals)
		}
	}
	at := map[string]bool{}
	for _, ge := range r.Errors {
		if ge.Extensions["code"] != "UPSTREAM_UNAVAILABLE" {
			t.Errorf("error %+v", ge)
		}
		at[string(must(json.Marshal(ge.Path)))] = true
	}
	for i := range rows {
		if p := string(must(json.Marshal([]any{"budget", "plannings", i, "actuals"}))); !at[p] {
			t.Errorf("no error at %s: %+v", p, r.Errors)
		}
	}
	n := 0
	for _, c := range e.calls.take() {
		if c == "GET /v1/budgets/"+f.budgetID+"/actuals" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the actuals were asked %d times, want once", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
