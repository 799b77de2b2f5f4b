package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/graph/resolvers"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// panicking is the gateway's resolvers but for a planning row's two quick
// lists, which panic: targetItems (computed on the row's goroutine) and
// actuals (which loads, resolved in its concurrent closure).
type panicking struct {
	*resolvers.Resolver
	calls *atomic.Int32
}

func (p panicking) Planning() generated.PlanningResolver {
	return panickingPlanning{p.Resolver.Planning(), p.calls}
}

type panickingPlanning struct {
	generated.PlanningResolver
	calls *atomic.Int32
}

func (p panickingPlanning) TargetItems(context.Context, *upstream.Planning) ([]model.TargetItem, error) {
	p.calls.Add(1)
	panic("targetItems: a bug")
}

func (p panickingPlanning) Actuals(context.Context, *upstream.Planning) ([]model.PeriodAmount, error) {
	p.calls.Add(1)
	panic("actuals: a bug")
}

// A resolver that panics in a direct list is reported as resolving the field
// reports it: once, at the field's path, the field null and the rest of the
// answer whole; and the resolver is not called a second time. The executor
// is the generated one with the gateway's resolvers, served by gqlgen's
// plain POST transport, since the test replaces two resolvers.
func TestDirectListsReportPanicsOnceAtTheirPath(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(srv.Close)
	c, err := upstream.NewClient(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	calls := &atomic.Int32{}
	var recovered atomic.Int32
	exec := handler.New(generated.NewExecutableSchema(generated.Config{
		Resolvers: panicking{&resolvers.Resolver{Client: c, Cursors: relay.NewCodec([]byte("test"))}, calls},
	}))
	exec.AddTransport(transport.POST{})
	exec.SetRecoverFunc(func(_ context.Context, v any) error {
		recovered.Add(1)
		return fmt.Errorf("internal error")
	})
	h := loaders.Middleware(c, loaders.Options{}, exec)
	serve := func(query string, vars map[string]any) response {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req := postRequest(body, "")
		req = req.WithContext(upstream.WithAPIKey(req.Context(), sim.DemoKey))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var r response
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", rec.Body.Bytes(), err)
		}
		return r
	}
	var page struct {
		Budgets struct{ Nodes []struct{ ID string } }
	}
	if r := serve(`{ budgets(first: 1) { nodes { id } } }`, nil); len(r.Errors) > 0 || json.Unmarshal(r.Data, &page) != nil || len(page.Budgets.Nodes) != 1 {
		t.Fatalf("the budget's id: %+v %s", r.Errors, r.Data)
	}

	id := map[string]any{"id": page.Budgets.Nodes[0].ID}
	var rows struct {
		Budget struct {
			Name      string
			Plannings []struct{ Dimension1 string }
		}
	}
	if r := serve(`query($id: ID!) { budget(id: $id) { name plannings { dimension1 } } }`, id); len(r.Errors) > 0 ||
		json.Unmarshal(r.Data, &rows) != nil || len(rows.Budget.Plannings) == 0 {
		t.Fatalf("the budget's rows: %+v %s", r.Errors, r.Data)
	}

	r := serve(`query($id: ID!) { budget(id: $id) { name plannings { dimension1 targetItems { amount } actuals { period } } } }`, id)
	if want := `{"budget":{"name":` + string(must(json.Marshal(rows.Budget.Name))) + `,"plannings":null}}`; string(r.Data) != want {
		t.Errorf("answer %s, want %s", r.Data, want)
	}
	// targetItems is non-null, so its row is null, and the rows' list with
	// it (a list of non-null rows); both fields are resolved, and each is
	// reported once.
	want := map[string]bool{}
	for i := range rows.Budget.Plannings {
		want[fmt.Sprint([]any{"budget", "plannings", float64(i), "targetItems"})] = true
		want[fmt.Sprint([]any{"budget", "plannings", float64(i), "actuals"})] = true
	}
	seen := map[string]int{}
	for _, e := range r.Errors {
		seen[fmt.Sprint(e.Path)]++
	}
	for p := range want {
		if seen[p] != 1 {
			t.Errorf("%d errors at %s, want 1: %+v", seen[p], p, r.Errors)
		}
	}
	if len(r.Errors) != len(want) {
		t.Errorf("%d errors, want %d: %+v", len(r.Errors), len(want), r.Errors)
	}
	if n, m := calls.Load(), recovered.Load(); n != int32(len(want)) || m != n {
		t.Errorf("the resolvers were called %d times and %d panics recovered for %d fields", n, m, len(want))
	}
}
