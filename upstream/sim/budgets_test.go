package sim_test

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/sim"
)

var (
	budgetIDRe   = regexp.MustCompile(`^bud_[0-9a-z]{16}$`)
	planningIDRe = regexp.MustCompile(`^pln_[0-9a-z]{16}$`)
)

func create(t *testing.T, e *env, key, idem string, body any) result {
	t.Helper()
	return e.do(t, req{method: http.MethodPost, path: "/v1/budgets", key: key, idem: idem, body: body})
}

func update(t *testing.T, e *env, key, id, idem string, body any) result {
	t.Helper()
	return e.do(t, req{method: http.MethodPatch, path: "/v1/budgets/" + id, key: key, idem: idem, body: body})
}

func budgetOf(t *testing.T, r result) map[string]any {
	t.Helper()
	b, ok := r.dataObj(t)["budget"].(map[string]any)
	if !ok {
		t.Fatalf("no budget in %s", r.body)
	}
	return b
}

// reportValues returns the values a report covers, read from a get of a
// budget based on it.
func reportValues(t *testing.T, e *env, key, budgetID string) []string {
	t.Helper()
	dims := e.get(t, "/v1/budgets/"+budgetID, key).dataObj(t)["dimensions"].([]any)
	var vs []string
	for _, v := range dims[0].(map[string]any)["values"].([]any) {
		vs = append(vs, v.(string))
	}
	return vs
}

func TestCreateBudget(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e := newEnv(t, sim.Options{Now: clock.Now})
	rpt := reportID(t, e, sim.DemoKey)
	wantStamp := clock.Now().UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	cases := []struct {
		name  string
		body  map[string]any
		check map[string]any // expected fields of the created budget
		rows  func(n int) bool
	}{
		{"minimal, defaults", map[string]any{"name": "Minimal", "startDate": "2026-12-01", "numberOfPeriods": 12, "explorerReportId": rpt},
			map[string]any{"name": "Minimal", "status": "DRAFT", "period": "MONTHLY", "targetType": "BUDGET", "endDate": "2027-11-01",
				"lookbackPeriod": nil, "budgetType": nil, "startingValue": nil, "customStartingValue": nil, "growthRate": nil,
				"normalizationPeriod": false, "organizationId": "org-1001", "serviceClientId": float64(1001),
				"createdAt": wantStamp, "updatedAt": wantStamp, "explorerReportId": rpt}, nil},
		{"draft accepted", map[string]any{"name": "Draft", "status": "DRAFT", "startDate": "2027-01-01", "numberOfPeriods": 1, "explorerReportId": rpt},
			map[string]any{"status": "DRAFT", "endDate": "2027-01-01"}, nil},
		{"active", map[string]any{"name": "Active", "status": "ACTIVE", "startDate": "2026-07-01", "numberOfPeriods": 6, "explorerReportId": rpt},
			map[string]any{"status": "ACTIVE", "endDate": "2026-12-01"}, nil},
		{"quarterly", map[string]any{"name": "Q", "period": "QUARTERLY", "startDate": "2027-01-01", "numberOfPeriods": 4, "explorerReportId": rpt},
			map[string]any{"period": "QUARTERLY", "endDate": "2027-10-01"}, nil},
		{"yearly", map[string]any{"name": "Y", "period": "YEARLY", "startDate": "2027-01-01", "numberOfPeriods": 3, "explorerReportId": rpt},
			map[string]any{"period": "YEARLY", "endDate": "2029-01-01"}, nil},
		{"open fields stored as given", map[string]any{"name": "Open", "startDate": "2026-10-01", "numberOfPeriods": 2, "explorerReportId": rpt,
			"budgetType": map[string]any{"kind": "fixed"}, "startingValue": 1200.5, "customStartingValue": "custom", "growthRate": 5,
			"lookbackPeriod": 6, "normalizationPeriod": true, "id": "bud_mine", "organizationId": "org-2002", "unknown": []any{1}},
			map[string]any{"budgetType": map[string]any{"kind": "fixed"}, "startingValue": 1200.5, "customStartingValue": "custom",
				"growthRate": float64(5), "lookbackPeriod": float64(6), "normalizationPeriod": true, "organizationId": "org-1001"}, nil},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.sim.IDs(sim.DemoKey, "budgets")
			r := create(t, e, sim.DemoKey, "create-"+itoa(i), tc.body)
			b := budgetOf(t, r)
			checkBudget(t, "budget", b)
			for k, want := range tc.check {
				if diff := cmp.Diff(want, b[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			id := b["id"].(string)
			if !budgetIDRe.MatchString(id) {
				t.Errorf("id %q", id)
			}
			creator := b["creator"].(map[string]any)
			if creator["firstName"] != "Dana" || b["creatorId"] != creator["id"] {
				t.Errorf("creator %v, creatorId %v", creator, b["creatorId"])
			}
			if b["createdAt"] != b["updatedAt"] {
				t.Errorf("createdAt %v != updatedAt %v", b["createdAt"], b["updatedAt"])
			}
			// One planning row per two report values, covering all of them.
			values := reportValues(t, e, sim.DemoKey, id)
			ps := b["plannings"].([]any)
			if want := (len(values) + 1) / 2; len(ps) != want {
				t.Errorf("%d planning rows for %d values, want %d", len(ps), len(values), want)
			}
			var covered []string
			for _, p := range ps {
				pm := p.(map[string]any)
				if !planningIDRe.MatchString(pm["id"].(string)) {
					t.Errorf("planning id %q", pm["id"])
				}
				if pm["createdAt"] != b["createdAt"] {
					t.Errorf("planning createdAt %v, budget %v", pm["createdAt"], b["createdAt"])
				}
				for v := range pm["targetItems"].(map[string]any) {
					covered = append(covered, v)
				}
			}
			sort.Strings(covered)
			sort.Strings(values)
			if diff := cmp.Diff(values, covered); diff != "" {
				t.Errorf("target items do not cover the report's values (-want +got):\n%s", diff)
			}
			// The list and the get show it, at the end of the list.
			after := e.sim.IDs(sim.DemoKey, "budgets")
			if diff := cmp.Diff(append(append([]string{}, before...), id), after); diff != "" {
				t.Errorf("IDs after create (-want +got):\n%s", diff)
			}
			got := e.get(t, "/v1/budgets/"+id).dataObj(t)["budget"]
			if diff := cmp.Diff(b, got); diff != "" {
				t.Errorf("get differs from create answer (-create +get):\n%s", diff)
			}
		})
	}
	t.Run("growth rate maps to percentGrowth", func(t *testing.T) {
		for i, c := range []struct {
			rate any
			want float64
		}{{5, 5}, {7.6, 8}, {20, 12}, {-3, 0}, {"ten", 0}, {nil, 0}} {
			body := createBody(t, e, sim.DemoKey)
			body["growthRate"] = c.rate
			b := budgetOf(t, create(t, e, sim.DemoKey, "growth-"+itoa(i), body))
			for _, p := range b["plannings"].([]any) {
				if got := p.(map[string]any)["percentGrowth"]; got != c.want {
					t.Errorf("growthRate %v: percentGrowth %v, want %v", c.rate, got, c.want)
				}
			}
		}
	})
}

func TestUpdateBudget(t *testing.T) {
	t.Parallel()
	clock := newClock()
	e := newEnv(t, sim.Options{Now: clock.Now})
	id := firstBudgetID(t, e, sim.DemoKey)
	orig := budgetOf(t, e.get(t, "/v1/budgets/"+id))

	t.Run("partial update changes only the named field", func(t *testing.T) {
		b := budgetOf(t, update(t, e, sim.DemoKey, id, "u1", map[string]any{"name": "Renamed budget", "id": "bud_other", "createdAt": "2000-01-01T00:00:00.000Z"}))
		want := map[string]any{}
		for k, v := range orig {
			want[k] = v
		}
		want["name"] = "Renamed budget"
		want["updatedAt"] = b["updatedAt"]
		if diff := cmp.Diff(want, b); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if !(b["updatedAt"].(string) > orig["updatedAt"].(string)) {
			t.Errorf("updatedAt %v did not move past %v", b["updatedAt"], orig["updatedAt"])
		}
	})
	t.Run("updatedAt moves forward even when the clock does not", func(t *testing.T) {
		b1 := budgetOf(t, update(t, e, sim.DemoKey, id, "u2", map[string]any{"status": "ACTIVE"}))
		b2 := budgetOf(t, update(t, e, sim.DemoKey, id, "u3", map[string]any{"status": "DRAFT"}))
		t1, _ := time.Parse(time.RFC3339, b1["updatedAt"].(string))
		t2, _ := time.Parse(time.RFC3339, b2["updatedAt"].(string))
		if !t2.After(t1) {
			t.Errorf("updatedAt %v then %v", t1, t2)
		}
		clock.Advance(time.Hour)
		b3 := budgetOf(t, update(t, e, sim.DemoKey, id, "u4", map[string]any{}))
		want := clock.Now().UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		if b3["updatedAt"] != want {
			t.Errorf("updatedAt %v, want the clock's %v", b3["updatedAt"], want)
		}
		if b3["createdAt"] != orig["createdAt"] {
			t.Errorf("createdAt changed: %v", b3["createdAt"])
		}
	})
	t.Run("dates and periods recompute endDate", func(t *testing.T) {
		b := budgetOf(t, update(t, e, sim.DemoKey, id, "u5", map[string]any{"startDate": "2026-03-01", "period": "QUARTERLY", "numberOfPeriods": 3}))
		if b["endDate"] != "2026-09-01" {
			t.Errorf("endDate %v, want 2026-09-01", b["endDate"])
		}
	})
	t.Run("lookback can be cleared", func(t *testing.T) {
		b := budgetOf(t, update(t, e, sim.DemoKey, id, "u6", map[string]any{"lookbackPeriod": 6}))
		if b["lookbackPeriod"] != float64(6) {
			t.Errorf("lookbackPeriod %v", b["lookbackPeriod"])
		}
		b = budgetOf(t, update(t, e, sim.DemoKey, id, "u7", map[string]any{"lookbackPeriod": nil}))
		if b["lookbackPeriod"] != nil {
			t.Errorf("lookbackPeriod %v, want null", b["lookbackPeriod"])
		}
	})
	t.Run("new report rebuilds the planning grid", func(t *testing.T) {
		other := ""
		for _, bid := range e.sim.IDs(sim.DemoKey, "budgets") {
			r := budgetOf(t, e.get(t, "/v1/budgets/"+bid))["explorerReportId"].(string)
			if r != orig["explorerReportId"] {
				other = r
				break
			}
		}
		if other == "" {
			t.Fatal("all budgets share one report")
		}
		b := budgetOf(t, update(t, e, sim.DemoKey, id, "u8", map[string]any{"explorerReportId": other}))
		if b["explorerReportId"] != other || b["explorerReport"].(map[string]any)["id"] != other {
			t.Errorf("report %v / %v, want %s", b["explorerReportId"], b["explorerReport"], other)
		}
		origRows := map[string]bool{}
		for _, p := range orig["plannings"].([]any) {
			origRows[p.(map[string]any)["id"].(string)] = true
		}
		for _, p := range b["plannings"].([]any) {
			if origRows[p.(map[string]any)["id"].(string)] {
				t.Errorf("planning row %v survived the report change", p.(map[string]any)["id"])
			}
		}
		checkBudget(t, "budget", b)
	})
	t.Run("later reads show the changes", func(t *testing.T) {
		got := budgetOf(t, e.get(t, "/v1/budgets/"+id))
		list := e.get(t, "/v1/budgets?limit=200").data(t).([]any)
		var fromList any
		for _, b := range list {
			if b.(map[string]any)["id"] == id {
				fromList = b
			}
		}
		if diff := cmp.Diff(got, fromList); diff != "" {
			t.Errorf("list and get differ (-get +list):\n%s", diff)
		}
		if got["name"] != "Renamed budget" || got["period"] != "QUARTERLY" || got["lookbackPeriod"] != nil {
			t.Errorf("get does not show the updates: %v %v %v", got["name"], got["period"], got["lookbackPeriod"])
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		update(t, e, sim.DemoKey, "bud_nope", "u9", map[string]any{"name": "x"}).wantError(t, http.StatusNotFound, "not_found")
	})
}

func TestDeleteBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	id := firstBudgetID(t, e, sim.DemoKey)
	r := e.do(t, req{method: http.MethodDelete, path: "/v1/budgets/" + id, key: sim.DemoKey})
	if diff := cmp.Diff(map[string]any{"success": true}, r.dataObj(t)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, rq := range []req{
		{path: "/v1/budgets/" + id},
		{path: "/v1/budgets/" + id + "/actuals"},
		{path: "/v1/budgets/" + id + "/planning"},
		{method: http.MethodDelete, path: "/v1/budgets/" + id},
		{method: http.MethodPatch, path: "/v1/budgets/" + id, idem: "after-delete", body: map[string]any{"name": "x"}},
	} {
		rq.key = sim.DemoKey
		e.do(t, rq).wantError(t, http.StatusNotFound, "not_found")
	}
	for _, got := range e.sim.IDs(sim.DemoKey, "budgets") {
		if got == id {
			t.Error("deleted budget still listed by IDs")
		}
	}
	for _, b := range e.get(t, "/v1/budgets?limit=200").data(t).([]any) {
		if b.(map[string]any)["id"] == id {
			t.Error("deleted budget still in the list")
		}
	}
}

func TestBudgetValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	rpt := reportID(t, e, sim.DemoKey)
	otherRpt := reportID(t, e, sim.OtherOrgKey)
	id := firstBudgetID(t, e, sim.DemoKey)
	valid := func(edit func(m map[string]any)) map[string]any {
		m := map[string]any{"name": "Valid", "startDate": "2026-12-01", "numberOfPeriods": 12, "explorerReportId": rpt}
		edit(m)
		return m
	}
	cases := []struct {
		name   string
		method string
		body   any
		ctype  string
		status int
		code   string
		field  string // the message must name it
	}{
		{"missing name", "POST", valid(func(m map[string]any) { delete(m, "name") }), "", 400, "validation_error", "name"},
		{"missing startDate", "POST", valid(func(m map[string]any) { delete(m, "startDate") }), "", 400, "validation_error", "startDate"},
		{"missing numberOfPeriods", "POST", valid(func(m map[string]any) { delete(m, "numberOfPeriods") }), "", 400, "validation_error", "numberOfPeriods"},
		{"missing explorerReportId", "POST", valid(func(m map[string]any) { delete(m, "explorerReportId") }), "", 400, "validation_error", "explorerReportId"},
		{"empty name", "POST", valid(func(m map[string]any) { m["name"] = "  " }), "", 400, "validation_error", "name"},
		{"long name", "POST", valid(func(m map[string]any) { m["name"] = strings.Repeat("n", 201) }), "", 400, "validation_error", "name"},
		{"name number", "POST", valid(func(m map[string]any) { m["name"] = 5 }), "", 400, "validation_error", "name"},
		{"name null", "POST", valid(func(m map[string]any) { m["name"] = nil }), "", 400, "validation_error", "name"},
		{"startDate mid-month", "POST", valid(func(m map[string]any) { m["startDate"] = "2026-12-15" }), "", 400, "validation_error", "startDate"},
		{"startDate format", "POST", valid(func(m map[string]any) { m["startDate"] = "12/01/2026" }), "", 400, "validation_error", "startDate"},
		{"startDate timestamp", "POST", valid(func(m map[string]any) { m["startDate"] = "2026-12-01T00:00:00Z" }), "", 400, "validation_error", "startDate"},
		{"startDate number", "POST", valid(func(m map[string]any) { m["startDate"] = 20261201 }), "", 400, "validation_error", "startDate"},
		{"numberOfPeriods string", "POST", valid(func(m map[string]any) { m["numberOfPeriods"] = "12" }), "", 400, "validation_error", "numberOfPeriods"},
		{"numberOfPeriods 0", "POST", valid(func(m map[string]any) { m["numberOfPeriods"] = 0 }), "", 400, "validation_error", "numberOfPeriods"},
		{"numberOfPeriods 61", "POST", valid(func(m map[string]any) { m["numberOfPeriods"] = 61 }), "", 400, "validation_error", "numberOfPeriods"},
		{"numberOfPeriods fraction", "POST", valid(func(m map[string]any) { m["numberOfPeriods"] = 1.5 }), "", 400, "validation_error", "numberOfPeriods"},
		{"unknown report", "POST", valid(func(m map[string]any) { m["explorerReportId"] = "rpt_nope" }), "", 400, "validation_error", "explorerReportId"},
		{"report of another organization", "POST", valid(func(m map[string]any) { m["explorerReportId"] = otherRpt }), "", 400, "validation_error", "explorerReportId"},
		{"period", "POST", valid(func(m map[string]any) { m["period"] = "WEEKLY" }), "", 400, "validation_error", "period"},
		{"status", "POST", valid(func(m map[string]any) { m["status"] = "ARCHIVED" }), "", 400, "validation_error", "status"},
		{"targetType", "POST", valid(func(m map[string]any) { m["targetType"] = "PLANNING_ITEM" }), "", 400, "validation_error", "targetType"},
		{"lookbackPeriod 0", "POST", valid(func(m map[string]any) { m["lookbackPeriod"] = 0 }), "", 400, "validation_error", "lookbackPeriod"},
		{"lookbackPeriod string", "POST", valid(func(m map[string]any) { m["lookbackPeriod"] = "3" }), "", 400, "validation_error", "lookbackPeriod"},
		{"normalizationPeriod string", "POST", valid(func(m map[string]any) { m["normalizationPeriod"] = "yes" }), "", 400, "validation_error", "normalizationPeriod"},
		{"not json", "POST", "name=x", "", 400, "invalid_json", ""},
		{"array", "POST", "[1,2]", "", 400, "invalid_json", ""},
		{"null", "POST", "null", "", 400, "invalid_json", ""},
		{"string", "POST", `"x"`, "", 400, "invalid_json", ""},
		{"empty body", "POST", "", "", 400, "invalid_json", ""},
		{"two objects", "POST", `{"name":"a"} {"name":"b"}`, "", 400, "invalid_json", ""},
		{"truncated", "POST", `{"name":`, "", 400, "invalid_json", ""},
		{"text content type", "POST", valid(func(map[string]any) {}), "text/plain", 415, "unsupported_media_type", ""},
		{"too large", "POST", `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, "", 413, "payload_too_large", ""},
		{"update name null", "PATCH", map[string]any{"name": nil}, "", 400, "validation_error", "name"},
		{"update numberOfPeriods", "PATCH", map[string]any{"numberOfPeriods": "x"}, "", 400, "validation_error", "numberOfPeriods"},
		{"update startDate", "PATCH", map[string]any{"startDate": "2026-02-30"}, "", 400, "validation_error", "startDate"},
		{"update report", "PATCH", map[string]any{"explorerReportId": otherRpt}, "", 400, "validation_error", "explorerReportId"},
		{"update not json", "PATCH", "{", "", 400, "invalid_json", ""},
		{"update content type", "PATCH", map[string]any{"name": "x"}, "application/xml", 415, "unsupported_media_type", ""},
	}
	before := e.sim.IDs(sim.DemoKey, "budgets")
	orig := budgetOf(t, e.get(t, "/v1/budgets/"+id))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/budgets"
			if tc.method == "PATCH" {
				path += "/" + id
			}
			r := req{method: tc.method, path: path, key: sim.DemoKey, idem: "v-" + itoa(i), body: tc.body}
			if tc.body == "" {
				r.body = []byte{}
				r.headers = map[string]string{"Content-Type": "application/json"}
			}
			if tc.ctype != "" {
				r.headers = map[string]string{"Content-Type": tc.ctype}
			}
			msg := e.do(t, r).wantError(t, tc.status, tc.code)
			if tc.field != "" && !strings.HasPrefix(msg, tc.field+" ") {
				t.Errorf("message %q does not start with the field %q", msg, tc.field)
			}
		})
	}
	if diff := cmp.Diff(before, e.sim.IDs(sim.DemoKey, "budgets")); diff != "" {
		t.Errorf("invalid requests changed the budgets:\n%s", diff)
	}
	if diff := cmp.Diff(orig, budgetOf(t, e.get(t, "/v1/budgets/"+id))); diff != "" {
		t.Errorf("invalid updates changed the budget:\n%s", diff)
	}
	t.Run("charset parameter is fine", func(t *testing.T) {
		r := e.do(t, req{method: "POST", path: "/v1/budgets", key: sim.DemoKey, idem: "charset", body: valid(func(map[string]any) {}),
			headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}})
		if r.status != http.StatusOK {
			t.Errorf("status %d: %s", r.status, r.body)
		}
	})
}

// TestBudgetFigures checks that planning, actuals, metrics and lookback agree
// with each other for every seeded budget.
func TestBudgetFigures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for _, id := range e.sim.IDs(key, "budgets") {
			t.Run(key+"/"+id, func(t *testing.T) { checkBudgetFigures(t, e, key, id) })
		}
	}
}

func checkBudgetFigures(t *testing.T, e *env, key, id string) {
	got := e.get(t, "/v1/budgets/"+id, key).dataObj(t)
	b := got["budget"].(map[string]any)
	checkBudget(t, "budget", b)
	months := map[string]int64{"MONTHLY": 1, "QUARTERLY": 3, "YEARLY": 12}[b["period"].(string)]
	n := int64(b["numberOfPeriods"].(float64))
	start, _ := time.Parse("2006-01-02", b["startDate"].(string))
	end, _ := time.Parse("2006-01-02", b["endDate"].(string))
	if want := start.AddDate(0, int(months*(n-1)), 0); !end.Equal(want) {
		t.Errorf("endDate %v, want %v", end, want)
	}
	dim := got["dimensions"].([]any)[0].(map[string]any)
	var values []string
	for _, v := range dim["values"].([]any) {
		values = append(values, v.(string))
	}
	// Rows split the report's values into disjoint parts.
	var covered []string
	var monthlyTarget, prevSum int64
	var spend float64
	spendNull := false
	ps := e.get(t, "/v1/budgets/"+id+"/planning", key).dataObj(t)["plannings"].([]any)
	if diff := cmp.Diff(b["plannings"], any(ps)); diff != "" {
		t.Errorf("planning answer differs from the budget's plannings:\n%s", diff)
	}
	rowIDs := map[string]bool{}
	for _, p := range ps {
		pm := p.(map[string]any)
		rowIDs[pm["id"].(string)] = true
		if pm["dimension1"] != dim["name"] || pm["dimension2"] != "" {
			t.Errorf("dimension1 %v dimension2 %q, want %v and empty", pm["dimension1"], pm["dimension2"], dim["name"])
		}
		g := pm["percentGrowth"].(float64)
		if g < 0 || g > 12 || g != float64(int(g)) {
			t.Errorf("percentGrowth %v", g)
		}
		for v, amt := range pm["targetItems"].(map[string]any) {
			covered = append(covered, v)
			monthlyTarget += cents(t, amt)
		}
		prevSum += cents(t, pm["previousMonth"])
		if pm["percentSpend"] == nil {
			spendNull = true
		} else {
			spend += pm["percentSpend"].(float64)
		}
	}
	sort.Strings(covered)
	sort.Strings(values)
	if diff := cmp.Diff(values, covered); diff != "" {
		t.Errorf("rows do not partition the report's values (-want +got):\n%s", diff)
	}
	if len(ps) < 2 || len(ps) > 5 {
		t.Errorf("%d rows, want 2 to 5", len(ps))
	}
	if spendNull != (prevSum == 0) {
		t.Errorf("percentSpend null = %v with previous month total %d", spendNull, prevSum)
	}
	if !spendNull && (spend < 99.9 || spend > 100.1) {
		t.Errorf("percentSpend adds up to %v", spend)
	}
	// Actuals: rows add up per period; periods are the started ones.
	a := e.get(t, "/v1/budgets/"+id+"/actuals", key).dataObj(t)
	byPlanning := a["actualsByPlanning"].(map[string]any)
	byPeriod := a["accountActualsByPeriod"].(map[string]any)
	if len(byPlanning) != len(rowIDs) {
		t.Errorf("actualsByPlanning has %d rows, want %d", len(byPlanning), len(rowIDs))
	}
	var wantKeys []string
	for i := int64(0); i < n; i++ {
		p := start.AddDate(0, int(months*i), 0)
		if p.After(asOf) {
			break
		}
		wantKeys = append(wantKeys, p.Format("2006-01"))
	}
	var gotKeys []string
	var totalActual int64
	for k, v := range byPeriod {
		gotKeys = append(gotKeys, k)
		var sum int64
		for rid, row := range byPlanning {
			if !rowIDs[rid] {
				t.Errorf("actuals for unknown planning %s", rid)
			}
			sum += cents(t, row.(map[string]any)[k])
		}
		if sum != cents(t, v) {
			t.Errorf("period %s: rows add up to %d, account actual %d", k, sum, cents(t, v))
		}
		totalActual += cents(t, v)
	}
	sort.Strings(gotKeys)
	if diff := cmp.Diff(wantKeys, gotKeys, cmpEmpty); diff != "" {
		t.Errorf("period keys (-want +got):\n%s", diff)
	}
	// Metrics.
	m := got["metrics"].(map[string]any)
	totalTarget := monthlyTarget * months * n
	if cents(t, m["totalTarget"]) != totalTarget || cents(t, m["totalActual"]) != totalActual ||
		cents(t, m["variance"]) != totalTarget-totalActual {
		t.Errorf("metrics %v, want target %d actual %d", m, totalTarget, totalActual)
	}
	// The lookback preview of the same report and start covers the same
	// months: its last month is previousMonth, its sum matches avgLookback.
	L := 3
	if lb, ok := b["lookbackPeriod"].(float64); ok {
		L = int(lb)
	}
	periods := e.do(t, req{method: "POST", path: "/v1/budgets/lookback", key: key, body: map[string]any{
		"explorerReportId": b["explorerReportId"], "startDate": b["startDate"], "lookbackPeriod": L,
	}}).dataObj(t)["periods"].([]any)
	if len(periods) != L {
		t.Fatalf("%d lookback periods, want %d", len(periods), L)
	}
	if last := cents(t, periods[L-1].(map[string]any)["actual"]); last != prevSum {
		t.Errorf("last lookback month %d, rows' previousMonth %d", last, prevSum)
	}
	var lbSum, avgSum int64
	for _, p := range periods {
		lbSum += cents(t, p.(map[string]any)["actual"])
	}
	for _, p := range ps {
		avgSum += cents(t, p.(map[string]any)["avgLookback"])
	}
	if d := avgSum*int64(L) - lbSum; d < -int64(len(ps)*L) || d > int64(len(ps)*L) {
		t.Errorf("Σ avgLookback × L = %d, lookback sum %d", avgSum*int64(L), lbSum)
	}
}

var cmpEmpty = cmp.Transformer("nilToEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})

func TestLookbackGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ps := e.get(t, "/v1/budgets/lookback").dataObj(t)["periods"].([]any)
	var keys []string
	var act, proj []int64
	for _, p := range ps {
		pm := p.(map[string]any)
		keys = append(keys, pm["periodKey"].(string))
		act = append(act, cents(t, pm["actual"]))
		proj = append(proj, cents(t, pm["projected"]))
	}
	if diff := cmp.Diff([]string{"2026-05", "2026-06", "2026-07", "2026-08", "2026-09", "2026-10"}, keys); diff != "" {
		t.Errorf("period keys (-want +got):\n%s", diff)
	}
	var sa, sp int64
	for i := range act {
		sa += act[i]
		sp += proj[i]
		if act[i] <= 0 {
			t.Errorf("actual %d for %s", act[i], keys[i])
		}
	}
	// A least-squares line passes through the mean and is straight.
	if d := sa - sp; d < -3 || d > 3 {
		t.Errorf("Σ actual %d, Σ projected %d", sa, sp)
	}
	step := proj[1] - proj[0]
	for i := 2; i < len(proj); i++ {
		if d := proj[i] - proj[i-1] - step; d < -1 || d > 1 {
			t.Errorf("projection is not a line: %v", proj)
		}
	}
	t.Run("post validation", func(t *testing.T) {
		rpt := reportID(t, e, sim.DemoKey)
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"missing report", map[string]any{"startDate": "2026-11-01"}, "explorerReportId"},
			{"missing start", map[string]any{"explorerReportId": rpt}, "startDate"},
			{"unknown report", map[string]any{"explorerReportId": "rpt_x", "startDate": "2026-11-01"}, "explorerReportId"},
			{"lookback 25", map[string]any{"explorerReportId": rpt, "startDate": "2026-11-01", "lookbackPeriod": 25}, "lookbackPeriod"},
			{"period", map[string]any{"explorerReportId": rpt, "startDate": "2026-11-01", "period": 1}, "period"},
			{"numberOfPeriods", map[string]any{"explorerReportId": rpt, "startDate": "2026-11-01", "numberOfPeriods": 0}, "numberOfPeriods"},
		} {
			t.Run(c.name, func(t *testing.T) {
				msg := e.do(t, req{method: "POST", path: "/v1/budgets/lookback", key: sim.DemoKey, body: c.body}).
					wantError(t, http.StatusBadRequest, "validation_error")
				if !strings.HasPrefix(msg, c.field+" ") {
					t.Errorf("message %q does not name %s", msg, c.field)
				}
			})
		}
		ps := e.do(t, req{method: "POST", path: "/v1/budgets/lookback", key: sim.DemoKey,
			body: map[string]any{"explorerReportId": rpt, "startDate": "2026-11-01"}}).dataObj(t)["periods"].([]any)
		if len(ps) != 3 {
			t.Errorf("default lookback gives %d periods, want 3", len(ps))
		}
	})
}
