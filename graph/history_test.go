package graph_test

import (
	"net/http"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// A history's group-by values as an upstream may send them: the contract
// types only the cost and the time column, so an account id may come as a
// number and the cost no value covers as null. Before, either failed the
// whole history with UPSTREAM_BAD_RESPONSE.
func TestHistoryGroupValues(t *testing.T) {
	t.Parallel()
	const query = `{ explorer { history(query: {dateRange: {start: "2026-01-01", end: "2026-01-31"}, ` +
		`groupBy: "line_item_usage_account_id", costType: "line_item_unblended_cost", granularity: "day"}) { costRows { group cost } } } }`
	tests := []struct {
		name     string
		rows     string
		wantData string
		wantCode string
	}{
		{
			name: "text, a number and null",
			rows: `{"line_item_usage_account_id":"Production","usage_date":20260115,"cost":1.5},` +
				`{"line_item_usage_account_id":123456789012,"usage_date":20260115,"cost":10.5},` +
				`{"line_item_usage_account_id":null,"usage_date":20260115,"cost":2.5}`,
			wantData: `{"explorer":{"history":{"costRows":[{"group":"Production","cost":1.5},{"group":"123456789012","cost":10.5},` +
				`{"group":null,"cost":2.5}]}}}`,
		},
		{
			name:     "a boolean is no group value",
			rows:     `{"line_item_usage_account_id":true,"usage_date":20260115,"cost":1.5}`,
			wantData: `{"explorer":{"history":null}}`, wantCode: "UPSTREAM_BAD_RESPONSE",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			failOn(e, "POST", "/v1/explorer/history", func() *http.Response {
				return answer(http.StatusOK, `{"data":{"costRows":[`+tc.rows+`],"totalsByTimeRows":[],"usageRows":[],`+
					`"usageGroupRows":[],"timeColumn":"usage_date","groupBy":"line_item_usage_account_id","servedFromCache":false}}`)
			})
			r := e.query(t, sim.DemoKey, query, nil)
			if tc.wantCode != "" {
				if got := r.code(t); got != tc.wantCode {
					t.Errorf("code = %s, want %s", got, tc.wantCode)
				}
			} else if len(r.Errors) > 0 {
				t.Fatalf("errors: %+v", r.Errors)
			}
			if string(r.Data) != tc.wantData {
				t.Errorf("data = %s\nwant   %s", r.Data, tc.wantData)
			}
		})
	}
}
