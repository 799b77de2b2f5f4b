package sim_test

import (
	"net/http"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

func explorerBody() map[string]any {
	return map[string]any{
		"dateRange":   map[string]any{"start": "2026-10-22", "end": "2026-11-20"},
		"groupBy":     "product_product_name",
		"costType":    "line_item_unblended_cost",
		"granularity": "day",
		"filters":     []any{},
	}
}

// TestOperationsHappyPath runs every operation once with DemoKey and checks
// the shape of what it answers.
func TestOperationsHappyPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{Now: newClock().Now})
	budgetID := firstBudgetID(t, e, sim.DemoKey)
	rpt := reportID(t, e, sim.DemoKey)
	// A budget of its own to delete, so the other cases keep theirs.
	created := e.do(t, req{method: http.MethodPost, path: "/v1/budgets", key: sim.DemoKey, idem: "setup",
		body: createBody(t, e, sim.DemoKey)}).dataObj(t)["budget"].(map[string]any)["id"].(string)
	e.sim.ResetCounts()

	listCheck := func(shape map[string]string, total bool) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			body := r.obj(t)
			data, ok := body["data"].([]any)
			if !ok || len(data) == 0 {
				t.Fatalf("data is not a non-empty array: %.200s", r.body)
			}
			for i, item := range data {
				checkShape(t, "data["+itoa(i)+"]", item, shape)
			}
			p := body["pagination"]
			checkShape(t, "pagination", p, paginationShape)
			pm := p.(map[string]any)
			if _, has := pm["total"]; has != total {
				t.Errorf("pagination total present = %v, want %v", has, total)
			}
			if pm["limit"] != float64(50) {
				t.Errorf("default limit %v, want 50", pm["limit"])
			}
		}
	}
	cases := []struct {
		name  string
		op    string
		req   req
		check func(t *testing.T, r result)
	}{
		{"list recommendations", ops.ListRecommendations, req{path: "/v1/recommendations"}, listCheck(recommendationShape, false)},
		{"list anomalies", ops.ListAnomalies, req{path: "/v1/anomalies"}, listCheck(anomalyShape, false)},
		{"list scheduled notifications", ops.ListScheduledNotifications, req{path: "/v1/notifications/scheduled"}, listCheck(notificationShape, true)},
		{"list budgets", ops.ListBudgets, req{path: "/v1/budgets"}, func(t *testing.T, r result) {
			data := r.data(t).([]any)
			for i, b := range data {
				checkBudget(t, "data["+itoa(i)+"]", b)
			}
			checkShape(t, "pagination", r.obj(t)["pagination"], paginationShape)
		}},
		{"explorer summary", ops.ExplorerSummary, req{method: http.MethodPost, path: "/v1/explorer/summary", body: explorerBody()}, func(t *testing.T, r result) {
			d := r.dataObj(t)
			checkShape(t, "data", d, map[string]string{"cards": kArray, "servedFromCache": kBool})
			cards := d["cards"].([]any)
			if len(cards) != 3 {
				t.Fatalf("%d cards, want 3", len(cards))
			}
			var titles []string
			for i, c := range cards {
				checkShape(t, "cards["+itoa(i)+"]", c, map[string]string{"title": kString, "description": kString, "value": kNumber, "previousValue": kNumber})
				titles = append(titles, c.(map[string]any)["title"].(string))
			}
			if diff := cmp.Diff([]string{"Total cost", "Average daily cost", "Top product_product_name"}, titles); diff != "" {
				t.Errorf("card titles (-want +got):\n%s", diff)
			}
		}},
		{"explorer previous period", ops.ExplorerPreviousPeriod, req{method: http.MethodPost, path: "/v1/explorer/previous-period", body: explorerBody()}, func(t *testing.T, r result) {
			checkShape(t, "data", r.dataObj(t), map[string]string{"currentTotal": kNumber, "previousTotal": kNumber, "changePercent": kNumber, "servedFromCache": kBool})
		}},
		{"explorer history", ops.ExplorerHistory, req{method: http.MethodPost, path: "/v1/explorer/history", body: explorerBody()}, func(t *testing.T, r result) {
			d := r.dataObj(t)
			checkShape(t, "data", d, map[string]string{"costRows": kArray, "totalsByTimeRows": kArray, "usageRows": kArray,
				"usageGroupRows": kArray, "timeColumn": kString, "groupBy": kString, "servedFromCache": kBool})
			if d["timeColumn"] != "usage_date" || d["groupBy"] != "product_product_name" {
				t.Errorf("timeColumn %v groupBy %v", d["timeColumn"], d["groupBy"])
			}
			rows := d["costRows"].([]any)
			if len(rows) == 0 {
				t.Fatal("no cost rows")
			}
			for i, row := range rows {
				checkShape(t, "costRows["+itoa(i)+"]", row, map[string]string{"product_product_name": kString, "usage_date": kInteger, "cost": kNumber})
			}
		}},
		{"explorer heatmap", ops.ExplorerHeatmap, req{method: http.MethodPost, path: "/v1/explorer/heatmap", body: explorerBody()}, func(t *testing.T, r result) {
			rows := r.dataObj(t)["rows"].([]any)
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			for i, row := range rows {
				checkShape(t, "rows["+itoa(i)+"]", row, map[string]string{"dimension": kString, "day": kDate, "cost": kNumber})
			}
		}},
		{"explorer dimension values", ops.ExplorerDimensionValues, req{path: "/v1/explorer/dimensions/billing_account_name/values"}, func(t *testing.T, r result) {
			d := r.dataObj(t)
			checkShape(t, "data", d, map[string]string{"items": kArray, "values": kArray, "hasMore": kBool, "servedFromCache": kBool})
			items, values := d["items"].([]any), d["values"].([]any)
			if len(items) != 6 || len(values) != 6 {
				t.Fatalf("%d items, %d values; want the 6 accounts", len(items), len(values))
			}
			for i, it := range items {
				checkShape(t, "items["+itoa(i)+"]", it, map[string]string{"value": kString, "cost": kNumber})
				if it.(map[string]any)["value"] != values[i] {
					t.Errorf("values[%d] = %v, items[%d].value = %v", i, values[i], i, it.(map[string]any)["value"])
				}
			}
		}},
		{"create budget", ops.CreateBudget, req{method: http.MethodPost, path: "/v1/budgets", idem: "happy-create", body: map[string]any{
			"name": "Happy path", "startDate": "2027-01-01", "numberOfPeriods": 3, "explorerReportId": rpt,
		}}, func(t *testing.T, r result) {
			checkBudget(t, "budget", r.dataObj(t)["budget"])
		}},
		{"lookback get", ops.BudgetLookbackGet, req{path: "/v1/budgets/lookback"}, func(t *testing.T, r result) {
			ps := r.dataObj(t)["periods"].([]any)
			if len(ps) != 6 {
				t.Fatalf("%d periods, want 6", len(ps))
			}
			for i, p := range ps {
				checkShape(t, "periods["+itoa(i)+"]", p, map[string]string{"periodKey": kString, "actual": kNumber, "projected": kNumber})
			}
		}},
		{"lookback post", ops.BudgetLookbackPost, req{method: http.MethodPost, path: "/v1/budgets/lookback", body: map[string]any{
			"explorerReportId": rpt, "startDate": "2026-11-01", "period": "MONTHLY", "lookbackPeriod": 4, "numberOfPeriods": 12,
		}}, func(t *testing.T, r result) {
			ps := r.dataObj(t)["periods"].([]any)
			var keys []string
			for i, p := range ps {
				checkShape(t, "periods["+itoa(i)+"]", p, map[string]string{"periodKey": kString, "actual": kNumber})
				if _, has := p.(map[string]any)["projected"]; has {
					t.Errorf("periods[%d] has projected; only the GET form does", i)
				}
				keys = append(keys, p.(map[string]any)["periodKey"].(string))
			}
			if diff := cmp.Diff([]string{"2026-07", "2026-08", "2026-09", "2026-10"}, keys); diff != "" {
				t.Errorf("period keys (-want +got):\n%s", diff)
			}
		}},
		{"get budget", ops.GetBudget, req{path: "/v1/budgets/" + budgetID}, func(t *testing.T, r result) {
			d := r.dataObj(t)
			checkBudget(t, "budget", d["budget"])
			checkShape(t, "metrics", d["metrics"], map[string]string{"totalTarget": kNumber, "totalActual": kNumber, "variance": kNumber})
			dims := d["dimensions"].([]any)
			if len(dims) != 1 {
				t.Fatalf("%d dimensions, want 1", len(dims))
			}
			checkShape(t, "dimensions[0]", dims[0], map[string]string{"name": kString, "values": kArray})
		}},
		{"update budget", ops.UpdateBudget, req{method: http.MethodPatch, path: "/v1/budgets/" + budgetID, idem: "happy-update", body: map[string]any{"name": "Renamed"}}, func(t *testing.T, r result) {
			b := r.dataObj(t)["budget"]
			checkBudget(t, "budget", b)
			if b.(map[string]any)["name"] != "Renamed" {
				t.Errorf("name %v", b.(map[string]any)["name"])
			}
		}},
		{"budget actuals", ops.GetBudgetActuals, req{path: "/v1/budgets/" + budgetID + "/actuals"}, func(t *testing.T, r result) {
			checkShape(t, "data", r.dataObj(t), map[string]string{"actualsByPlanning": kObject, "accountActualsByPeriod": kObject})
		}},
		{"budget planning", ops.GetBudgetPlanning, req{path: "/v1/budgets/" + budgetID + "/planning"}, func(t *testing.T, r result) {
			ps := r.dataObj(t)["plannings"].([]any)
			if len(ps) < 2 || len(ps) > 5 {
				t.Errorf("%d planning rows, want 2 to 5", len(ps))
			}
			for i, p := range ps {
				checkShape(t, "plannings["+itoa(i)+"]", p, planningShape)
			}
		}},
		{"delete budget", ops.DeleteBudget, req{method: http.MethodDelete, path: "/v1/budgets/" + created}, func(t *testing.T, r result) {
			if diff := cmp.Diff(map[string]any{"success": true}, r.dataObj(t)); diff != "" {
				t.Errorf("delete data (-want +got):\n%s", diff)
			}
		}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.op] = true
		t.Run(tc.name, func(t *testing.T) {
			tc.req.key = sim.DemoKey
			before := e.sim.Calls(tc.op)
			r := e.do(t, tc.req)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !uuidV4.MatchString(r.header.Get("X-Request-Id")) {
				t.Errorf("X-Request-Id %q", r.header.Get("X-Request-Id"))
			}
			if got := e.sim.Calls(tc.op) - before; got != 1 {
				t.Errorf("Calls(%s) grew by %d, want 1", tc.op, got)
			}
			tc.check(t, r)
		})
	}
	var missing []string
	for _, op := range sim.Operations() {
		if !seen[op] {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations without a happy-path case: %v", missing)
	}
}

// TestDeterministic checks that the same seed gives the same data and another
// seed different data.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	paths := []string{"/v1/recommendations?limit=200", "/v1/anomalies?limit=5", "/v1/budgets", "/v1/notifications/scheduled",
		"/v1/explorer/dimensions/product_product_name/values", "/v1/budgets/lookback"}
	a, b := newEnv(t, sim.Options{Seed: 7}), newEnv(t, sim.Options{Seed: 7})
	c := newEnv(t, sim.Options{Seed: 8})
	for _, p := range paths {
		ra, rb, rc := a.get(t, p), b.get(t, p), c.get(t, p)
		if diff := cmp.Diff(ra.data(t), rb.data(t)); diff != "" {
			t.Errorf("%s differs between two servers with seed 7 (-a +b):\n%.2000s", p, diff)
		}
		if cmp.Equal(ra.data(t), rc.data(t)) {
			t.Errorf("%s is the same for seeds 7 and 8", p)
		}
	}
	if diff := cmp.Diff(sim.New(sim.Options{}).IDs(sim.DemoKey, "budgets"), sim.New(sim.Options{Seed: 1}).IDs(sim.DemoKey, "budgets")); diff != "" {
		t.Errorf("seed 0 is not seed 1:\n%s", diff)
	}
}
