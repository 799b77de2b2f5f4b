package sim_test

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

type explorerQuery struct {
	start, end  string
	groupBy     string
	costType    string
	granularity string
	filters     []any
}

func (q explorerQuery) body() map[string]any {
	f := q.filters
	if f == nil {
		f = []any{}
	}
	return map[string]any{
		"dateRange":   map[string]any{"start": q.start, "end": q.end},
		"groupBy":     q.groupBy,
		"costType":    q.costType,
		"granularity": q.granularity,
		"filters":     f,
	}
}

func (e *env) explorer(t *testing.T, key, op string, body any) map[string]any {
	t.Helper()
	return e.do(t, req{method: http.MethodPost, path: "/v1/explorer/" + op, key: key, body: body}).dataObj(t)
}

func day(s string) time.Time {
	d, _ := time.Parse("2006-01-02", s)
	return d
}

// TestExplorerAgreement checks the invariants docs/simulator.md promises:
// for one query, the first summary card, currentTotal, Σ costRows, Σ
// totalsByTimeRows and Σ heatmap rows agree to the cent.
func TestExplorerAgreement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	svc := "Amazon Elastic Compute Cloud"
	queries := []explorerQuery{
		{"2026-10-22", "2026-11-20", "product_product_name", "line_item_unblended_cost", "day", nil},
		{"2026-01-01", "2026-12-31", "billing_account_name", "line_item_net_unblended_cost", "month", nil},
		{"2025-12-03", "2026-02-17", "product_product_name", "line_item_amortized_cost", "week", nil},
		{"2026-06-01", "2026-06-01", "billing_account_name", "line_item_unblended_cost", "day", nil},
		{"2025-11-01", "2026-03-31", "billing_account_name", "line_item_unblended_cost", "week",
			[]any{map[string]any{"dimension": "product_product_name", "operator": "in", "values": []any{svc, "AWS Lambda"}}}},
		{"2026-09-01", "2026-09-30", "product_product_name", "line_item_unblended_cost", "day",
			[]any{map[string]any{"dimension": "billing_account_name", "operator": "not_in", "values": []any{"Production"}},
				map[string]any{"dimension": "product_product_name", "operator": "not_in", "values": []any{svc}}}},
		{"2024-12-20", "2025-01-10", "product_product_name", "line_item_unblended_cost", "day", nil}, // starts before the table
	}
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for i, q := range queries {
			t.Run(key+"/"+strconv.Itoa(i)+"/"+q.groupBy+"/"+q.granularity, func(t *testing.T) {
				checkAgreement(t, e, key, q)
			})
		}
	}
}

func checkAgreement(t *testing.T, e *env, key string, q explorerQuery) {
	sum := e.explorer(t, key, "summary", q.body())
	pp := e.explorer(t, key, "previous-period", q.body())
	hist := e.explorer(t, key, "history", q.body())
	heat := e.explorer(t, key, "heatmap", q.body())
	cards := sum["cards"].([]any)
	c0, c1, c2 := cards[0].(map[string]any), cards[1].(map[string]any), cards[2].(map[string]any)
	total := cents(t, c0["value"])
	prevTotal := cents(t, c0["previousValue"])

	if got := cents(t, pp["currentTotal"]); got != total {
		t.Errorf("currentTotal %d, card %d", got, total)
	}
	if got := cents(t, pp["previousTotal"]); got != prevTotal {
		t.Errorf("previousTotal %d, card %d", got, prevTotal)
	}
	wantChange := 0.0
	if prevTotal != 0 {
		wantChange = math.Round(float64(total-prevTotal)/float64(prevTotal)*10000) / 100
	}
	if got := pp["changePercent"].(float64); math.Abs(got-wantChange) > 0.0051 {
		t.Errorf("changePercent %v, want %v", got, wantChange)
	}

	// History.
	start, end := day(q.start), day(q.end)
	var histSum int64
	byBucket := map[float64]int64{}
	byGroup := map[string]int64{}
	seen := map[string]bool{}
	rows := hist["costRows"].([]any)
	for i, r := range rows {
		rm := r.(map[string]any)
		g := rm[q.groupBy].(string)
		ud := rm["usage_date"].(float64)
		c := cents(t, rm["cost"])
		if c == 0 {
			t.Errorf("costRows[%d] has zero cost", i)
		}
		k := g + "|" + strconv.FormatFloat(ud, 'f', -1, 64)
		if seen[k] {
			t.Errorf("duplicate row %s", k)
		}
		seen[k] = true
		histSum += c
		byBucket[ud] += c
		byGroup[g] += c
		b, err := time.Parse("20060102", strconv.FormatFloat(ud, 'f', -1, 64))
		if err != nil {
			t.Fatalf("usage_date %v: %v", ud, err)
		}
		switch q.granularity {
		case "day":
			if b.Before(start) || b.After(end) {
				t.Errorf("day bucket %v outside the range", b)
			}
		case "week":
			if b.Weekday() != time.Monday || b.After(end) || b.AddDate(0, 0, 6).Before(start) {
				t.Errorf("week bucket %v", b)
			}
		case "month":
			if b.Day() != 1 || b.After(end) || b.AddDate(0, 1, -1).Before(start) {
				t.Errorf("month bucket %v", b)
			}
		}
		if i > 0 {
			pm := rows[i-1].(map[string]any)
			pud, pc := pm["usage_date"].(float64), cents(t, pm["cost"])
			if pud > ud || (pud == ud && (pc < c || (pc == c && pm[q.groupBy].(string) > g))) {
				t.Errorf("costRows out of order at %d", i)
			}
		}
	}
	if histSum != total {
		t.Errorf("Σ costRows %d, total %d", histSum, total)
	}
	var totSum int64
	prevUD := -1.0
	for _, r := range hist["totalsByTimeRows"].([]any) {
		rm := r.(map[string]any)
		ud := rm["usage_date"].(float64)
		c := cents(t, rm["cost"])
		if ud <= prevUD {
			t.Errorf("totalsByTimeRows out of order at %v", ud)
		}
		prevUD = ud
		if byBucket[ud] != c {
			t.Errorf("bucket %v: total %d, Σ costRows %d", ud, c, byBucket[ud])
		}
		totSum += c
	}
	if totSum != total {
		t.Errorf("Σ totalsByTimeRows %d, total %d", totSum, total)
	}
	if len(hist["totalsByTimeRows"].([]any)) != len(byBucket) {
		t.Errorf("%d totals rows for %d buckets", len(hist["totalsByTimeRows"].([]any)), len(byBucket))
	}

	// Heatmap.
	var heatSum int64
	heatByGroup := map[string]int64{}
	hrows := heat["rows"].([]any)
	for i, r := range hrows {
		rm := r.(map[string]any)
		d := day(rm["day"].(string))
		if d.Before(start) || d.After(end) {
			t.Errorf("heatmap day %v outside the range", d)
		}
		c := cents(t, rm["cost"])
		heatSum += c
		heatByGroup[rm["dimension"].(string)] += c
		if i > 0 {
			pm := hrows[i-1].(map[string]any)
			if pm["day"].(string) > rm["day"].(string) || (pm["day"] == rm["day"] && pm["dimension"].(string) >= rm["dimension"].(string)) {
				t.Errorf("heatmap rows out of order at %d", i)
			}
		}
	}
	if heatSum != total {
		t.Errorf("Σ heatmap %d, total %d", heatSum, total)
	}
	for g, c := range byGroup {
		if heatByGroup[g] != c {
			t.Errorf("group %s: heatmap %d, history %d", g, heatByGroup[g], c)
		}
	}

	// Second card: the average per day of the range.
	days := int64(end.Sub(start).Hours()/24) + 1
	if got, want := cents(t, c1["value"]), int64(math.Round(float64(total)/float64(days))); got != want {
		t.Errorf("average %d, want %d", got, want)
	}
	if got, want := cents(t, c1["previousValue"]), int64(math.Round(float64(prevTotal)/float64(days))); got != want {
		t.Errorf("previous average %d, want %d", got, want)
	}
	// Third card: the top group, and its cost in the previous period.
	top, topCost := "", int64(0)
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if byGroup[g] > topCost {
			top, topCost = g, byGroup[g]
		}
	}
	if c2["title"] != "Top "+q.groupBy {
		t.Errorf("third card title %v", c2["title"])
	}
	if got := cents(t, c2["value"]); got != topCost {
		t.Errorf("top value %d, want %d (%s)", got, topCost, top)
	}
	if top != "" && !strings.Contains(c2["description"].(string), top) {
		t.Errorf("description %q does not name %s", c2["description"], top)
	}
	prevQ := q
	prevQ.start = start.AddDate(0, 0, -int(days)).Format("2006-01-02")
	prevQ.end = start.AddDate(0, 0, -1).Format("2006-01-02")
	prevHist := e.explorer(t, key, "history", prevQ.body())
	var topPrev, prevSum int64
	for _, r := range prevHist["costRows"].([]any) {
		rm := r.(map[string]any)
		c := cents(t, rm["cost"])
		prevSum += c
		if rm[q.groupBy] == top {
			topPrev += c
		}
	}
	if got := cents(t, c2["previousValue"]); got != topPrev {
		t.Errorf("top previous value %d, want %d", got, topPrev)
	}
	if prevSum != prevTotal {
		t.Errorf("previous period: Σ history %d, previousValue %d", prevSum, prevTotal)
	}
}

// TestExplorerDimensionValuesAgree checks that a summary over the 30 days
// ending AsOf, unblended, unfiltered, totals the dimension values.
func TestExplorerDimensionValuesAgree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for _, col := range []string{"product_product_name", "billing_account_name"} {
			t.Run(key+"/"+col, func(t *testing.T) {
				dv := e.get(t, "/v1/explorer/dimensions/"+col+"/values", key).dataObj(t)
				var sum int64
				prev := int64(math.MaxInt64)
				for _, it := range dv["items"].([]any) {
					c := cents(t, it.(map[string]any)["cost"])
					if c > prev {
						t.Errorf("items not sorted by cost descending")
					}
					prev = c
					sum += c
				}
				if dv["hasMore"] != false {
					t.Errorf("hasMore %v", dv["hasMore"])
				}
				q := explorerQuery{"2026-10-22", "2026-11-20", col, "line_item_unblended_cost", "day", nil}
				card := e.explorer(t, key, "summary", q.body())["cards"].([]any)[0].(map[string]any)
				if got := cents(t, card["value"]); got != sum {
					t.Errorf("summary %d, Σ dimension values %d", got, sum)
				}
			})
		}
	}
}

func TestExplorerFiltersAndCostTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	total := func(q explorerQuery) int64 {
		return cents(t, e.explorer(t, sim.DemoKey, "summary", q.body())["cards"].([]any)[0].(map[string]any)["value"])
	}
	base := explorerQuery{"2026-08-01", "2026-08-31", "product_product_name", "line_item_unblended_cost", "day", nil}
	all := total(base)
	in, out := base, base
	f := func(op string) []any {
		return []any{map[string]any{"dimension": "billing_account_name", "operator": op, "values": []any{"Production", "Staging", "No such account"}}}
	}
	in.filters, out.filters = f("in"), f("not_in")
	if a, b := total(in), total(out); a+b != all || a == 0 || b == 0 {
		t.Errorf("in %d + not_in %d != all %d", a, b, all)
	}
	both := in
	both.filters = append(f("in"), map[string]any{"dimension": "billing_account_name", "operator": "in", "values": []any{"Staging"}})
	staging := base
	staging.filters = []any{map[string]any{"dimension": "billing_account_name", "operator": "in", "values": []any{"Staging"}}}
	if a, b := total(both), total(staging); a != b {
		t.Errorf("filters are not ANDed: %d vs %d", a, b)
	}
	empty := base
	empty.filters = []any{map[string]any{"dimension": "billing_account_name", "operator": "in", "values": []any{}}}
	if got := total(empty); got != 0 {
		t.Errorf("in [] gives %d", got)
	}
	for ct, factor := range map[string]float64{"line_item_net_unblended_cost": 0.94, "line_item_amortized_cost": 0.97, "line_item_blended_cost": 1} {
		q := base
		q.costType = ct
		got := total(q)
		// Rounded per cell and day: at most half a cent per cell-day off.
		if d := math.Abs(float64(got) - float64(all)*factor); d > 72*31*0.5 {
			t.Errorf("%s total %d, unblended %d × %v", ct, got, all, factor)
		}
	}
	t.Run("null filters read as empty", func(t *testing.T) {
		b := base.body()
		b["filters"] = nil
		if got := cents(t, e.explorer(t, sim.DemoKey, "summary", b)["cards"].([]any)[0].(map[string]any)["value"]); got != all {
			t.Errorf("null filters: %d, want %d", got, all)
		}
		delete(b, "filters")
		if got := cents(t, e.explorer(t, sim.DemoKey, "summary", b)["cards"].([]any)[0].(map[string]any)["value"]); got != all {
			t.Errorf("absent filters: %d, want %d", got, all)
		}
	})
	t.Run("outside the table is zero", func(t *testing.T) {
		q := explorerQuery{"2024-01-01", "2024-12-31", "product_product_name", "line_item_unblended_cost", "month", nil}
		h := e.explorer(t, sim.DemoKey, "history", q.body())
		if len(h["costRows"].([]any)) != 0 || len(h["totalsByTimeRows"].([]any)) != 0 {
			t.Errorf("rows outside the table: %v", h)
		}
		if got := total(q); got != 0 {
			t.Errorf("total %d", got)
		}
		q = explorerQuery{"2026-12-01", "2026-12-31", "product_product_name", "line_item_unblended_cost", "day", nil}
		if got := total(q); got != 0 {
			t.Errorf("future total %d", got)
		}
	})
}

func TestExplorerValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	valid := func(edit func(m map[string]any)) map[string]any {
		m := explorerBody()
		edit(m)
		return m
	}
	filter := func(f any) func(m map[string]any) { return func(m map[string]any) { m["filters"] = []any{f} } }
	cases := []struct {
		name  string
		body  any
		code  string
		field string
	}{
		{"missing dateRange", valid(func(m map[string]any) { delete(m, "dateRange") }), "validation_error", "dateRange"},
		{"dateRange string", valid(func(m map[string]any) { m["dateRange"] = "last 30 days" }), "validation_error", "dateRange"},
		{"missing start", valid(func(m map[string]any) { m["dateRange"] = map[string]any{"end": "2026-11-20"} }), "validation_error", "dateRange.start"},
		{"bad end", valid(func(m map[string]any) { m["dateRange"] = map[string]any{"start": "2026-11-01", "end": "2026-11-31"} }), "validation_error", "dateRange.end"},
		{"end before start", valid(func(m map[string]any) { m["dateRange"] = map[string]any{"start": "2026-11-02", "end": "2026-11-01"} }), "validation_error", "dateRange.end"},
		{"367 days", valid(func(m map[string]any) { m["dateRange"] = map[string]any{"start": "2025-01-01", "end": "2026-01-02"} }), "validation_error", "dateRange"},
		{"missing groupBy", valid(func(m map[string]any) { delete(m, "groupBy") }), "validation_error", "groupBy"},
		{"unknown groupBy", valid(func(m map[string]any) { m["groupBy"] = "region" }), "validation_error", "groupBy"},
		{"groupBy number", valid(func(m map[string]any) { m["groupBy"] = 1 }), "validation_error", "groupBy"},
		{"unknown costType", valid(func(m map[string]any) { m["costType"] = "line_item_public_on_demand_cost" }), "validation_error", "costType"},
		{"costType in capitals", valid(func(m map[string]any) { m["costType"] = "LINE_ITEM_UNBLENDED_COST" }), "validation_error", "costType"},
		{"empty costType", valid(func(m map[string]any) { m["costType"] = "" }), "validation_error", "costType"},
		{"missing costType", valid(func(m map[string]any) { delete(m, "costType") }), "validation_error", "costType"},
		{"hourly", valid(func(m map[string]any) { m["granularity"] = "hour" }), "validation_error", "granularity"},
		{"missing granularity", valid(func(m map[string]any) { delete(m, "granularity") }), "validation_error", "granularity"},
		{"filters object", valid(func(m map[string]any) { m["filters"] = map[string]any{} }), "validation_error", "filters"},
		{"filter string", valid(filter("service=EC2")), "validation_error", "filters[0]"},
		{"filter dimension", valid(filter(map[string]any{"dimension": "region", "operator": "in", "values": []any{"x"}})), "validation_error", "filters[0].dimension"},
		{"filter operator", valid(filter(map[string]any{"dimension": "billing_account_name", "operator": "eq", "values": []any{"x"}})), "validation_error", "filters[0].operator"},
		{"filter values", valid(filter(map[string]any{"dimension": "billing_account_name", "operator": "in", "values": "x"})), "validation_error", "filters[0].values"},
		{"filter value number", valid(filter(map[string]any{"dimension": "billing_account_name", "operator": "in", "values": []any{1}})), "validation_error", "filters[0].values[0]"},
		{"filter missing values", valid(filter(map[string]any{"dimension": "billing_account_name", "operator": "in"})), "validation_error", "filters[0].values"},
		{"not an object", `[]`, "invalid_json", ""},
		{"broken", `{"dateRange":`, "invalid_json", ""},
	}
	for _, op := range []string{"summary", "previous-period", "history", "heatmap"} {
		for _, tc := range cases {
			t.Run(op+"/"+tc.name, func(t *testing.T) {
				msg := e.do(t, req{method: "POST", path: "/v1/explorer/" + op, key: sim.DemoKey, body: tc.body}).wantError(t, http.StatusBadRequest, tc.code)
				if tc.field != "" && !strings.HasPrefix(msg, tc.field+" ") {
					t.Errorf("message %q does not start with %q", msg, tc.field)
				}
			})
		}
		t.Run(op+"/366 days and extra properties are fine", func(t *testing.T) {
			b := valid(func(m map[string]any) {
				m["dateRange"] = map[string]any{"start": "2025-01-01", "end": "2026-01-01", "label": "x"}
				m["limit"] = 5
				m["whatever"] = map[string]any{"a": []any{1}}
			})
			if r := e.do(t, req{method: "POST", path: "/v1/explorer/" + op, key: sim.DemoKey, body: b}); r.status != http.StatusOK {
				t.Errorf("status %d: %s", r.status, r.body)
			}
		})
	}
}

func TestServedFromCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	for _, op := range []string{"summary", "previous-period", "history", "heatmap"} {
		t.Run(op, func(t *testing.T) {
			// The steps run in order on one query, each changing it or not.
			q := explorerBody()
			for _, step := range []struct {
				name   string
				key    string
				change func(q map[string]any)
				want   bool
			}{
				{"first", sim.DemoKey, nil, false},
				{"second", sim.DemoKey, nil, true},
				{"same query with an extra property", sim.DemoKey, func(q map[string]any) { q["ignored"] = "extra property" }, true},
				{"another key of the same organization", sim.ReadOnlyKey, nil, true},
				{"other organization", sim.OtherOrgKey, nil, false},
				{"different query", sim.DemoKey, func(q map[string]any) { q["granularity"] = "month" }, false},
			} {
				if step.change != nil {
					step.change(q)
				}
				if got := e.explorer(t, step.key, op, q)["servedFromCache"]; got != step.want {
					t.Errorf("%s: %v", step.name, got)
				}
			}
		})
	}
	t.Run("dimension values", func(t *testing.T) {
		path := "/v1/explorer/dimensions/product_product_name/values"
		for i, want := range []bool{false, true, true} {
			if got := e.get(t, path).dataObj(t)["servedFromCache"]; got != want {
				t.Errorf("call %d: %v, want %v", i, got, want)
			}
		}
		if got := e.get(t, "/v1/explorer/dimensions/billing_account_name/values").dataObj(t)["servedFromCache"]; got != false {
			t.Errorf("other key: %v", got)
		}
	})
	t.Run("summary and history do not share", func(t *testing.T) {
		q := explorerBody()
		q["dateRange"] = map[string]any{"start": "2026-01-01", "end": "2026-01-31"}
		e.explorer(t, sim.DemoKey, "summary", q)
		if got := e.explorer(t, sim.DemoKey, "history", q)["servedFromCache"]; got != false {
			t.Errorf("history after summary: %v", got)
		}
	})
}
