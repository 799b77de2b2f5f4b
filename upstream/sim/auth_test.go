package sim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// everyOperation returns one request per operation; ids point at an existing
// budget of the key's organization when it has one.
func everyOperation(budgetID string) map[string]req {
	q := explorerBody()
	return map[string]req{
		ops.ListRecommendations:        {path: "/v1/recommendations"},
		ops.ListAnomalies:              {path: "/v1/anomalies"},
		ops.ExplorerSummary:            {method: http.MethodPost, path: "/v1/explorer/summary", body: q},
		ops.ExplorerPreviousPeriod:     {method: http.MethodPost, path: "/v1/explorer/previous-period", body: q},
		ops.ExplorerHistory:            {method: http.MethodPost, path: "/v1/explorer/history", body: q},
		ops.ExplorerHeatmap:            {method: http.MethodPost, path: "/v1/explorer/heatmap", body: q},
		ops.ExplorerDimensionValues:    {path: "/v1/explorer/dimensions/product_product_name/values"},
		ops.ListBudgets:                {path: "/v1/budgets"},
		ops.CreateBudget:               {method: http.MethodPost, path: "/v1/budgets", idem: "k", body: map[string]any{"name": "x"}},
		ops.BudgetLookbackGet:          {path: "/v1/budgets/lookback"},
		ops.BudgetLookbackPost:         {method: http.MethodPost, path: "/v1/budgets/lookback", body: map[string]any{}},
		ops.GetBudget:                  {path: "/v1/budgets/" + budgetID},
		ops.UpdateBudget:               {method: http.MethodPatch, path: "/v1/budgets/" + budgetID, idem: "k", body: map[string]any{"name": "x"}},
		ops.DeleteBudget:               {method: http.MethodDelete, path: "/v1/budgets/" + budgetID},
		ops.GetBudgetActuals:           {path: "/v1/budgets/" + budgetID + "/actuals"},
		ops.GetBudgetPlanning:          {path: "/v1/budgets/" + budgetID + "/planning"},
		ops.ListScheduledNotifications: {path: "/v1/notifications/scheduled"},
	}
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	id := firstBudgetID(t, e, sim.DemoKey)
	cases := []struct {
		name    string
		headers map[string]string
		code    string
	}{
		{"no header", nil, "missing_credentials"},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, "missing_credentials"},
		{"basic scheme", map[string]string{"Authorization": "Basic ZGVtby1rZXk6"}, "missing_credentials"},
		{"bare key", map[string]string{"Authorization": sim.DemoKey}, "missing_credentials"},
		{"unknown key", map[string]string{"Authorization": "Bearer not-a-key"}, "invalid_credentials"},
		{"key of other case", map[string]string{"Authorization": "Bearer DEMO-KEY"}, "invalid_credentials"},
	}
	for _, tc := range cases {
		for op, r := range everyOperation(id) {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				r.headers = tc.headers
				msg := e.do(t, r).wantError(t, http.StatusUnauthorized, tc.code)
				if tc.code == "invalid_credentials" && msg != "Invalid API key" {
					t.Errorf("message %q", msg)
				}
			})
		}
	}
	t.Run("scheme is case-insensitive", func(t *testing.T) {
		r := e.do(t, req{path: "/v1/budgets", headers: map[string]string{"Authorization": "bearer " + sim.DemoKey}})
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	})
	t.Run("key in query string is ignored", func(t *testing.T) {
		e.do(t, req{path: "/v1/budgets?api_key=" + sim.DemoKey + "&key=" + sim.DemoKey}).wantError(t, http.StatusUnauthorized, "missing_credentials")
	})
	t.Run("credentials before route", func(t *testing.T) {
		e.do(t, req{path: "/v1/nothing-here"}).wantError(t, http.StatusUnauthorized, "missing_credentials")
		e.do(t, req{method: http.MethodPut, path: "/v1/budgets"}).wantError(t, http.StatusUnauthorized, "missing_credentials")
	})
}

func TestEntitlement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	if ids := e.sim.IDs(sim.UnentitledKey, "budgets"); len(ids) != 0 {
		t.Errorf("unentitled organization has budgets: %v", ids)
	}
	for op, r := range everyOperation("bud_whatever") {
		t.Run(op, func(t *testing.T) {
			r.key = sim.UnentitledKey
			e.do(t, r).wantError(t, http.StatusForbidden, "forbidden_entitlement")
		})
	}
	t.Run("route before entitlement", func(t *testing.T) {
		e.do(t, req{path: "/v1/nope", key: sim.UnentitledKey}).wantError(t, http.StatusNotFound, "not_found")
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	id := firstBudgetID(t, e, sim.DemoKey)
	rpt := reportID(t, e, sim.DemoKey)
	before := e.sim.IDs(sim.DemoKey, "budgets")
	writes := []struct {
		name string
		req  req
	}{
		{"create", req{method: http.MethodPost, path: "/v1/budgets", idem: "ro-1", body: map[string]any{
			"name": "Nope", "startDate": "2027-01-01", "numberOfPeriods": 1, "explorerReportId": rpt}}},
		{"update", req{method: http.MethodPatch, path: "/v1/budgets/" + id, idem: "ro-2", body: map[string]any{"name": "Nope"}}},
		{"delete", req{method: http.MethodDelete, path: "/v1/budgets/" + id}},
		// Scope is checked before the operation, so even a bad body or a
		// missing Idempotency-Key answers forbidden_scope.
		{"create without idempotency key", req{method: http.MethodPost, path: "/v1/budgets", body: "not json"}},
	}
	for _, tc := range writes {
		t.Run("readonly "+tc.name, func(t *testing.T) {
			tc.req.key = sim.ReadOnlyKey
			msg := e.do(t, tc.req).wantError(t, http.StatusForbidden, "forbidden_scope")
			if msg != "API key is missing required scope: budgets:write" {
				t.Errorf("message %q", msg)
			}
			if !strings.Contains(msg, "budgets:write") {
				t.Errorf("message does not name budgets:write: %q", msg)
			}
		})
	}
	if diff := cmp.Diff(before, e.sim.IDs(sim.DemoKey, "budgets")); diff != "" {
		t.Errorf("read-only writes changed the budgets:\n%s", diff)
	}
	reads := everyOperation(id)
	for _, op := range []string{ops.CreateBudget, ops.UpdateBudget, ops.DeleteBudget, ops.BudgetLookbackPost} {
		delete(reads, op)
	}
	for op, r := range reads {
		t.Run("readonly reads "+op, func(t *testing.T) {
			r.key = sim.ReadOnlyKey
			if got := e.do(t, r); got.status != http.StatusOK {
				t.Errorf("status %d: %s", got.status, got.body)
			}
		})
	}
}

// TestTenantIsolation checks that another organization's budget answers
// exactly like an unknown id.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	other := firstBudgetID(t, e, sim.OtherOrgKey)
	for _, id := range e.sim.IDs(sim.DemoKey, "budgets") {
		if id == other {
			t.Fatalf("organizations share budget id %s", id)
		}
	}
	ops := []struct {
		name string
		req  func(id string) req
	}{
		{"get", func(id string) req { return req{path: "/v1/budgets/" + id} }},
		{"update", func(id string) req {
			return req{method: http.MethodPatch, path: "/v1/budgets/" + id, idem: "iso-" + id, body: map[string]any{"name": "Hijacked"}}
		}},
		{"delete", func(id string) req { return req{method: http.MethodDelete, path: "/v1/budgets/" + id} }},
		{"actuals", func(id string) req { return req{path: "/v1/budgets/" + id + "/actuals"} }},
		{"planning", func(id string) req { return req{path: "/v1/budgets/" + id + "/planning"} }},
	}
	strip := func(t *testing.T, r result) map[string]any {
		m := r.obj(t)
		delete(m["error"].(map[string]any), "request_id")
		return map[string]any{"status": r.status, "body": m}
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			cross := op.req(other)
			cross.key = sim.DemoKey
			unknown := op.req("bud_doesnotexist0000")
			unknown.key = sim.DemoKey
			rc, ru := e.do(t, cross), e.do(t, unknown)
			rc.wantError(t, http.StatusNotFound, "not_found")
			if diff := cmp.Diff(strip(t, ru), strip(t, rc)); diff != "" {
				t.Errorf("cross-organization answer differs from unknown id (-unknown +cross):\n%s", diff)
			}
		})
	}
	// The other organization's budget is untouched.
	b := e.get(t, "/v1/budgets/"+other, sim.OtherOrgKey).dataObj(t)["budget"].(map[string]any)
	if b["name"] == "Hijacked" {
		t.Error("cross-organization update changed the budget")
	}
	// And the other organization's list has nothing of organization one.
	r := e.get(t, "/v1/recommendations?limit=200", sim.OtherOrgKey)
	for _, rec := range r.data(t).([]any) {
		if acct := rec.(map[string]any)["account_name"].(string); !strings.HasPrefix(acct, "Bluefin ") {
			t.Errorf("organization two sees account %q", acct)
		}
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	cases := []struct {
		name   string
		method string
		path   string
		status int
		code   string
		allow  string
	}{
		{"unknown path", http.MethodGet, "/v1/unknown", 404, "not_found", ""},
		{"root", http.MethodGet, "/", 404, "not_found", ""},
		{"no version", http.MethodGet, "/budgets", 404, "not_found", ""},
		{"trailing slash", http.MethodGet, "/v1/budgets/", 404, "not_found", ""},
		{"too deep", http.MethodGet, "/v1/budgets/x/actuals/more", 404, "not_found", ""},
		{"unknown dimension", http.MethodGet, "/v1/explorer/dimensions/region/values", 404, "not_found", ""},
		{"put on list", http.MethodPut, "/v1/budgets", 405, "method_not_allowed", "GET, POST"},
		{"post on budget", http.MethodPost, "/v1/budgets/bud_x", 405, "method_not_allowed", "GET, PATCH, DELETE"},
		{"delete lookback", http.MethodDelete, "/v1/budgets/lookback", 405, "method_not_allowed", "GET, POST"},
		{"patch lookback is not a budget", http.MethodPatch, "/v1/budgets/lookback", 405, "method_not_allowed", "GET, POST"},
		{"get summary", http.MethodGet, "/v1/explorer/summary", 405, "method_not_allowed", "POST"},
		{"head recommendations", http.MethodHead, "/v1/recommendations", 405, "", "GET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, req{method: tc.method, path: tc.path, key: sim.DemoKey})
			if tc.code != "" {
				r.wantError(t, tc.status, tc.code)
			} else if r.status != tc.status {
				t.Errorf("status %d, want %d", r.status, tc.status)
			}
			if got := r.header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
	t.Run("lookback is not a budget id", func(t *testing.T) {
		if _, ok := e.get(t, "/v1/budgets/lookback").dataObj(t)["periods"]; !ok {
			t.Error("GET /v1/budgets/lookback did not answer the lookback")
		}
	})
	t.Run("escaped id", func(t *testing.T) {
		e.get(t, "/v1/budgets/a%2Fb").wantError(t, http.StatusNotFound, "not_found")
	})
	t.Run("operation id", func(t *testing.T) {
		for _, c := range []struct{ method, path, op string }{
			{"GET", "/v1/budgets/lookback", ops.BudgetLookbackGet},
			{"GET", "/v1/budgets/bud_1", ops.GetBudget},
			{"PATCH", "/v1/budgets/lookback", ""},
			{"GET", "/v1/explorer/dimensions/x/values", ops.ExplorerDimensionValues},
			{"GET", "/nope", ""},
		} {
			if got := e.sim.OperationID(c.method, c.path); got != c.op {
				t.Errorf("OperationID(%s %s) = %q, want %q", c.method, c.path, got, c.op)
			}
		}
	})
}
