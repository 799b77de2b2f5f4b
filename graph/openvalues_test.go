package graph_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// sentBody is an upstream request's method, path and JSON body.
type sentBody struct {
	call string // "METHOD /path"
	body map[string]any
}

// recordBodies records the JSON body of every upstream request from now on,
// and returns what takes the bodies recorded since its last call.
func recordBodies(t *testing.T, e *env) func() []sentBody {
	t.Helper()
	var mu sync.Mutex
	var sent []sentBody
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	e.calls.fail = func(r *http.Request) *http.Response {
		s := sentBody{call: r.Method + " " + r.URL.Path}
		if r.Body != nil {
			// The client gives no GetBody (it replays bodies itself), so
			// the body is read and put back for the upstream.
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
				return nil
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			if len(b) > 0 {
				if err := json.Unmarshal(b, &s.body); err != nil {
					t.Errorf("%s: body is not a JSON object: %v", s.call, err)
				}
			}
		}
		mu.Lock()
		sent = append(sent, s)
		mu.Unlock()
		return nil
	}
	return func() []sentBody {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
}

// The contract leaves the values of an Explorer query's costType and
// granularity open ("not shown"), so whatever a caller sends reaches the
// upstream exactly as sent, and the upstream takes it or refuses it. They
// were enums of three values each, which refused line_item_blended_cost and
// hour before any call. Only an empty value, which names no column or size,
// is the gateway's to refuse.
func TestExplorerOpenValuesReachTheUpstream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sent := recordBodies(t, e)
	const query = `query($q: ExplorerQueryInput!) { explorer { summary(query: $q) { cards { title value } } } }`
	vars := func(groupBy, costType, granularity string) map[string]any {
		return map[string]any{"q": map[string]any{"dateRange": map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
			"groupBy": groupBy, "costType": costType, "granularity": granularity}}
	}
	for _, tc := range []struct {
		name, costType, granularity string
		refusedFor                  string // the field the upstream refuses; "" when it answers
	}{
		{"a cost column the contract does not show", "line_item_blended_cost", "day", ""},
		{"a cost column the contract shows", "line_item_unblended_cost", "week", ""},
		{"a bucket size the simulator does not take", "line_item_unblended_cost", "hour", "granularity"},
		{"the former enum's names, sent as they are", "LINE_ITEM_UNBLENDED_COST", "DAY", "costType"},
		{"a long value", strings.Repeat("line_item_", 1000), "day", "costType"},
	} {
		r := e.query(t, sim.DemoKey, query, vars("product_product_name", tc.costType, tc.granularity))
		got := sent()
		if len(got) != 1 || got[0].call != "POST /v1/explorer/summary" ||
			got[0].body["costType"] != tc.costType || got[0].body["granularity"] != tc.granularity {
			t.Errorf("%s: the upstream got %+v, want one explorerSummary with costType %.40q and granularity %q",
				tc.name, got, tc.costType, tc.granularity)
			continue
		}
		if tc.refusedFor == "" {
			if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"cards":[{`) {
				t.Errorf("%s: %s", tc.name, r.raw)
			}
			continue
		}
		// The upstream's refusal, with its message, at the field.
		if r.code(t) != "BAD_USER_INPUT" || !strings.HasPrefix(r.Errors[0].Message, tc.refusedFor) ||
			!slices.Equal(r.Errors[0].Path, []any{"explorer", "summary"}) {
			t.Errorf("%s: %s", tc.name, r.raw)
		}
	}
	for _, field := range []string{"groupBy", "costType", "granularity"} {
		v := vars("product_product_name", "line_item_unblended_cost", "day")
		v["q"].(map[string]any)[field] = ""
		r := e.query(t, sim.DemoKey, query, v)
		if r.code(t) != "BAD_USER_INPUT" || r.Errors[0].Message != "query."+field+" must not be empty" {
			t.Errorf("empty %s: %s", field, r.raw)
		}
		if got := sent(); len(got) != 0 {
			t.Errorf("empty %s: upstream calls %+v", field, got)
		}
	}
}

// The contract leaves a budget's period, status and targetType open ("not
// shown beyond the values listed"): an input takes a value its enum does not
// list in the field's …Raw sibling, and sends it as given. The enums alone
// refused any other value before any call.
func TestBudgetOpenValuesReachTheUpstream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := loadFixture(t, e)
	sent := recordBodies(t, e)
	const create = `mutation($in: CreateBudgetInput!) { createBudget(input: $in) {
		budget { id upstreamId period periodRaw status targetType } userErrors { field message code upstreamCode } } }`
	type payload struct {
		Budget *struct {
			ID, UpstreamID, Period, PeriodRaw, Status, TargetType string
		}
		UserErrors []userError
	}
	// upstreamGot checks that the only upstream call was call, and that its
	// body held each of want.
	upstreamGot := func(t *testing.T, call string, want map[string]string) {
		t.Helper()
		got := sent()
		if len(got) != 1 || got[0].call != call {
			t.Fatalf("upstream calls %+v, want one %s", got, call)
		}
		for k, v := range want {
			if got[0].body[k] != v {
				t.Errorf("%s sent %s = %v, want %q", call, k, got[0].body[k], v)
			}
		}
	}

	t.Run("values the enums list, by their strings", func(t *testing.T) {
		var got struct{ CreateBudget payload }
		e.mustChecked(t, sim.DemoKey, create, createInput(f.reportID, map[string]any{
			"periodRaw": "QUARTERLY", "statusRaw": "ACTIVE", "targetTypeRaw": "BUDGET"}), &got)
		upstreamGot(t, "POST /v1/budgets", map[string]string{"period": "QUARTERLY", "status": "ACTIVE", "targetType": "BUDGET"})
		if b := got.CreateBudget.Budget; b == nil || b.Period != "QUARTERLY" || b.Status != "ACTIVE" || b.TargetType != "BUDGET" {
			t.Fatalf("payload %+v", got.CreateBudget)
		}
		var up struct{ UpdateBudget payload }
		e.mustChecked(t, sim.DemoKey, `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) {
			budget { id upstreamId period periodRaw status targetType } userErrors { field message code upstreamCode } } }`,
			map[string]any{"in": map[string]any{"id": got.CreateBudget.Budget.ID, "periodRaw": "YEARLY"}}, &up)
		upstreamGot(t, "PATCH /v1/budgets/"+got.CreateBudget.Budget.UpstreamID, map[string]string{"period": "YEARLY"})
		if b := up.UpdateBudget.Budget; b == nil || b.Period != "YEARLY" {
			t.Errorf("update payload %+v", up.UpdateBudget)
		}
	})

	// The simulator takes none of these (docs/simulator.md): what it refuses
	// reaches it as sent, and its refusal is the payload's user error.
	for field, v := range map[string]string{"period": "WEEKLY", "status": "ARCHIVED", "targetType": "FORECAST"} {
		t.Run(field+"Raw the simulator does not take", func(t *testing.T) {
			var got struct{ CreateBudget payload }
			e.mustChecked(t, sim.DemoKey, create, createInput(f.reportID, map[string]any{field + "Raw": v}), &got)
			upstreamGot(t, "POST /v1/budgets", map[string]string{field: v})
			p := got.CreateBudget
			if p.Budget != nil || len(p.UserErrors) != 1 || p.UserErrors[0].Code != "INVALID_VALUE" ||
				p.UserErrors[0].UpstreamCode == nil || *p.UserErrors[0].UpstreamCode != "validation_error" ||
				!strings.Contains(p.UserErrors[0].Message, field) {
				t.Errorf("payload %+v", p)
			}
		})
	}

	// What the gateway refuses, beside the …Raw field, before any call.
	for _, tc := range []struct {
		name string
		over map[string]any
		path []string
		msg  string
	}{
		{"an enum value and a raw one", map[string]any{"period": "MONTHLY", "periodRaw": "MONTHLY"}, []string{"input", "periodRaw"}, "give period or periodRaw, not both"},
		{"an empty raw value", map[string]any{"statusRaw": ""}, []string{"input", "statusRaw"}, "statusRaw is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct{ CreateBudget payload }
			e.mustChecked(t, sim.DemoKey, create, createInput(f.reportID, tc.over), &got)
			p := got.CreateBudget
			if p.Budget != nil || len(p.UserErrors) != 1 || p.UserErrors[0].Code != "INVALID_VALUE" ||
				!slices.Equal(p.UserErrors[0].Field, tc.path) || !strings.HasPrefix(p.UserErrors[0].Message, tc.msg) {
				t.Errorf("payload %+v", p)
			}
			if got := sent(); len(got) != 0 {
				t.Errorf("upstream calls %+v", got)
			}
		})
	}

	t.Run("an update's raw null is refused, as its enum's is", func(t *testing.T) {
		var got struct{ UpdateBudget payload }
		e.mustChecked(t, sim.DemoKey, qUpdate, map[string]any{"in": map[string]any{"id": f.budgetGID, "targetTypeRaw": nil}}, &got)
		if p := got.UpdateBudget; len(p.UserErrors) != 1 || p.UserErrors[0].Code != "REQUIRED" ||
			!slices.Equal(p.UserErrors[0].Field, []string{"input", "targetTypeRaw"}) {
			t.Errorf("payload %+v", p)
		}
		if got := sent(); len(got) != 0 {
			t.Errorf("upstream calls %+v", got)
		}
	})

	t.Run("a lookback's period", func(t *testing.T) {
		in := map[string]any{"explorerReportId": f.reportID, "startDate": "2026-06-01", "periodRaw": "WEEKLY"}
		r := e.query(t, sim.DemoKey, qLookback, map[string]any{"in": in})
		upstreamGot(t, "POST /v1/budgets/lookback", map[string]string{"period": "WEEKLY"})
		if r.code(t) != "BAD_USER_INPUT" || !strings.HasPrefix(r.Errors[0].Message, "period") {
			t.Errorf("lookback with periodRaw WEEKLY: %s", r.raw)
		}
		in["period"] = "MONTHLY"
		r = e.query(t, sim.DemoKey, qLookback, map[string]any{"in": in})
		if r.code(t) != "BAD_USER_INPUT" || r.Errors[0].Message != "input: give period or periodRaw, not both" {
			t.Errorf("lookback with period and periodRaw: %s", r.raw)
		}
		if got := sent(); len(got) != 0 {
			t.Errorf("upstream calls %+v", got)
		}
	})
}
